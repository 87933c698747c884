"""Configuration from environment variables (12-factor), with safe defaults.

Every key can also be passed in the dict given to create_app(), which wins.
"""
import os


def _bool(name, default):
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def _int(name, default):
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def from_environment(instance_path):
    """The configuration read from TROUBLESHOOT_* / standard variables."""
    max_mb = _int("TROUBLESHOOT_MAX_UPLOAD_MB", 200)
    return {
        # Required: one key shared by every worker (a per-process random key
        # breaks CSRF and logins across gunicorn workers). create_app refuses
        # to start without it; `troubleshoot serve` makes one for local use.
        "SECRET_KEY": os.environ.get("SECRET_KEY") or None,
        # The address users reach the service at: share links are built from
        # it, never from the request's Host header. Unset: links are paths.
        "BASE_URL": os.environ.get("TROUBLESHOOT_BASE_URL", "").rstrip("/"),
        "DATABASE_URL": os.environ.get("DATABASE_URL")
        or "sqlite:///" + os.path.join(instance_path, "troubleshoot.sqlite3"),
        "UPLOAD_DIR": os.environ.get("TROUBLESHOOT_UPLOAD_DIR")
        or os.path.join(instance_path, "uploads"),
        # Flask answers 413 from Content-Length before reading the body.
        "MAX_CONTENT_LENGTH": max_mb * 1024 * 1024,
        # A pasted log is a form field, held in memory: keep it modest.
        "MAX_FORM_MEMORY_SIZE": _int("TROUBLESHOOT_MAX_PASTE_MB", 16) * 1024 * 1024,
        # A JSON body ({"log": ...}) is parsed in memory too.
        "MAX_JSON_BYTES": _int("TROUBLESHOOT_MAX_JSON_MB", _int("TROUBLESHOOT_MAX_PASTE_MB", 16)) * 1024 * 1024,
        # A gzip bomb is cut off at this many decompressed bytes.
        "MAX_LOG_BYTES": _int("TROUBLESHOOT_MAX_LOG_MB", 4 * max_mb) * 1024 * 1024,
        # Decompression bombs: a compressed log expanding more than this many times (checked
        # after 16 MiB are out), or one whose reading and scanning used more processor time
        # than this, is refused with a message.
        "MAX_EXPANSION": float(os.environ.get("TROUBLESHOOT_MAX_EXPANSION", "200")),
        "SCAN_CPU_SECONDS": float(os.environ.get("TROUBLESHOOT_SCAN_CPU_SECONDS", "60")),
        # Logs above this size are scanned in a background thread.
        "BACKGROUND_BYTES": _int("TROUBLESHOOT_BACKGROUND_MB", 4) * 1024 * 1024,
        # Large logs waiting or being scanned per process; more get 503 + Retry-After.
        "BACKGROUND_QUEUE": _int("TROUBLESHOOT_BACKGROUND_QUEUE", 8),
        # A scan still "processing" after this long was lost to a restart: marked failed.
        "STALE_SCAN_MINUTES": _int("TROUBLESHOOT_STALE_SCAN_MINUTES", 30),
        "AUTO_MIGRATE": _bool("TROUBLESHOOT_AUTO_MIGRATE", True),
        "KB_DIRS": tuple(p for p in os.environ.get("TROUBLESHOOT_KB", "").split(os.pathsep) if p),
        "SESSION_COOKIE_SECURE": _bool("SESSION_COOKIE_SECURE", False),
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "PERMANENT_SESSION_LIFETIME": _int("TROUBLESHOOT_SESSION_HOURS", 12) * 3600,
        # Trust X-Forwarded-* from this many proxies (0 = none).
        "PROXY_COUNT": _int("TROUBLESHOOT_PROXY_COUNT", 0),
        "RATELIMIT_ENABLED": _bool("RATELIMIT_ENABLED", True),
        "RATELIMIT_STORAGE_URI": os.environ.get("RATELIMIT_STORAGE_URI", "memory://"),
        "RATELIMIT_SUBMIT": os.environ.get("RATELIMIT_SUBMIT", "30 per minute"),
        "RATELIMIT_LOGIN": os.environ.get("RATELIMIT_LOGIN", "10 per minute"),
        "WTF_CSRF_TIME_LIMIT": None,  # tied to the session instead
        # The outage banner: this many failed jobs on one node within the window
        # (or this many failures the site must fix, such as Xid or ECC errors).
        "OUTAGE_WINDOW_HOURS": float(os.environ.get("TROUBLESHOOT_OUTAGE_WINDOW_HOURS", "6")),
        "OUTAGE_MIN_JOBS": _int("TROUBLESHOOT_OUTAGE_MIN_JOBS", 3),
        "OUTAGE_MIN_NODE_LEVEL": _int("TROUBLESHOOT_OUTAGE_MIN_NODE_LEVEL", 2),
        # Retention: submissions older than this are deleted by `troubleshoot db prune`
        # (anonymous counts and feedback stay for the figures).
        "RETENTION_DAYS": _int("TROUBLESHOOT_RETENTION_DAYS", 90),
        # Mail to submitters (a staff reply): unset SMTP_HOST sends none.
        "SMTP_HOST": os.environ.get("SMTP_HOST", ""),
        "SMTP_PORT": _int("SMTP_PORT", 25),
        "SMTP_STARTTLS": _bool("SMTP_STARTTLS", False),
        "SMTP_USER": os.environ.get("SMTP_USER", ""),
        "SMTP_PASSWORD": os.environ.get("SMTP_PASSWORD", ""),
        "MAIL_FROM": os.environ.get("MAIL_FROM", ""),
        "SITE_NAME": os.environ.get("TROUBLESHOOT_SITE_NAME", "GPU"),
        # Failed staff logins allowed per 15 minutes, per account and per address (all workers together).
        "LOGIN_MAX_FAILURES_ACCOUNT": _int("TROUBLESHOOT_LOGIN_MAX_FAILURES_ACCOUNT", 10),
        "LOGIN_MAX_FAILURES_ADDRESS": _int("TROUBLESHOOT_LOGIN_MAX_FAILURES_ADDRESS", 30),
        # Drafts made from groups of unknown failures go to this site KB folder.
        "DRAFT_KB_DIR": os.environ.get("TROUBLESHOOT_DRAFT_KB") or os.path.join(instance_path, "site-kb"),
    }
