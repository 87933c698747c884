"""Issue 9 §4 on the web, the rest of the pages: the forms (paste/upload, feedback, helpdesk,
delete), the share link, flashes, error pages and empty states are in the reader's language
(web/messages.py), never falling back to English where a translation exists; escaping holds."""
import re
from html import unescape
from types import SimpleNamespace

import pytest
from conftest import OOM_LOG, close_app, make_app, submit

from gpu_troubleshooter.render import LABELS
from gpu_troubleshooter.web.messages import WEB_LABELS

HANGUL = re.compile(r"[\uac00-\ud7a3]")
CYRILLIC = re.compile(r"[\u0400-\u04ff]")
FIELD = re.compile(r"\{(\w+)\}")
NOTHING_KNOWN = "just a line that ends a job\nnothing a known failure says\n"


@pytest.fixture
def app(tmp_path, web_kb):
    app = make_app(f"sqlite:///{tmp_path}/i18n.sqlite3", tmp_path, web_kb)
    yield app
    close_app(app)


def english_chunks(html):
    """The catalog's English words that this English page shows: each string's longest stretch
    between {fields}, when it is words long enough not to occur by chance in other text."""
    text = unescape(html)
    catalog = {**{k: v for k, v in LABELS["en"].items() if k.startswith("web_")}, **WEB_LABELS["en"]}
    found = {}
    for key, english in catalog.items():
        chunk = max((c.strip(" .:()") for c in FIELD.split(english)[::2]), key=len)
        if len(chunk) >= 8 and " " in chunk and chunk in text:
            found[key] = chunk
    return found


def assert_no_english(english_page, page, lang):
    chunks = english_chunks(english_page)
    assert len(chunks) >= 3, chunks   # the English page did show catalog strings
    left = {k: c for k, c in chunks.items() if c in unescape(page)}
    assert not left, f"{lang}: still English: {left}"
    assert f'<html lang="{lang}">' in page


def get(client, path, lang):
    return client.get(path, headers={"Accept-Language": lang}).get_data(as_text=True)


# --- the catalog ------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["hr", "sr", "ko"])
def test_the_web_catalog_is_whole_and_translated_in_every_language(lang):
    assert set(WEB_LABELS[lang]) == set(WEB_LABELS["en"])
    for key, english in WEB_LABELS["en"].items():
        text = WEB_LABELS[lang][key]
        assert sorted(FIELD.findall(text)) == sorted(FIELD.findall(english)), (lang, key)
        assert text != english, (lang, key)
        if lang == "ko":
            assert HANGUL.search(text), (key, text)


def test_the_web_catalog_keeps_the_seed_guides_terms():
    """Croatian posao/čvor, Serbian job/nod (as their guides write them), Korean 작업/노드."""
    for key, text in WEB_LABELS["hr"].items():
        assert not re.search(r"\bjob\w*|\bnod\w*\b", text), (key, text)
    for key, text in WEB_LABELS["sr"].items():
        assert not re.search(r"\bpos(ao|la|lu)\b|čvor", text), (key, text)
    assert "posla" in WEB_LABELS["hr"]["nm_job"] and "joba" in WEB_LABELS["sr"]["nm_job"]
    assert "작업" in WEB_LABELS["ko"]["nm_job"] and "노드" in WEB_LABELS["ko"]["idx_facts"]


def test_keys_of_both_catalogs_do_not_collide():
    assert not set(WEB_LABELS["en"]) & set(LABELS["en"])


# --- pages ------------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["ko", "hr", "sr", "sr-Cyrl"])
def test_upload_form_has_no_english_label(app, lang):
    client = app.test_client()
    english = get(client, "/", "en")
    page = get(client, "/", lang)
    assert_no_english(english, page, lang)
    if lang == "ko":
        assert HANGUL.search(page) and "로그 붙여 넣기" in page and "Paste the log" not in page
    if lang == "sr-Cyrl":
        assert CYRILLIC.search(page)
    assert "<code>troubleshoot-probe --json</code>" in page   # the command stays code, not escaped text


@pytest.mark.parametrize("lang", ["ko", "hr", "sr"])
def test_result_page_forms_share_link_and_helpdesk_in_the_readers_language(app, lang):
    client = app.test_client()
    token = submit(client, OOM_LOG)
    english = get(client, f"/s/{token}", "en")
    page = get(client, f"/s/{token}", lang)
    assert_no_english(english, page, lang)
    for key in ("share_label", "fb_found", "fb_fixed", "fb_comment", "fb_send", "hd_send", "hd_contact",
                "del_title", "del_confirm"):
        assert unescape(WEB_LABELS[lang][key]) in unescape(page), key
    # the site-side note names the button by its translated label
    assert "Send to the helpdesk" not in page
    assert f'<span class="badge">{WEB_LABELS[lang]["sev_error"]}</span>' in page   # the severity badge


@pytest.mark.parametrize("lang", ["ko", "hr"])
def test_no_known_failure_page_in_the_readers_language(app, lang):
    client = app.test_client()
    token = submit(client, NOTHING_KNOWN)
    english = get(client, f"/s/{token}", "en")
    assert "No known failure found" in english and "Tell us what it was" in english
    page = get(client, f"/s/{token}", lang)
    assert_no_english(english, page, lang)
    assert WEB_LABELS[lang]["res_none"] in page and WEB_LABELS[lang]["fb_none"] in page
    assert "<code>#SBATCH</code>" in page


def test_helpdesk_request_flash_and_ticket_status_are_translated(app):
    client = app.test_client()
    token = submit(client, OOM_LOG)
    r = client.post(f"/s/{token}/helpdesk", data={"contact": "ana", "message": "pomoć"},
                    headers={"Accept-Language": "hr"})
    assert r.status_code == 303
    page = get(client, f"/s/{token}", "hr")
    assert WEB_LABELS["hr"]["fl_sent"] in page                        # the flash
    assert "Poslano podršci" in page and "stanje: Novo" in page         # the ticket line, its status
    assert "Sent to the helpdesk" not in page and "status: New" not in page


def test_feedback_flash_in_serbian_and_a_bad_answer_too(app):
    client = app.test_client()
    token = submit(client, OOM_LOG)
    client.post(f"/s/{token}/feedback", data={"verdict": "fixed"}, headers={"Accept-Language": "sr"})
    page = get(client, f"/s/{token}", "sr")
    assert WEB_LABELS["sr"]["fl_thanks"] in page and "Thank you" not in page
    client.post(f"/s/{token}/feedback", data={"verdict": "nonsense"}, headers={"Accept-Language": "ko"})
    page = get(client, f"/s/{token}", "ko")
    assert WEB_LABELS["ko"]["fl_verdict"] in page and "verdict must be" not in page


def test_input_error_on_the_form_in_korean(app):
    r = app.test_client().post("/submit", data={"log": "  "}, headers={"Accept-Language": "ko"})
    assert r.status_code == 400
    page = r.get_data(as_text=True)
    assert WEB_LABELS["ko"]["err_no_log"] in page and "paste a log" not in page
    r = app.test_client().post("/submit", data={"log": OOM_LOG, "facts": "{nope"}, headers={"Accept-Language": "hr"})
    page = unescape(r.get_data(as_text=True))
    assert "podaci nisu ispravan JSON:" in page and "not valid JSON" not in page


def test_api_errors_stay_english(app):
    r = app.test_client().post("/api/v1/diagnose", data=b"", headers={"Accept-Language": "ko",
                                                                     "Content-Type": "text/plain"})
    assert r.status_code in (400, 404, 415), r.status_code
    assert not HANGUL.search(r.get_data(as_text=True))


def test_413_error_page_in_croatian(tmp_path, web_kb):
    app = make_app(f"sqlite:///{tmp_path}/big.sqlite3", tmp_path, web_kb, MAX_CONTENT_LENGTH=1 << 20,
                   MAX_FORM_MEMORY_SIZE=1000)
    client = app.test_client()
    r = client.post("/submit", data={"log": "x" * 5000}, content_type="multipart/form-data",
                    headers={"Accept-Language": "hr"})
    assert r.status_code == 413
    page = unescape(r.get_data(as_text=True))
    assert "Preveliko" in page and "Zalijepljeni log može imati najviše 0.000954 MiB" in page
    assert "(najviše 1 MiB)" in page and "Natrag na početnu stranicu" in page
    assert "larger than" not in page and "pasted log" not in page and "Too Large" not in page
    r = client.post("/submit", data={"log": "x" * 5000}, content_type="multipart/form-data")
    assert "pasted log can be at most 0.000954 MiB" in r.get_data(as_text=True)   # English unchanged
    close_app(app)


@pytest.mark.parametrize("lang, words", [("ko", "찾을 수 없음"), ("sr", "Nije pronađeno"), ("sr-Cyrl", "Није пронађено")])
def test_404_page_in_the_readers_language(app, lang, words):
    r = app.test_client().get("/s/no-such-token", headers={"Accept-Language": lang})
    assert r.status_code == 404
    page = r.get_data(as_text=True)
    assert words in page and "Nothing here" not in page and "Not Found" not in page


def test_progress_page_and_scan_errors_are_translated(app):
    from flask import render_template
    row = SimpleNamespace(source="slurm-1.out", total_bytes=4 << 20, progress_bytes=1 << 20, share_token="t")
    with app.test_request_context("/s/t", headers={"Accept-Language": "ko"}):
        page = render_template("progress.html", row=row)
    assert "로그를 검사하는 중" in page and "(25%)" in page and "Scanning" not in page and "read" not in page
    from gpu_troubleshooter.web.service import INTERNAL_ERRORS, INTERRUPTED
    from gpu_troubleshooter.web.filters import scan_error
    with app.test_request_context("/", headers={"Accept-Language": "hr"}):
        assert scan_error(INTERRUPTED) == WEB_LABELS["hr"]["dg_interrupted"]
        assert scan_error(INTERNAL_ERRORS[1]) == WEB_LABELS["hr"]["dg_internal"]
        assert scan_error("not a gzip file") == "not a gzip file"   # the reader's own words stay


def test_kb_index_search_form_translated(app):
    page = get(app.test_client(), "/kb/?q=zzzzqqq", "hr")
    assert WEB_LABELS["hr"]["kb_nothing"] in page and "Nothing matches" not in page
    assert "Pretražite naslove" in page


def test_kb_index_lists_translated_titles_and_finds_by_english_message(tmp_path):
    from gpu_troubleshooter.knowledge import load_knowledge_base
    from gpu_troubleshooter.view import entry_view
    from gpu_troubleshooter.web.service import knowledge_base
    app = make_app(f"sqlite:///{tmp_path}/kb.sqlite3", tmp_path, load_knowledge_base())
    client = app.test_client()
    english = get(client, "/kb/?q=out+of+memory", "en")
    first = re.search(r'<li><a href="/kb/([^"]+)">', english).group(1)
    with app.app_context():
        entry = knowledge_base().get(first)
        en_title, ko_title = entry_view(entry, "en").title, entry_view(entry, "ko").title
    assert ko_title != en_title and HANGUL.search(ko_title)
    page = unescape(get(client, "/kb/?q=out+of+memory", "ko"))    # searched by the English message
    assert f'<a href="/kb/{first}">{ko_title}</a>' in page and en_title not in page
    close_app(app)


def test_catalog_text_is_escaped_and_only_code_fields_are_markup(app, monkeypatch):
    monkeypatch.setitem(WEB_LABELS["hr"], "idx_facts_json", "<i>podaci</i> {cmd}")
    monkeypatch.setitem(WEB_LABELS["hr"], "idx_lead", "<script>alert(1)</script>")
    page = get(app.test_client(), "/", "hr")
    assert "&lt;i&gt;podaci&lt;/i&gt; <code>troubleshoot-probe --json</code>" in page
    assert "<script>alert" not in page and "&lt;script&gt;" in page


def test_a_source_name_with_markup_stays_escaped_in_a_translated_heading(app):
    client = app.test_client()
    import io
    r = client.post("/submit", data={"logfile": (io.BytesIO(OOM_LOG.encode()), "<b>x</b>.log")})
    token = r.headers["Location"].rsplit("/", 1)[-1]
    page = get(client, f"/s/{token}", "ko")
    assert "<b>x</b>" not in page


# --- the default {site.helpdesk} --------------------------------------------------------

def test_default_helpdesk_is_in_the_readers_language_and_a_site_value_wins():
    from gpu_troubleshooter.knowledge import load_knowledge_base
    from gpu_troubleshooter.view import entry_view
    kb = load_knowledge_base()
    assert not kb.site.get("helpdesk")   # no English prose default in the bundled _site.yaml
    entry = kb.get("gpu-xid-error")

    def texts(lang, site):
        return " ".join(f["text"] for f in entry_view(entry, lang, site).to_dict()["fixes"])
    assert "your cluster's helpdesk" in texts("en", kb.site)
    for lang, words in (("hr", "na helpdesk vašeg klastera"), ("sr", "na helpdesk vašeg klastera"),
                        ("ko", "클러스터 헬프데스크에")):
        out = texts(lang, kb.site)
        assert words in out and "your cluster" not in out and "<helpdesk>" not in out, lang
    site = {**kb.site, "helpdesk": "hpc-podrska@uni.example"}
    assert "na hpc-podrska@uni.example" in texts("hr", site) and "helpdesk vašeg" not in texts("hr", site)
