"""End to end in a real headless Chromium (Debian's; never a downloaded browser)."""
import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest
from conftest import OOM_LOG, PASSWORD, add_staff, close_app, make_app, required

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run"]


def _chromium():
    path = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):
        if required("browser"):
            pytest.fail(f"REQUIRE_BROWSER=1 but no chromium at {path}")
        pytest.skip("chromium not installed")
    try:
        from playwright.sync_api import sync_playwright  # noqa: F401
    except ImportError:
        if required("browser"):
            raise
        pytest.skip("playwright not installed")
    return path


@pytest.fixture
def live_server(tmp_path, web_kb):
    from werkzeug.serving import make_server
    app = make_app(f"sqlite:///{tmp_path}/e2e.sqlite3", tmp_path, web_kb, WTF_CSRF_ENABLED=True,
                   SERVER_NAME=None)
    add_staff(app)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    close_app(app)


def test_paste_read_fix_share_and_triage(live_server):
    from playwright.sync_api import sync_playwright
    shots = Path(os.environ.get("SCREENSHOT_DIR") or tempfile.mkdtemp(prefix="troubleshoot-shots-"))
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(live_server + "/")
        page.get_by_label("Paste the log").fill(OOM_LOG + "<script>window.pwned=1</script>\n")
        page.get_by_role("button", name="Diagnose").click()
        page.wait_for_url("**/s/*")
        page.get_by_role("heading", name="Demo GPU out of memory").wait_for(state="visible", timeout=15_000)
        assert "#SBATCH --partition=demo-gpu" in page.locator(".fixes code").first.inner_text()
        assert "CUDA out of memory" in page.locator("mark").first.inner_text()
        assert page.evaluate("window.pwned") is None  # the <script> in the log stayed text
        page.screenshot(path=str(shots / "result.png"), full_page=True)
        share = page.get_by_label("Private link to this result").input_value()

        other = browser.new_context().new_page()  # someone else follows the link
        other.goto(share)
        other.get_by_role("heading", name="Demo GPU out of memory").wait_for(state="visible", timeout=15_000)
        other.get_by_label("Message (optional)").fill("my job keeps dying")
        other.get_by_role("button", name="Send to the helpdesk").click()
        other.get_by_text("Sent to the helpdesk").first.wait_for(state="visible", timeout=15_000)

        page.goto(live_server + "/staff/")
        page.get_by_label("Name").fill("alice")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url("**/staff/**")
        page.get_by_role("link", name="#1").click()
        page.get_by_label("Status").select_option("in_progress")
        page.get_by_label("Assignee").select_option(label="alice")
        page.get_by_label("Internal note (not shown to the user)").fill("asked for the job script")
        page.get_by_role("button", name="Save").click()
        page.get_by_text("Ticket updated.").wait_for(state="visible", timeout=15_000)
        page.get_by_text("asked for the job script").wait_for(state="visible", timeout=15_000)
        page.goto(live_server + "/staff/?status=all")
        assert page.locator("td .status").first.inner_text() == "In progress"
        page.screenshot(path=str(shots / "triage.png"), full_page=True)
        page.set_viewport_size({"width": 390, "height": 844})  # the queue on a phone: no sideways page
        page.goto(live_server + "/staff/?status=all")
        page.locator("td .status").first.wait_for(state="visible", timeout=15_000)
        page.get_by_role("link", name="#1").wait_for(state="visible", timeout=15_000)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.screenshot(path=str(shots / "triage-390.png"), full_page=True)
        page.set_viewport_size({"width": 1200, "height": 900})
        page.goto(live_server + "/staff/figures")
        page.screenshot(path=str(shots / "figures.png"), full_page=True)
        browser.close()
    print(f"screenshots in {shots}")
    assert (shots / "result.png").stat().st_size > 10_000


UNKNOWN = """job 4711 on gpu-c{n}
Traceback (most recent call last):
  File "/home/u/proj/train.py", line {n}, in main
ShardIndexError: shard /scratch/u/data/part-{n}.bin has {n} bad records
srun: error: gpu-c{n}: task 0: Exited with exit code 1
"""


def test_feedback_grouping_and_draft_in_the_browser(live_server, tmp_path):
    from playwright.sync_api import sync_playwright
    shots = Path(os.environ.get("SCREENSHOT_DIR") or tempfile.mkdtemp(prefix="troubleshoot-shots-"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        for n in (101, 202):  # one unknown error, twice, with other numbers
            page.goto(live_server + "/")
            page.get_by_label("Paste the log").fill(UNKNOWN.format(n=n))
            page.get_by_role("button", name="Diagnose").click()
            page.wait_for_url("**/s/*")
        page.get_by_label("This is not what happened").check()
        page.get_by_label("Comment (optional; secrets are removed before it is stored)").fill("data was corrupt")
        page.get_by_role("button", name="Send feedback").click()
        page.get_by_text("Thank you").first.wait_for(state="visible", timeout=15_000)

        page.goto(live_server + "/")
        page.get_by_label("Paste the log").fill(OOM_LOG)
        page.get_by_role("button", name="Diagnose").click()
        page.wait_for_url("**/s/*")
        page.get_by_label("Yes, it fixed it").check()
        page.get_by_label("Which fix did you apply? (number, optional)").fill("1")
        page.get_by_role("button", name="Send feedback").click()
        page.get_by_text("Thank you").first.wait_for(state="visible", timeout=15_000)

        page.goto(live_server + "/staff/login")
        page.get_by_label("Name").fill("alice")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.goto(live_server + "/staff/unknown/")
        links = page.locator("table.groups a")
        assert links.count() == 1 and "ShardIndexError" in links.first.inner_text()
        assert "2" in page.locator("table.groups td").nth(1).inner_text()
        links.first.click()
        page.get_by_role("button", name="Make a draft entry from this group").click()
        page.get_by_text("Draft entry written to").wait_for(state="visible", timeout=15_000)
        page.screenshot(path=str(shots / "unknown-group.png"), full_page=True)
        page.goto(live_server + "/staff/figures")
        assert "#1: 1" in page.locator("body").inner_text()
        browser.close()


def test_first_fix_visible_on_a_phone_without_scrolling(live_server):
    """Issue 9: on a 390 x 844 phone the first fix (its title and the start of its text) is on the
    first screen of the result page."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=ARGS)
        page = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True)
        page.goto(live_server + "/")
        page.get_by_label("Paste the log").fill(OOM_LOG)
        page.get_by_role("button", name="Diagnose").click()
        page.wait_for_url("**/s/*")
        first = page.locator(".finding .fixes > li").first
        box = first.locator("h4").bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 844, box
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        assert page.evaluate("window.scrollY") == 0
        browser.close()


@pytest.mark.parametrize("locale, paste, diagnose", [("hr-HR", "Zalijepite log", "Dijagnosticiraj"),
                                                    ("ko-KR", "로그 붙여 넣기", "진단하기")])
def test_translated_result_page_still_shows_the_first_fix_on_a_phone(live_server, locale, paste, diagnose):
    """The translated labels (longer in Croatian) keep the first fix on a 390 x 844 phone's first
    screen, with no sideways scrolling; the browser's own Accept-Language chooses the language."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=ARGS)
        page = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, locale=locale)
        page.goto(live_server + "/")
        page.get_by_label(paste).fill(OOM_LOG)
        page.get_by_role("button", name=diagnose).click()
        page.wait_for_url("**/s/*")
        first = page.locator(".finding .fixes > li").first
        box = first.locator("h4").bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 844, box
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
        assert page.evaluate("window.scrollY") == 0
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        browser.close()


def test_harmless_lines_sit_below_the_fix_in_the_browser(live_server):
    """A log with a failure and known noise: the failure's fix first, the noise in its own
    section further down, named as harmless (never a second failure)."""
    from playwright.sync_api import sync_playwright
    noise = "E0000 cuda_dnn.cc:8310] Unable to register demo factory: already registered\n"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(live_server + "/")
        page.get_by_label("Paste the log").fill(noise + OOM_LOG)
        page.get_by_role("button", name="Diagnose").click()
        page.wait_for_url("**/s/*")
        page.get_by_role("heading", name="Demo GPU out of memory").wait_for(state="visible", timeout=15_000)
        harmless = page.get_by_role("heading", name="Harmless lines, no action needed")
        harmless.wait_for(state="visible", timeout=15_000)
        assert "Demo start-up noise" in page.locator("section.harmless").inner_text()
        fix_top = page.locator(".fixes code").first.bounding_box()["y"]
        assert fix_top < harmless.bounding_box()["y"]
        browser.close()
