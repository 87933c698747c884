"""Fixtures for the web service: an app per test, on SQLite and on PostgreSQL."""
import os
from pathlib import Path

import pytest

pytest.importorskip("flask")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIXTURE_KB = ROOT / "tests" / "fixtures" / "kb"
OOM_LOG = (HERE / "data" / "slurm-oom.out").read_text()
PASSWORD = "correct horse battery staple"


def required(name):
    return os.environ.get(f"REQUIRE_{name.upper()}") == "1"


def postgres_url():
    """TEST_DATABASE_URL, or skip (fail where CI requires PostgreSQL)."""
    url = os.environ.get("TEST_DATABASE_URL")
    if not url:
        if required("postgres"):
            pytest.fail("REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set")
        pytest.skip("TEST_DATABASE_URL not set: PostgreSQL cases skipped")
    return url


def reset_postgres(url):
    from sqlalchemy import create_engine, text
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("DROP SCHEMA public CASCADE"))
            conn.execute(text("CREATE SCHEMA public"))
    except Exception as exc:
        if required("postgres"):
            raise
        pytest.skip(f"PostgreSQL at TEST_DATABASE_URL unreachable: {exc.__class__.__name__}")
    finally:
        engine.dispose()


@pytest.fixture(scope="session")
def web_kb():
    from gpu_troubleshooter.knowledge import load_knowledge_base
    return load_knowledge_base(extra_dirs=(str(FIXTURE_KB / "demo"),), bundled=False)  # the demo entries alone: tests must not depend on bundled wording


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/web.sqlite3"
    url = postgres_url()
    reset_postgres(url)
    return url


def make_app(db_url, tmp_path, web_kb, **extra):
    from gpu_troubleshooter.web import create_app
    config = {
        "TESTING": True,
        "SECRET_KEY": "test-secret",
        "DATABASE_URL": db_url,
        "UPLOAD_DIR": str(tmp_path / "uploads"),
        "DRAFT_KB_DIR": str(tmp_path / "site-kb"),
        "KB_DIRS": (str(FIXTURE_KB),),
        "WTF_CSRF_ENABLED": False,
        "RATELIMIT_ENABLED": False,
        "SERVER_NAME": "localhost",
    }
    config.update(extra)
    app = create_app(config)
    app.extensions["kb"] = web_kb  # one compiled KB for the whole session
    return app


@pytest.fixture
def app(db_url, tmp_path, web_kb):
    app = make_app(db_url, tmp_path, web_kb)
    yield app
    close_app(app)


def close_app(app):
    pool = app.extensions.get("scan_pool")
    if pool:
        pool.shutdown(wait=True)
    app.extensions["db_engine"].dispose()


@pytest.fixture
def client(app):
    return app.test_client()


def add_staff(app, name="alice", password=PASSWORD):
    from gpu_troubleshooter.web import db
    from gpu_troubleshooter.web.auth import hash_password
    from gpu_troubleshooter.web.models import StaffUser
    with db.new_session(app) as s:
        user = StaffUser(name=name, password_hash=hash_password(password), active=True)
        s.add(user)
        s.commit()
        return user.id


@pytest.fixture
def staff_client(app, client):
    add_staff(app)
    r = client.post("/staff/login", data={"name": "alice", "password": PASSWORD})
    assert r.status_code == 303
    return client


def submit(client, log=OOM_LOG, **data):
    r = client.post("/submit", data={"log": log, **data})
    assert r.status_code == 303, r.get_data(as_text=True)[:500]
    return r.headers["Location"].rsplit("/", 1)[-1]


def needs_engine_facts():
    """Engine facts support (gpu_troubleshooter.facts) lands on main separately."""
    import importlib.util
    if importlib.util.find_spec("gpu_troubleshooter.facts") is None:
        pytest.skip("gpu_troubleshooter.facts not on this branch yet")
