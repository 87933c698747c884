"""Engine, per-request sessions and Alembic migrations shipped in the package."""
from pathlib import Path

from flask import current_app, g
from sqlalchemy import create_engine, event
from sqlalchemy.orm import sessionmaker

MIGRATIONS = Path(__file__).with_name("migrations")


def make_engine(url):
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn, _record):
            cur = dbapi_conn.cursor()
            # WAL lets gunicorn workers read while one writes; foreign keys for cascades.
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            # In WAL mode NORMAL never corrupts the database; it syncs at checkpoints instead
            # of every commit (a power cut may lose the last submissions, a crash loses none).
            # Every submission is a commit: this doubles SQLite's throughput under load.
            cur.execute("PRAGMA synchronous=NORMAL")
            # Deleted rows are overwritten, so nothing redacted-away lingers in free pages.
            cur.execute("PRAGMA secure_delete=ON")
            cur.close()
        return engine
    return create_engine(url, pool_pre_ping=True)


def alembic_config(url):
    from alembic.config import Config
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    # ConfigParser interpolation: escape % in passwords.
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade(url, revision="head"):
    """Bring the database at `url` to `revision` (creating SQLite's folder first)."""
    from alembic import command
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    cfg = alembic_config(url)
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)
    finally:
        engine.dispose()  # no pooled connection may cross a gunicorn fork


def init_app(app):
    engine = make_engine(app.config["DATABASE_URL"])
    app.extensions["db_engine"] = engine
    app.extensions["db_sessionmaker"] = sessionmaker(engine, expire_on_commit=False)

    @app.teardown_appcontext
    def _close(_exc):
        session = g.pop("db_session", None)
        if session is not None:
            session.close()


def session():
    """The request's session, opened on first use and closed at teardown."""
    if "db_session" not in g:
        g.db_session = current_app.extensions["db_sessionmaker"]()
    return g.db_session


def new_session(app):
    """A session for work outside a request (background scans, CLI)."""
    return app.extensions["db_sessionmaker"]()
