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

from gpu_troubleshooter.backends import BackendPair
from gpu_troubleshooter.knowledge import load_knowledge_base
from support import entry_yaml

pytest.importorskip("hyperscan")

KNOWLEDGE = Path(__file__).resolve().parent.parent / "knowledge"


def test_hyperscan_and_re2_match_the_same_example_lines():
    # the scanner itself with each backend (its flags, its opened gaps), one line per scan
    pair = BackendPair(load_knowledge_base(strict=False).entries)
    assert (pair.hyperscan.backend, pair.re2.backend) == ("hyperscan", "re2")

    disagree = []
    logs = sorted(KNOWLEDGE.glob("*/*/must-*/*.log"))
    assert len(logs) > 1000
    for path in logs:
        for no, side, entry, signature in pair.disagreements(path.read_bytes()):
            disagree.append(f"{path.relative_to(KNOWLEDGE)}:{no}: {side}: {entry} {signature.pattern!r}")
    assert not disagree, "\n".join(disagree[:20])


def _site_entry(tmp_path, regex, line):
    """A site folder with one entry (signature `regex`) whose must-match example holds `line`."""
    site = tmp_path / "site"
    (site / "quirk" / "must-match").mkdir(parents=True)
    (site / "quirk.yaml").write_text(entry_yaml("quirk", "", signature=f"regex: '{regex}'"))
    example = site / "quirk" / "must-match" / "one.log"
    example.write_text(f"start\n{line}\n", encoding="utf-8")
    return site, example


def test_kb_validate_warns_where_a_site_signature_matches_in_re2_only(tmp_path, monkeypatch):
    """`.` is one byte for Hyperscan, so 'doesn.t' misses the three-byte curly apostrophe
    that RE2 (one character) matches: the site's admin saw it match, the scan never will."""
    from gpu_troubleshooter.validate import validate
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    site, example = _site_entry(tmp_path, "SITE_QUIRK doesn.t start", "SITE_QUIRK doesn\u2019t start")
    problems, _ = validate(site)
    [warning] = [p for p in problems if "only RE2 matches it" in p.message]
    assert (warning.file, warning.line, warning.warning) == (str(example), 2, True)
    assert "'quirk'" in warning.message and "doesn.t" in warning.message
    same, _ = _site_entry(tmp_path / "ascii", "SITE_QUIRK doesn.t start", "SITE_QUIRK doesn't start")
    assert not [p for p in validate(same)[0] if "matches it" in p.message]  # both match: nothing to say


def test_kb_validate_names_the_known_vectorscan_miss_where_this_build_has_it(tmp_path, monkeypatch):
    from gpu_troubleshooter.validate import validate
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    site, example = _site_entry(tmp_path, r"(?i)SITE_Q: [^\n]*\b(?:is|ar) now req", "SITE_Q: ing job run time is now required.")
    entry = load_knowledge_base([site], bundled=False, strict=False).get("quirk")
    if not list(BackendPair([entry]).disagreements(example.read_bytes())):
        pytest.skip("this Hyperscan build matches the shape Vectorscan 5.4.12 misses")
    assert [(p.file, p.line) for p in validate(site)[0] if "only RE2 matches it" in p.message] == [(str(example), 2)]
