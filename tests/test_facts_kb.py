"""The bundled knowledge base's fact rules: a fact confirming, ruling out and standing alone."""
from pathlib import Path

import pytest

from gpu_troubleshooter.engine import diagnose_text

KB_DIR = Path(__file__).resolve().parents[1] / "knowledge"
NO_LOG = "epoch 1/10 loss 0.71\nepoch 2/10 loss 0.64\n"

JOB = {"in_job": True, "kind": "slurm", "job_id": "4242", "gpus_requested": 1, "cuda_visible_devices": "0",
       "visible_device_count": 1}
HEALTHY = {
    "scheduler": JOB,
    "gpu": {"driver_loaded": True, "count": 1, "cuda_driver_version": "12.2", "device_nodes": ["/dev/nvidia0"]},
    "torch": {"installed": True, "version": "2.3.1+cu121", "cuda_build": "12.1", "hip_build": None,
              "driver_too_old": False, "arch_supported": True, "missing_archs": []},
    "tensorflow": {"installed": True, "built_with_cuda": True, "gpus": ["/physical_device:GPU:0"]},
    "env": {"container": {"runtime": "apptainer", "gpus_passed": True}},
    "resources": {"shm": {"total_mib": 32000, "free_mib": 31000}, "workdir": {"free_gib": 500.0},
                  "home": {"free_gib": 20.0}, "cpu": {"flags": {"avx": True, "avx2": True, "avx512f": False}}},
}


@pytest.fixture(scope="module")
def kb():
    """The bundled KB, tolerant of a dangling leads_to elsewhere (kb validate reports those)."""
    from gpu_troubleshooter.knowledge import load_knowledge_base
    return load_knowledge_base()


def variant(**changes):
    """HEALTHY with dotted-path changes: variant(**{"torch.cuda_build": None})."""
    import copy
    facts = copy.deepcopy(HEALTHY)
    for path, value in changes.items():
        node = facts
        *head, last = path.split(".")
        for part in head:
            node = node[part]
        node[last] = value
    return facts


def ids(d):
    return [f.id for f in d.findings]


def example(entry_id):
    logs = sorted(KB_DIR.glob("*/%s/must-match/*.log" % entry_id))
    if not logs:
        pytest.skip("no must-match example for %s yet" % entry_id)
    return logs[0].read_text(errors="replace")


def get(d, fid):
    return next((f for f in d.findings if f.id == fid), None)


def test_healthy_facts_alone_show_nothing(kb):
    assert ids(diagnose_text(NO_LOG, kb, facts=HEALTHY)) == []


ALONE = [
    ("torch-cpu-build", {"torch.cuda_build": None, "torch.version": "2.13.0+cpu"}),
    ("no-gpu-allocated", {"scheduler.gpus_requested": 0}),
    ("no-gpu-allocated", {"scheduler.cuda_visible_devices": "", "scheduler.visible_device_count": 0}),
    ("cuda-driver-too-old", {"torch.driver_too_old": True, "gpu.cuda_driver_version": "11.4"}),
    ("container-no-gpu", {"env.container": {"runtime": "docker", "gpus_passed": False}}),
]


@pytest.mark.parametrize("entry_id,changes", ALONE, ids=["%s-%d" % (e, i) for i, (e, _) in enumerate(ALONE)])
def test_fact_alone_is_a_finding_with_no_log(kb, entry_id, changes):
    d = diagnose_text(NO_LOG, kb, facts=variant(**changes))
    f = get(d, entry_id)
    assert f is not None, ids(d)
    assert f.evidence[0].line == 0 and f.confirmed_by
    assert get(diagnose_text(NO_LOG, kb, facts=HEALTHY), entry_id) is None


def test_a_small_dev_shm_alone_is_no_finding(kb):
    """A 64 MiB /dev/shm (a container default) is harmless for a job that never uses it: with no
    log line it is not reported; with one it confirms shm-exhausted."""
    tiny = variant(**{"resources.shm": {"total_mib": 64, "free_mib": 60}})
    assert get(diagnose_text(NO_LOG, kb, facts=tiny), "shm-exhausted") is None
    confirmed = get(diagnose_text(example("shm-exhausted"), kb, facts=tiny), "shm-exhausted")
    assert confirmed is not None and any("/dev/shm is tiny" in c for c in confirmed.confirmed_by)


CONFIRM = [
    ("torch-cpu-build", {"torch.cuda_build": None}),
    ("no-gpu-allocated", {"scheduler.gpus_requested": 0}),
    ("cuda-driver-too-old", {"torch.driver_too_old": True}),
    ("shm-exhausted", {"resources.shm": {"total_mib": 64, "free_mib": 10}}),
    ("illegal-instruction", {"resources.cpu.flags": {"avx": True, "avx2": False, "avx512f": False}}),
    ("disk-quota-exceeded", {"resources.home.free_gib": 0.2}),
    ("tf-gpu-libs-missing", {"tensorflow.gpus": []}),
]


@pytest.mark.parametrize("entry_id,changes", CONFIRM, ids=[c[0] for c in CONFIRM])
def test_fact_confirms_a_log_finding(kb, entry_id, changes):
    log = example(entry_id)
    plain = get(diagnose_text(log, kb), entry_id)
    assert plain is not None
    confirmed = get(diagnose_text(log, kb, facts=variant(**changes)), entry_id)
    assert confirmed is not None and confirmed.confirmed_by
    assert confirmed.confidence >= plain.confidence


RULE_OUT = ["torch-cpu-build", "no-gpu-allocated", "cuda-driver-too-old", "container-no-gpu", "tf-gpu-libs-missing"]


@pytest.mark.parametrize("entry_id", RULE_OUT)
def test_fact_rules_out_a_log_finding(kb, entry_id):
    log = example(entry_id)
    plain = get(diagnose_text(log, kb), entry_id)
    assert plain is not None
    against = get(diagnose_text(log, kb, facts=HEALTHY), entry_id)
    assert against is None or (against.ruled_out_by and against.confidence < plain.confidence)


def test_unread_facts_change_nothing(kb):
    unread = {"scheduler": {"in_job": False, "gpus_requested": {"unknown": "not inside a job"}},
              "torch": {"unknown": "importing torch did not finish within 2.7 s"},
              "gpu": {"count": {"unknown": "NVML Shared Library Not Found"}}}
    assert ids(diagnose_text(NO_LOG, kb, facts=unread)) == []
    log = example("torch-cpu-build")
    a, b = get(diagnose_text(log, kb), "torch-cpu-build"), get(diagnose_text(log, kb, facts=unread), "torch-cpu-build")
    assert a.confidence == b.confidence and not b.confirmed_by and not b.ruled_out_by


def test_every_fact_rule_in_the_bundled_kb_is_valid_and_names_a_documented_fact(kb):
    from gpu_troubleshooter.facts import known_path, validate_fact_rule
    doc = (Path(__file__).resolve().parents[1] / "docs" / "probe-facts.md").read_text()

    def paths(cond):
        if "fact" in cond:
            yield cond["fact"]
        for key in ("all", "any"):
            for sub in cond.get(key, []):
                yield from paths(sub)
        if "not" in cond:
            yield from paths(cond["not"])

    for entry in kb.entries:
        for rule in entry.fact_rules:
            assert validate_fact_rule(rule) == [], entry.id
            for path in paths(rule["when"]):
                # list items by index (sample.gpus.0.idle_fraction) are documented as sample.gpus.N...
                assert "`%s`" % path in doc or known_path(path), \
                    "%s: fact %s is not documented in docs/probe-facts.md" % (entry.id, path)


def test_gpu_arch_missing_from_build_is_a_finding_from_facts_alone_and_a_full_build_rules_it_out(kb):
    from gpu_troubleshooter.engine import diagnose_text
    facts = {"schema": 1, "torch": {"installed": True, "cuda_build": "11.8", "arch_supported": False, "missing_archs": ["sm_120"]}}
    ids = [f.id for f in diagnose_text("training...\n", kb, facts=facts).findings]
    assert ids == ["gpu-arch-unsupported"]
    facts["torch"].update(arch_supported=True, missing_archs=[])
    log = "UserWarning: NVIDIA RTX PRO 6000 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n"
    assert [f.id for f in diagnose_text(log, kb).findings][:1] == ["gpu-arch-unsupported"]
    assert "gpu-arch-unsupported" not in [f.id for f in diagnose_text(log, kb, facts=facts).findings]
