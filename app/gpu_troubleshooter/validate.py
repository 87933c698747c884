"""`troubleshoot kb validate`: every problem of the knowledge base, with file and line.

Checks the schema (schema.py), duplicate ids and dangling `leads_to`, that
every signature compiles in the scanner, and that each entry's examples
behave: every must-match log ranks the entry first, no must-not-match log
shows it at all, and that `sources.yaml` names a source for each of them.
"""
import bisect
import re
from pathlib import Path

from .knowledge import KnowledgeBase, bundled_dir, collect, entry_files, kb_folders, load_site
from .provenance import SOURCES_FILE, check_sources
from .schema import Problem, scanner_problem

MIN_MATCH, MIN_NEAR_MISS = 3, 2


def validate(site_dir=None, check_examples=True):
    extra = [site_dir] if site_dir else []
    by_id, problems = collect(extra, full=True)
    if site_dir and not Path(site_dir).is_dir():
        return problems, "nothing checked"
    checked_root = Path(site_dir).resolve() if site_dir else bundled_dir().resolve()
    mine = [e for e in by_id.values() if checked_root in Path(e.path).resolve().parents]
    rejected = _scanner_problems(by_id.values())
    problems += rejected
    for entry in mine:
        problems += prefix_warnings(entry)
        problems += comment_in_prose_warnings(entry.path)
    problems += _source_problems(mine, bundled=not site_dir)
    if site_dir:
        problems += _replaced_bundled(mine)
    examples = 0
    if check_examples and not rejected:
        site, _ = load_site(kb_folders(extra))
        kb = KnowledgeBase(entries=tuple(sorted(by_id.values(), key=lambda e: e.id)), site=site, folders=())
        for entry in sorted(mine, key=lambda e: e.id):
            found, n = check_entry_examples(entry, kb)
            problems += found
            examples += n
        if site_dir:  # the bundled examples: tests/test_signature_backends.py
            problems += backend_problems(mine)
    if check_examples:  # entries too broken to load still owe their examples
        loaded = {Path(e.path).resolve() for e in mine}
        for path in entry_files(checked_root):
            if path.resolve() not in loaded:
                problems += example_count_problems(str(path))
    from .i18n import validate_translations  # translations: stale, placeholders, fields (warnings)
    problems += [Problem(w.file, w.line, w.message, warning=True) for w in validate_translations(checked_root)]
    summary = f"{len(mine)} entries checked" + (f", {examples} example logs run" if check_examples else "")
    return problems, summary


def _source_problems(entries, bundled):
    """Each entry's sources.yaml, checked; for the bundled entries also one line
    on the logs whose source is not recorded (a site's own logs need none)."""
    problems, unrecorded, untraced = [], 0, 0
    for entry in entries:
        found, provenance = check_sources(entry.path)
        problems += found
        unrecorded += not provenance.recorded
        untraced += provenance.untraced
        if bundled and provenance.recorded and not provenance.traced_matches:
            problems.append(Problem(str(Path(entry.path).with_suffix("") / SOURCES_FILE), 1,
                                    "no must-match log has a recorded source (all untraced): find real ones", warning=True))
    if bundled and (unrecorded or untraced):
        problems.append(Problem("knowledge base", 0, f"{unrecorded} of {len(entries)} entries record no source for their "
                                f"example logs ({SOURCES_FILE}) and {untraced} example log(s) are marked untraced", warning=True))
    return problems


def prefix_warnings(entry):
    """A literal signature that is a prefix of another signature of the same entry
    matches the same line too; the line still counts once, so it only helps
    where the message is hard-wrapped right after it."""
    out = []
    # sorted, the patterns that start with a pattern follow it: no comparison of every pair
    ordered = sorted((s.pattern, j) for j, s in enumerate(entry.signatures, 1))
    patterns = [p for p, _ in ordered]
    for i, a in enumerate(entry.signatures, 1):
        text = _literal_text(a.pattern)
        if text is None:
            continue
        k, longer = bisect.bisect_right(patterns, a.pattern), []  # past the equal ones
        while k < len(patterns) and patterns[k].startswith(a.pattern):
            longer.append(ordered[k][1])
            k += 1
        for j in sorted(longer):
            out.append(Problem(entry.path, a.line, f"signatures[{i}] ({text!r}) is a prefix of signatures[{j}]: "
                                                   "on one line they count once; keep it only if the message is "
                                                   "often hard-wrapped after it", warning=True))
    return out


# An unquoted title or summary that holds " #": YAML ends the value there (the rest is a comment),
# so "title: Make #!/bin/bash the first line" reads as "Make".
_CUT_BY_COMMENT = re.compile(r"^\s*(?:- )?(title|summary):[ \t]+(?![ \t'\"|>])[^\n]*?[ \t]#")


def comment_in_prose_warnings(path):
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []  # the schema check reports an unreadable file
    return [Problem(path, no, f"the unquoted {m.group(1)} holds ' #', where YAML starts a comment: "
                              f"the {m.group(1)} ends before it; put the value in quotes", warning=True)
            for no, line in enumerate(lines, 1) if (m := _CUT_BY_COMMENT.match(line))]


def _replaced_bundled(site_entries):
    """A site entry with a bundled entry's id replaces it: allowed, but said."""
    bundled = {p.stem: p for p in entry_files(bundled_dir())}
    return [Problem(e.path, 1, f"replaces the bundled entry '{e.id}' ({bundled[e.id]}) in every diagnosis "
                               "that uses this folder", warning=True) for e in site_entries if e.id in bundled]


def _literal_text(pattern):
    """The plain text a regex matches when it is only an escaped literal, else None."""
    text = re.sub(r"\\(.)", r"\1", pattern)
    def spaced(rx):
        return rx.replace("\\ ", " ")
    return text if spaced(re.escape(text)) == spaced(pattern) else None


def example_ids(diagnosis, entry):
    """The ids an entry's examples are checked against: the findings, best first; for a
    harmless entry (known noise, never a finding) the harmless lines' entries instead."""
    return [f.id for f in (diagnosis.harmless if entry.harmless else diagnosis.findings)]


def check_entry_examples(entry, kb):
    from .engine import diagnose_path
    from .errors import LogInputError
    problems = example_count_problems(entry.path, draft=entry.draft)
    match, near = entry.examples("must-match"), entry.examples("must-not-match")
    for path in match + near:
        try:
            ids = example_ids(diagnose_path(path, kb), entry)
        except LogInputError as e:
            problems.append(Problem(str(path), 1, f"example cannot be read: {e}"))
            continue
        # a failure must rank first; a harmless entry has no rank, only a place in the list
        matched = entry.id in ids if entry.harmless else ids[:1] == [entry.id]
        if path in match and not matched:
            problems.append(Problem(str(path), 1, f"must match '{entry.id}' first, but found {ids or 'no known failure'}"))
        if path in near and entry.id in ids:
            problems.append(Problem(str(path), 1, f"near miss must not match '{entry.id}', but found {ids}"))
    return problems, len(match) + len(near)


def backend_problems(entries):
    """A warning at each example line where Hyperscan and RE2 disagree on a signature of
    `entries`: the scan (Hyperscan) would miss a line the entry's author saw match, or
    report one RE2 (`exclude`, `values`, hosts without Hyperscan) does not."""
    from .backends import BackendPair
    from .errors import LogInputError
    from .reader import open_log
    pair = BackendPair(entries)
    if not pair.comparable:
        return []
    problems = []
    for entry in entries:
        for path in entry.examples("must-match") + entry.examples("must-not-match"):
            try:
                with open_log(path) as f:
                    data = f.read()
            except (LogInputError, OSError):
                continue  # check_entry_examples already reported it
            for no, side, eid, signature in pair.disagreements(data):
                which = "only RE2 matches it: the scan (Hyperscan) misses this line" if side == "RE2 only" \
                    else "only Hyperscan matches it: RE2 does not"
                problems.append(Problem(str(path), no, f"signature {signature.pattern!r} of '{eid}': {which}; "
                                        "reword the signature (e.g. drop a \\b right after a [^\\n]* gap)",
                                        warning=True))
    return problems


def example_count_problems(entry_path, draft=False):
    """Too few examples is an error, or a warning for a draft (`draft: true`), which
    is validated but not used until a person completes it and promotes it."""
    folder = Path(entry_path).with_suffix("")
    out = []
    for kind, least, what in (("must-match", MIN_MATCH, "example logs"), ("must-not-match", MIN_NEAR_MISS, "near misses")):
        n = len(list((folder / kind).glob("*.log*"))) if (folder / kind).is_dir() else 0
        if n < least:
            before = "; add them before promoting this draft" if draft else ""
            out.append(Problem(entry_path, 1, f"needs at least {least} {what} in {folder}/{kind}/ (has {n}){before}",
                               warning=draft))
    return out


def _scanner_problems(entries):
    """Each signature the scanner rejects, at its line; nothing is compiled to the cache."""
    entries = list(entries)
    if scanner_problem([(s.pattern, s.case_sensitive) for e in entries for s in e.signatures]) is None:
        return []
    out = []
    for entry in entries:
        for i, s in enumerate(entry.signatures, 1):
            why = scanner_problem([(s.pattern, s.case_sensitive)])
            if why:
                out.append(Problem(entry.path, s.line, f"signatures[{i}] is rejected by the scanner: {why}"))
    return out or [Problem("knowledge base", 0, "the scanner rejected the signatures together but none alone")]
