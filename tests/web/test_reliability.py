"""No submission stays "processing": failures are stored as failures, lost scans are
marked failed, and a full background queue answers 503 with Retry-After."""
import threading
from datetime import timedelta

from conftest import OOM_LOG, close_app, make_app

from gpu_troubleshooter.web import db
from gpu_troubleshooter.web.intake import token_digest
from gpu_troubleshooter.web.models import Submission, utcnow


def test_a_scan_that_crashes_is_stored_as_failed(app, client, monkeypatch):
    from gpu_troubleshooter.web import service

    def boom(*args, **kwargs):
        raise RuntimeError("scanner exploded")
    monkeypatch.setattr(service, "diagnose_raw", boom)
    r = client.post("/api/v1/submissions", json={"log": OOM_LOG})
    body = r.get_json()
    assert body["state"] == "error" and "internal error" in body["error"]
    page = client.get(f"/s/{body['token']}").get_data(as_text=True)
    assert "internal error while scanning" in page and 'http-equiv="refresh"' not in page


def test_scans_lost_to_a_restart_are_marked_failed(db_url, tmp_path, web_kb):
    app = make_app(db_url, tmp_path, web_kb)
    with db.new_session(app) as s:
        for token, age in (("a" * 43, 120), ("b" * 43, 1)):
            s.add(Submission(token=token_digest(token), state="processing", source="x.log", error="", tail="",
                             failure_class="", confidence=0, cluster="", partition="",
                             created_at=utcnow() - timedelta(minutes=age)))
        s.commit()
    close_app(app)
    app = make_app(db_url, tmp_path, web_kb)  # a restart
    with db.new_session(app) as s:
        states = {r.token: (r.state, r.error) for r in s.query(Submission).all()}
    assert states[token_digest("a" * 43)][0] == "error" and "interrupted" in states[token_digest("a" * 43)][1]
    assert states[token_digest("b" * 43)][0] == "processing"  # another worker may still be on it
    page = app.test_client().get("/s/" + "a" * 43).get_data(as_text=True)
    assert "interrupted" in page
    close_app(app)


def test_full_background_queue_answers_503_with_retry_after(db_url, tmp_path, web_kb, monkeypatch):
    from gpu_troubleshooter.web import service
    app = make_app(db_url, tmp_path, web_kb, BACKGROUND_BYTES=10, BACKGROUND_QUEUE=1)
    client = app.test_client()
    release, started = threading.Event(), threading.Event()
    real = service.diagnose_raw

    def slow(*args, **kwargs):
        started.set()
        release.wait(30)
        return real(*args, **kwargs)
    monkeypatch.setattr(service, "diagnose_raw", slow)
    first = client.post("/api/v1/submissions", data=OOM_LOG, content_type="text/plain")
    assert first.status_code == 202
    assert started.wait(10)
    second = client.post("/api/v1/submissions", data=OOM_LOG, content_type="text/plain")
    assert second.status_code == 503 and second.headers["Retry-After"] == "30"
    page = client.post("/submit", data={"log": OOM_LOG})
    assert page.status_code == 503 and "busy" in page.get_data(as_text=True)
    release.set()
    token = first.get_json()["token"]
    for _ in range(200):
        if client.get(f"/api/v1/submissions/{token}").get_json()["state"] != "processing":
            break
        threading.Event().wait(0.05)
    assert client.get(f"/api/v1/submissions/{token}").get_json()["state"] == "done"
    third = client.post("/api/v1/submissions", data=OOM_LOG, content_type="text/plain")
    assert third.status_code == 202  # the slot came back
    close_app(app)


def test_a_small_submission_is_one_commit(app, client):
    """The submit path writes its row once: no 'processing' row first, then the result."""
    from sqlalchemy import event
    commits, inserts = [], []
    engine = app.extensions["db_engine"]
    event.listen(engine, "commit", lambda conn: commits.append(1))

    def writes(conn, cursor, stmt, params, ctx, many):
        if stmt.lstrip().upper().startswith(("INSERT", "UPDATE")):
            inserts.append(stmt)
    event.listen(engine, "before_cursor_execute", writes)
    r = client.post("/api/v1/submissions", data=OOM_LOG, content_type="text/plain")
    assert r.status_code == 201 and r.get_json()["state"] == "done"
    assert len(commits) == 1, commits
    assert [s.split()[0].upper() for s in inserts] == ["INSERT"], inserts
    with app.app_context():
        row = db.new_session(app).query(Submission).one()
        assert row.state == "done" and row.failure_class != ""
