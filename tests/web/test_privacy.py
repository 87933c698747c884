"""The submitter's data: deletion, retention with anonymous counts, the contact
address for replies (staff only), mail through SMTP, scoped API tokens, login throttling."""
import subprocess
import sys
import os
from datetime import timedelta

import pytest
from conftest import OOM_LOG, PASSWORD, add_staff, close_app, make_app, submit

from gpu_troubleshooter.web import db
from gpu_troubleshooter.web.models import Feedback, PrunedCount, Submission, Ticket, utcnow


def _login(client):
    r = client.post("/staff/login", data={"name": "alice", "password": PASSWORD})
    assert r.status_code == 303


def test_submitter_deletes_from_the_page_and_the_api(app, client):
    token = submit(client)
    client.post(f"/s/{token}/helpdesk", data={"contact": "u@example.org", "message": "help"})
    client.post(f"/s/{token}/feedback", data={"verdict": "fixed"})
    assert client.post(f"/s/{token}/delete", data={}).status_code == 400  # not confirmed
    r = client.post(f"/s/{token}/delete", data={"confirm": "yes"})
    assert r.status_code == 303 and client.get(f"/s/{token}").status_code == 404
    other = client.post("/api/v1/submissions", json={"log": OOM_LOG}).get_json()["token"]
    assert client.delete(f"/api/v1/submissions/{other}").status_code == 204
    assert client.get(f"/api/v1/submissions/{other}").status_code == 404
    with db.new_session(app) as s:
        assert s.query(Submission).count() == 0 and s.query(Ticket).count() == 0
        assert [f.submission_id for f in s.query(Feedback).all()] == [None]  # the answer's figure stays, unlinked


def test_retention_prunes_old_submissions_but_keeps_counts(app, client):
    add_staff(app)
    old, new = submit(client), submit(client)
    client.post(f"/s/{old}/helpdesk", data={"message": "x"})
    with db.new_session(app) as s:
        s.query(Submission).order_by(Submission.id).first().created_at = utcnow() - timedelta(days=100)
        ticket = s.query(Ticket).one()
        ticket.created_at = utcnow() - timedelta(days=100)
        s.commit()
    from gpu_troubleshooter.web.service import prune
    with db.new_session(app) as s:
        assert prune(s, 90) == 1
        assert s.query(Submission).count() == 1
        counts = {(c.kind, c.failure_class): c.count for c in s.query(PrunedCount).all()}
    assert counts == {("submission", "demo-oom"): 1, ("ticket", "demo-oom"): 1}
    assert client.get(f"/s/{old}").status_code == 404 and client.get(f"/s/{new}").status_code == 200
    _login(client)
    html = client.get("/staff/figures?days=365").get_data(as_text=True)
    assert "<td>demo-oom</td><td>2</td>" in html  # one pruned + one live


def test_contact_is_kept_for_staff_only(app, client):
    add_staff(app)
    token = submit(client)
    client.post(f"/s/{token}/helpdesk", data={"contact": "alice.smith@uni-example.edu", "message": "help"})
    public = client.get(f"/s/{token}").get_data(as_text=True) + client.get(f"/api/v1/submissions/{token}").get_data(as_text=True)
    assert "alice.smith@uni-example.edu" not in public
    _login(client)
    assert "alice.smith@uni-example.edu" in client.get("/staff/tickets/1").get_data(as_text=True)


@pytest.fixture
def smtp_sink():
    aiosmtpd = pytest.importorskip("aiosmtpd.controller")
    from aiosmtpd.handlers import Sink  # noqa: F401

    class Collect:
        def __init__(self):
            self.messages = []

        async def handle_DATA(self, server, session, envelope):
            self.messages.append((envelope.rcpt_tos, envelope.content.decode("utf-8", "replace")))
            return "250 OK"
    import socket
    with socket.socket() as probe:  # a free port on loopback (the Controller checks readiness by connecting)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    handler = Collect()
    controller = aiosmtpd.Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    yield controller, handler
    controller.stop()


def test_staff_reply_is_mailed_and_the_submitter_answers(db_url, tmp_path, web_kb, smtp_sink):
    controller, handler = smtp_sink
    port = controller.port
    app = make_app(db_url, tmp_path, web_kb, SMTP_HOST="127.0.0.1", SMTP_PORT=port, MAIL_FROM="helpdesk@hpc.example.edu")
    client = app.test_client()
    add_staff(app)
    token = submit(client)
    client.post(f"/s/{token}/helpdesk", data={"contact": "bob@uni-example.edu", "message": "still failing"})
    _login(client)
    r = client.post("/staff/tickets/1/reply", data={"reply": "Please try --mem=64G and tell us."})
    assert r.status_code == 303
    assert len(handler.messages) == 1
    import email
    from email import policy
    rcpt, raw = handler.messages[0]
    content = email.message_from_string(raw, policy=policy.default).get_content()
    assert rcpt == ["bob@uni-example.edu"] and "Please try --mem=64G" in content and token not in content
    page = client.get(f"/s/{token}").get_data(as_text=True)
    assert "Please try --mem=64G and tell us." in page and "The helpdesk" in page
    client.post(f"/s/{token}/reply", data={"text": "That worked, thanks!"})
    with db.new_session(app) as s:
        t = s.query(Ticket).one()
        assert t.status == "in_progress" and [n.from_user for n in t.notes] == [False, True]
    staff_page = client.get("/staff/tickets/1").get_data(as_text=True)
    assert "answer from the user" in staff_page and "That worked, thanks!" in staff_page
    close_app(app)


def test_token_scopes_and_revocation(app, client):
    from gpu_troubleshooter.web.auth import new_api_token
    from gpu_troubleshooter.web.models import ApiToken, StaffUser
    staff_id = add_staff(app)
    with db.new_session(app) as s:
        user = s.get(StaffUser, staff_id)
        submit_token, staff_token = new_api_token(s, user, scope="submit"), new_api_token(s, user)
        s.commit()
    as_submit = {"Authorization": f"Bearer {submit_token}"}
    r = client.post("/api/v1/submissions", json={"log": OOM_LOG}, headers=as_submit)
    assert r.status_code == 201
    assert client.get("/api/v1/tickets", headers=as_submit).status_code == 403
    assert client.get("/api/v1/tickets", headers={"Authorization": f"Bearer {staff_token}"}).status_code == 200
    with db.new_session(app) as s:
        for t in s.query(ApiToken).all():
            t.revoked_at = utcnow()
        s.commit()
    assert client.get("/api/v1/tickets", headers={"Authorization": f"Bearer {staff_token}"}).status_code == 401


def test_login_throttling_is_shared_by_workers(db_url, tmp_path, web_kb):
    """Two apps on one database stand for two gunicorn workers: failures add up across them."""
    a = make_app(db_url, tmp_path, web_kb, LOGIN_MAX_FAILURES_ACCOUNT=4)
    b = make_app(db_url, tmp_path, web_kb, LOGIN_MAX_FAILURES_ACCOUNT=4)
    add_staff(a)
    ca, cb = a.test_client(), b.test_client()
    statuses = [(ca if i % 2 else cb).post("/staff/login", data={"name": "alice", "password": "wrong"}).status_code
                for i in range(6)]
    assert statuses == [401, 401, 401, 401, 429, 429]
    r = ca.post("/staff/login", data={"name": "alice", "password": PASSWORD})
    assert r.status_code == 429 and r.headers["Retry-After"] == "900"  # even the right password waits
    close_app(a)
    close_app(b)


def test_cli_prune_and_token_scopes(db_url):
    env = {**os.environ, "DATABASE_URL": db_url, "SECRET_KEY": "x" * 32}

    def run(*args, stdin=None):
        return subprocess.run([sys.executable, "-m", "gpu_troubleshooter", *args], input=stdin, capture_output=True,
                              text=True, env=env, timeout=120)
    assert run("db", "upgrade").returncode == 0
    assert run("staff", "add", "erin", "--password-stdin", stdin=PASSWORD + "\n").returncode == 0
    r = run("staff", "token", "erin", "--scope", "submit", "--label", "epilog")
    assert r.returncode == 0 and r.stdout.startswith("tss_")
    listing = run("staff", "tokens").stdout
    assert "\terin\tsubmit\tactive\tepilog" in listing
    assert run("staff", "revoke", listing.split("\t")[0]).returncode == 0
    assert "\tsubmit\trevoked\t" in run("staff", "tokens").stdout
    r = run("db", "prune", "--days", "30")
    assert r.returncode == 0 and "0 submission(s)" in r.stdout


def test_submitters_are_mailed_when_a_promoted_entry_answers_them(db_url, tmp_path, web_kb, smtp_sink):
    controller, handler = smtp_sink
    app = make_app(db_url, tmp_path, web_kb, SMTP_HOST="127.0.0.1", SMTP_PORT=controller.port)
    client = app.test_client()
    token = submit(client, log="job 1\nQuotaShardError: shard /x/part-7.bin is damaged\n")
    client.post(f"/s/{token}/helpdesk", data={"contact": "carol@uni-example.edu", "message": "what is this?"})
    site = tmp_path / "site" / "storage"
    site.mkdir(parents=True)
    (site / "quota-shard.yaml").write_text(
        "id: quota-shard\ntitle: A data shard is damaged\nsummary: the shard file is damaged\ntags: [storage]\n"
        "severity: error\nsignatures:\n  - regex: 'QuotaShardError: shard'\n    weight: 1.0\ncauses: [a damaged file]\n"
        "fixes:\n  - title: Copy the shard again\n    text: Copy it again.\n")
    from gpu_troubleshooter.web.service import rediagnose_unknown
    app.config.update(KB_DIRS=(str(tmp_path / "site"),), KB_BUNDLED=False)
    with app.app_context():
        with db.new_session(app) as s:
            assert rediagnose_unknown(app, s) == 1
    assert [rcpt for rcpt, _ in handler.messages] == [["carol@uni-example.edu"]]
    assert "A data shard is damaged" in handler.messages[0][1] and token not in handler.messages[0][1]
    close_app(app)
