"""Secrets never stored, escaping, CSRF, size limits, rate limits, cookies."""
import glob
import gzip
import io
import logging
import secrets
import string
from pathlib import Path

import pytest
from conftest import needs_engine_facts, OOM_LOG, ROOT, close_app, make_app, submit


def _canaries():
    rnd = lambda alphabet, n: "".join(secrets.choice(alphabet) for _ in range(n))  # noqa: E731
    return {
        "aws": "AKIA" + rnd(string.ascii_uppercase + string.digits, 16),
        "github": "ghp_" + rnd(string.ascii_letters + string.digits, 36),
        "password": "Pw" + secrets.token_hex(12),
        "bearer": secrets.token_hex(24),
        # the kinds the web review found leaking (§2.2)
        "docker_auth": rnd(string.ascii_letters + string.digits, 32),
        "kaggle": secrets.token_hex(16),
        "munge": rnd(string.ascii_letters + string.digits, 40),
        "docker_login": "Dl" + secrets.token_hex(8),
        "mysql": "My" + secrets.token_hex(8),
        # facts secrets that only their key gives away
        "facts_password": "Fp" + secrets.token_hex(8),
        "facts_wandb": secrets.token_hex(20),
    }


def _planted_log(c, marker):
    return (f"{marker} job starting\n"
            f"export AWS_ACCESS_KEY_ID={c['aws']}\n"
            f"git clone https://x:{c['github']}@github.com/org/repo\n"
            f"export DB_PASSWORD={c['password']}\n"
            f"curl -H 'Authorization: Bearer {c['bearer']}' https://api.example.org\n"
            f'{{"auths": {{"nvcr.io": {{"auth": "{c["docker_auth"]}"}}}}}}\n'
            f'cat ~/.kaggle/kaggle.json: {{"username":"alice","key":"{c["kaggle"]}"}}\n'
            f"MUNGE_KEY={c['munge']}\n"
            f"+ docker login -u alice -p {c['docker_login']} nvcr.io\n"
            f"+ mysql -u root -p{c['mysql']} results\n" + OOM_LOG)


def _stored_text(app, db_url):
    """Everything the database holds, as text (files for SQLite, rows for PostgreSQL)."""
    if db_url.startswith("sqlite"):
        base = db_url[len("sqlite:///"):]
        return b"".join(Path(p).read_bytes() for p in glob.glob(base + "*")).decode("latin-1")
    from sqlalchemy import text
    with app.extensions["db_engine"].connect() as conn:
        out = []
        for table in ("submission", "ticket", "note", "staff_user", "api_token", "feedback"):
            out += conn.execute(text(f"SELECT row_to_json(t)::text FROM {table} t")).scalars().all()
    return "\n".join(out)


def test_canary_secrets_never_stored_or_logged(db_url, tmp_path, web_kb, caplog):
    needs_engine_facts()
    caplog.set_level(logging.DEBUG)
    app = make_app(db_url, tmp_path, web_kb, BACKGROUND_BYTES=2048)
    client = app.test_client()
    c, marker = _canaries(), "MARKER" + secrets.token_hex(6)
    log = _planted_log(c, marker)
    facts = ('{"env": {"HF_TOKEN": "%s", "note": "password=%s", "PASSWORD": "%s", "WANDB_API_KEY": "%s"}}'
             % (c["github"], c["password"], c["facts_password"], c["facts_wandb"]))
    token = submit(client, log=log, facts=facts)
    client.post(f"/s/{token}/helpdesk", data={"contact": "u@example.org", "message": f"my token is {c['github']}"})
    client.post("/submit", data={"logfile": (io.BytesIO(gzip.compress(log.encode())), "job.gz")},
                content_type="multipart/form-data")
    client.post("/submit", data={"logfile": (io.BytesIO((log + "filler line\n" * 500).encode()), "big.log")},
                content_type="multipart/form-data")  # background path
    client.post("/api/v1/submissions", json={"log": log})
    client.post("/api/v1/diagnose", data=log, content_type="text/plain")
    app.extensions["scan_pool"].shutdown(wait=True)
    client.post(f"/s/{token}/feedback", data={"verdict": "fixed", "comment": f"worked; my password={c['password']}"})
    page = client.get(f"/s/{token}").get_data(as_text=True) + client.get(f"/api/v1/submissions/{token}").get_data(as_text=True)
    stored = _stored_text(app, db_url)
    close_app(app)
    assert marker in stored, "the search must see the stored log, or it proves nothing"
    assert "Demo GPU out of memory" in page  # the diagnosis survived redaction
    uploads = b"".join(p.read_bytes() for p in Path(tmp_path / "uploads").rglob("*") if p.is_file())
    logged = caplog.text
    for name, secret in c.items():
        assert secret not in stored, f"{name} canary stored in the database"
        assert secret.encode() not in uploads, f"{name} canary left in the upload dir"
        assert secret not in logged, f"{name} canary in the app's log output"
        assert secret not in page, f"{name} canary shown on the result page"


def _example_logs():
    logs = sorted(glob.glob(str(ROOT / "knowledge" / "**" / "*.log"), recursive=True))
    return logs[:200] + [str(Path(__file__).parent / "data" / "slurm-oom.out")]


def test_redaction_does_not_change_the_diagnosis(web_kb):
    from gpu_troubleshooter.engine import diagnose_text
    from gpu_troubleshooter.web.redaction import redact_lines
    for path in _example_logs():
        raw = Path(path).read_text(errors="replace")
        redacted = "".join(redact_lines(raw.splitlines(keepends=True)))
        a, b = diagnose_text(raw, web_kb).findings, diagnose_text(redacted, web_kb).findings
        assert [f.id for f in a] == [f.id for f in b], path


def test_script_in_log_is_shown_as_text(client):
    token = submit(client, log=OOM_LOG + "<script>alert('x')</script>\n")  # within the evidence's context
    html = client.get(f"/s/{token}").get_data(as_text=True)
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    assert "default-src 'self'" in client.get(f"/s/{token}").headers["Content-Security-Policy"]


def test_csrf_required_on_forms(db_url, tmp_path, web_kb):
    app = make_app(db_url, tmp_path, web_kb, WTF_CSRF_ENABLED=True)
    client = app.test_client()
    assert client.post("/submit", data={"log": OOM_LOG}).status_code == 400
    html = client.get("/").get_data(as_text=True)
    csrf = html.split('name="csrf_token" value="')[1].split('"')[0]
    assert client.post("/submit", data={"log": OOM_LOG, "csrf_token": csrf}).status_code == 303
    # the API uses no cookies, so it needs no CSRF token
    assert client.post("/api/v1/diagnose", data=OOM_LOG, content_type="text/plain").status_code == 200
    close_app(app)


def test_too_large_is_413_before_reading(db_url, tmp_path, web_kb):
    app = make_app(db_url, tmp_path, web_kb, MAX_CONTENT_LENGTH=1000)
    client = app.test_client()

    class Exploding(io.RawIOBase):  # a body that must never be read
        def readable(self):
            return True

        def readinto(self, b):
            raise AssertionError("the body was read")

    r = client.post("/api/v1/diagnose", content_type="text/plain",
                    environ_overrides={"wsgi.input": Exploding(), "CONTENT_LENGTH": "5000"})
    assert r.status_code == 413 and r.get_json()["error"]
    r = client.post("/submit", data={"logfile": (io.BytesIO(b"x" * 5000), "big.log")}, content_type="multipart/form-data")
    assert r.status_code == 413
    close_app(app)


def test_rate_limit_on_submissions(db_url, tmp_path, web_kb):
    app = make_app(db_url, tmp_path, web_kb, RATELIMIT_ENABLED=True, RATELIMIT_SUBMIT="3 per minute")
    client = app.test_client()
    codes = [client.post("/api/v1/diagnose", data="x\n", content_type="text/plain").status_code for _ in range(5)]
    assert codes[:3] == [200] * 3 and codes[3] == 429
    assert client.get("/kb/").status_code == 200  # reading is not limited
    close_app(app)


def test_secure_cookie_when_configured(db_url, tmp_path, web_kb):
    from conftest import PASSWORD, add_staff
    app = make_app(db_url, tmp_path, web_kb, SESSION_COOKIE_SECURE=True)
    add_staff(app)
    r = app.test_client().post("/staff/login", data={"name": "alice", "password": PASSWORD})
    assert "Secure" in r.headers["Set-Cookie"]
    close_app(app)


@pytest.mark.parametrize("path", ["/staff/", "/staff/figures"])
def test_staff_pages_not_reachable_via_api_token_or_anon(client, path):
    assert client.get(path, headers={"Authorization": "Bearer x"}).status_code == 302


def test_paste_too_large_names_the_paste_limit(db_url, tmp_path, web_kb):
    app = make_app(db_url, tmp_path, web_kb, MAX_CONTENT_LENGTH=1 << 20, MAX_FORM_MEMORY_SIZE=1000)
    r = app.test_client().post("/submit", data={"log": "x" * 5000}, content_type="multipart/form-data")
    assert r.status_code == 413
    page = r.get_data(as_text=True)
    assert "pasted log can be at most 0.000954 MiB" in page
    assert "up to 1 MiB" in page  # the upload limit is offered as the way out, not given as the paste limit
    close_app(app)


def test_json_body_has_its_own_limit(db_url, tmp_path, web_kb):
    app = make_app(db_url, tmp_path, web_kb, MAX_CONTENT_LENGTH=1 << 20, MAX_JSON_BYTES=2000)
    client = app.test_client()
    import json
    big = json.dumps({"log": "x" * 5000})
    r = client.post("/api/v1/diagnose", data=big, content_type="application/json")
    assert r.status_code == 413 and "JSON body can be at most" in r.get_json()["message"]
    # chunked (no Content-Length): refused once it passes the limit, not read to the upload limit
    read = []

    class Counting(io.RawIOBase):
        def __init__(self):
            self.left = 10 << 20

        def readable(self):
            return True

        def readinto(self, b):
            n = min(len(b), self.left, 4096)
            b[:n] = b"x" * n
            self.left -= n
            read.append(n)
            return n

    from werkzeug.test import EnvironBuilder
    environ = EnvironBuilder(path="/api/v1/diagnose", method="POST", content_type="application/json").get_environ()
    environ.pop("CONTENT_LENGTH", None)
    environ.update({"wsgi.input": Counting(), "wsgi.input_terminated": True, "HTTP_TRANSFER_ENCODING": "chunked"})
    status = []
    b"".join(app(environ, lambda st, headers, exc_info=None: status.append(st)))
    assert status[0].startswith("413")
    assert sum(read) < 100_000, sum(read)
    # the same log as a plain body is within the upload limit
    assert client.post("/api/v1/diagnose", data="x" * 5000, content_type="text/plain").status_code == 200
    close_app(app)
