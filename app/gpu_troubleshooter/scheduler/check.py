"""`troubleshoot check job.sh`: what will go wrong with a batch script, before it is submitted.

Reads the script's #SBATCH / #PBS directives and commands, and the Python
files it runs (parsed with ``ast``, never executed), and reports each problem
with its line and a fix. What the site has (partitions, their time limits and
GPUs, gres types) comes from `scontrol show partition` / `sinfo` when they
answer, and from a site file (``scheduler:`` in a --kb folder's _site.yaml,
or --site FILE).

Exit status: 0 no problem found, 1 problems found, 2 the script cannot be read.
"""
import argparse
import ast
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from typing import Optional

EXIT_CLEAN, EXIT_FOUND, EXIT_ERROR = 0, 1, 2
MAX_SCRIPT_BYTES = 2 * 1024 * 1024


@dataclass
class Problem:
    id: str
    file: str
    line: int
    message: str
    fix: str
    severity: str = "error"          # error | warning
    kb: str = ""                     # the knowledge-base entry with the longer story

    def to_dict(self):
        return {"id": self.id, "file": self.file, "line": self.line, "severity": self.severity,
                "message": self.message, "fix": self.fix, "kb": self.kb or None}


@dataclass
class Request:
    """What the script asks the scheduler for."""
    kind: str = ""                    # slurm | pbs | "" (no directives)
    gpus: int = 0
    gpu_lines: list = field(default_factory=list)
    gres_types: list = field(default_factory=list)   # [(type, line)]
    partition: Optional[tuple] = None           # (name, line)
    time_s: Optional[tuple] = None              # (seconds, line)
    cpus_per_task: Optional[tuple] = None       # (n, line)
    chdir: Optional[str] = None
    directive_after_command: list = field(default_factory=list)
    first_command_line: int = 0


# ---- the batch script -------------------------------------------------------

_SBATCH_SHORT = {"-p": "partition", "-t": "time", "-c": "cpus-per-task", "-G": "gpus", "-D": "chdir",
                 "-J": "job-name", "-N": "nodes", "-n": "ntasks", "-o": "output", "-e": "error", "-A": "account",
                 "-q": "qos", "-C": "constraint"}


def _sbatch_options(text):
    """'--gres=gpu:1 -p gpu' -> [('gres', 'gpu:1'), ('partition', 'gpu')]."""
    try:
        tokens = shlex.split(text, comments=True)
    except ValueError:
        tokens = text.split()
    out, i = [], 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("--"):
            name, eq, value = tok[2:].partition("=")
            if not eq and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                value, i = tokens[i + 1], i + 1
            out.append((name, value))
        elif tok.startswith("-") and len(tok) >= 2:
            name = _SBATCH_SHORT.get(tok[:2], tok[1:2])
            value = tok[2:]
            if not value and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                value, i = tokens[i + 1], i + 1
            out.append((name, value.lstrip("=")))
        i += 1
    return out


def _gpu_spec_count(value):
    """'gpu:a100:2' / 'a100:2' / '2' / 'gpu' -> (count, type or None)."""
    parts = [p for p in value.split(",")[0].split(":") if p]
    if parts and parts[0] == "gpu":
        parts = parts[1:]
    count, gtype = 1, None
    if parts and parts[-1].split("(")[0].isdigit():
        count = int(parts[-1].split("(")[0])
        parts = parts[:-1]
    if parts:
        gtype = parts[0]
    return count, gtype


def _pbs_resources(value):
    """'select=1:ncpus=8:ngpus=1:mem=32gb' / 'walltime=01:00:00,nodes=1:ppn=4:gpus=1' -> {key: value}."""
    out = {}
    for chunk in re.split(r"[,:+]", value):
        if "=" in chunk:
            k, _, v = chunk.partition("=")
            out[k.strip()] = v.strip()
    return out


def parse_directives(lines):
    from .slurm import parse_duration
    req = Request()
    seen_command = False
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        m = re.match(r"^#(SBATCH|PBS)\s+(.*)$", stripped)
        if m:
            if seen_command:
                req.directive_after_command.append((n, m.group(1)))
                continue
            req.kind = req.kind or m.group(1).lower().replace("sbatch", "slurm")
            if m.group(1) == "SBATCH":
                for name, value in _sbatch_options(m.group(2)):
                    if name == "gres":
                        for item in value.split(","):
                            if item.startswith("gpu"):
                                count, gtype = _gpu_spec_count(item)
                                req.gpus = max(req.gpus, count)
                                req.gpu_lines.append(n)
                                if gtype:
                                    req.gres_types.append((gtype, n))
                    elif name in ("gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket"):
                        count, gtype = _gpu_spec_count(value)
                        req.gpus = max(req.gpus, count)
                        req.gpu_lines.append(n)
                        if gtype:
                            req.gres_types.append((gtype, n))
                    elif name == "partition":
                        req.partition = (value.split(",")[0], n)
                    elif name == "time":
                        req.time_s = (parse_duration(value), n)
                    elif name == "cpus-per-task" and value.isdigit():
                        req.cpus_per_task = (int(value), n)
                    elif name == "chdir":
                        req.chdir = value
            else:
                for name, value in _sbatch_options(m.group(2)):
                    if name == "l":
                        res = _pbs_resources(value)
                        for key in ("ngpus", "gpus"):
                            if res.get(key, "").isdigit():
                                req.gpus = max(req.gpus, int(res[key]))
                                req.gpu_lines.append(n)
                        if "walltime" in res or "walltime" in value:
                            wt = re.search(r"walltime=([\d:]+)", value)
                            if wt:
                                req.time_s = (parse_duration(wt.group(1)), n)
                        if res.get("ncpus", "").isdigit():
                            req.cpus_per_task = (int(res["ncpus"]), n)
                    elif name == "q":
                        req.partition = (value, n)
            continue
        if stripped and not stripped.startswith("#") and not seen_command:
            seen_command = True
            req.first_command_line = n
    return req


_PY_LAUNCHERS = re.compile(r"^(?:python[\d.]*|torchrun|accelerate|deepspeed|horovodrun)$")


def python_files(lines, base_dir):
    """[(path, script line)] of the Python files the script runs, and [(first line, text)] of heredoc Python."""
    files, heredocs = [], []
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if not line or line.startswith("#"):
            continue
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError:
            tokens = line.split()
        launcher = any(_PY_LAUNCHERS.match(os.path.basename(t)) for t in tokens)
        if not launcher or (tokens and tokens[0] in ("docker", "podman")):   # a path inside an image
            continue
        heredoc = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        if heredoc and re.search(r"python[\d.]*\s+-(\s|$)", line):
            tag, start, body = heredoc.group(1), i + 1, []
            while i < len(lines) and lines[i].strip() != tag:
                body.append(lines[i])
                i += 1
            i += 1
            heredocs.append((start, "\n".join(body)))
            continue
        for tok in tokens:
            if tok.endswith(".py") and not tok.startswith("-"):
                path = tok
                if "$" in path or "~" in path:   # the job's environment decides: not ours to guess
                    break
                path = path if os.path.isabs(path) else os.path.join(base_dir, path)
                files.append((os.path.normpath(path), i))
                break
    return files, heredocs


# ---- Python, with ast ---------------------------------------------------------

@dataclass
class PyFacts:
    gpu_code: list = field(default_factory=list)          # [(line, what)]
    tf_import: int = 0
    memory_growth: bool = False
    hard_device: list = field(default_factory=list)       # [(line, text)]
    cvd_set: list = field(default_factory=list)
    data_parallel: list = field(default_factory=list)
    workers: list = field(default_factory=list)           # [(line, n)]
    syntax_error: Optional[str] = None


def _const_str(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def analyse_python(source, filename="<python>"):
    facts = PyFacts()
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as e:
        facts.syntax_error = f"line {e.lineno}: {e.msg}"
        return facts
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                if top == "tensorflow":
                    facts.tf_import = facts.tf_import or node.lineno
                if top == "cupy":
                    facts.gpu_code.append((node.lineno, "import cupy"))
            if isinstance(node, ast.ImportFrom) and (node.module or "") == "numba" and any(a.name == "cuda" for a in node.names):
                facts.gpu_code.append((node.lineno, "from numba import cuda"))
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            last = name.rsplit(".", 1)[-1] if name else (node.func.attr if isinstance(node.func, ast.Attribute) else "")
            args = [_const_str(a) for a in node.args]
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            if isinstance(node.func, ast.Attribute) and node.func.attr == "cuda" and not name.startswith(("torch.cuda", "numba")):
                facts.gpu_code.append((node.lineno, ".cuda()"))
            elif last == "to" and (any(a and a.startswith("cuda") for a in args) or
                                   (_const_str(kw.get("device")) or "").startswith("cuda")):
                facts.gpu_code.append((node.lineno, ".to('cuda')"))
            elif name in ("torch.device", "device") and args and args[0] and args[0].startswith("cuda"):
                facts.gpu_code.append((node.lineno, f"torch.device({args[0]!r})"))
            elif last == "device" and args and args[0] and re.match(r"^/?(device:)?GPU", args[0], re.I):
                facts.gpu_code.append((node.lineno, f"tf.device({args[0]!r})"))
            elif name in ("jax.devices",) and args and args[0] in ("gpu", "cuda"):
                facts.gpu_code.append((node.lineno, f"jax.devices({args[0]!r})"))
            if last == "set_memory_growth":
                facts.memory_growth = True
            if last == "DataParallel":
                facts.data_parallel.append(node.lineno)
            if last == "DataLoader" and "num_workers" in kw:
                v = kw["num_workers"]
                if isinstance(v, ast.Constant) and isinstance(v.value, int) and not isinstance(v.value, bool):
                    facts.workers.append((node.lineno, v.value))
            if name in ("os.environ.setdefault", "os.putenv") and args and args[0] == "CUDA_VISIBLE_DEVICES":
                facts.cvd_set.append(node.lineno)
            if name in ("os.environ.setdefault", "os.putenv") and args and args[0] == "TF_FORCE_GPU_ALLOW_GROWTH":
                facts.memory_growth = True
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and _dotted(target.value) == "os.environ":
                    key = _const_str(target.slice)
                    if key == "CUDA_VISIBLE_DEVICES":
                        facts.cvd_set.append(node.lineno)
                    if key == "TF_FORCE_GPU_ALLOW_GROWTH":
                        facts.memory_growth = True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = re.match(r"^cuda:([1-9]\d*)$", node.value)
            if m:
                facts.hard_device.append((node.lineno, node.value))
    facts.gpu_code.sort()
    return facts


# ---- what the site has ----------------------------------------------------------

def site_scheduler(kb_folders=(), site_file=None):
    """{'partitions': {name: {'max_time_s': int|None, 'gpus': int|None}}, 'gres_types': set|None, 'modules': ...}.

    From a site file (YAML: scheduler: {partitions: {gpu: {max_time: '2-00:00:00', gpus: 8}}, gres_types: [a100]}),
    else from `scontrol show partition` / `sinfo` when Slurm answers; empty when neither."""
    from .slurm import parse_duration
    site = {"partitions": None, "gres_types": None, "source": None}
    docs = []
    for folder in list(kb_folders or ()):
        path = os.path.join(folder, "_site.yaml")
        if os.path.isfile(path):
            docs.append(path)
    if site_file:
        docs.append(site_file)
    for path in docs:
        import yaml
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f) or {}
        sched = doc.get("scheduler") if isinstance(doc, dict) else None
        if not isinstance(sched, dict):
            continue
        if isinstance(sched.get("partitions"), dict):
            site["partitions"] = {str(k): {"max_time_s": parse_duration(str((v or {}).get("max_time", ""))),
                                           "gpus": (v or {}).get("gpus")} for k, v in sched["partitions"].items()}
        if isinstance(sched.get("gres_types"), list):
            site["gres_types"] = {str(t) for t in sched["gres_types"]}
        site["source"] = path
    if site["partitions"] is None:
        live = _live_slurm()
        if live:
            site.update(live)
    return site


def _live_slurm():
    from .run import SchedulerError, have, run
    from .slurm import parse_duration, parse_tres, gpu_count
    if not have("scontrol"):
        return None
    try:
        _, out, _ = run(["scontrol", "show", "partition", "-o"], timeout=10)
    except SchedulerError:
        return None
    parts = {}
    for line in out.splitlines():
        fields = dict(tok.partition("=")[::2] for tok in line.split() if "=" in tok)
        name = fields.get("PartitionName")
        if name:
            parts[name] = {"max_time_s": parse_duration(fields.get("MaxTime", "")),
                           "gpus": gpu_count(parse_tres(fields.get("TRES", "")))}
    types = set()
    try:
        _, out, _ = run(["sinfo", "-h", "-o", "%G"], timeout=10)
        for item in re.split(r"[,\s]+", out):
            m = re.match(r"^gpu:([^:(]+):\d+", item)
            if m:
                types.add(m.group(1))
    except SchedulerError:
        types = None
    return {"partitions": parts, "gres_types": types, "source": "scontrol show partition"}


# ---- the checks ---------------------------------------------------------------------

def check_script(path, site=None):
    """[Problem] for one batch script; raises TroubleshootError when it cannot be read."""
    from ..errors import LogInputError
    from .slurm import format_duration
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_SCRIPT_BYTES + 1)
    except OSError as e:
        raise LogInputError(f"{path}: cannot read: {e.strerror or e}") from None
    if len(raw) > MAX_SCRIPT_BYTES:
        raise LogInputError(f"{path}: over {MAX_SCRIPT_BYTES // 1024 // 1024} MiB: not a batch script")
    if b"\0" in raw[:8192]:
        raise LogInputError(f"{path}: a binary file, not a batch script")
    text = raw.decode("utf-8", errors="replace")
    site = site or {"partitions": None, "gres_types": None}
    problems = []
    lines = text.split("\n")
    add = lambda *a, **k: problems.append(Problem(*a, **k))  # noqa: E731

    if "\r\n" in text:
        first = next(n for n, line in enumerate(lines, 1) if line.endswith("\r"))
        add("crlf-line-endings", path, first, "the script has Windows (CRLF) line endings: bash reads '\\r' as part of "
            "each command ('$'\\r': command not found', sbatch 'DOS line breaks')",
            f"convert it: dos2unix {os.path.basename(path)}   (or: sed -i 's/\\r$//' {os.path.basename(path)})")
        lines = [line.rstrip("\r") for line in lines]
    req = parse_directives(lines)
    for n, kind in req.directive_after_command:
        add("directive-after-command", path, n, f"#{kind} after the first command (line {req.first_command_line}) is "
            "ignored by the scheduler", f"move every #{kind} line above line {req.first_command_line}, right after #!/bin/bash")

    base = req.chdir if req.chdir and os.path.isabs(req.chdir) else os.path.dirname(os.path.abspath(path))
    files, heredocs = python_files(lines, base)
    py = []   # (file, PyFacts, line offset)
    for pyfile, script_line in files:
        try:
            with open(pyfile, encoding="utf-8", errors="replace") as f:
                source = f.read(MAX_SCRIPT_BYTES)
        except OSError:
            add("python-file-missing", path, script_line, f"the script runs {pyfile}, which does not exist (from "
                f"{base})", "check the path, or cd to the right folder (#SBATCH --chdir) before running it", severity="warning")
            continue
        facts = analyse_python(source, pyfile)
        if facts.syntax_error:
            add("python-syntax-error", pyfile, int(re.match(r"line (\d+)", facts.syntax_error).group(1) or 0),
                f"Python cannot parse this file ({facts.syntax_error}): the job would fail at once",
                f"run `python -m py_compile {os.path.basename(pyfile)}` and fix the line")
        py.append((pyfile, facts, 0))
    for start, body in heredocs:
        py.append((path, analyse_python(body, path), start - 1))

    gpu_code = [(f, n + off, what) for f, facts, off in py for n, what in facts.gpu_code]
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("#"):
            continue
        if re.search(r"(^|[;&|]\s*|\s)nvidia-smi\b", s) or re.search(r"\b(apptainer|singularity)\b.*\s--nv\b", s):
            gpu_code.append((path, n, "nvidia-smi" if "nvidia-smi" in s else "--nv"))
    where = req.partition[0] if req.partition else None
    part_info = (site.get("partitions") or {}).get(where) if where else None
    if gpu_code and req.gpus == 0:
        f, n, what = gpu_code[0]
        add("gpu-code-without-gpu-request", f, n, f"GPU code ({what}) but the script requests no GPU: the job will "
            "see no GPU (or run on the CPU)", "add a GPU request to the script: #SBATCH --gres=gpu:1 (or --gpus=1); "
            "PBS: #PBS -l select=1:ngpus=1", kb="no-gpu-allocated")
    elif gpu_code and part_info and part_info.get("gpus") == 0:
        add("gpu-code-on-cpu-partition", path, req.partition[1], f"partition '{where}' has no GPUs but the job runs GPU "
            f"code ({gpu_code[0][2]})", "submit to a partition with GPUs: " +
            ", ".join(sorted(p for p, i in site["partitions"].items() if i.get("gpus"))) , kb="no-gpu-allocated")

    if where and site.get("partitions") is not None and where not in site["partitions"]:
        add("unknown-partition", path, req.partition[1], f"partition '{where}' does not exist here (sbatch: "
            "'invalid partition specified')", "use one of: " + ", ".join(sorted(site["partitions"])), kb="slurm-invalid-gres")
    known_types = site.get("gres_types")
    if known_types is not None:
        for gtype, n in req.gres_types:
            if gtype not in known_types:
                add("unknown-gres-type", path, n, f"GPU type '{gtype}' does not exist here (sbatch: 'Invalid generic "
                    "resource (gres) specification' or 'Requested node configuration is not available')",
                    "use one of: " + (", ".join(sorted(known_types)) or "no type (--gres=gpu:1)"), kb="slurm-invalid-gres")
    if req.time_s and req.time_s[0] and part_info and part_info.get("max_time_s") and req.time_s[0] > part_info["max_time_s"]:
        add("time-above-partition-max", path, req.time_s[1], f"time {format_duration(req.time_s[0])} is above partition "
            f"'{where}' maximum {format_duration(part_info['max_time_s'])}: the job is refused or never starts",
            f"ask for at most {format_duration(part_info['max_time_s'])}, and checkpoint to continue in a new job",
            kb="slurm-time-limit")

    for f, facts, off in py:
        if facts.tf_import and not facts.memory_growth and "TF_FORCE_GPU_ALLOW_GROWTH" not in text:
            add("tf-without-memory-growth", f, facts.tf_import + off, "TensorFlow takes all memory of every visible GPU "
                "at start unless memory growth is on", "export TF_FORCE_GPU_ALLOW_GROWTH=true in the script, or call "
                "tf.config.experimental.set_memory_growth(gpu, True) for each GPU before using it",
                severity="warning", kb="tf-gpu-memory-grab")
        for n, value in facts.hard_device:
            add("hard-coded-cuda-device", f, n + off, f"'{value}' is hard-coded: in a job the scheduler's GPUs are "
                "numbered from 0, so this device may not exist", "use 'cuda' (or cuda:{LOCAL_RANK} with torchrun)",
                kb="no-gpu-allocated")
        for n in facts.cvd_set:
            add("cuda-visible-devices-set", f, n + off, "the code sets CUDA_VISIBLE_DEVICES itself, which can hide the "
                "GPU the scheduler gave the job", "delete it: Slurm sets CUDA_VISIBLE_DEVICES for the job",
                kb="no-gpu-allocated")
        if facts.data_parallel and req.gpus > 1:
            add("dataparallel-multi-gpu", f, facts.data_parallel[0] + off, f"nn.DataParallel on {req.gpus} GPUs: one "
                "process drives them all, slow and memory-unbalanced", "use DistributedDataParallel, launched with "
                f"torchrun --nproc_per_node={req.gpus} (or srun with one task per GPU)", severity="warning")
        cpus = req.cpus_per_task[0] if req.cpus_per_task else 1
        for n, workers in facts.workers:
            if workers > cpus:
                add("num-workers-above-cpus", f, n + off, f"DataLoader num_workers={workers} but the job has {cpus} "
                    f"CPU{'s' if cpus > 1 else ''} per task{'' if req.cpus_per_task else ' (the default)'}: the workers "
                    "fight for the CPUs (and each holds memory)", f"#SBATCH --cpus-per-task={workers + 1}, or "
                    "num_workers=int(os.environ.get('SLURM_CPUS_PER_TASK', 1))", severity="warning", kb="host-oom-killed")

    conda_ready = False
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("#") and not (n == 1 and s.startswith("#!")):
            continue
        if n == 1 and s.startswith("#!") and re.search(r"\s-\w*l", s):
            conda_ready = True
        if re.search(r"conda\.sh|conda shell\.\w+ hook|\bconda init\b|\.bashrc|mamba shell|micromamba shell", s):
            conda_ready = True
        if re.search(r"(^|[;&|]\s*)export\s+CUDA_VISIBLE_DEVICES=|(^|\s)CUDA_VISIBLE_DEVICES=\S+\s+\S", s) \
                and "SLURM" not in s and "$" not in s.split("CUDA_VISIBLE_DEVICES=", 1)[1][:2]:
            add("cuda-visible-devices-set", path, n, "the script sets CUDA_VISIBLE_DEVICES, which can hide the GPU the "
                "scheduler gave the job", "delete the line: Slurm sets CUDA_VISIBLE_DEVICES for the job", kb="no-gpu-allocated")
        if re.search(r"\bconda activate\b", s) and not conda_ready:
            add("conda-activate-without-init", path, n, "`conda activate` in a batch shell fails without conda's shell "
                "set-up ('CondaError: Run conda init before conda activate')",
                "before it: source \"$(conda info --base)/etc/profile.d/conda.sh\"  (or: eval \"$(conda shell.bash hook)\")",
                kb="python-module-missing")
            conda_ready = True   # once is enough
        if re.search(r"\bdocker\s+run\b", s) and "--gpus" not in s and (req.gpus or gpu_code):
            add("docker-without-gpus", path, n, "`docker run` without --gpus: the container sees no GPU",
                "docker run --gpus all ...  (on HPC usually: apptainer exec --nv image.sif ...)", kb="container-no-gpu")
    problems += check_modules(lines, path)
    return sorted(problems, key=lambda p: (p.file != path, p.file, p.line))


LMOD_DEFAULT = "/usr/share/lmod/lmod/libexec/lmod"   # Debian's lmod


def check_modules(lines, path):
    """`module load X` of a module the site lacks (only where Lmod answers: $LMOD_CMD)."""
    from .run import SchedulerError, run
    lmod = os.environ.get("LMOD_CMD") or LMOD_DEFAULT
    if not os.path.exists(lmod) or not os.environ.get("MODULEPATH"):
        return []
    out = []
    for n, line in enumerate(lines, 1):
        m = re.match(r"^\s*(?:module|ml)\s+(?:load|add)\s+(.+?)\s*(?:#.*)?$", line)
        if not m:
            continue
        for name in m.group(1).split():
            if name.startswith("-") or "$" in name:
                continue
            try:
                rc, _, _ = run([lmod, "bash", "is-avail", name], timeout=15, check=False)
            except SchedulerError:
                return out
            if rc != 0:
                out.append(Problem("module-missing", path, n, f"module '{name}' does not exist here: `module load` fails "
                                   "and the job runs without it", f"module spider {name.split('/')[0]}   (lists the names "
                                   "and versions this site has)", kb="python-module-missing"))
    return out


# ---- the command ---------------------------------------------------------------------

def render(path, problems, style):
    if not problems:
        return f"{style(path, 'bold')}: {style('no problem found', 'green')}"
    out = [f"{style(path, 'bold')}: {len(problems)} problem{'s' if len(problems) > 1 else ''}"]
    for p in problems:
        colour = "red" if p.severity == "error" else "yellow"
        where = f"{p.file}:{p.line}" if p.file != path else f"line {p.line}"
        out.append(f"  {style(where, 'bold')}: {style(p.severity, colour)}: {p.message}")
        out.append(f"      fix: {p.fix}")
        if p.kb:
            out.append(style(f"      more: troubleshoot explain {p.kb}", "dim"))
    return "\n".join(out)


def main(argv, use_colour, load_kb):
    from ..render import Style
    from ..errors import TroubleshootError
    p = argparse.ArgumentParser(prog="troubleshoot check", description="Check a batch script (#SBATCH / #PBS) and the "
                                "Python it runs before you submit it.")
    p.add_argument("scripts", nargs="+", metavar="SCRIPT")
    p.add_argument("--json", action="store_true")
    p.add_argument("--kb", action="append", default=[], metavar="DIR", help="site folder (its _site.yaml may describe partitions)")
    p.add_argument("--site", metavar="FILE", help="a YAML file with scheduler: {partitions: ..., gres_types: [...]}")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    args = p.parse_args(argv)
    style = Style(use_colour(args.color, sys.stdout))
    try:
        folders = list(args.kb) + [d for d in os.environ.get("TROUBLESHOOT_KB", "").split(os.pathsep) if d]
        site = site_scheduler(folders, args.site)
    except (OSError, ValueError) as e:
        print(f"troubleshoot check: site file: {e}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as e:  # a YAML error in a site file
        print(f"troubleshoot check: site file: {str(e).splitlines()[0]}", file=sys.stderr)
        return EXIT_ERROR
    status = EXIT_CLEAN
    for n, path in enumerate(args.scripts):
        try:
            problems = check_script(path, site)
        except TroubleshootError as e:
            print(f"troubleshoot check: {e}", file=sys.stderr)
            if args.json:
                print(json.dumps({"schema": 1, "script": path, "error": str(e), "findings": []}))
            status = EXIT_ERROR
            continue
        if args.json:
            print(json.dumps({"schema": 1, "script": path, "site": site.get("source"),
                              "findings": [x.to_dict() for x in problems]}, ensure_ascii=False))
        else:
            if n:
                print()
            print(render(path, problems, style))
        if problems and status != EXIT_ERROR:
            status = EXIT_FOUND
    return status
