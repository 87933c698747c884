"""The result page's languages in a real headless Chromium (Debian's): the browser's own
Accept-Language, Serbian Cyrillic, the switch, the note naming fields shown in another
language, and the site's default_lang for a browser that asks for nothing we have."""
import re
import shutil
import threading

import pytest
import yaml
from conftest import close_app, make_app, submit
from test_browser import ARGS, _chromium

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.20 GiB is free.\n")


@pytest.fixture(scope="module")
def site_kb(tmp_path_factory):
    """The bundled knowledge base plus a site folder: cuda-oom with its summary edited in English
    (so its translations of the summary are stale) and a _site.yaml choosing Croatian by default."""
    from gpu_troubleshooter.knowledge import bundled_dir, entry_files, load_knowledge_base
    root = tmp_path_factory.mktemp("site-kb")
    src = next(p for p in entry_files(bundled_dir()) if p.stem == "cuda-oom")
    entry = yaml.safe_load(src.read_text(encoding="utf-8"))
    entry["summary"] = entry["summary"] + " (Edited by the site.)"
    (root / "pytorch").mkdir()
    (root / "pytorch" / "cuda-oom.yaml").write_text(yaml.safe_dump(entry, allow_unicode=True, sort_keys=False),
                                                    encoding="utf-8")
    shutil.copytree(src.with_suffix("") / "i18n", root / "pytorch" / "cuda-oom" / "i18n")
    (root / "_site.yaml").write_text("placeholders:\n  default_lang: hr\n", encoding="utf-8")
    return load_knowledge_base(extra_dirs=(str(root),)), entry


@pytest.fixture
def app(tmp_path, site_kb):
    app = make_app(f"sqlite:///{tmp_path}/langs.sqlite3", tmp_path, site_kb[0], SERVER_NAME=None)
    yield app
    close_app(app)


def _titles(kb, lang):
    from gpu_troubleshooter.view import entry_view
    return entry_view(kb.get("cuda-oom"), lang, kb.site).title


def test_site_default_lang_when_the_browser_asks_for_nothing_we_have(app, site_kb):
    client = app.test_client()
    token = submit(client, OOM)
    from html import unescape
    page = unescape(client.get(f"/s/{token}").get_data(as_text=True))
    assert f">{_titles(site_kb[0], 'hr')}</h2>" in page
    page = unescape(client.get(f"/s/{token}", headers={"Accept-Language": "de-DE,de;q=0.9"}).get_data(as_text=True))
    assert f">{_titles(site_kb[0], 'hr')}</h2>" in page
    page = unescape(client.get(f"/s/{token}", headers={"Accept-Language": "en-US,en;q=0.9"}).get_data(as_text=True))
    assert f">{_titles(site_kb[0], 'en')}</h2>" in page and 'class="meta fallback"' not in page
    # the note names the stale summary, and the finding's headings are the catalog's, in the reader's language
    page = unescape(client.get(f"/s/{token}?lang=hr").get_data(as_text=True))
    assert "Još nije prevedeno" in page and "<h3>Kako popraviti</h3>" in page and "Ostala rješenja (" in page
    page = unescape(client.get(f"/s/{token}?lang=ko").get_data(as_text=True))
    assert "<h3>해결 방법</h3>" in page and "<h3>How to fix it</h3>" not in page
    # the knowledge-base page too
    page = unescape(client.get("/kb/cuda-oom?lang=hr").get_data(as_text=True))
    assert "<h2>Kako popraviti</h2>" in page and "Još nije prevedeno" in page and "summary" in page
    page = unescape(client.get("/kb/cuda-oom?lang=en").get_data(as_text=True))
    assert "<h2>How to fix it</h2>" in page and 'class="meta fallback"' not in page


def test_result_page_in_serbian_cyrillic_then_croatian_in_chromium(app, site_kb):
    from playwright.sync_api import sync_playwright
    from werkzeug.serving import make_server
    kb, entry = site_kb
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_port}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=_chromium(), args=ARGS)
            context = browser.new_context(locale="sr-Cyrl-RS", viewport={"width": 390, "height": 844})
            page = context.new_page()
            page.goto(base + "/")
            from gpu_troubleshooter.web.messages import web_label
            paste, diagnose = web_label("sr-Cyrl", "idx_paste"), web_label("sr-Cyrl", "idx_submit")
            assert re.search(r"[\u0400-\u04ff]", paste + diagnose)   # the form is in Cyrillic too
            page.get_by_label(paste).fill(OOM)
            page.get_by_role("button", name=diagnose).click()
            page.wait_for_url("**/s/*")
            heading = page.locator("#f0-title")
            heading.wait_for(state="visible", timeout=15_000)
            assert heading.inner_text() == _titles(kb, "sr-Cyrl")
            assert re.search(r"[\u0400-\u04ff]", heading.inner_text())
            note = page.locator(".finding .fallback").first
            assert "summary" in note.inner_text() and re.search(r"[\u0400-\u04ff]", note.inner_text())
            assert page.locator(".summary").first.inner_text() == entry["summary"]   # English, whole, named
            # code stays as written: the first fix's code block is the Serbian Latin page's
            code = page.locator(".fixes code").first.inner_text()
            page.get_by_role("link", name="Hrvatski").click()
            heading.wait_for(state="visible", timeout=15_000)
            page.wait_for_function("document.querySelector('#f0-title').innerText === %r" % _titles(kb, "hr"))
            assert "Još nije prevedeno" in page.locator(".finding .fallback").first.inner_text()
            assert page.locator(".fixes code").first.inner_text() == code
            browser.close()
    finally:
        server.shutdown()
