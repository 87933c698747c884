"""Every entry's example logs through the real engine: must-match logs rank
the entry first, near misses do not show it at all."""
from pathlib import Path

import pytest

from gpu_troubleshooter.engine import diagnose_path
from gpu_troubleshooter.knowledge import bundled_dir, collect, entry_files, parse_entry
from gpu_troubleshooter.provenance import check_sources
from gpu_troubleshooter.validate import example_ids


def _cases():
    by_id, _ = collect()
    for entry in sorted(by_id.values(), key=lambda e: e.id):
        for kind in ("must-match", "must-not-match"):
            for path in entry.examples(kind):
                yield pytest.param(entry.id, kind, path, id=f"{entry.id}/{kind}/{path.name}")


@pytest.mark.parametrize("entry_id,kind,path", list(_cases()))
def test_example(kb, entry_id, kind, path):
    entry = kb.get(entry_id)
    diagnosis = diagnose_path(path, kb)
    ids = example_ids(diagnosis, entry)
    if kind == "must-match" and entry.harmless:   # known noise: listed as harmless, never a finding
        assert entry_id in ids and entry_id not in [f.id for f in diagnosis.findings], f"{path.name}: {ids}"
    elif kind == "must-match":
        assert ids and ids[0] == entry_id, f"{path.name}: expected {entry_id} first, got {ids or 'no known failure'}"
    else:
        assert entry_id not in ids, f"{path.name}: near miss diagnosed as {entry_id} ({ids})"


@pytest.mark.parametrize("path", entry_files(bundled_dir()), ids=lambda p: p.stem)
def test_entry_is_valid_and_has_examples(path):
    entry, problems = parse_entry(path)
    assert not problems, "\n".join(map(str, problems))
    assert len(entry.examples("must-match")) >= 3, f"{entry.id} needs 3 must-match examples"
    assert len(entry.examples("must-not-match")) >= 2, f"{entry.id} needs 2 near misses"
    source_problems, _ = check_sources(str(path))
    assert not source_problems, "\n".join(map(str, source_problems))


def test_bundled_kb_validates_cleanly():
    """Every check of `kb validate` but the examples, which test_example above runs one by one
    (running all ~5700 of them a second time here cost about 20 s of the suite)."""
    from gpu_troubleshooter.validate import validate
    problems, summary = validate(check_examples=False)
    errors = [p for p in problems if not p.warning]  # warnings (prefix signatures) do not fail kb validate
    assert not errors, "\n".join(map(str, errors))
