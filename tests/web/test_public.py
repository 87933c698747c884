"""The user's flow: submit, read the fix, share the link, send to the helpdesk."""
import gzip
import io

from conftest import needs_engine_facts, OOM_LOG, submit


def test_index_has_labelled_form(client):
    html = client.get("/").get_data(as_text=True)
    for field in ("log", "logfile", "facts", "facts_file"):
        assert f'<label for="{field}"' in html and f'id="{field}"' in html
    assert "<h1>" in html and 'lang="en"' in html


def test_paste_shows_fix_first_then_evidence(client):
    token = submit(client)
    html = client.get(f"/s/{token}").get_data(as_text=True)
    assert "Demo GPU out of memory" in html
    fix, evidence, values = html.index("How to fix it"), html.index("Evidence from your log"), html.index("Values found")
    assert fix < evidence < values
    assert "<mark>torch.cuda.OutOfMemoryError: CUDA out of memory" in html
    assert "<dd>2.00 GiB</dd>" in html and "Confidence" in html
    assert '<code class="lang-bash">#SBATCH --partition=demo-gpu</code>' in html
    assert "tinygrid" in html  # cluster read from the log


def test_token_is_unguessable_and_private(client):
    token = submit(client)
    assert len(token) >= 43
    assert client.get(f"/s/{token[:-1]}x").status_code == 404
    assert client.get("/s/").status_code == 404
    assert client.get(f"/s/{token}").headers["Cache-Control"] == "no-store"


def test_upload_plain_and_gzip_agree(client):
    tokens = []
    for name, payload in (("job.out", OOM_LOG.encode()), ("job.out.gz", gzip.compress(OOM_LOG.encode()))):
        r = client.post("/submit", data={"logfile": (io.BytesIO(payload), name)}, content_type="multipart/form-data")
        assert r.status_code == 303
        tokens.append(r.headers["Location"].rsplit("/", 1)[-1])
    pages = [client.get(f"/s/{t}").get_data(as_text=True) for t in tokens]
    assert all("Demo GPU out of memory" in p for p in pages)
    assert "job.out.gz" in pages[1]


def test_no_known_failure_says_what_to_send(client):
    token = submit(client, log="epoch 1 done\nepoch 2 done\nall good\n")
    html = client.get(f"/s/{token}").get_data(as_text=True)
    assert "No known failure found" in html and "What to send the helpdesk" in html


def test_harmless_lines_are_shown_apart_from_the_failure(client):
    noise = "E0000 cuda_dnn.cc:8310] Unable to register demo factory: already registered\n"
    token = submit(client, log=noise + "epoch 1 done\n" + noise)
    html = client.get(f"/s/{token}").get_data(as_text=True)
    assert "No known failure found" in html
    assert "Harmless lines, no action needed" in html and "Demo start-up noise" in html and "log lines 1, 3" in html
    doc = client.get(f"/api/v1/submissions/{token}").get_json()
    assert doc["diagnosis"]["findings"] == [] and doc["diagnosis"]["harmless"][0]["id"] == "demo-noise"


def test_empty_submission_is_refused(client):
    r = client.post("/submit", data={"log": "   "})
    assert r.status_code == 400 and "paste a log" in r.get_data(as_text=True)


def test_binary_upload_is_reported_not_crashing(client):
    r = client.post("/submit", data={"logfile": (io.BytesIO(b"\x00\x01\x02" * 4000), "core.bin")},
                    content_type="multipart/form-data")
    html = client.get(r.headers["Location"]).get_data(as_text=True)
    assert "could not be diagnosed" in html


def test_facts_are_stored_and_bad_facts_refused(client, app):
    needs_engine_facts()
    token = submit(client, facts='{"scheduler": {"cluster": "bigiron", "partition": "a100"}}')
    html = client.get(f"/s/{token}").get_data(as_text=True)
    assert "partition a100" in html
    r = client.post("/submit", data={"log": OOM_LOG, "facts": "{not json"})
    assert r.status_code == 400 and "not valid JSON" in r.get_data(as_text=True)


def test_send_to_helpdesk_creates_one_ticket(client, app):
    token = submit(client)
    r = client.post(f"/s/{token}/helpdesk", data={"contact": "bob@example.org", "message": "please help"})
    assert r.status_code == 303
    html = client.get(f"/s/{token}").get_data(as_text=True)
    assert "Sent to the helpdesk" in html and "ticket #" in html
    client.post(f"/s/{token}/helpdesk", data={"message": "more detail"})
    from gpu_troubleshooter.web import db
    from gpu_troubleshooter.web.models import Ticket
    with db.new_session(app) as s:
        tickets = s.query(Ticket).all()
        assert len(tickets) == 1 and "more detail" in tickets[0].message


def test_large_upload_scans_in_background_with_progress(db_url, tmp_path, web_kb):
    from conftest import close_app, make_app
    app = make_app(db_url, tmp_path, web_kb, BACKGROUND_BYTES=1024)
    client = app.test_client()
    big = ("progress line that says nothing much\n" * 20000 + OOM_LOG).encode()
    r = client.post("/submit", data={"logfile": (io.BytesIO(big), "big.out")}, content_type="multipart/form-data")
    location = r.headers["Location"]
    app.extensions["scan_pool"].shutdown(wait=True)  # let the scan finish
    html = client.get(location).get_data(as_text=True)
    assert "Demo GPU out of memory" in html
    close_app(app)


def test_progress_page_refreshes_without_js(app, client):
    from gpu_troubleshooter.web import db
    from gpu_troubleshooter.web.intake import token_digest
    from gpu_troubleshooter.web.models import Submission
    with db.new_session(app) as s:
        s.add(Submission(token=token_digest("t" * 43), state="processing", total_bytes=1000, progress_bytes=250, source="x.log",
                         error="", tail="", failure_class="", confidence=0, cluster="", partition=""))
        s.commit()
    html = client.get("/s/" + "t" * 43).get_data(as_text=True)
    assert '<meta http-equiv="refresh" content="2">' in html and "25%" in html


def test_healthz(client):
    r = client.get("/healthz")
    assert r.status_code == 200 and r.get_json()["status"] == "ok"


def test_static_assets_served_locally(client):
    html = client.get("/").get_data(as_text=True)
    assert "http://" not in html.split("<body>")[0] and "https://" not in html.split("<body>")[0]
    assert client.get("/static/style.css").status_code == 200


def test_share_token_is_stored_hashed_and_links_ignore_the_host_header(app, client):
    from gpu_troubleshooter.web import db
    from gpu_troubleshooter.web.intake import token_digest
    from gpu_troubleshooter.web.models import Submission
    r = client.post("/api/v1/submissions", json={"log": OOM_LOG}, headers={"Host": "evil.example"})
    token = r.get_json()["token"]
    assert "evil.example" not in r.get_data(as_text=True)
    with db.new_session(app) as s:
        stored = s.query(Submission).one().token
    assert stored == token_digest(token) and token not in stored
    page = client.get(f"/s/{token}", headers={"Host": "evil.example"}).get_data(as_text=True)
    assert "evil.example" not in page
    app.config["BASE_URL"] = "https://gpu-help.example.edu"
    page = client.get(f"/s/{token}", headers={"Host": "evil.example"}).get_data(as_text=True)
    assert f'value="https://gpu-help.example.edu/s/{token}"' in page


def test_access_log_masks_share_tokens():
    from gpu_troubleshooter.web.accesslog import mask
    line = '127.0.0.1 - - "GET /s/w2X8FfqXYndeX_utgNpEEjfcAIGU_vpJRoOae_kDb3E HTTP/1.1" 200'
    assert mask(line) == '127.0.0.1 - - "GET /s/<token> HTTP/1.1" 200'
    assert "<token>" in mask("POST /api/v1/submissions/w2X8FfqXYndeX_utgNpEEjfcAIGU_vpJRoOae_kDb3E/feedback")
    assert mask("GET /staff/tickets/12 HTTP/1.1") == "GET /staff/tickets/12 HTTP/1.1"


def test_production_refuses_to_start_without_secret_key(tmp_path):
    import os
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path}/x.sqlite3"
    r = subprocess.run([sys.executable, "-c", "import gpu_troubleshooter.web.wsgi"], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 3 and "SECRET_KEY is not set" in r.stderr and "Traceback" not in r.stderr
    env["SECRET_KEY"] = "k" * 40
    assert subprocess.run([sys.executable, "-c", "import gpu_troubleshooter.web.wsgi"], env=env,
                          capture_output=True, timeout=60).returncode == 0
