"""Issue 9 phase B on the web: Accept-Language, a language switch kept in a cookie, translated
result and entry pages, and the short first screen (1-3 fixes, the rest behind "More fixes")."""
import re

import pytest
from conftest import close_app, make_app, submit

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.9 GiB memory in "
       "use. Of the allocated memory 75.10 GiB is allocated by PyTorch, and 1.30 GiB is reserved by PyTorch but "
       "unallocated.\n")


@pytest.fixture(scope="module")
def bundled_kb():
    from gpu_troubleshooter.knowledge import load_knowledge_base
    return load_knowledge_base()


@pytest.fixture
def app(tmp_path, bundled_kb):
    app = make_app(f"sqlite:///{tmp_path}/web.sqlite3", tmp_path, bundled_kb)
    yield app
    close_app(app)


def title_in(bundled_kb, lang):
    from gpu_troubleshooter.view import entry_view
    return entry_view(bundled_kb.get("cuda-oom"), lang).title


def h2(html):
    return re.search(r'<h2 id="f0-title">([^<]*)</h2>', html).group(1)


def test_result_page_follows_accept_language_and_the_switch(app, bundled_kb):
    from html import unescape
    client = app.test_client()
    token = submit(client, OOM)
    page = client.get(f"/s/{token}").get_data(as_text=True)
    assert unescape(h2(page)) == title_in(bundled_kb, "en") and 'aria-label="Language"' in page
    page = client.get(f"/s/{token}", headers={"Accept-Language": "ko-KR,ko;q=0.9,en;q=0.5"}).get_data(as_text=True)
    assert unescape(h2(page)) == title_in(bundled_kb, "ko") != title_in(bundled_kb, "en")
    r = client.get(f"/s/{token}?lang=hr")
    assert unescape(h2(r.get_data(as_text=True))) == title_in(bundled_kb, "hr")
    assert "lang=hr" in r.headers.get("Set-Cookie", "")
    # the cookie wins over Accept-Language on the next page, the KB page included
    page = client.get(f"/s/{token}", headers={"Accept-Language": "ko"}).get_data(as_text=True)
    assert unescape(h2(page)) == title_in(bundled_kb, "hr")
    entry = client.get("/kb/cuda-oom").get_data(as_text=True)
    assert title_in(bundled_kb, "hr") in unescape(entry) and "PYTORCH_ALLOC_CONF" in entry


def test_result_page_shows_the_chosen_fixes_first_and_the_rest_behind_more_fixes(app, bundled_kb):
    client = app.test_client()
    token = submit(client, OOM)
    page = client.get(f"/s/{token}").get_data(as_text=True)
    first_finding = page.split('id="f0-title"')[1].split("</section>")[0]
    before, _, after = first_finding.partition("<details")
    assert 1 <= before.count('<li value="') <= 3 and "More fixes" in after
    total = len(bundled_kb.get("cuda-oom").fixes)
    assert before.count('<li value="') + after.count('<li value="') == total
