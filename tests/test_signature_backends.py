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
from gpu_troubleshooter.scanner import Scanner

pytest.importorskip("hyperscan")

KNOWLEDGE = Path(__file__).resolve().parent.parent / "knowledge"


def test_hyperscan_and_re2_match_the_same_example_lines():
    # the scanner itself with each backend (its flags, its opened gaps), one line per scan:
    # a Hyperscan scan reports each signature once per chunk
    kb = load_knowledge_base(strict=False)
    signatures = [(e.id, s) for e in kb.entries for s in e.signatures]
    patterns = [(s.pattern, s.case_sensitive) for _, s in signatures]
    hyperscan, re2 = Scanner(patterns), Scanner(patterns, use_hyperscan=False)
    assert (hyperscan.backend, re2.backend) == ("hyperscan", "re2")

    def matched(scanner, line):
        return {pid for hit in scanner.scan(line, 1) for pid in hit.pattern_ids}

    disagree = []
    logs = sorted(KNOWLEDGE.glob("*/*/must-*/*.log"))
    assert len(logs) > 1000
    for path in logs:
        for no, line in enumerate(path.read_bytes().split(b"\n"), 1):
            if len(line) > 4000:  # the scanner matches a window of a long line, not the whole of it
                continue
            by_hyperscan, by_re2 = matched(hyperscan, line), matched(re2, line)
            for i in by_hyperscan ^ by_re2:
                side = "RE2 only" if i in by_re2 else "Hyperscan only"
                disagree.append(f"{path.relative_to(KNOWLEDGE)}:{no}: {side}: {signatures[i][0]} {signatures[i][1].pattern!r}")
    assert not disagree, "\n".join(disagree[:20])
