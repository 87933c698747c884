"""The lines that most likely ended a job, when no known failure explains it.

The scan pass reports a few generic shapes (PATTERNS) alongside the entries'
signatures; a KeyLineCollector keeps a bounded number of each shape as the
log streams by (flat memory: a deque per kind, the state of the traceback
being read) and, at the end, names the few lines a human would look at:
the last Python exception with the innermost frame of the user's own code, a
C++ abort, a crash signal or a kill, the launcher's or the scheduler's verdict,
what the shell or the system refused, and the last `error:` lines. Harmless look-alikes (warnings, progress bars) never take
a slot, so a flood of them cannot push the real ending out.
"""
from __future__ import annotations

import re
from collections import deque
from typing import Deque, Dict, List, Optional, Tuple

from .record import dataclass

# (kind, regex) for the scanner: linear-time patterns, matched case-sensitively.
PATTERNS: Tuple[Tuple[str, str], ...] = (
    ("traceback", r"Traceback \(most recent call last\)"),
    ("frame", r'File "[^"\n]{1,400}", line \d+'),
    # "." counts as a boundary, so a dotted module path before the class name
    # needs no (?:segment\.){0,6} of its own: that spelling made Hyperscan's
    # compile of this set 12x slower, a cost of every cold start.
    ("exception", r"(?:^|[\s:\]>|.`\"])[A-Z][A-Za-z0-9_]{0,80}"
                  r"(?:Error|Exception|Interrupt|Exit|Failure|Fault|NotFound)\b(?::|$|\r|\n)|"
                  # a module's own class named just Error: "locale.Error: unsupported locale setting"
                  r"[a-z_][a-z0-9_]{0,40}\.Error(?::|$|\r|\n)|"
                  # `raise Exception("...")` prints the bare class name
                  r"(?:^|[\s\]>|])Exception(?::|$|\r|\n)|"
                  # a class of a module that holds exceptions, whatever its name ends in:
                  # "triton.runtime.errors.OutOfResources: ...", "torch._dynamo.exc.Unsupported: ..."
                  r"\.(?:errors?|exc|exceptions?)\.[A-Z][A-Za-z0-9_]{1,80}(?::|$|\r|\n)"),
    ("abort", r"terminate called after throwing an instance of|terminate called without an active exception|what\(\): |"
              # glog's FATAL line, after which the process aborts: XLA/TensorFlow's "2024-05-23
              # 15:20:04.554952: F external/xla/xla/shape_tree.cc:54] Check failed: ..." or "F1103 ..."
              r"(?:^|\d: )F(?:\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w/.-]{1,200}| [a-z_]+/[\w/.-]{1,200})\.cc:\d+\]|"
              # a glog/absl CHECK that failed, however the line is prefixed ("db.hpp:109] Check failed: ...")
              r"\.(?:cc|cpp|h|hpp|cu):\d+\] Check failed: "),
    ("crash", r"Segmentation fault|Bus error|core dumped|Killed signal terminated program|Fatal Python error|Aborted \(core dumped\)|"
              r"[Ss]ignal (?:11|6|7|9) ?\((?:SIGSEGV|SIGABRT|SIGBUS|SIGKILL)\)|received signal SIG[A-Z]+|"
              r"Illegal instruction|Floating point exception|"
              # the shell's "line 12: 4711 Killed  python train.py" or a bare "Killed"; slurmctld's
              # "WTERMSIG 9"; "killed by signal 9", "exited on signal 9"
              r"^\s*Killed\s*$|\d\s{1,8}Killed\s|WTERMSIG \d+|(?:[Kk]illed|terminated|exited) (?:by|on) signal \d+|"
              # an IDE's "exit code 137 (interrupted by signal 9:SIGKILL)"; ROCm's page fault
              r"interrupted by signal \d+|Memory access fault by GPU|HW Exception by GPU node|"
              # the amdgpu kernel driver's GPU page fault ("amdgpu: [gfxhub] page fault (src_id:0 ...")
              r"amdgpu: [^\n]{0,40}page fault|VM_L2_PROTECTION_FAULT"),
    ("launcher", r"ChildFailedError|Root Cause \(first observed failure\)|exitcode\s*: -?\d+|"
                 r"mpirun noticed that process|Primary job\s+terminated normally, but"),
    ("scheduler", r"(?:srun|sbatch|salloc): (?:error|fatal|unrecognized option|invalid option)|slurmstepd: error: |"
                  r"=>> PBS: |TERM_[A-Z]+:|Exited with exit code \d+|"
                  # LSF's refusals end "Job not submitted."; an esub's, "Request aborted by esub"
                  r"Job not submitted|Request aborted by esub|Kill task failed|"
                  # PBS's refusals ("qsub: Unknown queue", "qsub: PBS server internal error MSG=..."),
                  # not its notices ("qsub: waiting for job 42.pbs to start")
                  r"qsub: [^\n]{0,200}(?:[Ee]rror|[Uu]nknown|[Ii]nvalid|[Ee]xceed|[Rr]eject|[Dd]enied|[Ii]llegal|not allowed|cannot)"),
    # What the shell or the C library says when the system refused: "python: can't open file
    # 'train.py': [Errno 2] No such file or directory", "slurm_script: line 9: python: command
    # not found", "cannot execute binary file: Exec format error", a full disk or quota.
    ("system", r": (?:\[Errno -?\d+\] )?(?:No such file or directory|Permission denied|command not found|"
               r"Exec format error|No space left on device|Disk quota exceeded|Cannot allocate memory|"
               r"Read-only file system|Input/output error|Stale file handle|Too many open files|"
               r"Operation not permitted|"
               # the network's refusals, as strerror/gai_strerror word them: a port taken, a
               # peer that is not listening, a host name that does not resolve on a compute node
               r"Address already in use|Cannot assign requested address|Connection refused|"
               r"Connection timed out|No route to host|Network is unreachable|"
               r"Temporary failure in name resolution|Name or service not known|"
               # a FUSE/NFS mount gone, a file system without locks, no threads left
               r"Transport endpoint is not connected|No locks available|Function not implemented|"
               r"Resource temporarily unavailable)|"
               r"permission denied while trying to connect to the Docker daemon|"
               # Open MPI's single-copy (CMA) read that the kernel refused: "Read -1, expected 5285, errno = 1"
               r"Read -1, expected \d+, errno ?= ?\d+|"
               # systemd's refusal to start a unit ("Job for nvidia-fabricmanager.service failed because ...")
               r"Job for [\w@.-]{1,100}\.service failed|"
               # dash's "/bin/sh: 1: torchrun: not found"; Go's (docker, runc) "exec format error"
               r"sh: \d+: [^\n]{1,200}: not found|exec format error|"
               # a command missing, as other shells and wrappers say it ("exec: --bind: not found",
               # "ch-fromhost: nvidia-container-cli: not found")
               r"[\w.-]{1,100}: not found(?:$|\r|\n)"),
    ("error", r"(?:^|[\s\]>:|])(?:error|ERROR|Error|FATAL|Fatal|CRITICAL|fatal)(?::| -|\]| +:)|"
              # numbered runtime errors ("OMP: Error #15: ..."), the error-level lines of NCCL, MPICH,
              # TensorRT and glog/absl ("2021-05-20 10:09:06.617783: E external/...cc:93] ...")
              r"\bError #\d+|NCCL WARN |MPICH ERROR|\[TRT\] \[E\]|\[E\] \[TRT\]|"
              # TensorRT's and other C++ libraries' numbered errors: "Error Code 10: Internal Error", "Error[10]: ..."
              r"\bError Code \d+: |\bError\[\d+\]: |"
              # an upper-case ERROR or FATAL word (UCX, vLLM, wandb, Apptainer's "FATAL   [U=..]"),
              # logrus' level=error, glog's "[F file.cc:338]", MPI's "Fatal error in", Lmod's Lua
              # errors ("/usr/bin/lua: .../Cache.lua:290: attempt to index a nil value"), Java's and
              # Snakemake's "Exception in thread/rule", Grid Engine's "Unable to run job:"
              r"\bERROR\b|\bFATAL\b|level=(?:error|fatal)\b|^\[F |Fatal error in |\.lua:\d+: |"
              r"(?:Error|Exception) in (?:rule|thread) |Unable to run job: |"
              r"(?:^|\d: )E(?:\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ | )?[a-z_]+/[\w/.-]{1,200}\.cc:\d+\]|"
              # BLAS/LAPACK's own complaint (xerbla): "** On entry to GEMM_EX  parameter number 12 had an illegal value"
              r"parameter number \d+ had an illegal value|"
              # a build that stopped: CMake's "CMake Error at CMakeLists.txt:3 (project):", the linker's
              # "undefined reference to `cudaMalloc'"
              r"CMake Error(?: at | in |:)|undefined reference to |"
              # GPU runtime errors printed without an exception around them ("CUDA error !!!!! <out of
              # memory> !!!!!", "CUDA_ERROR_NO_DEVICE", "cudaErrorInvalidDevice"), NVML and nvidia-smi
              r"[Cc](?:UDA|uda) (?:driver |runtime )?error|CUDA_ERROR_[A-Z_]{3,40}|cudaError[A-Z][A-Za-z]{2,60}|hipError[A-Z][A-Za-z]{2,60}|"
              r"Failed to initialize NVML|NVRM: Xid|fallen off the bus|: GPU is lost\b|"
              # a device-side assert ("Indexing.cu:1141: ...: Assertion `srcIndex < srcSelectDimSize` failed."),
              # the dynamic loader's refusals, a bracketed level ("[LightGBM] [Fatal] ..."), mamba's
              # "critical libmamba ...", R's and Fortran/C codes' "Error in <where>: ..."
              r"[Aa]ssertion [`'][^\n]{1,200}[`'] failed|undefined symbol: |version `[A-Z]+_[\d.]+' not found|"
              r"\[(?:Fatal|FATAL|Error|ERROR|error|critical|CRITICAL)\]|(?:critical|error) +libmamba |(?:^|\s)Error in [^\n]{1,200}: |"
              r"NVIDIA-SMI has failed|NVIDIA-SMI couldn't find|"
              # Docker's and Go CLIs' refusals (docker, apptainer, enroot): "docker: Error response from
              # daemon: ...", 'Error for command "exec": unknown flag: --cpus'
              r"Error response from daemon|unknown (?:shorthand )?flag: |"
              # MATLAB's and GROMACS's own error blocks, the JVM's start-up failure
              r"^Error using |Inconsistency in user input|"
              # an application's own words for running out of memory or failing to start something
              # (MATLAB's "Out of memory on device", "amrex::Abort::0::Arena out of memory!!!",
              # "Failed to load libnvcuvid.so")
              r"[Oo]ut of (?:[Gg][Pp][Uu] |[Dd]evice |host )?memory|OUT OF MEMORY|"
              r"\b[Ff]ailed to (?:load|initiali[sz]e|create|connect|start|open|allocate)\b|"
              r"\b[Uu]nable to (?:run|open|create|find|load|allocate|connect|initiali[sz]e)\b|"
              r"\b(?:Could not|Cannot|can't) (?:find|connect|load|open)\b|"
              r"Error occurred during initialization of VM|"
              # PyTorch's c10 error level, bare or with its timestamp: "[E ProcessGroupNCCL.cpp:457]",
              # "[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] ... Watchdog caught ..."
              r"\[E(?:\d{3,4} \d\d:\d\d:\d\d\.\d+(?: +\d+)?)? [\w.-]{1,80}\.(?:cpp|cc|cu|h|hpp):\d+\]|"
              # a GPU job that found no GPU ("No OpenCL device found", "no CUDA devices available");
              # installers that found no way ("No solution found when resolving dependencies",
              # "... is not a supported wheel on this platform")
              r"\b[Nn]o (?:CUDA[- ]capable |CUDA |OpenCL |HIP |ROCm |compatible |supported )?"
              r"(?:GPUs?|devices?|GPU devices?) (?:is |are |were |was )?(?:found|available|detected)\b|"
              r"No solution found when resolving dependencies|is not a supported wheel on this platform|"
              r"is required[^\n]{0,60} but found |is not compatible with the current PyTorch installation|"
              # a GPU library's status or error code ("CUBLAS_STATUS_EXECUTION_FAILED", "CUPTI_ERROR_NOT_INITIALIZED",
              # "CUDNN failure 9: ..."), a driver call's error number ("returned error 700"), the kernel
              # driver's refusals ("NVRM: API mismatch", "NVRM: GPU 0000:01:00.0: RmInitAdapter failed!")
              r"\b[A-Z]{4,12}_(?:STATUS|ERROR)_[A-Z_]{4,40}|\b[A-Z]{4,10} failure \d+: |"
              r"\b(?:returned|failed with) error (?:\d+|[A-Z_]{4,40})\b|NVRM: API mismatch|RmInitAdapter failed|"
              # InfiniBand giving up on a peer; Open MPI's help texts for a launch that cannot work
              r"Transport retry count exceeded|There are not enough slots available in the system|"
              r"has detected an attempt to run as root|ORTE (?:was unable to|has lost communication)|"
              r"An ORTE daemon has unexpectedly failed|appears to have been direct launched using|"
              r"are unable to reach each other|No components were able to be opened|"
              # a frame of HDF5's error stack ("#002: ../src/H5Fsuper.c line 277 in H5F_super_read(): file
              # signature not found"): the last one printed is the innermost cause
              r"#\d{3}: \S{1,100} line \d+ in \w{1,60}\(\): "),
)

KEEP_PER_KIND = 12      # the last this many lines of each kind
MAX_SHOWN = 5
MAX_TEXT = 300          # a key line is shown whole up to this; longer ones are cut with an ellipsis

# Lines that look like errors but are not what ended a job.
HARMLESS = re.compile(
    r"Warning\b|warnings\.warn|DeprecationWarning|FutureWarning|UserWarning|\[W [\w.]+:\d+\]|"
    # glog/absl info and warning levels, bare or after TensorFlow's timestamp ("2020-06-01
    # 20:07:58.089327: W tensorflow/core/common_runtime/bfc_allocator.cc:239] ... not a failure"),
    # and NCCL's INFO lines (its probes say "Failed to open libibverbs.so" and go on)
    r"^[IW]\d{4} |^[IW] (?:tensorflow|external)/|\d: [IW] [\w/.-]{1,200}\.(?:cc|h):\d+\]|NCCL INFO |\bit/s\]|\d+%\|[#█▏▎▍▌▋▊▉ ]*\||"
    r"(?:error|loss)[_ ]?(?:rate)?\s*[:=]\s*[\d.]+(?:e-?\d+)?\s*(?:[,|]|$)|"
    r"0 errors?\b|no errors?\b|errors?: 0\b|error_handler|on_error|ignore_errors|_STATUS_SUCCESS\b|"
    # a Lua stack traceback's frames ("MasterControl.lua:769: in function 'load_usr'") and the HDF5
    # error stack's category lines ("minor: Unable to open file") under the real message
    r"\.lua:\d+: in (?:function|main chunk|upvalue|local|method|field)\b|^\s*(?:major|minor): ",
    re.IGNORECASE,
)
# A line that only echoes that something earlier failed: the scheduler's note of how a task ended
# ("srun: error: node1: task 0: Exited with exit code 1", "*** STEP 42.0 ON node1 CANCELLED AT
# 2025-03-05T11:08:03 ***"), pip's wrap-up ("error: subprocess-exited-with-error"). Shown only
# when its kind has no line that says why.
_ECHO = re.compile(r"task \d+: (?:Exited with exit code|Killed|Aborted|Terminated)|CANCELLED AT \S+ \*\*\*\s*$|"
                   r"Job step aborted|^\s*Exited with exit code|"
                   r"subprocess-exited-with-error|metadata-generation-failed|Could not build wheels for")
# A frame's source line or its ^^^^ marks, when a logger prefixes every traceback line with ERROR
# ("ERROR 06-30 13:53:19 [core.py:515]     engine_core = EngineCoreProc(...)")
_FRAME_BODY = re.compile(r"(?:^|\])\s{4,}\S|[\^~]{3,}\s*$")
_SITE_PACKAGES = re.compile(r"[/\\](?:site|dist)-packages[/\\]([A-Za-z0-9_]+)")
_STDLIB = re.compile(r"[/\\]lib[/\\]python\d\.\d+[/\\]([A-Za-z0-9_]+)")
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>\S+))?')
_EXC = re.compile(r"(?P<type>(?:[A-Za-z_][A-Za-z0-9_]*\.)+(?:errors?|exc|exceptions?)\.[A-Z][A-Za-z0-9_]*(?=:|\s*$)|"
                  r"[a-z_][a-z0-9_]*\.Error(?=:|\s*$)|"
                  r"(?:[A-Za-z_][A-Za-z0-9_]*\.)*"
                  r"(?:[A-Z][A-Za-z0-9_]*(?:Error|Exception|Interrupt|Exit|Failure|Fault|NotFound)|Exception))"
                  r"(?::\s?(?P<msg>.*)|\s*$)")
_NEAR = 4   # an exception line this close after a frame closes that traceback


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str

    @property
    def package(self) -> Optional[str]:
        m = _SITE_PACKAGES.search(self.path) or _STDLIB.search(self.path)
        return m.group(1) if m else None


@dataclass(frozen=True)
class KeyLine:
    line: int                        # 1-based line number in the log
    text: str                        # the cleaned line, cut to MAX_TEXT with an ellipsis
    kind: str                        # exception, abort, crash, launcher, scheduler, system, error
    origin: str                      # "your code", "a library", "the scheduler", "the system", "unknown"
    exception: Optional[str] = None  # "ValueError", "torch.OutOfMemoryError"
    package: Optional[str] = None    # the package that raised it, when a frame says so
    frame: Optional[str] = None      # "train.py:88 in step": the innermost frame of the user's own code

    def to_dict(self) -> Dict[str, object]:
        return {"line": self.line, "text": self.text, "kind": self.kind, "origin": self.origin,
                "exception": self.exception, "package": self.package, "frame": self.frame}

    @property
    def explanation(self) -> str:
        """One line a person can act on, said generically."""
        if self.kind == "exception":
            if self.origin == "your code":
                return f"Python raised {self.exception} in your own code" + (f" at {self.frame}" if self.frame else "")
            if self.origin == "a library":
                called = f"; your code called it at {self.frame}" if self.frame else ""
                return f"Python raised {self.exception} inside {self.package or 'a library'}{called}"
            return f"Python raised {self.exception}"
        return {
            "abort": "a C++ library aborted the program",
            "crash": "the process crashed (a signal, not a Python exception)",
            "launcher": "the launcher reports which rank failed first",
            "scheduler": "the scheduler's verdict on the job",
            "system": "the shell or the system refused (a missing file or command, no permission, a full disk)",
        }.get(self.kind, "an error line near the end of the log")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def _last(kept: Deque[KeyLine], take: int) -> List[KeyLine]:
    """The last `take` lines of a kind, those that say why before those that only echo (_ECHO)."""
    reasons: List[KeyLine] = []
    echoes: List[KeyLine] = []
    for k in kept:
        (echoes if _ECHO.search(k.text) else reasons).append(k)
    chosen = reasons[-take:]
    missing = take - len(chosen)
    if missing:
        chosen += echoes[-missing:]
    return sorted(chosen, key=lambda k: k.line)


def _is_user_frame(frame: Frame) -> bool:
    return frame.package is None and not frame.path.startswith("<")


class KeyLineCollector:
    """Fed (line number, cleaned text, kind) in log order; bounded memory."""

    def __init__(self) -> None:
        self._kept: Dict[str, Deque[KeyLine]] = {k: deque(maxlen=KEEP_PER_KIND) for k, _ in PATTERNS}
        self._frames: List[Frame] = []          # the traceback being read (innermost last), bounded
        self._last_frame_line = -10
        self._in_traceback = False

    def feed_kinds(self, line_no: int, text: str, kinds) -> None:
        """One line that matched several shapes: the generic `error` shape
        only counts when nothing more specific matched."""
        specific = [k for k in kinds if k != "error"]
        for kind in specific or kinds:
            self.feed(line_no, text, kind)

    def feed(self, line_no: int, text: str, kind: str) -> None:
        if kind == "traceback":
            self._frames, self._in_traceback = [], True
            return
        if kind == "frame":
            m = _FRAME.search(text)
            if m:
                frame = Frame(m.group("path"), int(m.group("line")), m.group("func") or "?")
                if not self._in_traceback:  # a frame with no header seen: start afresh
                    self._frames, self._in_traceback = [], True
                self._frames = (self._frames + [frame])[-64:]
                self._last_frame_line = line_no
            return
        if kind == "exception":
            self._exception(line_no, text)
            return
        if kind == "error" and HARMLESS.search(text):
            return
        if (kind == "error" and self._in_traceback and 0 < line_no - self._last_frame_line <= 2
                and _FRAME_BODY.search(text)):
            return
        origin = {"scheduler": "the scheduler", "crash": "the system", "launcher": "the launcher",
                  "abort": "a library", "system": "the system"}.get(kind, "unknown")
        self._kept[kind].append(KeyLine(line_no, _cut(text), kind, origin))

    def _exception(self, line_no: int, text: str) -> None:
        m = _EXC.search(text)
        if m is None or HARMLESS.search(m.group("type")):
            return
        closes = self._in_traceback and 0 < line_no - self._last_frame_line <= _NEAR
        exc = m.group("type")
        package = exc.split(".")[0] if "." in exc else None
        frame_text, origin = None, "unknown"
        if closes and self._frames:
            innermost = self._frames[-1]
            user = next((f for f in reversed(self._frames) if _is_user_frame(f)), None)
            package = innermost.package or package
            origin = "your code" if _is_user_frame(innermost) else "a library"
            if user is not None:
                frame_text = f"{user.path.rsplit('/', 1)[-1]}:{user.line} in {user.function}"
            self._in_traceback = False
        elif not closes:
            # an exception named outside a traceback (a log message): weaker evidence
            origin = "unknown"
        kind = "exception" if closes else "error"
        self._kept[kind].append(KeyLine(line_no, _cut(text), kind, origin, exc, package, frame_text))

    def result(self) -> Tuple[KeyLine, ...]:
        """The few lines that most likely ended the job, cause first."""
        picked: List[KeyLine] = []
        order = ("exception", "abort", "crash", "launcher", "scheduler", "system", "error")
        for kind in order:
            kept = self._kept[kind]
            if not kept:
                continue
            picked.extend(_last(kept, 1 if kind in ("exception", "launcher") else 2))
        seen, out = set(), []
        for key in picked:
            if key.line not in seen:
                seen.add(key.line)
                out.append(key)
        return tuple(out[:MAX_SHOWN])
