"""Knowledge-base entries as plain dicts for pages and the API, and fuzzy search.

Reads the engine's loaded KnowledgeBase; it never matches logs itself.
"""
from rapidfuzz import fuzz, utils

SEARCH_THRESHOLD = 62
# Results must also come close to the best match: a strong hit ("cuda out of memmory"
# -> cuda-oom, 97) should not drag along every entry that shares "cuda" or "of" (NCCL, 73).
RELATIVE_CUTOFF = 20


def entry_dict(entry, site=None, lang="en"):
    """One entry for the pages and the API: the finding view (view.entry_view) plus what a listing needs."""
    from gpu_troubleshooter.view import entry_view
    d = entry_view(entry, lang, site or {}).to_dict()
    for gone in ("confidence", "evidence", "values", "facts"):  # there is no log on an entry page
        d.pop(gone)
    d.update(area=entry.area, tags=list(entry.tags), phrases=list(entry.phrases), leads_to=list(entry.leads_to))
    return d


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
    if scored:
        floor = scored[0][0] - RELATIVE_CUTOFF
        scored = [s for s in scored if s[0] >= floor]
    return scored[:limit]
