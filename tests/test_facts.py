"""Fact rules: the evaluator, and facts confirming, ruling out and standing alone in a diagnosis."""
import json
from pathlib import Path

import pytest

from probe_helpers import has_torch

from gpu_troubleshooter.facts import FactOutcome, apply_fact_rules, evaluate, validate_fact_rule

FACTS_KB = Path(__file__).parent / "fixtures" / "kb" / "facts"

CPU_TORCH = {"torch": {"installed": True, "version": "2.13.0+cpu", "cuda_build": None},
             "scheduler": {"in_job": True, "gpus_requested": 0},
             "gpu": {"count": {"unknown": "NVML Shared Library Not Found"}, "cuda_driver_version": "12.2"},
             "resources": {"shm": {"total_mib": 64}}}
CUDA_TORCH = {"torch": {"installed": True, "version": "2.3.0+cu121", "cuda_build": "12.1"},
              "scheduler": {"in_job": True, "gpus_requested": 1}}


def rule(when, effect="confirms", note="n"):
    return {"when": when, "effect": effect, "note": note}


def test_operators():
    f = {"a": {"n": 3, "s": "Tesla V100", "l": ["sm_80"], "v": "11.4", "z": None, "e": ""}}
    cases = [({"fact": "a.n", "equals": 3}, True), ({"fact": "a.n", "not_equals": 3}, False),
             ({"fact": "a.n", "in": [1, 3]}, True), ({"fact": "a.n", "lt": 4}, True), ({"fact": "a.n", "le": 2}, False),
             ({"fact": "a.n", "gt": 2}, True), ({"fact": "a.n", "ge": 4}, False),
             ({"fact": "a.v", "version_lt": "12.1"}, True), ({"fact": "a.v", "version_ge": "11.4.0"}, True),
             ({"fact": "a.z", "exists": False}, True), ({"fact": "a.s", "exists": True}, True),
             ({"fact": "a.e", "empty": True}, True), ({"fact": "a.l", "empty": False}, True),
             ({"fact": "a.s", "contains": "v100"}, True), ({"fact": "a.l", "contains": "sm_90"}, False),
             ({"fact": "a.s", "lt": 3}, None)]
    for cond, want in cases:
        assert evaluate(cond, f) is want, cond


def test_unreadable_fact_is_neither_true_nor_false():
    assert evaluate({"fact": "gpu.count", "equals": 0}, CPU_TORCH) is None
    assert evaluate({"fact": "gpu.count.x", "equals": 0}, CPU_TORCH) is None     # under an unknown
    assert evaluate({"fact": "no.such.path", "exists": False}, CPU_TORCH) is None
    assert evaluate({"not": {"fact": "gpu.count", "equals": 0}}, CPU_TORCH) is None
    # all: one false decides; any: one true decides; otherwise unknown stays unknown
    assert evaluate({"all": [{"fact": "gpu.count", "equals": 0}, {"fact": "scheduler.in_job", "equals": False}]}, CPU_TORCH) is False
    assert evaluate({"all": [{"fact": "gpu.count", "equals": 0}, {"fact": "scheduler.in_job", "equals": True}]}, CPU_TORCH) is None
    assert evaluate({"any": [{"fact": "gpu.count", "equals": 0}, {"fact": "scheduler.in_job", "equals": True}]}, CPU_TORCH) is True
    out = apply_fact_rules([rule({"fact": "gpu.count", "equals": 0}, "alone")], CPU_TORCH)
    assert out == FactOutcome()


def test_outcome_names_the_facts_and_values():
    rules = [rule({"fact": "torch.cuda_build", "equals": None}, "alone", "PyTorch reports no CUDA build"),
             rule({"all": [{"fact": "scheduler.in_job", "equals": True}, {"fact": "scheduler.gpus_requested", "equals": 0}]},
                  "confirms", "the job requested no GPU"),
             rule({"fact": "torch.cuda_build", "not_equals": None}, "rules_out", "CUDA build")]
    out = apply_fact_rules(rules, CPU_TORCH)
    assert out.alone_by == ("torch.cuda_build = null (PyTorch reports no CUDA build)",)
    assert out.confirmed_by == ("scheduler.in_job = true, scheduler.gpus_requested = 0 (the job requested no GPU)",)
    assert out.ruled_out_by == ()
    out = apply_fact_rules(rules, CUDA_TORCH)
    assert out.ruled_out_by == ('torch.cuda_build = "12.1" (CUDA build)',) and not out.alone_by
    assert out.to_dict()["ruled_out_by"] == list(out.ruled_out_by)
    assert apply_fact_rules(rules, None) == FactOutcome()


def test_validate_fact_rule():
    assert validate_fact_rule(rule({"fact": "torch.cuda_build", "equals": None})) == []
    assert validate_fact_rule(rule({"all": [{"fact": "a.b", "gt": 0}, {"not": {"fact": "c", "empty": True}}]}, "alone")) == []
    bad = {
        "x": "a fact rule must be a mapping",
        "effect": None,
    }
    assert validate_fact_rule("x")
    assert any("effect must be one of" in m for m in validate_fact_rule(rule({"fact": "a", "equals": 1}, "maybe")))
    assert any("unknown operator" in m for m in validate_fact_rule(rule({"fact": "a", "approx": 1})))
    assert any("exactly one operator" in m for m in validate_fact_rule(rule({"fact": "a", "lt": 1, "gt": 0})))
    assert any("dotted path" in m for m in validate_fact_rule(rule({"fact": "a..b", "equals": 1})))
    assert any("takes a number" in m for m in validate_fact_rule(rule({"fact": "a", "lt": "3"})))
    assert any("takes a version" in m for m in validate_fact_rule(rule({"fact": "a", "version_lt": "new"})))
    assert any("takes true or false" in m for m in validate_fact_rule(rule({"fact": "a", "exists": "yes"})))
    assert any("non-empty list" in m for m in validate_fact_rule(rule({"all": []})))
    assert any("needs 'when'" in m for m in validate_fact_rule({"effect": "alone"}))
    assert any("unknown key" in m for m in validate_fact_rule({**rule({"fact": "a", "equals": 1}), "why": 1}))
    # an invalid rule never applies
    assert apply_fact_rules([rule({"fact": "torch.cuda_build", "eq": None}, "alone")], CPU_TORCH) == FactOutcome()


# --- in a diagnosis: confirm, rule out, stand alone -----------------------------------


@pytest.fixture(scope="module")
def kb():
    from gpu_troubleshooter.knowledge import load_knowledge_base
    return load_knowledge_base([FACTS_KB], strict=True, bundled=False)


def finding(d, fid):
    return next((f for f in d.findings if f.id == fid), None)


def test_fact_alone_is_a_finding_without_any_log_evidence(kb):
    from gpu_troubleshooter.engine import diagnose_text
    d = diagnose_text("epoch 1 loss 0.3\n", kb, facts=CPU_TORCH)
    f = finding(d, "demo-torch-cpu")
    assert f is not None and f.evidence[0].line == 0
    assert f.confirmed_by == ("torch.cuda_build = null (PyTorch reports no CUDA build)",)
    assert finding(diagnose_text("epoch 1 loss 0.3\n", kb, facts=CUDA_TORCH), "demo-torch-cpu") is None
    assert finding(diagnose_text("epoch 1 loss 0.3\n", kb), "demo-torch-cpu") is None


def test_fact_confirms_and_rules_out_a_log_finding(kb):
    from gpu_troubleshooter.engine import diagnose_text
    log = "step 1\ndemo weak cuda hint\n"
    plain = finding(diagnose_text(log, kb), "demo-torch-cpu")
    confirmed = finding(diagnose_text(log, kb, facts=CPU_TORCH), "demo-torch-cpu")
    assert plain is not None and confirmed is not None and confirmed.confidence > plain.confidence
    assert any("torch.cuda_build = null" in c for c in confirmed.confirmed_by)
    assert finding(diagnose_text(log, kb, facts=CUDA_TORCH), "demo-torch-cpu") is None   # 0.6 * 0.4 < threshold
    # the engine weakens a ruled-out finding (x0.4): even a proof line drops below the report threshold
    strong = "Torch not compiled with CUDA enabled\n"
    assert finding(diagnose_text(strong, kb), "demo-torch-cpu") is not None
    assert finding(diagnose_text(strong, kb, facts=CUDA_TORCH), "demo-torch-cpu") is None
    nogpu = finding(diagnose_text("demo: no CUDA GPUs are available\n", kb, facts=CPU_TORCH), "demo-no-gpu")
    assert nogpu.confirmed_by == ("scheduler.in_job = true, scheduler.gpus_requested = 0 (the job requested no GPU)",)


def test_json_shows_which_facts_supported_which_finding(tmp_path):
    from support import run_cli
    (tmp_path / "facts.json").write_text(json.dumps(CPU_TORCH))
    (tmp_path / "job.log").write_text("demo: no CUDA GPUs are available\n")
    p = run_cli(tmp_path / "job.log", "--facts", tmp_path / "facts.json", "--json", env={"TROUBLESHOOT_BUNDLED_KB": "0",
                                                                                          "TROUBLESHOOT_KB": str(FACTS_KB)})
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    by_id = {f["id"]: f for f in doc["findings"]}
    assert by_id["demo-no-gpu"]["facts"]["confirmed_by"] == [
        "scheduler.in_job = true, scheduler.gpus_requested = 0 (the job requested no GPU)"]
    assert by_id["demo-torch-cpu"]["evidence"][0]["line"] == 0
    assert doc["facts"]["torch"]["cuda_build"] is None


def test_real_probe_facts_make_the_cpu_build_finding_alone(tmp_path):
    """troubleshoot LOG --probe on this machine: its real CPU torch is a finding with no log evidence."""
    if not has_torch():
        pytest.skip("torch not installed (set REQUIRE_TORCH=1 to make this a failure)")
    from support import run_cli
    (tmp_path / "job.log").write_text("epoch 1 loss 0.3\n")
    p = run_cli(tmp_path / "job.log", "--probe", "--json", env={"TROUBLESHOOT_BUNDLED_KB": "0",
                                                                "TROUBLESHOOT_KB": str(FACTS_KB)})
    doc = json.loads(p.stdout)
    if doc["facts"]["torch"].get("unknown"):
        pytest.skip("torch import exceeded the probe's default timeout here: %s" % doc["facts"]["torch"]["unknown"])
    ids = [f["id"] for f in doc["findings"]]
    assert "demo-torch-cpu" in ids, doc


@pytest.mark.parametrize("value", [None, True, False, 0, -3, 2.5, 1e300, float("nan"), float("inf"), "OUT_OF_MEMORY",
                                   'a"b\\c', "naïve", "x" * 100, "line\nbreak", [1, "a"], {"a": 1}, ("t",)])
def test_a_fact_value_is_shown_as_json_writes_it(value):
    # the facts' "confirmed by" lines quote values as JSON; plain ones are written without importing json
    import json
    from gpu_troubleshooter.facts import _show
    text = json.dumps(value, default=str)
    assert _show(value) == (text if len(text) <= 80 else text[:77] + "...")
