"""Key lines of unknown failures: the collector alone, fed as the scan feeds it.

Exception names, messages and paths are generated at random so that nothing
about the answer can be hard-coded; the noise holds progress bars, harmless
warnings and metric lines with the word "error" in them.
"""
import random
import re
import string

import pytest

from gpu_troubleshooter.keylines import PATTERNS, KeyLineCollector
from gpu_troubleshooter.normalize import clean

COMPILED = [(kind, re.compile(rx, re.MULTILINE)) for kind, rx in PATTERNS]


def collect(lines):
    """What the engine does with scanner hits: feed each matching line with its kinds."""
    collector = KeyLineCollector()
    for n, raw in enumerate(lines, 1):
        kinds = [kind for kind, rx in COMPILED if rx.search(raw)]
        if kinds:
            collector.feed_kinds(n, clean(raw), kinds)
    return collector.result()


def word(rng, n=8):
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(n))


def noise(rng, count):
    out = []
    for i in range(count):
        pick = rng.random()
        if pick < 0.3:
            out.append(f"Epoch {i % 7}: {rng.randint(0, 100)}%|{'#' * rng.randint(0, 10)}| {i}/999 [00:{i % 60:02d}<01:00, 3.1it/s]")
        elif pick < 0.4:
            out.append(f"/opt/conda/lib/python3.11/site-packages/{word(rng)}/x.py:12: UserWarning: {word(rng)} is deprecated")
        elif pick < 0.45:
            out.append("[W socket.cpp:663] [c10d] The client socket has failed to connect to [::ffff:10.0.0.1]:29500 (errno: 98)")
        elif pick < 0.5:
            out.append(f"step {i} loss={rng.random():.4f} val_error: {rng.random():.3f} lr=3e-4")
        elif pick < 0.55:
            out.append(f"2026-01-0{i % 9 + 1} 12:00:00 WARNING {word(rng)}: retrying in 5 s")
        else:
            out.append(f"[rank{i % 4}]: INFO {word(rng)} {word(rng, 4)} step={i}")
    return out


def exception_name(rng):
    return word(rng, 1).upper() + word(rng, rng.randint(4, 12)) + rng.choice(["Error", "Exception", "Failure"])


@pytest.mark.parametrize("seed", range(5))
def test_application_exception_names_user_frame_and_library(seed):
    rng = random.Random(seed)
    exc, msg, pkg, user_file = exception_name(rng), " ".join(word(rng) for _ in range(5)), word(rng, 6), word(rng, 7) + ".py"
    tail = [
        "Traceback (most recent call last):",
        f'  File "/home/u/proj/{user_file}", line {rng.randint(10, 900)}, in main',
        "    run(cfg)",
        f'  File "/home/u/proj/{user_file}", line 77, in run',
        "    out = model(batch)",
        f'  File "/home/u/.local/lib/python3.11/site-packages/{pkg}/core.py", line 41, in forward',
        "    raise " + exc + "(msg)",
        f"{pkg}.errors.{exc}: {msg}",
        "srun: error: gpu-a017: task 0: Exited with exit code 1",
    ]
    lines = noise(rng, 10_000) + tail + noise(rng, 10_000)
    keys = collect(lines)
    assert keys, "the exception line must be named"
    first = keys[0]
    assert first.kind == "exception"
    assert first.line == 10_000 + 8
    assert first.exception == f"{pkg}.errors.{exc}"
    assert first.package == pkg and first.origin == "a library"
    assert first.frame == f"{user_file}:77 in run"
    assert any(k.kind == "scheduler" and "Exited with exit code 1" in k.text for k in keys)
    assert all("%|" not in k.text and "Warning" not in k.text and "val_error" not in k.text for k in keys)


@pytest.mark.parametrize("seed", range(3))
def test_exception_in_users_own_code(seed):
    rng = random.Random(100 + seed)
    exc = exception_name(rng)
    lines = noise(rng, 20_000) + [
        "Traceback (most recent call last):",
        '  File "/scratch/u/run.py", line 12, in <module>',
        "    check(x)",
        f"{exc}: {word(rng)} {word(rng)}",
    ]
    first = collect(lines)[0]
    assert (first.exception, first.origin, first.frame) == (exc, "your code", "run.py:12 in <module>")


def test_segfault_reported_by_srun():
    rng = random.Random(7)
    lines = noise(rng, 20_000) + ["srun: error: gpu-b03: task 2: Segmentation fault (core dumped)"]
    keys = collect(lines)
    assert [k.line for k in keys] == [20_001]
    assert keys[0].kind == "crash" and keys[0].origin == "the system"


def test_cpp_abort():
    rng = random.Random(8)
    msg = " ".join(word(rng) for _ in range(4))
    lines = noise(rng, 20_000) + [
        "terminate called after throwing an instance of 'std::runtime_error'",
        f"  what():  {msg}",
        "Aborted (core dumped)",
    ]
    keys = collect(lines)
    assert keys[0].kind == "abort" and keys[0].line in (20_001, 20_002)
    assert any(msg in k.text for k in keys)
    assert any(k.kind == "crash" for k in keys)


def test_clean_log_has_no_key_lines():
    rng = random.Random(9)
    assert collect(noise(rng, 20_000) + ["Training finished. Saved checkpoint to /scratch/u/ckpt.pt"]) == ()


def test_a_flood_of_harmless_lines_cannot_push_the_error_out():
    rng = random.Random(10)
    lines = ["ERROR: could not open /scratch/u/data/shard-0007.bin"] + [f"step {i} train_error: 0.{i % 10}" for i in range(50_000)]
    keys = collect(lines)
    assert [k.line for k in keys] == [1]


def test_long_line_is_cut_with_an_ellipsis():
    keys = collect(["RuntimeError: " + "x" * 10_000])
    assert keys and keys[0].text.endswith("…") and len(keys[0].text) <= 300


def test_engine_and_renderers_name_the_key_lines_in_20000_lines_of_noise():
    """Through the real scan: JSON field and the human output, with a random exception."""
    from gpu_troubleshooter.engine import diagnose_text
    from gpu_troubleshooter.knowledge import load_knowledge_base
    from gpu_troubleshooter.render import Style, human
    rng = random.Random(77)
    exc = exception_name(rng)
    msg = " ".join(word(rng) for _ in range(4))
    tail = ["Traceback (most recent call last):", '  File "/home/u/run.py", line 31, in <module>', "    go()",
            f"{exc}: {msg}", "srun: error: gpu-q042: task 0: Exited with exit code 1"]
    text = "\n".join(noise(rng, 10_000) + tail + noise(rng, 10_000)) + "\n"
    diagnosis = diagnose_text(text, load_knowledge_base())
    doc = diagnosis.to_dict()
    assert doc["findings"] == []
    keys = doc["key_lines"]
    assert keys[0]["line"] == 10_004 and keys[0]["exception"] == exc and keys[0]["origin"] == "your code"
    out = human(diagnosis, Style(False))
    assert "No known failure; these lines ended the job:" in out and f"{exc}: {msg}" in out
    assert "%|" not in out and "UserWarning" not in out


def test_clean_log_through_the_engine_has_no_key_lines():
    from gpu_troubleshooter.engine import diagnose_text
    from gpu_troubleshooter.knowledge import load_knowledge_base
    rng = random.Random(78)
    doc = diagnose_text("\n".join(noise(rng, 20_000)) + "\nDone.\n", load_knowledge_base()).to_dict()
    assert doc["findings"] == [] and doc["key_lines"] == []


def test_other_errors_show_below_a_finding_in_the_short_and_full_output():
    from gpu_troubleshooter.engine import diagnose_text
    from gpu_troubleshooter.knowledge import load_knowledge_base
    from gpu_troubleshooter.render import Style, human
    text = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.15 GiB of which 1.06 GiB is free.\nterminate called after throwing an instance of 'c10::Error'\n")
    diagnosis = diagnose_text(text, load_knowledge_base())
    assert diagnosis.findings and diagnosis.findings[0].id == "cuda-oom"
    for full in (False, True):
        out = human(diagnosis, Style(False), full=full)
        assert "Other errors near the end of the log:" in out and "terminate called after throwing" in out


@pytest.mark.parametrize("seed", range(3))
def test_what_the_shell_or_system_refused_is_named(seed):
    """A missing script, command or binary format, a permission or a full disk: the lines
    that end many jobs before any Python runs. Names and paths are random."""
    rng = random.Random(200 + seed)
    path = f"/scratch/{word(rng)}/{word(rng)}.py"
    refusal = rng.choice([
        f"python: can't open file '{path}': [Errno 2] No such file or directory",
        f"/var/spool/slurmd/job{rng.randint(1, 99999)}/slurm_script: line {rng.randint(2, 40)}: {word(rng)}: command not found",
        f"/opt/{word(rng)}/startup.sh: line 5: {path}: cannot execute binary file: Exec format error",
        f"mkdir: cannot create directory '{path}': Permission denied",
        f"cp: error writing '{path}': No space left on device",
    ])
    lines = noise(rng, 20_000) + [refusal]
    keys = collect(lines)
    assert [(k.line, k.kind, k.origin) for k in keys] == [(20_001, "system", "the system")]


@pytest.mark.parametrize("tail, kind", [
    ("/var/spool/slurmd/job4711/slurm_script: line 12: 81234 Killed                  python train.py", "crash"),
    ("Killed", "crash"),
    ("[2022-05-27T11:37:57.377] _job_complete: JobId=127441 WTERMSIG 9", "crash"),
    ("qsub: Unknown queue", "scheduler"),
    ("qsub: PBS server internal error MSG=cannot write job command file", "scheduler"),
    ("Project name must be specified using bsub -P. Job not submitted.", "scheduler"),
    ("sbatch: fatal: Invalid --distribution specification", "scheduler"),
    ("Exception: process 3 terminated with signal SIGKILL", "error"),
    ("node1:1234:5678 [0] misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.0.0.2<1234> failed : Broken pipe", "error"),
    ("OMP: Error #15: Initializing libiomp5.so, but found libiomp5.so already initialized.", "error"),
    ("nvcc fatal   : Unsupported gpu architecture 'compute_92'", "error"),
    ("2021-05-20 10:09:06.617783: E external/org_tensorflow/tensorflow/stream_executor/gpu/asm_compiler.cc:93] "
     "You are using ptxas 8.x", "error"),
    ("    ** On entry to GEMM_EX  parameter number 12 had an illegal value", "error"),
    ("2024-05-23 15:20:04.554952: F external/xla/xla/shape_tree.cc:54] Check failed: result->children_start_id >= 0 (0 vs. -1)",
     "abort"),
    ("F1103 18:23:55.103160 3413767 pjrt_stream_executor_client.cc:2804] Check failed: 0 == 1", "abort"),
    ("CMake Error at CMakeLists.txt:3 (project):", "error"),
    ("/usr/bin/ld: main.o: undefined reference to symbol 'cudaMalloc'", "error"),
    ("/bin/sh: 1: torchrun: not found", "system"),
    ("standard_init_linux.go:178: exec user process caused \"exec format error\"", "system"),
    ("FATAL   [U=2094,P=121126]  PullOciImage()  Unable to pull docker://ubuntu:18.04", "error"),
    ("[1750835683.514002] [host:1392 :0]   select.c:649  UCX  ERROR   no active messages transport", "error"),
    ("/usr/bin/lua: /usr/share/lmod/lmod/libexec/Cache.lua:290: attempt to index a nil value", "error"),
    ("Abort(606197647): Fatal error in internal_Init: Other MPI error, error stack:", "error"),
    ("MissingOutputException in rule create_features in file Snakefile, line 12:", "error"),
    ("Unable to run job: denied: host \"node7\" is not submit host", "error"),
    # GPU runtimes, NVML, Docker and Go CLIs, MATLAB, GROMACS, the JVM (as the knowledge base's examples print them)
    ("CUDA error !!!!! <out of memory> !!!!! ", "error"),
    ("cuInit failed: CUDA_ERROR_NO_DEVICE", "error"),
    ("Failed to initialize NVML: Driver/library version mismatch", "error"),
    ("docker: Error response from daemon: manifest for nvidia/cuda:11.0-base-ubuntu20.04 not found: manifest unknown", "error"),
    ('Error for command "exec": unknown flag: --cpus', "error"),
    ("Error using  * ", "error"),
    ("Inconsistency in user input:", "error"),
    ("Error occurred during initialization of VM", "error"),
    # the network's refusals, a failed CHECK however prefixed, TensorRT's numbered errors, an
    # application's own out-of-memory or failed start (as the knowledge base's examples print them)
    ("bind [::1]:33111: Address already in use", "system"),
    ("socket.gaierror: [Errno -3] Temporary failure in name resolution", "system"),
    ("db.hpp:109] Check failed: mdb_status == 0 (13 vs. 0) Permission denied", "abort"),
    ("[11/08/2024-08:46:50] [E] [TRT] 1: [stdArchiveReader.cpp::StdArchiveReader::40] Error Code 1: Serialization", "error"),
    ("amrex::Abort::0::Arena out of memory!!!", "error"),
    ("Out of memory on device. To view more detail about available memory on the GPU, use 'gpuDevice()'.", "error"),
    ('dlopen "libnvcuvid.so" failed! Failed to load libnvcuvid.so', "error"),
    ("../aten/src/ATen/native/cuda/Indexing.cu:1141: indexSelectLargeIndex: block: [615,0,0], thread: [121,0,0] "
     "Assertion `srcIndex < srcSelectDimSize` failed.", "error"),
    ("./CleanDoom.x86_64: /lib/x86_64-linux-gnu/libm.so.6: version `GLIBC_2.38' not found (required by ./CleanDoom.x86_64)",
     "error"),
    ("[LightGBM] [Fatal] GPU Tree Learner was not enabled in this build.", "error"),
    ("critical libmamba Shell not initialized", "error"),
    ("Error in setConst_hprime_xx: invalid device symbol", "error"),
    ("hipLaunchKernel: Returned hipErrorInvalidDeviceFunction :", "error"),
    ("[ 1234.5678] NVRM: Xid (PCI:0000:9b:00): 79, pid=4071838, GPU has fallen off the bus.", "error"),
    ("Memory access fault by GPU node-5 (Agent handle: 0x460e3a50) on address 0x7ec4dfe0e000.", "crash"),
    ("Process finished with exit code 137 (interrupted by signal 9:SIGKILL)", "crash"),
    # more shapes the knowledge base's examples print (PyTorch's c10 error level, spdlog levels,
    # a module's Error class, other shells' "not found", errno texts, GPU libraries' status codes,
    # the kernel driver, Open MPI's help texts, installers that found no way)
    ("[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout",
     "error"),
    ("[E ProcessGroupNCCL.cpp:457] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1132079)", "error"),
    ("[2024-11-12 20:14:07.174] [error] Invalid CUDA device index '0' from device string \"cuda:0\"", "error"),
    ("locale.Error: unsupported locale setting", "error"),
    ("EnvironmentLocationNotFound: Not a conda environment: /anaconda/envs/ddm/envs/ddm", "error"),
    ("/.singularity.d/actions/exec: 9: exec: --bind: not found", "system"),
    ("ch-fromhost: 204: ch-fromhost: nvidia-container-cli: not found", "system"),
    ("ls: cannot access '/mnt/remote/data/': Transport endpoint is not connected", "system"),
    ("libgomp: Thread creation failed: Resource temporarily unavailable", "system"),
    ("[de44f6097ee6:39278] Read -1, expected 5285, errno = 1", "system"),
    ("Got permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock", "system"),
    ("Killed signal terminated program cc1plus", "crash"),
    ("[19277.975559] amdgpu 0000:3d:00.0: amdgpu: [mmhub0] retry page fault (src_id:0 ring:0 vmid:3 pasid:32790)", "crash"),
    ("Faiss assertion 'err == cudaSuccess' failed in faiss::gpu::StackDeviceMemory::Stack::Stack(int, size_t)", "error"),
    ("Cuda driver error 100 in call at file '/src/lammps/lib/gpu/geryon/nvd_device.h' in line 323", "error"),
    ("error    libmamba Could not solve for environment specs", "error"),
    ("No OpenCL device found", "error"),
    ("  × No solution found when resolving dependencies:", "error"),
    ("py_paddle-0.8.0b0-cp27-cp27mu-linux_x86_64.whl is not a supported wheel on this platform.", "error"),
    ("Disabling PyTorch because PyTorch >= 2.1 is required but found 2.0.1", "error"),
    ("NVIDIA A40 with CUDA capability sm_86 is not compatible with the current PyTorch installation.", "error"),
    ("CUBLAS failure 13: CUBLAS_STATUS_EXECUTION_FAILED ; GPU=1 ; hostname=node7", "error"),
    ("call to cuStreamSynchronize returned error 700: Illegal address during kernel execution", "error"),
    ("[   37.673624] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x24:0x72:1568)", "error"),
    ("[g07r1n14:27251:0:27251] ib_mlx5_log.c:143  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15)", "error"),
    ("There are not enough slots available in the system to satisfy the 64 slots", "error"),
    ("Unable to initialize backend 'cuda': module 'jaxlib.xla_extension' has no attribute 'GpuAllocatorConfig'", "error"),
    ("Kill task failed root 2024-01-25T15:12:23 ip-10-0-1-23", "scheduler"),
    ("Job for nvidia-fabricmanager.service failed because the control process exited with error code.", "system"),
    ("Unable to determine the device handle for GPU 0000:03:00.0: GPU is lost.  Reboot the system to recover this GPU",
     "error"),
])
def test_endings_of_other_shapes_are_named(tail, kind):
    rng = random.Random(len(tail))
    keys = collect(noise(rng, 5_000) + [tail])
    assert keys and keys[0].line == 5_001 and keys[0].kind == kind, keys


@pytest.mark.parametrize("notice", [
    "qsub: waiting for job 4242.pbs01 to start",
    "qsub: job 4242.pbs01 ready",
    "Killed 3 stale workers before the restart",   # not the shell's kill report: no pid before it
    "loaded 12 files: no such file was skipped",
    # a warning-level glog line after TensorFlow's timestamp, NCCL's probing INFO lines
    "2020-06-01 20:07:58.089327: W tensorflow/core/common_runtime/bfc_allocator.cc:239] Allocator (GPU_0_bfc) "
    "ran out of memory trying to allocate 45.53MiB with freed_by_count=0. The caller indicates that this is not a failure",
    "z292:58192:58200 [2] NCCL INFO Failed to open libibverbs.so[.1]",
    # a status code that says all went well, a warning-level c10 line
    "cublasLt status: CUBLAS_STATUS_SUCCESS",
    "[W ProcessGroupNCCL.cpp:1856] Warning: 0NCCL_AVOID_RECORD_STREAMS=1 has no effect for point-to-point collectives.",
])
def test_notices_that_look_like_endings_are_not(notice):
    rng = random.Random(5)
    assert collect(noise(rng, 2_000) + [notice]) == ()


@pytest.mark.parametrize("exception_line, name", [
    ("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 131072, Hardware limit: 101376.",
     "triton.runtime.errors.OutOfResources"),
    ("torch._dynamo.exc.Unsupported: call_function BuiltinVariable(setattr) [TensorVariable()] {}",
     "torch._dynamo.exc.Unsupported"),
])
def test_exceptions_of_an_exceptions_module_close_a_traceback(exception_line, name):
    """A class whose name does not end in Error/Exception still closes the traceback when its
    module is one that holds exceptions (`errors`, `exc`, `exceptions`)."""
    rng = random.Random(len(name))
    lines = noise(rng, 3_000) + ["Traceback (most recent call last):",
                                 f'  File "/home/{word(rng)}/train.py", line 7, in <module>', "    main()",
                                 exception_line]
    keys = collect(lines)
    assert [(k.line, k.kind, k.exception, k.origin) for k in keys] == [(3_004, "exception", name, "your code")]


def test_a_logger_prefixed_traceback_names_its_exception_not_its_source_lines():
    """vLLM prefixes every traceback line with ERROR: the frame's source line and ^^^^ marks are not key lines."""
    rng = random.Random(11)
    prefix = "ERROR 06-30 13:53:19 [core.py:515]"
    lines = noise(rng, 2_000) + [
        f"{prefix} EngineCore failed to start.",
        f"{prefix} Traceback (most recent call last):",
        f'{prefix}   File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 506, in run_engine_core',
        f"{prefix}     engine_core = EngineCoreProc(*args, **kwargs)",
        f"{prefix}                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
        f"{prefix} ValueError: Free memory on device (31.44/47.38 GiB) on startup is less than desired GPU memory utilization",
    ]
    keys = collect(lines)
    assert keys[0].line == 2_006 and keys[0].exception == "ValueError", keys
    assert {k.line for k in keys} <= {2_001, 2_006}, keys


def test_the_schedulers_reason_comes_before_its_echo_of_how_tasks_ended():
    rng = random.Random(12)
    lines = noise(rng, 2_000) + [
        "srun: error: CPU binding outside of job step allocation, allocated CPUs are: 0x00000000FFFF",
        "srun: error: Task launch for StepId=2960193.8 failed on node tc-dgx006: Unable to satisfy cpu bind request",
        "slurmstepd: error: *** STEP 2960193.8 ON tc-dgx006 CANCELLED AT 2025-03-05T11:08:03 ***",
        "srun: error: tc-dgx006: task 0: Killed",
        "srun: error: tc-dgx007: task 1: Exited with exit code 1",
    ]
    keys = collect(lines)
    assert [k.line for k in keys if k.kind == "scheduler"] == [2_001, 2_002], keys
    # with no reason of its own, the echo is still shown
    keys = collect(noise(rng, 2_000) + ["srun: error: tc-dgx007: task 1: Exited with exit code 1"])
    assert [k.line for k in keys] == [2_001], keys


@pytest.mark.parametrize("block, cause", [
    # pip's wrap-up after the build's own error
    (["      error: can't find Rust compiler", "      [end of output]",
      "  note: This error originates from a subprocess, and is likely not a problem with pip.",
      "error: metadata-generation-failed", "ERROR: Could not build wheels for tokenizers"], 1),
    # a Lua stack traceback under Lmod's error
    (["/usr/bin/lua: /usr/share/lmod/libexec/LocationT.lua:101: bad argument #1 to 'pairs' (table expected, got nil)",
      "stack traceback:", "\t[C]: in function 'pairs'",
      "\t/usr/share/lmod/libexec/MasterControl.lua:769: in function 'load_usr'",
      "\t/usr/share/lmod/libexec/cmdfuncs.lua:423: in function 'cmd'"], 1),
    # HDF5's error stack: the innermost frame is printed last, its category lines say nothing more
    (["HDF5-DIAG: Error detected in HDF5 (1.12.1) thread 0:",
      "  #000: ../../src/H5F.c line 604 in H5Fopen(): unable to open file", "    major: File accessibility",
      "    minor: Unable to open file",
      "  #001: ../../src/H5Fsuper.c line 277 in H5F_super_read(): file signature not found",
      "    major: File accessibility", "    minor: Not an HDF5 file"], 5),
])
def test_wrap_up_lines_do_not_hide_the_cause(block, cause):
    rng = random.Random(len(block))
    keys = collect(noise(rng, 1_000) + block)
    assert 1_000 + cause in [k.line for k in keys], keys
