"""Causes may carry a `when:` like fixes: the view orders them held first, unconditional
(or unknown) next, false last; the short view never gives a false one as "Why", the full
view marks it, the JSON keeps them all with `causes_held`. Validated like fix conditions."""
import pytest

from gpu_troubleshooter.engine import diagnose_text
from gpu_troubleshooter.fixes import choose_causes
from gpu_troubleshooter.i18n import check_translation, translation_path
from gpu_troubleshooter.knowledge import load_knowledge_base
from gpu_troubleshooter.model import entry_from_yaml
from gpu_troubleshooter.render import Style, human, why_line
from gpu_troubleshooter.validate import validate
from gpu_troubleshooter.view import entry_view

OWN_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.08 GiB memory in use. "
           "Of the allocated memory 75.90 GiB is allocated by PyTorch, and 1.64 GiB is reserved by PyTorch but unallocated.")
OTHER_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 496.00 MiB. GPU 0 has a total capacity of "
             "39.39 GiB of which 235.06 MiB is free. Process 20398 has 38.12 GiB memory in use. Including non-PyTorch "
             "memory, this process has 1.02 GiB memory in use. Of the allocated memory 820.00 MiB is allocated by "
             "PyTorch, and 41.58 MiB is reserved by PyTorch but unallocated.")
FRAG_OOM = ("RuntimeError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; 39.39 GiB total capacity; "
            "21.20 GiB already allocated; 1.10 GiB free; 36.80 GiB reserved in total by PyTorch)")
BCE_ASSERT = ("/pytorch/aten/src/ATen/native/cuda/Loss.cu:102: operator(): block: [217,0,0], thread: [0,0,0] Assertion "
              "`input_val >= zero && input_val <= one` failed.\nRuntimeError: CUDA error: device-side assert triggered")


@pytest.fixture(scope="module")
def kb():
    return load_knowledge_base()


def top_view(kb, text, entry_id):
    d = diagnose_text(text, kb)
    views = [v for v in d.views() if v.id == entry_id]
    assert views, [v.id for v in d.views()]
    return d, views[0]


def test_own_memory_and_other_process_oom_lead_with_different_causes(kb):
    _, own = top_view(kb, OWN_OOM, "cuda-oom")
    _, other = top_view(kb, OTHER_OOM, "cuda-oom")
    assert own.causes[0].startswith("The job needs more GPU memory") and own.causes_held[0] is True
    assert other.causes[0].startswith("Something else already holds memory") and other.causes_held[0] is True
    # the own-memory cause is false for the other-process log: last, and not among the likely ones
    assert other.causes_held[-1] is False
    assert not any(c.startswith("The job needs more GPU memory") for c in other.likely_causes)
    assert why_line(other).startswith("Something else already holds memory")
    assert why_line(own).startswith("The job needs more GPU memory")


def test_fragmentation_cause_first_and_order_is_held_none_false(kb):
    _, frag = top_view(kb, FRAG_OOM, "cuda-oom")
    assert frag.causes[0].startswith("Fragmentation")
    rank = {True: 0, None: 1, False: 2}
    assert [rank[h] for h in frag.causes_held] == sorted(rank[h] for h in frag.causes_held)


def test_without_numbers_causes_keep_the_written_order(kb):
    _, view = top_view(kb, "RuntimeError: CUDA error: out of memory", "cuda-oom")
    entry = kb.get("cuda-oom")
    assert view.causes == tuple(str(c) for c in entry.causes)
    assert set(view.causes_held) == {None}


def test_device_side_assert_cause_chosen_by_the_assertion(kb):
    _, view = top_view(kb, BCE_ASSERT, "device-side-assert")
    assert view.causes[0].startswith("BCELoss got inputs outside [0, 1]")
    assert view.causes_held[0] is True and view.causes_held.count(False) == 2


def test_json_keeps_every_cause_with_held(kb):
    d, _ = top_view(kb, OTHER_OOM, "cuda-oom")
    doc = [f for f in d.to_dict()["findings"] if f["id"] == "cuda-oom"][0]
    assert len(doc["causes"]) == len(kb.get("cuda-oom").causes) == len(doc["causes_held"])
    assert doc["causes_held"][0] is True and doc["causes_held"][-1] is False
    assert all(isinstance(c, str) for c in doc["causes"])     # the schema-1 field is unchanged in kind


def test_full_view_marks_a_false_cause_short_view_hides_it(kb):
    d, _ = top_view(kb, OTHER_OOM, "cuda-oom")
    full = human(d, Style(False), full=True)
    marked = [ln for ln in full.splitlines() if "(probably not for this job)" in ln and ln.startswith("  - ")]
    assert any("The job needs more GPU memory" in ln for ln in marked)
    short = human(d, Style(False), width=100)
    assert "The job needs more GPU memory" not in short


def test_explain_without_a_log_lists_causes_in_file_order(kb):
    entry = kb.get("cuda-oom")
    view = entry_view(entry)
    assert view.causes == tuple(str(c) for c in entry.causes) and set(view.causes_held) == {None}


def test_conditional_cause_model_and_namespace():
    entry = entry_from_yaml({
        "id": "x", "title": "t", "summary": "s", "tags": [], "severity": "error", "signatures": [],
        "values": {"n": "(?P<n>\\d+)"},
        "causes": ["always", {"text": {"en": "big", "hr": "veliko"}, "when": {"fact": "value.n", "gt": 10}},
                   {"text": "pbs only", "when": {"fact": "log.scheduler", "equals": "pbs"}}],
        "fixes": [{"title": "f", "text": "t"}]}, "x.yaml")
    assert entry.causes[1].get("hr") == "veliko" and entry.cause_when[0] is None
    judged = [(str(c), h) for c, h in choose_causes(entry, {"n": "12"}, None, "slurm")]
    assert judged == [("big", True), ("always", None), ("pbs only", False)]
    # a figure the log did not give is unknown, not false: the written order stays
    assert [(str(c), h) for c, h in choose_causes(entry, {}, None, "pbs")] == [
        ("pbs only", True), ("always", None), ("big", None)]


def test_a_cause_for_a_case_the_log_does_not_name_goes_last():
    entry = entry_from_yaml({
        "id": "x", "title": "t", "summary": "s", "tags": [], "severity": "error", "signatures": [],
        "values": {"code": "code (?P<code>\\d+)"},
        "causes": [{"text": "not found", "when": {"fact": "value.code", "equals": "127"}}, "always"],
        "fixes": [{"title": "f", "text": "t"}]}, "x.yaml")
    assert [(str(c), h) for c, h in choose_causes(entry, {"code": "127"}, None, None)] == [
        ("not found", True), ("always", None)]
    assert [(str(c), h) for c, h in choose_causes(entry, {}, None, None)] == [
        ("always", None), ("not found", False)]


CAUSED = """\
id: caused-entry
title: A test entry
summary: For the cause validation.
tags: [test]
severity: error
signatures:
  - literal: 'caused entry failure marker'
    weight: 1.0
values:
  used: 'used (?P<used>\\d+)'
causes:
  - plain cause
  - text: a cause with a condition on an undeclared value
    when: {fact: value.nope, gt: 1}
  - text: another
    when: {fact: value.used, gt: 1}
    scheduler: pbs
fixes:
  - title: Do something
    text: Something.
"""


def test_kb_validate_reports_cause_conditions_at_their_line(tmp_path):
    folder = tmp_path / "site" / "test"
    folder.mkdir(parents=True)
    (folder / "caused-entry.yaml").write_text(CAUSED, encoding="utf-8")
    problems, _ = validate(str(tmp_path / "site"), check_examples=False)
    errors = [p for p in problems if not p.warning and p.file.endswith("caused-entry.yaml")]
    lines = CAUSED.splitlines()
    unknown = [p for p in errors if "value.nope" in p.message]
    assert unknown and lines[unknown[0].line - 1].strip().startswith("when: {fact: value.nope"), [str(p) for p in errors]
    assert "causes[2]" in unknown[0].message
    shape = [p for p in errors if "causes[3]" in p.message and "{text: ..., when: CONDITION}" in p.message]
    assert shape and lines[shape[0].line - 1].strip().startswith("- text: another"), [str(p) for p in errors]


def test_translations_of_conditional_causes_stay_current(kb):
    import yaml
    for entry_id in ("cuda-oom", "device-side-assert"):
        entry = kb.get(entry_id)
        data = yaml.safe_load(open(entry.path, encoding="utf-8"))
        for lang in ("hr", "sr", "ko"):
            path = translation_path(entry.path, lang)
            if path.exists():
                assert not [str(w) for w in check_translation(data, path) if "stale" in w.message]
    hr = entry_view(kb.get("cuda-oom"), "hr")
    assert hr.causes[0] != str(kb.get("cuda-oom").causes[0])    # the translated cause is found through {text, when}


@pytest.mark.parametrize("cause, why", [
    ("A wheel built for another GPU (e.g. sm_90 only) was installed. Reinstall it.",
     "A wheel built for another GPU (e.g. sm_90 only) was installed."),
    ("Paket je izgrađen za drugi CUDA (npr. 11.8) od onog na nodu. Instaliraj drugi.",
     "Paket je izgrađen za drugi CUDA (npr. 11.8) od onog na nodu."),
    ("Fragmentation, i.e. free memory in small pieces, vs. one big block. More here.",
     "Fragmentation, i.e. free memory in small pieces, vs. one big block."),
    ("The job ran out of time! Ask for more.", "The job ran out of time!"),
])
def test_why_line_ends_at_the_sentence_not_at_an_abbreviation(cause, why):
    from types import SimpleNamespace
    assert why_line(SimpleNamespace(likely_causes=(cause,), summary="unused")) == why
