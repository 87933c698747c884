"""Knowledge-base entries as plain dicts for pages and the API, and fuzzy search.

Reads the engine's loaded KnowledgeBase; it never matches logs itself.
"""
from rapidfuzz import fuzz, utils

SEARCH_THRESHOLD = 62


def _text(value, site=None):
    from gpu_troubleshooter.text import fill_placeholders, localised
    return fill_placeholders(localised(value), site or {}, {})


def entry_dict(entry, site=None):
    data = entry.data
    fixes = []
    for fix in data.get("fixes") or []:
        code = fix.get("code")
        fixes.append({
            "title": _text(fix.get("title"), site),
            "text": _text(fix.get("text"), site),
            "code": {"lang": code.get("lang", "text"), "text": _text(code.get("text"), site)} if code else None,
        })
    return {
        "id": entry.id,
        "area": getattr(entry, "area", "") or "",
        "title": _text(data.get("title"), site),
        "summary": _text(data.get("summary"), site),
        "tags": list(data.get("tags") or []),
        "severity": data.get("severity", "error"),
        "causes": [_text(c, site) for c in data.get("causes") or []],
        "fixes": fixes,
        "phrases": list(data.get("phrases") or []),
        "references": [{"title": _text(r.get("title")), "url": r.get("url", "")} for r in data.get("references") or []],
        "leads_to": list(data.get("leads_to") or []),
    }


def all_entries(kb):
    site = getattr(kb, "site", {}) or {}
    return sorted((entry_dict(e, site) for e in kb.entries), key=lambda d: (d["area"], d["title"].lower()))


def _haystacks(d):
    """What a query is compared with: title, summary, messages, tags, fix titles/texts."""
    literals = [s for s in d["phrases"]]
    yield 1.0, d["title"]
    yield 0.95, d["summary"]
    for p in literals:
        yield 1.0, p
    yield 0.9, d["id"].replace("-", " ")
    yield 0.8, " ".join(d["tags"])
    for f in d["fixes"]:
        yield 0.85, f["title"]
        yield 0.75, f["text"]


def search(entries, query, limit=20):
    """Entries ranked by fuzzy similarity; typos still find them ("cuda out of memmory")."""
    q = utils.default_process(query or "")
    if not q:
        return [(100.0, d) for d in entries]
    scored = []
    for d in entries:
        best = 0.0
        for weight, hay in _haystacks(d):
            hay = utils.default_process(hay or "")
            if not hay:
                continue
            # partial_ratio finds the query inside long texts; token_set_ratio ignores word order.
            score = max(fuzz.partial_ratio(q, hay) if len(q) >= 4 else 0,
                        fuzz.token_set_ratio(q, hay), fuzz.ratio(q, hay)) * weight
            best = max(best, score)
        if best >= SEARCH_THRESHOLD:
            scored.append((round(best, 1), d))
    scored.sort(key=lambda x: -x[0])
    return scored[:limit]
