"""Hyperscan (the scan) and RE2 (its fallback, and what `exclude`/`values` run
in) must agree on which signatures match each line of every example log.

They read patterns differently in corners the schema cannot rule out: `.`
is one byte for Hyperscan but one UTF-8 character for RE2 (a curly
apostrophe in "doesn’t" is three bytes), and Hyperscan 5.4 missed
"sbatch: error: Specifying job run time is now required." with
`[^\\n]*\\b(?:is|are) now required` where RE2 matched. A disagreement is a
log that one backend diagnoses and the other does not."""
import importlib.util
from pathlib import Path

import pytest

from gpu_troubleshooter.knowledge import load_knowledge_base

pytest.importorskip("hyperscan")

ROOT = Path(__file__).resolve().parent.parent
KNOWLEDGE = ROOT / "knowledge"


def _backend_agreement():
    """benchmarks/backend_agreement.py, which runs the same comparison over any logs."""
    spec = importlib.util.spec_from_file_location("backend_agreement", ROOT / "benchmarks" / "backend_agreement.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_hyperscan_and_re2_match_the_same_example_lines():
    # the scanner itself with each backend (its flags, its opened gaps), one line per scan
    pair = _backend_agreement().BackendPair(load_knowledge_base(strict=False))
    assert (pair.hyperscan.backend, pair.re2.backend) == ("hyperscan", "re2")

    disagree = []
    logs = sorted(KNOWLEDGE.glob("*/*/must-*/*.log"))
    assert len(logs) > 1000
    for path in logs:
        for no, side, entry, pattern in pair.disagreements(path.read_bytes()):
            disagree.append(f"{path.relative_to(KNOWLEDGE)}:{no}: {side}: {entry} {pattern!r}")
    assert not disagree, "\n".join(disagree[:20])
