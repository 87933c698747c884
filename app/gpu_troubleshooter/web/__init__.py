"""The web service: paste or upload a log, read the fix, send it to the helpdesk.

create_app(config) is the application factory; gunicorn runs
`gpu_troubleshooter.web.wsgi:app`.
"""
import logging
import os

from flask import Flask, Request, abort, request

from . import config as config_module
from . import db
from .extensions import csrf, limiter


class MissingSecretKey(RuntimeError):
    """The service cannot run safely without a SECRET_KEY."""


class SpoolingRequest(Request):
    """Uploaded files go to an unlinked temp file in UPLOAD_DIR, never to memory or a named file."""

    def _get_file_stream(self, total_content_length, content_type, filename=None, content_length=None):
        import tempfile
        from flask import current_app
        upload_dir = current_app.config["UPLOAD_DIR"]
        os.makedirs(upload_dir, exist_ok=True)
        return tempfile.TemporaryFile("w+b", dir=upload_dir)


def create_app(config=None):
    app = Flask(__name__, instance_relative_config=True)
    app.request_class = SpoolingRequest
    app.config.update(config_module.from_environment(app.instance_path))
    app.config.update(config or {})
    if not app.config.get("SECRET_KEY"):
        raise MissingSecretKey(
            "SECRET_KEY is not set. Set it to one long random value shared by every worker, e.g.\n"
            "  export SECRET_KEY=$(python3 -c 'import secrets; print(secrets.token_hex(32))')\n"
            "(`troubleshoot serve` makes one for local use.)")
    os.makedirs(app.config["UPLOAD_DIR"], exist_ok=True)

    if app.config["PROXY_COUNT"]:
        from werkzeug.middleware.proxy_fix import ProxyFix
        n = app.config["PROXY_COUNT"]
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=n, x_proto=n, x_host=n)

    if app.config["AUTO_MIGRATE"]:
        db.upgrade(app.config["DATABASE_URL"])
    db.init_app(app)
    _fail_lost_scans(app)
    csrf.init_app(app)
    limiter.init_app(app)

    from . import errors, filters, views_api, views_kb, views_learn, views_public, views_staff
    filters.init_app(app)
    errors.init_app(app)
    app.register_blueprint(views_public.bp)
    app.register_blueprint(views_kb.bp)
    app.register_blueprint(views_staff.bp)
    app.register_blueprint(views_learn.bp)
    app.register_blueprint(views_api.bp)
    csrf.exempt(views_api.bp)  # the API uses no cookies: tokens or nothing

    @app.before_request
    def _json_body_limit():
        # A JSON body is parsed in memory: it gets the paste limit, not the upload limit.
        # Set before the body is touched, so Content-Length is refused unread and a
        # chunked body as soon as it passes the limit.
        if request.mimetype == "application/json":
            request.max_content_length = app.config["MAX_JSON_BYTES"]
            if request.content_length is None and request.environ.get("wsgi.input_terminated"):
                # Chunked: Werkzeug stops quietly at the limit (a cut-off JSON, then a 400).
                # Read up to the limit now (cached for get_json); one byte more means too large.
                request.get_data(cache=True)
                if request.environ["wsgi.input"].read(1):
                    abort(413)

    @app.after_request
    def _security_headers(resp):
        # Everything is served by the app itself: a strict CSP costs nothing.
        resp.headers.setdefault("Content-Security-Policy",
                                "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                                "script-src 'self'; frame-ancestors 'none'; form-action 'self'")
        resp.headers.setdefault("X-Content-Type-Options", "nosniff")
        resp.headers.setdefault("Referrer-Policy", "no-referrer")  # share links stay private
        return resp

    logging.getLogger(__name__).debug("app created with database %s", app.config["DATABASE_URL"].split("@")[-1])
    return app


def _fail_lost_scans(app):
    """Scans that a previous process began and never finished are marked failed."""
    from .service import fail_stale_scans
    session = db.new_session(app)
    try:
        fail_stale_scans(session, app.config["STALE_SCAN_MINUTES"])
    except Exception:  # a database that is not reachable yet must not stop the start
        logging.getLogger(__name__).warning("could not check for lost scans", exc_info=True)
    finally:
        session.close()
