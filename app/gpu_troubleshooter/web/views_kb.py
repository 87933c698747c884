"""Browsing and searching the knowledge base, one page per entry."""
from flask import Blueprint, abort, current_app, render_template, request

from .filters import ui_lang
from .kbview import all_entries, entry_dict, search
from .service import knowledge_base

bp = Blueprint("kb", __name__, url_prefix="/kb")


def entries():
    """Entry dicts, built once per process (the KB does not change while running)."""
    cached = current_app.extensions.get("kb_entries")
    if cached is None:
        cached = current_app.extensions["kb_entries"] = all_entries(knowledge_base())
    return cached


def shown(lang):
    """Entry dicts in the reader's language, by id (built once per language and process)."""
    if lang == "en":
        return None
    cache = current_app.extensions.setdefault("kb_entries_lang", {})
    if lang not in cache:
        kb = knowledge_base()
        site = getattr(kb, "site", {}) or {}
        cache[lang] = {e.id: entry_dict(e, site, lang) for e in kb.entries}
    return cache[lang]


@bp.get("/")
def index():
    query = request.args.get("q", "").strip()[:200]
    results = search(entries(), query) if query else [(None, d) for d in entries()]
    translated = shown(ui_lang())  # searched in English (log messages are English), listed translated
    if translated:
        results = [(score, translated.get(d["id"], d)) for score, d in results]
    return render_template("kb_index.html", query=query, results=results, total=len(entries()))


@bp.get("/<entry_id>")
def entry(entry_id):
    kb = knowledge_base()
    found = kb.get(entry_id)
    if found is None:
        abort(404)
    return render_template("kb_entry.html", e=entry_dict(found, getattr(kb, "site", {})))
