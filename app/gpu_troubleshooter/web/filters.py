"""Jinja filters and globals shared by the templates."""
from datetime import timezone

from .models import STATUS_LABELS


def _text(value):
    if isinstance(value, dict):
        return value.get("en") or next(iter(value.values()), "")
    return value or ""


def human_bytes(n):
    n = float(n or 0)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024


def when(dt):
    if dt is None:
        return ""
    if dt.tzinfo is None:  # SQLite hands back naive datetimes; they were stored as UTC
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def percent(x):
    return f"{round(float(x or 0) * 100)}%"


def init_app(app):
    app.jinja_env.filters.update(t=_text, bytes=human_bytes, when=when, percent=percent,
                                 status_label=lambda s: STATUS_LABELS.get(s, s))
    from .auth import current_staff
    app.jinja_env.globals.update(current_staff=current_staff, status_labels=STATUS_LABELS)
