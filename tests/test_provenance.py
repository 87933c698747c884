"""sources.yaml: each example log of an entry names where it was copied from."""
from pathlib import Path

from gpu_troubleshooter.provenance import check_sources


def _entry(tmp_path: Path, sources: str = None) -> str:
    folder = tmp_path / "oom"
    for kind, name in (("must-match", "a.log"), ("must-match", "b.log"), ("must-not-match", "c.log")):
        (folder / kind).mkdir(parents=True, exist_ok=True)
        (folder / kind / name).write_text("CUDA out of memory\n")
    if sources is not None:
        (folder / "sources.yaml").write_text(sources)
    return str(tmp_path / "oom.yaml")


GOOD = """\
must-match/a.log:
  url: https://github.com/o/r/issues/1
must-match/b.log:
  origin: our helpdesk ticket 4711
  note: user names redacted
must-not-match/c.log:
  untraced: kept for the minimum; searched the first line
"""


def test_a_complete_file_is_clean_and_counts_untraced(tmp_path):
    problems, provenance = check_sources(_entry(tmp_path, GOOD))
    assert problems == []
    assert provenance.recorded and provenance.untraced == 1 and provenance.traced_matches == 2


def test_an_entry_whose_must_match_logs_are_all_untraced_is_counted_as_such(tmp_path):
    untraced = GOOD.replace("  url: https://github.com/o/r/issues/1", "  untraced: searched").replace(
        "  origin: our helpdesk ticket 4711", "  untraced: searched")
    problems, provenance = check_sources(_entry(tmp_path, untraced))
    assert problems == [] and provenance.untraced == 3 and provenance.traced_matches == 0


def test_no_file_is_reported_as_unrecorded_not_as_an_error(tmp_path):
    problems, provenance = check_sources(_entry(tmp_path))
    assert problems == [] and not provenance.recorded


def test_a_log_without_a_source_is_named(tmp_path):
    problems, _ = check_sources(_entry(tmp_path, GOOD.split("must-not-match")[0]))
    assert len(problems) == 1 and "must-not-match/c.log" in problems[0].message


def test_a_key_for_a_missing_log_is_an_error_at_its_line(tmp_path):
    problems, _ = check_sources(_entry(tmp_path, GOOD + "must-match/gone.log:\n  url: https://x.org/1\n"))
    assert [(p.line, "gone.log" in p.message) for p in problems] == [(8, True)]


def test_values_need_exactly_one_source_and_a_real_url(tmp_path):
    bad = GOOD.replace("  origin: our helpdesk ticket 4711\n", "  origin: x\n  url: https://x.org\n")
    bad = bad.replace("https://github.com/o/r/issues/1", "github.com/o/r/issues/1")
    messages = [p.message for p in check_sources(_entry(tmp_path, bad))[0]]
    assert any("exactly one" in m and "b.log" in m for m in messages)
    assert any("http(s)" in m and "a.log" in m for m in messages)


def test_broken_yaml_and_a_list_are_reported_not_raised(tmp_path):
    problems, _ = check_sources(_entry(tmp_path, "must-match/a.log: [\n"))
    assert problems and "YAML" in problems[0].message
    problems, _ = check_sources(_entry(tmp_path, "- must-match/a.log\n"))
    assert problems and "must map" in problems[0].message
