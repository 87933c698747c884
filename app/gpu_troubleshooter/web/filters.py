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


LANG_COOKIE = "lang"
LANG_NAMES = (("en", "English"), ("hr", "Hrvatski"), ("sr", "Srpski"), ("sr-Cyrl", "Српски"), ("ko", "한국어"))


def ui_lang():
    """The reader's language: ?lang= (then kept in a cookie), else the cookie, else Accept-Language
    negotiated with Babel (i18n.negotiate), else the site's `default_lang` (_site.yaml); English
    when none of them chooses a language there is."""
    from flask import g, request

    from ..i18n import LANGUAGES, negotiate
    if "ui_lang" not in g:
        site = _site()
        known = LANGUAGES + tuple(k for k in (site.get("lang_fallbacks") or {}) if k not in LANGUAGES) \
            if isinstance(site.get("lang_fallbacks"), dict) else LANGUAGES
        default = negotiate(str(site.get("default_lang") or "en"), known, "en")
        asked = request.args.get("lang", "")
        if asked in known:
            g.ui_lang_set = asked
            g.ui_lang = asked
        elif request.cookies.get(LANG_COOKIE) in known:
            g.ui_lang = request.cookies[LANG_COOKIE]
        else:
            header = request.headers.get("Accept-Language", "")
            g.ui_lang = negotiate(header, known, default) if header else default
    return g.ui_lang


def _site():
    try:
        from .service import knowledge_base
        return getattr(knowledge_base(), "site", {}) or {}
    except Exception:  # no knowledge base configured (a bare test app): no site settings
        return {}


def msg(key, **fields):
    """One string of the message catalog (web.messages.WEB_LABELS, then render.LABELS) in the
    reader's language; Jinja escapes it like any other text."""
    from .messages import web_label
    text = web_label(ui_lang(), key, _site())
    return text.format(**fields) if fields else text


def msg_html(key, **fields):
    """A catalog string with markup in its fields (a <code> span): the string itself and every
    field that is not Markup are escaped."""
    from markupsafe import Markup, escape

    from .messages import web_label
    return Markup(escape(web_label(ui_lang(), key, _site()))).format(**fields)


def code(text):
    from markupsafe import Markup
    return Markup("<code>%s</code>") % text


def user_status(status):
    """A helpdesk ticket's status as the submitter reads it."""
    from .messages import WEB_LABELS
    key = f"status_{status}"
    return msg(key) if key in WEB_LABELS["en"] else STATUS_LABELS.get(status, status)


def severity(name):
    """An entry's severity (error, warning) as the badge shows it."""
    from .messages import WEB_LABELS
    return msg(f"sev_{name}") if f"sev_{name}" in WEB_LABELS["en"] else name


def scan_error(text):
    """A stored scan error (service.py's own words) in the reader's language; an error the
    reader module gave (an unreadable or binary file) is shown as stored."""
    from .service import INTERNAL_ERRORS, INTERRUPTED
    key = "dg_interrupted" if text == INTERRUPTED else "dg_internal" if text in INTERNAL_ERRORS else None
    return msg(key) if key else text


def key_line_note(k):
    """What can be said of one key line (a stored dict) in the reader's language."""
    from types import SimpleNamespace

    from ..render import key_line_explanation
    fields = {"kind": "", "origin": "", "exception": "", "package": "", "frame": "", "explanation": ""}
    fields.update({key: value for key, value in (k or {}).items() if key in fields})
    return key_line_explanation(SimpleNamespace(**fields), ui_lang())


def fallback_note(f):
    """The line naming a finding's fields shown in another language, or '' (English, or all translated)."""
    lang = ui_lang()
    fields = f.get("fallback_fields") if isinstance(f, dict) else None
    if lang == "en" or not fields:
        return ""
    from ..i18n import fallback_chain
    from ..render import LANG_NAMES
    names = ", ".join(LANG_NAMES.get(c, c) for c in fallback_chain(lang, _site()) if c != lang)
    return msg("fell_back", langs=names, fields=", ".join(fields))


def lang_url(lang):
    """This page's URL in another language (the other query arguments kept)."""
    from flask import request
    args = request.args.to_dict()
    args["lang"] = lang
    from urllib.parse import urlencode
    return f"{request.path}?{urlencode(args)}"


def _remember_lang(response):
    from flask import g
    chosen = g.get("ui_lang_set")
    if chosen:
        response.set_cookie(LANG_COOKIE, chosen, max_age=365 * 24 * 3600, samesite="Lax", httponly=True)
    return response


def localise_diagnosis(d):
    """A stored diagnosis dict with each finding's prose in the reader's language: the view is
    rebuilt from the entry with the finding's own values, so fixes keep their order and `held`;
    evidence, values, ids and code are the stored ones. English, or an entry no longer in the
    knowledge base, is returned as stored."""
    lang = ui_lang()
    if lang == "en" or not isinstance(d, dict) or not d.get("findings"):
        return d
    from ..view import entry_view
    from .service import knowledge_base
    kb = knowledge_base()
    site = getattr(kb, "site", {}) or {}
    findings = []
    for f in d["findings"]:
        entry = kb.get(f.get("id", ""))
        if entry is None:
            findings.append(f)
            continue
        values = {k: str(v) for k, v in (f.get("values") or {}).items() if v is not None}
        v = entry_view(entry, lang, site, values, d.get("facts"), d.get("scheduler")).to_dict()
        same = len(v["fixes"]) == len(f.get("fixes") or ())
        fell = v["fallback_fields"] if same else [x for x in v["fallback_fields"] if not x.startswith("fixes[")] + [
            f"fixes[{i}]" for i in range(len(f.get("fixes") or ()))]
        findings.append({**f, "title": v["title"], "summary": v["summary"], "causes": v["causes"],
                         "fixes": v["fixes"] if same else f.get("fixes"),
                         "references": v["references"], "fallback_fields": fell})
    return {**d, "findings": findings, "lang": lang}


def localise_entry(e):
    """A knowledge-base entry dict (kbview.entry_dict) in the reader's language."""
    lang = ui_lang()
    if lang == "en" or not isinstance(e, dict):
        return e
    from .kbview import entry_dict
    from .service import knowledge_base
    kb = knowledge_base()
    entry = kb.get(e.get("id", ""))
    return entry_dict(entry, getattr(kb, "site", {}), lang) if entry is not None else e


def short_fixes(fixes, n=3):
    """(number, fix) pairs split into the first screen's 1-3 chosen fixes and the rest, numbered
    as in the JSON; a fix whose condition failed never makes the first screen."""
    numbered = list(enumerate(fixes or [], 1))
    first = [p for p in numbered if p[1].get("held") is not False][:n]
    rest = [p for p in numbered if p not in first]
    return first, rest


def init_app(app):
    app.jinja_env.filters.update(t=_text, bytes=human_bytes, when=when, percent=percent,
                                 status_label=lambda s: STATUS_LABELS.get(s, s), user_status=user_status, scan_error=scan_error, severity=severity,
                                 localise=localise_diagnosis, localise_entry=localise_entry)
    app.jinja_env.globals.update(ui_lang=ui_lang, lang_url=lang_url, lang_names=LANG_NAMES, short_fixes=short_fixes,
                                 msg=msg, msg_html=msg_html, code=code, fallback_note=fallback_note,
                                 key_line_note=key_line_note)
    app.after_request(_remember_lang)
    from .auth import current_staff
    app.jinja_env.globals.update(current_staff=current_staff, status_labels=STATUS_LABELS)
