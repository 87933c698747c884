"""The bundled entries' fix conditions choose the right first fix for a log's numbers and
scheduler, through the engine's own ordering (fixes.choose_fixes): held first, unknown or
unconditional next, false (or another scheduler's) last."""
import pytest

from gpu_troubleshooter.engine import diagnose_text
from gpu_troubleshooter.fixes import choose_fixes
from gpu_troubleshooter.knowledge import load_knowledge_base


@pytest.fixture(scope="module")
def kb():
    return load_knowledge_base()


def ordered_fixes(kb, text, entry_id, facts=None, scheduler=None, shown_only=True):
    """Titles of the fixes in the order the engine shows them; with shown_only, the fixes
    whose condition is false (or for another scheduler) are left out, as the short view does."""
    found = [f for f in diagnose_text(text, kb).findings if f.id == entry_id]
    assert found, "%s not found in %r" % (entry_id, text[:80])
    finding = found[0]
    values = dict(finding.values)
    chosen = choose_fixes(finding.entry, values, facts, scheduler)
    return [str(fix.title) for fix, held in chosen if not (shown_only and held is False)], values


OWN_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.08 GiB memory in use. "
           "Of the allocated memory 75.90 GiB is allocated by PyTorch, and 1.64 GiB is reserved by PyTorch but unallocated.")
OTHER_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 496.00 MiB. GPU 0 has a total capacity of "
             "39.39 GiB of which 235.06 MiB is free. Process 20398 has 38.12 GiB memory in use. Including non-PyTorch "
             "memory, this process has 1.02 GiB memory in use. Of the allocated memory 820.00 MiB is allocated by "
             "PyTorch, and 41.58 MiB is reserved by PyTorch but unallocated.")
FRAG_OOM = ("RuntimeError: CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; 39.39 GiB total capacity; "
            "21.20 GiB already allocated; 1.10 GiB free; 36.80 GiB reserved in total by PyTorch)")
HUGE_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 58.00 GiB. GPU 0 has a total capacity of "
            "39.39 GiB of which 37.20 GiB is free. Of the allocated memory 1.20 GiB is allocated by PyTorch, "
            "and 10.00 MiB is reserved by PyTorch but unallocated.")


def test_own_memory_and_other_process_oom_get_different_first_fixes(kb):
    own, _ = ordered_fixes(kb, OWN_OOM, "cuda-oom")
    other, _ = ordered_fixes(kb, OTHER_OOM, "cuda-oom")
    assert own[0].startswith("Make the batch smaller")
    assert "Train in bf16" in own[1] or "checkpointing" in own[1]
    assert other[0].startswith("Another process or rank holds the GPU")
    assert own[0] != other[0]
    # in the short view the other-process OOM does not lead with batch-size advice
    assert not any("batch smaller" in t for t in other[:3])


def test_fragmentation_and_oversized_request(kb):
    assert ordered_fixes(kb, FRAG_OOM, "cuda-oom")[0][0].startswith("Avoid fragmentation")
    assert ordered_fixes(kb, HUGE_OOM, "cuda-oom")[0][0].startswith("One request is larger than the card")


def test_oom_without_numbers_keeps_the_written_order(kb):
    titles, values = ordered_fixes(kb, "RuntimeError: CUDA error: out of memory", "cuda-oom")
    assert titles[0].startswith("Make the batch smaller") and not values.get("total")


PBS_WALLTIME = "=>> PBS: job killed: walltime 3615 exceeded limit 3600"
SLURM_TIME = "slurmstepd: error: *** JOB 4821337 ON gpu017 CANCELLED AT 2024-03-14T06:12:41 DUE TO TIME LIMIT ***"
LSF_TIME = "TERM_RUNLIMIT: job killed after reaching LSF run time limit."
SLURM_ONLY = ("#SBATCH", "sacct", "sinfo", "scontrol", "sbatch", "srun", "squeue", "seff")
PBS_ONLY = ("#PBS", "qstat", "tracejob", "qsub")


def _texts(entry, titles):
    fixes = {str(f.title): f for f in entry.fixes}
    out = []
    for t in titles:
        f = fixes[t]
        out.append(" ".join([str(f.title), str(f.text), str(f.code.text) if f.code else ""]))
    return "\n".join(out)


@pytest.mark.parametrize("entry_id,log,scheduler,forbidden", [
    ("slurm-time-limit", PBS_WALLTIME, "pbs", SLURM_ONLY),
    ("slurm-time-limit", SLURM_TIME, "slurm", PBS_ONLY),
    ("slurm-time-limit", LSF_TIME, "lsf", SLURM_ONLY + PBS_ONLY),
    ("host-oom-killed", "=>> PBS: job killed: mem 59756048kb exceeded limit 20971520kb", "pbs", SLURM_ONLY),
    ("host-oom-killed", "slurmstepd: error: Job 1884211 exceeded memory limit (16891904 > 16777216), being killed",
     "slurm", PBS_ONLY),
])
def test_scheduler_logs_get_only_their_schedulers_fixes(kb, entry_id, log, scheduler, forbidden):
    titles, _ = ordered_fixes(kb, log, entry_id, scheduler=scheduler)
    entry = [e for e in kb.entries if e.id == entry_id][0]
    text = _texts(entry, titles)
    assert not [w for w in forbidden if w in text], text


def test_time_limit_first_fix_uses_the_numbers(kb):
    titles, values = ordered_fixes(kb, PBS_WALLTIME, "slurm-time-limit", scheduler="pbs")
    assert values["used_s"] == "3615" and values["limit_s"] == "3600"
    assert "PBS" in titles[0]


def test_host_oom_first_fix_asks_for_more_memory_when_numbers_are_known(kb):
    titles, values = ordered_fixes(kb, "=>> PBS: job killed: mem 59756048kb exceeded limit 20971520kb",
                                   "host-oom-killed", scheduler="pbs")
    assert values.get("mem_used") and values.get("mem_limit")
    assert "more memory" in titles[0].lower() and "PBS" in titles[0]
    titles, _ = ordered_fixes(kb, "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=35491929.0. Some of "
                              "your processes may have been killed by the cgroup out-of-memory handler.",
                              "host-oom-killed", scheduler="slurm")
    assert titles[0].lower().startswith("measure")


@pytest.mark.parametrize("entry_id,log,first", [
    ("gpu-arch-unsupported",
     "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.\n"
     "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.",
     "Blackwell GPU"),
    ("gpu-arch-unsupported",
     "Tesla P100-PCIE-16GB with CUDA capability sm_60 is not compatible with the current PyTorch installation.\n"
     "The current PyTorch install supports CUDA capabilities sm_75 sm_80 sm_86 sm_90 sm_100 sm_120.",
     "Pascal or Volta GPU"),
    ("cuda-driver-too-old",
     "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver",
     "Driver supports only CUDA 11"),
    ("cuda-driver-too-old",
     "RuntimeError: The NVIDIA driver on your system is too old (found version 12020). Please update your GPU driver",
     "Driver supports CUDA 12.0 to 12.7"),
    ("cuda-driver-too-old",
     "RuntimeError: The NVIDIA driver on your system is too old (found version 12080). Please update your GPU driver",
     "Driver supports CUDA 12.8 or 12.9"),
    ("tf-gpu-libs-missing",
     "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic library 'libcudart.so.11.0';"
     " dlerror: libcudart.so.11.0: cannot open shared object file: No such file or directory\n"
     # the cudart probe alone is TF's harmless import-time notice; the GPU device step makes it a failure
     "W tensorflow/core/common_runtime/gpu/gpu_device.cc:1850] Cannot dlopen some GPU libraries.",
     "TensorFlow wants CUDA 11"),
    ("device-side-assert",
     "/pytorch/aten/src/ATen/native/cuda/Loss.cu:102: operator(): block: [217,0,0], thread: [0,0,0] Assertion "
     "`input_val >= zero && input_val <= one` failed.\nRuntimeError: CUDA error: device-side assert triggered",
     "Give BCELoss probabilities"),
    ("nccl-failure",
     "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, invalid usage "
     "(run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3\nncclInvalidUsage: This usually reflects invalid usage "
     "of NCCL library.",
     "Ranks share a GPU"),
    # CUDA_HOME written like PATH (apex#368) and a build under sudo lead with fix 3
    ("cuda-toolkit-missing-for-build", "/bin/sh: 1: :/usr/local/cuda:/usr/local/cuda-10.1/bin/nvcc: not found",
     "Keep CUDA_HOME a single directory"),
    ("cuda-toolkit-missing-for-build", "$ sudo python setup.py install\n/bin/sh: 1: nvcc: not found",
     "Keep CUDA_HOME a single directory"),
    # neither shown: the common case (no toolkit in the shell) keeps leading
    ("cuda-toolkit-missing-for-build", "/bin/sh: 1: nvcc: not found", "Load a toolkit"),
])
def test_the_logs_numbers_choose_the_first_fix(kb, entry_id, log, first):
    titles, values = ordered_fixes(kb, log, entry_id)
    assert titles[0].startswith(first), (titles[:3], values)


def test_probe_facts_choose_the_wheel_when_the_log_has_no_numbers(kb):
    titles, _ = ordered_fixes(kb, "CUDA driver version is insufficient for CUDA runtime version", "cuda-driver-too-old",
                              facts={"gpu": {"driver_version": "550.54.15"}})
    assert titles[0].startswith("Driver supports CUDA 12.0 to 12.7")


@pytest.mark.parametrize("library, old", [("libcudart.so.10.2", True), ("libcublas.so.11", True),
                                          ("libcudart.so.12", False), ("libgfortran.so.5", False)])
def test_a_runtime_of_an_old_cuda_leads_with_installing_a_build_for_the_current_one(kb, library, old):
    text = "ImportError: %s: cannot open shared object file: No such file or directory" % library
    titles, values = ordered_fixes(kb, text, "shared-library-missing")
    first_is_rebuild = titles[0].startswith("Built for an old CUDA")
    assert first_is_rebuild is old, (values, titles[:2])
    d = diagnose_text(text, kb)
    view = [v for v in d.views() if v.id == "shared-library-missing"][0]
    assert view.likely_causes[0].startswith("The package or compiled extension") is old
