"""A finer entry (`refines: BROADER`) found in the same log as its broader entry ranks right
above it through `refines` itself, whatever the confidences and with no `leads_to` line;
the broader entry found alone is still reported, and left out where it has no log line of
its own; the JSON finding lists the broader ids."""
import re
from pathlib import Path

import pytest

from gpu_troubleshooter.engine import diagnose_path, diagnose_text, rank
from gpu_troubleshooter.findings import Evidence, Finding, finer_first
from gpu_troubleshooter.knowledge import load_knowledge_base
from gpu_troubleshooter.model import Entry


def entry(id, refines=None, broader=(), leads_to=()):
    return Entry(id=id, path=f"{id}.yaml", refines=refines, broader=broader or ((refines,) if refines else ()),
                 leads_to=tuple(leads_to))


def finding(e, confidence, line):
    return Finding(entry=e, confidence=confidence, evidence=(Evidence(line, "x"),))


def ids(findings):
    return [f.id for f in findings]


def test_finer_ranks_above_broader_even_with_lower_confidence():
    broad, fine, other = entry("nccl-failure"), entry("nccl-socket-interface", "nccl-failure"), entry("cuda-oom")
    found = [finding(broad, 0.99, 5), finding(fine, 0.6, 9), finding(other, 0.8, 1)]
    assert ids(rank(found)) == ["nccl-socket-interface", "nccl-failure", "cuda-oom"]


def test_broader_alone_is_reported_and_unrelated_order_is_kept():
    broad, other = entry("nccl-failure"), entry("cuda-oom")
    assert ids(rank([finding(other, 0.9, 1), finding(broad, 0.99, 5)])) == ["nccl-failure", "cuda-oom"]
    fine = entry("nccl-socket-interface", "nccl-failure")
    assert ids(rank([finding(fine, 0.7, 3)])) == ["nccl-socket-interface"]


def test_a_chain_of_refinements_ranks_finest_first():
    c = entry("shared-library-missing")
    b = entry("torch-extension-abi-mismatch", "shared-library-missing")
    a = entry("xformers-torch-mismatch", "torch-extension-abi-mismatch",
              broader=("torch-extension-abi-mismatch", "shared-library-missing"))
    found = [finding(c, 0.99, 1), finding(b, 0.9, 2), finding(a, 0.7, 3)]
    assert ids(finer_first(found)) == ["xformers-torch-mismatch", "torch-extension-abi-mismatch",
                                       "shared-library-missing"]
    # the finest found alone with the broadest: still first
    assert ids(finer_first([finding(c, 0.99, 1), finding(a, 0.7, 3)])) == ["xformers-torch-mismatch",
                                                                         "shared-library-missing"]


def test_a_root_cause_still_ranks_above_the_pair():
    oom = entry("cuda-oom", leads_to=("nccl-failure",))
    broad, fine = entry("nccl-failure"), entry("nccl-socket-interface", "nccl-failure")
    found = [finding(broad, 0.99, 9), finding(fine, 0.7, 8), finding(oom, 0.9, 20)]
    assert ids(rank(found)) == ["cuda-oom", "nccl-socket-interface", "nccl-failure"]


def test_a_refines_cycle_terminates():
    a, b = entry("a", "b", broader=("b",)), entry("b", "a", broader=("a",))
    assert sorted(ids(finer_first([finding(a, 0.9, 1), finding(b, 0.9, 2)]))) == ["a", "b"]


@pytest.fixture(scope="module")
def kb():
    return load_knowledge_base()


def test_refines_alone_ranks_a_real_pair_without_leads_to(kb, tmp_path):
    """nccl-socket-interface (0.9) with nccl-failure (0.99) in one log: the finer entry first,
    with its `leads_to: [nccl-failure]` line taken out (a site copy replaces the bundled entry)."""
    fine = kb.get("nccl-socket-interface")
    assert fine.refines == "nccl-failure"
    site = tmp_path / "site" / "distributed"
    site.mkdir(parents=True)
    text = Path(fine.path).read_text(encoding="utf-8")
    stripped = re.sub(r"(?m)^leads_to: \[nccl-failure\]\n", "", text)
    (site / "nccl-socket-interface.yaml").write_text(stripped, encoding="utf-8")
    no_leads = load_knowledge_base([tmp_path / "site"])
    assert no_leads.get("nccl-socket-interface").leads_to == () and not no_leads.problems
    log = [p for p in fine.examples("must-match") if "srun-loopback" in p.name][0]  # both entries on real lines
    # the log is one pasted line of `srun -l` output; split at its rank labels, each message is a line
    lines = re.sub(r" (?=\d+: )", "\n", log.read_text(encoding="utf-8"))
    d = diagnose_text(lines, no_leads)
    found = {f.id: f.confidence for f in d.findings}
    assert found["nccl-failure"] > found["nccl-socket-interface"]     # the broader one is surer...
    assert ids(d.findings)[:2] == ["nccl-socket-interface", "nccl-failure"]   # ...and still second
    assert d.to_dict()["findings"][0]["refines"] == ["nccl-failure"]


def test_a_broader_finding_with_no_line_of_its_own_is_left_out(kb):
    """On the pasted single line both entries match; the broader one would only repeat that line
    with generic advice, so the finer finding stands alone and names it in `refines`."""
    log = [p for p in kb.get("nccl-socket-interface").examples("must-match") if "srun-loopback" in p.name][0]
    d = diagnose_path(str(log), kb)
    assert ids(d.findings) == ["nccl-socket-interface"]
    assert d.to_dict()["findings"][0]["refines"] == ["nccl-failure"]


def test_a_consequence_on_the_causes_own_line_is_left_out_but_not_on_its_own_line():
    cause, effect = entry("torch-api-removed", leads_to=("python-module-missing",)), entry("python-module-missing")
    same_line = [finding(effect, 0.95, 4), finding(cause, 0.9, 4)]
    assert ids(rank(same_line)) == ["torch-api-removed"]
    own_line = [finding(effect, 0.95, 7), finding(cause, 0.9, 4)]
    assert ids(rank(own_line)) == ["torch-api-removed", "python-module-missing"]
    unrelated = [finding(entry("cuda-oom"), 0.95, 4), finding(cause, 0.9, 4)]
    assert ids(rank(unrelated)) == ["cuda-oom", "torch-api-removed"]


def test_a_generic_nccl_error_alone_is_the_broader_entry(kb):
    d = diagnose_text("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
                      "ProcessGroupNCCL.cpp:1275, unhandled system error, NCCL version 2.14.3\n"
                      "ncclSystemError: System call (e.g. socket, malloc) or external library call failed "
                      "or device error.", kb)
    assert ids(d.findings)[0] == "nccl-failure"
    assert d.to_dict()["findings"][0]["refines"] == []


def test_bundled_finer_entries_need_no_leads_to_for_their_broader(kb):
    """Where a finer entry's broader one is found in its own must-match logs, the finer ranks first
    through refines alone: checked with every such leads_to line taken out of the knowledge base."""
    import dataclasses
    entries = {e.id: e for e in kb.entries}
    stripped = {i: dataclasses.replace(e, leads_to=tuple(t for t in e.leads_to if t not in e.broader))
                for i, e in entries.items()}
    checked = 0
    for e in stripped.values():
        if not e.refines:
            continue
        for log in e.examples("must-match"):
            d = diagnose_path(str(log), kb)
            found = [dataclasses.replace(f, entry=stripped[f.id]) for f in d.findings]
            if {e.id} | set(e.broader) <= {f.id for f in found} and e.refines in ids(found):
                checked += 1
                order = ids(rank(found))
                assert order.index(e.id) < order.index(e.refines), (log.name, order)
    assert checked >= 5


def test_a_finer_warning_stays_below_the_broader_error_that_ended_the_job():
    """torch's CPU-fallback UserWarning refines no-gpu-allocated; beside the RuntimeError that
    ended the job it must not lead with "a warning" on a failed job. Alone it answers."""
    broad = Entry(id="no-gpu-allocated", path="b.yaml", severity="error")
    warn = Entry(id="torch-cuda-no-driver-cpu-fallback", path="w.yaml", severity="warning",
                 refines="no-gpu-allocated", broader=("no-gpu-allocated",))
    assert ids(finer_first([finding(broad, 0.9, 1), finding(warn, 0.9, 4)])) == [
        "no-gpu-allocated", "torch-cuda-no-driver-cpu-fallback"]
    fine_error = Entry(id="nccl-socket-interface", path="f.yaml", refines="nccl-failure", broader=("nccl-failure",))
    assert ids(finer_first([finding(entry("nccl-failure"), 0.9, 1), finding(fine_error, 0.5, 4)])) == [
        "nccl-socket-interface", "nccl-failure"]


def test_the_no_driver_runtime_error_leads_over_the_cpu_fallback_warning(kb):
    log = ("/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py:52: UserWarning: CUDA initialization: "
           "Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and installed a driver "
           "from http://www.nvidia.com/Download/index.aspx (Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:100.)\n"
           "  return torch._C._cuda_getDeviceCount() > 0\n"
           "Traceback (most recent call last):\n"
           "  File \"train.py\", line 12, in <module>\n"
           "    model.cuda()\n"
           "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
           "installed a driver from http://www.nvidia.com/Download/index.aspx\n")
    assert ids(diagnose_text(log, kb).findings)[0] == "no-gpu-allocated"
    alone = log.split("Traceback")[0]
    assert ids(diagnose_text(alone, kb).findings)[0] == "torch-cuda-no-driver-cpu-fallback"
