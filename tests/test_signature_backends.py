"""Hyperscan (the scan) and RE2 (its fallback, and what `exclude`/`values` run
in) must agree on which signatures match each line of every example log.

They read patterns differently in corners the schema cannot rule out: `.`
is one byte for Hyperscan but one UTF-8 character for RE2 (a curly
apostrophe in "doesn’t" is three bytes), and Hyperscan 5.4 missed
"sbatch: error: Specifying job run time is now required." with
`[^\\n]*\\b(?:is|are) now required` where RE2 matched. A disagreement is a
log that one backend diagnoses and the other does not."""
from pathlib import Path

import pytest

from gpu_troubleshooter.knowledge import load_knowledge_base
from gpu_troubleshooter.scanner import open_gaps, re2_options, re2_signature

hyperscan = pytest.importorskip("hyperscan")
re2 = pytest.importorskip("re2")

KNOWLEDGE = Path(__file__).resolve().parent.parent / "knowledge"


def test_hyperscan_and_re2_match_the_same_example_lines():
    kb = load_knowledge_base(strict=False)
    pats = [(e.id, s.pattern, s.case_sensitive) for e in kb.entries for s in e.signatures]
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=[open_gaps(p).encode() for _, p, _ in pats], ids=list(range(len(pats))),
               flags=[(0 if cs else hyperscan.HS_FLAG_CASELESS) | hyperscan.HS_FLAG_MULTILINE
                      | hyperscan.HS_FLAG_SINGLEMATCH for _, _, cs in pats])
    rs = re2.Set.SearchSet(re2_options())
    for _, p, cs in pats:
        rs.Add(re2_signature(p, cs))
    rs.Compile()
    disagree = []
    hs: set = set()

    def found(i, *_):
        hs.add(i)

    logs = sorted(KNOWLEDGE.glob("*/*/must-*/*.log"))
    assert len(logs) > 1000
    for path in logs:
        for no, line in enumerate(path.read_bytes().split(b"\n"), 1):
            if len(line) > 4000:  # the scanner matches a window of a long line, not the whole of it
                continue
            hs.clear()
            db.scan(line, match_event_handler=found)
            both = set(rs.Match(line) or ())
            for i in hs ^ both:
                side = "RE2 only" if i in both else "Hyperscan only"
                disagree.append(f"{path.relative_to(KNOWLEDGE)}:{no}: {side}: {pats[i][0]} {pats[i][1]!r}")
    assert not disagree, "\n".join(disagree[:20])
