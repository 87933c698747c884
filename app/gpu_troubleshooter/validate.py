"""`troubleshoot kb validate`: every problem of the knowledge base, with file and line.

Checks the schema (schema.py), duplicate ids and dangling `leads_to`, that
every signature compiles in the scanner, and that each entry's examples
behave: every must-match log ranks the entry first, no must-not-match log
shows it at all.
"""
from pathlib import Path

from .knowledge import KnowledgeBase, bundled_dir, collect, entry_files, load_site
from .schema import Problem

MIN_MATCH, MIN_NEAR_MISS = 3, 2


def validate(site_dir=None, check_examples=True):
    extra = [site_dir] if site_dir else []
    by_id, problems = collect(extra)
    if site_dir and not Path(site_dir).is_dir():
        return problems, "nothing checked"
    checked_root = Path(site_dir).resolve() if site_dir else bundled_dir().resolve()
    mine = [e for e in by_id.values() if checked_root in Path(e.path).resolve().parents]
    try:
        from .scanner import Scanner
        Scanner([(s.pattern, s.case_sensitive) for e in by_id.values() for s in e.signatures])
    except Exception as e:  # noqa: BLE001 - report which pattern the scanner rejects
        problems += _scanner_problems(by_id.values(), e)
    examples = 0
    scanner_ok = not any("rejected by the scanner" in p.message or "scanner rejected" in p.message for p in problems)
    if check_examples and scanner_ok:
        kb = KnowledgeBase(entries=tuple(sorted(by_id.values(), key=lambda e: e.id)),
                           site=load_site([bundled_dir(), *extra]), folders=())
        for entry in sorted(mine, key=lambda e: e.id):
            found, n = check_entry_examples(entry, kb)
            problems += found
            examples += n
    if check_examples:  # entries too broken to load still owe their examples
        loaded = {Path(e.path).resolve() for e in mine}
        for path in entry_files(checked_root):
            if path.resolve() not in loaded:
                problems += example_count_problems(str(path))
    summary = f"{len(mine)} entries checked" + (f", {examples} example logs run" if check_examples else "")
    return problems, summary


def check_entry_examples(entry, kb):
    from .engine import diagnose_path
    from .errors import LogInputError
    problems = example_count_problems(entry.path)
    match, near = entry.examples("must-match"), entry.examples("must-not-match")
    for path in match + near:
        try:
            ids = [f.id for f in diagnose_path(path, kb).findings]
        except LogInputError as e:
            problems.append(Problem(str(path), 1, f"example cannot be read: {e}"))
            continue
        if path in match and (not ids or ids[0] != entry.id):
            problems.append(Problem(str(path), 1, f"must match '{entry.id}' first, but found {ids or 'no known failure'}"))
        if path in near and entry.id in ids:
            problems.append(Problem(str(path), 1, f"near miss must not match '{entry.id}', but found {ids}"))
    return problems, len(match) + len(near)


def example_count_problems(entry_path):
    folder = Path(entry_path).with_suffix("")
    out = []
    for kind, least, what in (("must-match", MIN_MATCH, "example logs"), ("must-not-match", MIN_NEAR_MISS, "near misses")):
        n = len(list((folder / kind).glob("*.log*"))) if (folder / kind).is_dir() else 0
        if n < least:
            out.append(Problem(entry_path, 1, f"needs at least {least} {what} in {folder}/{kind}/ (has {n})"))
    return out


def _scanner_problems(entries, error):
    from .scanner import Scanner
    out = []
    for entry in entries:
        for i, s in enumerate(entry.signatures):
            try:
                Scanner([(s.pattern, s.case_sensitive)])
            except Exception as e:  # noqa: BLE001
                out.append(Problem(entry.path, 1, f"signatures[{i + 1}] is rejected by the scanner: {e}"))
    return out or [Problem("knowledge base", 0, f"the scanner rejected the signatures: {error}")]
