"""The node probe, run for real on this machine (no GPU, CPU build of torch,
NVML library absent) and against recorded nvidia-smi outputs replayed by a
stand-in `nvidia-smi` on PATH."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from probe_helpers import PROBE, ROOT, fake_nvidia_smi, has_torch, validate

from gpu_troubleshooter.probes import node_probe


def rung(facts, key):
    return next(r for r in facts["ladder"] if r["id"] == key)


def run_probe(*args, env=None, python=sys.executable, timeout=60):
    full = {**os.environ, **(env or {})}
    t0 = time.time()
    p = subprocess.run([python, *args], capture_output=True, text=True, env=full, timeout=timeout, cwd=ROOT)
    return p, time.time() - t0


# --- the real machine ----------------------------------------------------------


def test_cpu_build_of_torch_is_reported_from_facts():
    if not has_torch():
        pytest.skip("torch not installed (set REQUIRE_TORCH=1 to make this a failure)")
    facts = node_probe.collect(timeout=60)
    t = facts["torch"]
    assert t["installed"] is True
    assert t["cuda_build"] is None, "this test expects the CPU build of torch"
    assert t["cuda_available"] is False
    assert t["version"].startswith("2.")
    r = rung(facts, "framework-sees-gpu")
    assert r["status"] == "fail"
    assert "CPU-only build" in r["reason"]
    assert "download.pytorch.org/whl/cu" in r["fix"]
    validate(facts)


def test_nvml_absent_is_a_reason_and_the_gpu_rung_fails_cleanly(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))          # no nvidia-smi either
    facts = node_probe.collect(timeout=5, frameworks=())
    gpu = facts["gpu"]
    assert gpu["nvml_error"], "NVML is absent on this machine: the probe must say why"
    assert ("NVML Shared Library Not Found" in gpu["nvml_error"]) or ("pynvml is not importable" in gpu["nvml_error"])
    assert "unknown" in gpu["count"] and "nvidia-smi not found" in gpu["count"]["unknown"]
    r = rung(facts, "system-sees-gpu")
    assert r["status"] == "fail" and "NVML" in r["reason"] and r["fix"]
    assert rung(facts, "gpu-node")["status"] == "fail"
    validate(facts)


def test_json_output_of_troubleshoot_probe_validates_against_schema():
    p, _ = run_probe("-m", "gpu_troubleshooter", "probe", "--json", "--timeout", "60")
    assert p.returncode == 0, p.stderr
    facts = json.loads(p.stdout)
    assert facts["schema"] == "hpc-gpu-troubleshooter/probe-facts" and facts["version"] == 1
    validate(facts)


def test_troubleshoot_probe_prints_the_ladder_and_never_hangs():
    """The ladder, whole. Only a hang bound here (every probe call has its own
    timeout); how fast it is belongs in a benchmark, not in a timed unit test
    that fails on a loaded CI machine."""
    p, wall = run_probe("-m", "gpu_troubleshooter", "probe", "--color", "never")
    assert p.returncode in (0, 1), p.stderr
    for n, q in enumerate(("Am I on a GPU node?", "Did the scheduler give me a GPU?", "Does the system see it?",
                           "Does my framework see it?", "Does my code use it?"), 1):
        assert "%d. %s" % (n, q) in p.stdout
    assert wall < 60, "troubleshoot probe took %.2f s: something hung" % wall


def test_single_file_runs_with_no_third_party_package(tmp_path):
    """python3 -I node_probe.py in a bare venv: standard library only."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    bare = tmp_path / "bare"
    subprocess.run([base, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    py = str(bare / "bin" / "python")
    probe_copy = tmp_path / "node_probe.py"           # a user copies the one file anywhere
    probe_copy.write_bytes(PROBE.read_bytes())
    p, _ = run_probe("-I", str(probe_copy), "--json", python=py)
    assert p.returncode == 0, p.stderr
    facts = json.loads(p.stdout)
    assert facts["torch"] == {"installed": False, "import_error": "No module named 'torch' in %s" % py} or \
        facts["torch"]["installed"] is False
    assert "pynvml is not importable" in facts["gpu"]["nvml_error"]
    assert rung(facts, "framework-sees-gpu")["status"] == "unknown"
    validate(facts)
    p, _ = run_probe("-I", str(probe_copy), python=py)
    assert p.returncode == 0 and "1. Am I on a GPU node?" in p.stdout, p.stderr


# --- never a hang ----------------------------------------------------------------


def test_a_hung_nvidia_smi_cannot_hang_the_probe(monkeypatch, tmp_path):
    fake_nvidia_smi(tmp_path / "bin", hang=True)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    t0 = time.time()
    facts = node_probe.collect(timeout=1.0, frameworks=())
    assert time.time() - t0 < 6
    assert "did not finish within 1.0 s" in facts["gpu"]["count"]["unknown"]
    validate(facts)


def _shell_nvidia_smi(monkeypatch, tmp_path, body):
    """A broken `nvidia-smi` (a shell script running `body`) first on PATH, the system tools after it."""
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text("#!/bin/sh\n" + body + "\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(smi.parent) + os.pathsep + "/usr/bin:/bin")
    return smi


def test_an_nvidia_smi_that_prints_without_end_is_stopped_at_the_output_limit(monkeypatch, tmp_path):
    # A broken wrapper or a fake tool (`exec yes`) once made the probe hold
    # everything it printed until the timeout: 2.3 GB in 9.5 s.
    smi = _shell_nvidia_smi(monkeypatch, tmp_path, "exec yes")
    t0 = time.time()
    with pytest.raises(node_probe.ProbeTimeout, match="printed more than 1 MiB"):
        node_probe.run_cmd([str(smi)], timeout=30, limit=1 << 20)
    assert time.time() - t0 < 10
    facts = node_probe.collect(timeout=30, frameworks=())
    assert "printed more than 4 MiB" in facts["gpu"]["count"]["unknown"]
    validate(facts)


def test_an_nvidia_smi_that_fails_printing_binary_is_quoted_readably(monkeypatch, tmp_path):
    # a damaged nvidia-smi (or a wrapper that cats a core file) failed with bytes that
    # went as they were into the facts' reason: NULs and escape codes on the terminal
    _shell_nvidia_smi(monkeypatch, tmp_path, "printf 'Failed to initialize NVML:\\000\\033[31m Driver/library\\tversion mismatch\\n\\n%s' "
                      "\"$(head -c 2000 /dev/zero | tr '\\0' 'x')\" >&2\nexit 18")
    facts = node_probe.collect(timeout=30, frameworks=())
    reason = facts["gpu"]["count"]["unknown"]
    quoted = reason[reason.index("nvidia-smi exit 18: "):]
    assert quoted.startswith("nvidia-smi exit 18: Failed to initialize NVML:\\x00\\x1b[31m Driver/library version mismatch | xxx")
    assert reason.isprintable() and quoted.endswith("x...") and len(quoted) <= len("nvidia-smi exit 18: ") + 300
    validate(facts)


def test_run_cmd_keeps_both_streams_whole_under_the_limit(tmp_path):
    rc, out, err = node_probe.run_cmd(
        [sys.executable, "-c", "import sys; sys.stdout.write('o' * 300000); sys.stderr.write('e' * 200000); sys.exit(3)"],
        timeout=30)
    assert (rc, len(out), len(err)) == (3, 300000, 200000)


def test_a_hung_framework_import_cannot_hang_the_probe(tmp_path):
    pkg = tmp_path / "hang" / "torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("import time\ntime.sleep(120)\n")
    p, wall = run_probe(str(PROBE), "--json", "--timeout", "1", env={"PYTHONPATH": str(tmp_path / "hang")})
    assert p.returncode == 0, p.stderr
    assert wall < 8
    facts = json.loads(p.stdout)
    assert "did not finish" in facts["torch"]["unknown"]
    r = rung(facts, "framework-sees-gpu")
    assert r["status"] == "unknown" and "--timeout" in r["fix"]
    validate(facts)


# --- recorded nvidia-smi outputs, replayed ----------------------------------------


def test_gpu_facts_from_recorded_nvidia_smi_when_nvml_fails(monkeypatch, tmp_path):
    fake_nvidia_smi(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    facts = node_probe.collect(timeout=10, frameworks=())
    gpu = facts["gpu"]
    assert gpu["source"] == "nvidia-smi"
    assert gpu["driver_version"] == "580.173.02" and gpu["cuda_driver_version"] == "13.0"
    assert gpu["count"] == 1
    d = gpu["devices"][0]
    assert d["name"] == "NVIDIA H200" and d["compute_capability"] == "9.0"
    assert d["memory_total_mib"] == 143771 and d["memory_used_mib"] == 0 and d["utilization_pct"] == 0
    assert d["ecc_uncorrected_volatile"] == 0 and d["processes"] == []
    assert rung(facts, "system-sees-gpu")["status"] == "pass"
    validate(facts)


def test_sample_reports_an_idle_gpu(monkeypatch, tmp_path):
    fake_nvidia_smi(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    facts = node_probe.collect(sample_seconds=1.0, interval=0.25, timeout=10, frameworks=())
    s = facts["sample"]
    assert s["source"] == "nvidia-smi" and s["samples"] >= 2
    assert s["gpus"][0]["idle_fraction"] == 1.0 and s["max_idle_fraction"] == 1.0
    assert s["summary"].startswith("GPU 0 idle 100% of 1 s")
    r = rung(facts, "code-uses-gpu")
    assert r["status"] == "fail" and "idle 100%" in r["reason"]
    validate(facts)


def test_sample_one_pid(monkeypatch, tmp_path):
    fake_nvidia_smi(tmp_path / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    busy = node_probe.collect(sample_seconds=0.5, interval=0.25, pid=5267, timeout=10, frameworks=())
    # `pmon -c 1` replays both recorded samples (sm 7 and 8 %)
    assert busy["sample"]["gpus"][0]["util_max_pct"] == 8 and busy["sample"]["pid"] == 5267
    assert rung(busy, "code-uses-gpu")["status"] == "pass"
    absent = node_probe.collect(sample_seconds=0.5, interval=0.25, pid=424242, timeout=10, frameworks=())
    assert absent["sample"]["gpus"] == [] and "was not seen on any GPU" in absent["sample"]["summary"]
    assert rung(absent, "code-uses-gpu")["status"] == "fail"
    validate(busy)
    validate(absent)


def test_sample_without_any_gpu_tool_says_why(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    facts = node_probe.collect(sample_seconds=0.2, timeout=5, frameworks=())
    assert "cannot sample" in facts["sample"]["unknown"]
    assert rung(facts, "code-uses-gpu")["status"] == "unknown"


# --- scheduler facts ----------------------------------------------------------------


def test_slurm_job_with_gres():
    s = node_probe.collect_scheduler({"SLURM_JOB_ID": "123", "SLURM_JOB_PARTITION": "gpu", "SLURM_GPUS_ON_NODE": "2",
                                      "SLURM_JOB_GPUS": "0,1", "CUDA_VISIBLE_DEVICES": "0,1"})
    assert (s["kind"], s["in_job"], s["gpus_requested"], s["visible_device_count"]) == ("slurm", True, 2, 2)
    assert s["gpus_requested_source"] == "SLURM_GPUS_ON_NODE" and s["gpu_env"]["SLURM_JOB_GPUS"] == "0,1"


def test_slurm_job_without_gpu_and_with_empty_visible_devices():
    none = node_probe.collect_scheduler({"SLURM_JOB_ID": "7", "SLURM_JOB_PARTITION": "cpu"})
    assert none["gpus_requested"] == 0 and "no Slurm GPU variable" in none["gpus_requested_source"]
    hidden = node_probe.collect_scheduler({"SLURM_JOB_ID": "8", "SLURM_GPUS": "a100:1", "CUDA_VISIBLE_DEVICES": ""})
    assert hidden["gpus_requested"] == 1 and hidden["visible_device_count"] == 0
    assert node_probe.visible_device_count("NoDevFiles") == 0
    assert node_probe.visible_device_count("0,-1,2") == 1
    assert node_probe.visible_device_count(None) is None
    assert node_probe.collect_scheduler({"SLURM_JOB_ID": "9", "SLURM_TRES_PER_TASK": "cpu=4,gres/gpu:2"})["gpus_requested"] == 2


def test_a_slurm_gpu_variable_that_holds_no_count_is_said_not_taken_for_none():
    # "abc" was reported as "no Slurm GPU variable is set" and "-5" as a request of -5 GPUs
    for raw in ("abc", "-5"):
        s = node_probe.collect_scheduler({"SLURM_JOB_ID": "5", "SLURM_GPUS_ON_NODE": raw})
        assert "is not a GPU count" in s["gpus_requested"]["unknown"] and repr(raw) in s["gpus_requested"]["unknown"]
    # another variable that does hold the count still answers
    s = node_probe.collect_scheduler({"SLURM_JOB_ID": "6", "SLURM_GPUS_ON_NODE": "abc", "SLURM_JOB_GPUS": "0,1"})
    assert (s["gpus_requested"], s["gpus_requested_source"]) == (2, "SLURM_JOB_GPUS")


def test_pbs_and_no_scheduler():
    pbs = node_probe.collect_scheduler({"PBS_JOBID": "42.pbs", "PBS_QUEUE": "gpuq", "NGPUS": "4"})
    assert (pbs["kind"], pbs["partition"], pbs["gpus_requested"]) == ("pbs", "gpuq", 4)
    assert "qstat" in node_probe.collect_scheduler({"PBS_JOBID": "43"})["gpus_requested"]["unknown"]
    outside = node_probe.collect_scheduler({})
    assert outside["in_job"] is False and "not inside" in outside["gpus_requested"]["unknown"]


def test_pbs_gpu_count_falls_back_to_the_cgroup_hooks_visible_devices():
    hook = node_probe.collect_scheduler({"PBS_JOBID": "77.pbs01", "PBS_NODEFILE": "/var/spool/pbs/aux/77.pbs01",
                                         "CUDA_VISIBLE_DEVICES": "GPU-1f2e,GPU-9a8b"})
    assert (hook["kind"], hook["gpus_requested"], hook["nodelist"]) == ("pbs", 2, "/var/spool/pbs/aux/77.pbs01")
    assert hook["gpus_requested_source"].startswith("CUDA_VISIBLE_DEVICES")
    # NGPUS, when the site exports it, still wins; an empty CUDA_VISIBLE_DEVICES proves nothing on PBS
    assert node_probe.collect_scheduler({"PBS_JOBID": "78", "NGPUS": "4", "CUDA_VISIBLE_DEVICES": "0"})["gpus_requested"] == 4
    assert "unknown" in node_probe.collect_scheduler({"PBS_JOBID": "79", "CUDA_VISIBLE_DEVICES": ""})["gpus_requested"]


def test_lsf_and_flux_jobs_are_recognised():
    lsf = node_probe.collect_scheduler({"LSB_JOBID": "4472123", "LSB_QUEUE": "gpuv100", "LSB_JOBNAME": "train",
                                        "LSB_DJOB_HOSTFILE": "/home/u/.lsbatch/1700000000.4472123.hostfile",
                                        "LSB_DJOB_NUMPROC": "4", "CUDA_VISIBLE_DEVICES": "0"})
    assert (lsf["kind"], lsf["in_job"], lsf["job_id"], lsf["partition"], lsf["cpus_on_node"], lsf["gpus_requested"]) \
        == ("lsf", True, "4472123", "gpuv100", 4, 1)
    assert lsf["nodelist"].endswith(".hostfile")
    assert "bjobs -l" in node_probe.collect_scheduler({"LSB_JOBID": "5"})["gpus_requested"]["unknown"]
    sge = node_probe.collect_scheduler({"JOB_ID": "812345", "SGE_O_WORKDIR": "/home/u/run", "JOB_NAME": "train",
                                        "QUEUE": "gpu.q", "SGE_TASK_ID": "undefined", "CUDA_VISIBLE_DEVICES": "0,1",
                                        "NSLOTS": "8", "PE_HOSTFILE": "/opt/sge/default/spool/n1/active_jobs/812345.1/pe_hostfile"})
    assert (sge["kind"], sge["job_id"], sge["job_name"], sge["partition"], sge["gpus_requested"], sge["cpus_on_node"]) \
        == ("sge", "812345", "train", "gpu.q", 2, 8)
    assert sge["nodelist"].endswith("pe_hostfile")
    assert "qstat -j" in node_probe.collect_scheduler({"JOB_ID": "6", "SGE_O_WORKDIR": "/x"})["gpus_requested"]["unknown"]
    assert node_probe.collect_scheduler({"JOB_ID": "7"})["kind"] is None   # JOB_ID alone is not Grid Engine
    flux = node_probe.collect_scheduler({"FLUX_JOB_ID": "f2N4sT8zXk1", "FLUX_URI": "local:///run/flux/local",
                                         "CUDA_VISIBLE_DEVICES": "0,1,2,3"})
    assert (flux["kind"], flux["job_id"], flux["gpus_requested"]) == ("flux", "f2N4sT8zXk1", 4)
    # a Flux instance started inside a Slurm allocation runs Flux jobs
    nested = node_probe.collect_scheduler({"SLURM_JOB_ID": "99", "FLUX_JOB_ID": "fABC"})
    assert nested["kind"] == "flux" and "flux job info" in nested["gpus_requested"]["unknown"]


def test_ladder_for_a_job_that_asked_for_no_gpu(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    facts = node_probe.collect(timeout=5, frameworks=(), env={"SLURM_JOB_ID": "55", "SLURM_JOB_PARTITION": "cpu"})
    r = rung(facts, "gpu-allocated")
    assert r["status"] == "fail" and "asked for no GPU" in r["reason"] and "--gres=gpu:1" in r["fix"]
    text = node_probe.render(facts)
    assert "Slurm job 55, partition cpu" in text


# --- derived facts -----------------------------------------------------------------


def test_arch_coverage_and_driver_age():
    assert node_probe.arch_supported("8.6", ["sm_80", "sm_90"])          # same major, newer minor
    assert not node_probe.arch_supported("9.0", ["sm_70", "sm_80", "sm_86"])
    assert node_probe.arch_supported("9.0", ["sm_80", "compute_80"])     # PTX JIT
    assert not node_probe.arch_supported("6.0", ["sm_70", "compute_70"])
    facts = {"gpu": {"cuda_driver_version": "11.4", "devices": [{"compute_capability": "9.0"}]},
             "torch": {"installed": True, "cuda_build": "12.1", "arch_list": ["sm_50", "sm_60", "sm_70", "sm_80"],
                       "devices": [], "warnings": []}}
    node_probe.derive(facts)
    assert facts["torch"]["missing_archs"] == ["sm_90"] and facts["torch"]["arch_supported"] is False
    assert facts["torch"]["driver_too_old"] is True
    facts["gpu"]["cuda_driver_version"] = "12.0"
    node_probe.derive(facts)
    assert facts["torch"]["driver_too_old"] is False        # minor-version compatibility
    assert node_probe.torch_wheel_hint("12.2") == "cu121" and node_probe.torch_wheel_hint("11.4") == "cu118"
