#!/usr/bin/env python3
"""GPU node probe: answers the five questions a helpdesk engineer asks.

  1. Am I on a GPU node?
  2. Did the scheduler give me a GPU?
  3. Does the system see it?
  4. Does my framework see it?
  5. Does my code use it?

Runs with the user's own Python and environment. Needs only the standard
library: copy this one file anywhere and run ``python3 node_probe.py``
(``--json`` for the machine-readable facts, ``--sample 30`` to watch GPU
utilisation). Optional libraries are used when importable: NVML through
nvidia-ml-py (``import pynvml``), torch, tensorflow, cupy; ``nvidia-smi`` is
the fallback for NVML.

Every fact is a value or ``{"unknown": "why it could not be read"}``. Nothing
raises and nothing hangs: every subprocess and library call has a timeout,
and torch/tensorflow/cupy are imported in child processes.

The JSON document is described in docs/probe-facts.md and validated by
probes/probe-facts.schema.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

SCHEMA_ID = "hpc-gpu-troubleshooter/probe-facts"
SCHEMA_VERSION = 1
PROBE_VERSION = "1.0"

DEFAULT_TIMEOUT = 2.7      # seconds for framework imports and each tool call: the ladder prints in < 3 s
IDLE_UTIL_PCT = 5          # a sample at or below this GPU utilisation counts as idle
SMALL_SHM_MIB = 1024       # /dev/shm below this is "small" for data loaders
MARK = "@@GPU-PROBE@@"     # prefix of the JSON line a framework child prints

RUNGS = (
    ("gpu-node", "Am I on a GPU node?"),
    ("gpu-allocated", "Did the scheduler give me a GPU?"),
    ("system-sees-gpu", "Does the system see it?"),
    ("framework-sees-gpu", "Does my framework see it?"),
    ("code-uses-gpu", "Does my code use it?"),
)


# --------------------------------------------------------------------------
# small helpers: unknown values, guarded calls, subprocesses with timeouts


def unknown(reason):
    """The value of a fact that could not be read."""
    return {"unknown": str(reason)}


def is_unknown(value):
    return isinstance(value, dict) and len(value) == 1 and "unknown" in value


def _err(exc):
    text = str(exc).strip() or exc.__class__.__name__
    name = exc.__class__.__name__
    return text if text.startswith(name) else "%s: %s" % (name, text)


def guarded(fn, *args, **kwargs):
    """fn(*args) or unknown(reason) -- never raises."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # the probe reports, it never fails
        return unknown(_err(exc))


class ProbeTimeout(Exception):
    pass


def call_with_timeout(fn, timeout, *args):
    """Run fn(*args) in a daemon thread; give up (not wait) after timeout.

    A library call stuck in the kernel (a wedged driver) cannot be
    interrupted, but it can be abandoned: the daemon thread dies with the
    process.
    """
    box = {}

    def target():
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - reported, not raised
            box["error"] = exc

    thread = threading.Thread(target=target, name="probe-call", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise ProbeTimeout("did not answer within %.1f s" % timeout)
    if "error" in box:
        raise box["error"]
    return box.get("value")


OUTPUT_LIMIT = 4 << 20  # bytes kept per stream: `nvidia-smi -q` of 8 GPUs prints ~100 KB


def run_cmd(argv, timeout, env=None, limit=OUTPUT_LIMIT):
    """(returncode, stdout, stderr); raises ProbeTimeout / OSError.

    The child gets its own session so that the whole group can be killed; a
    child that does not die (stuck in uninterruptible sleep) is abandoned
    instead of waited for. Output is read as it comes and at most `limit`
    bytes of each stream are kept: a broken or fake tool that prints without
    end (`exec yes`) is killed when it passes the limit, instead of filling
    the job's memory until the timeout.
    """
    import selectors

    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True, env=env,
    )
    name = os.path.basename(argv[0])
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    kept = {out_fd: bytearray(), err_fd: bytearray()}
    deadline = time.monotonic() + timeout

    def stop(why):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            proc.wait(timeout=0.3)
        except Exception:
            pass
        raise ProbeTimeout(why)

    with selectors.DefaultSelector() as sel:
        for fd in kept:
            sel.register(fd, selectors.EVENT_READ)
        try:
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    stop("%s did not finish within %.1f s" % (name, timeout))
                for key, _ in sel.select(left):
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        sel.unregister(key.fd)
                    elif len(kept[key.fd]) + len(chunk) > limit:
                        stop("%s printed more than %d MiB; stopped" % (name, limit >> 20))
                    else:
                        kept[key.fd] += chunk
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                stop("%s did not finish within %.1f s" % (name, timeout))
        finally:
            proc.stdout.close()
            proc.stderr.close()
    return proc.returncode, kept[out_fd].decode("utf-8", "replace"), kept[err_fd].decode("utf-8", "replace")


def excerpt(text, limit):
    """A command's output as a reason can quote it: one readable line of at most
    `limit` characters. A broken tool may print binary (NULs, escape codes), which
    would otherwise reach the JSON facts and the terminal as it is."""
    text = re.sub(r"[^\S\n]+", " ", text.strip())
    text = "".join(c if c.isprintable() or c == "\n" else "\\x%02x" % ord(c) if ord(c) < 256 else "?" for c in text)
    text = " | ".join(line.strip() for line in text.splitlines() if line.strip())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def read_text(path, limit=1 << 20):
    with open(path, "rb") as fh:
        return fh.read(limit).decode("utf-8", "replace")


def _int(text):
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


def version_tuple(text):
    """'12.1' -> (12, 1); '2.3.0+cu121' -> (2, 3, 0); None when no number."""
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(text or ""))
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


# --------------------------------------------------------------------------
# nvidia-smi output parsers (tested on recorded outputs of real drivers)

_NA = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "-"}


def _smi_value(cell):
    """'81920 MiB' -> 81920; '45 %' -> 45; '85.12 W' -> 85.12; '[N/A]' -> None."""
    cell = cell.strip()
    if cell.lower() in _NA or cell.startswith("[") or cell.startswith("Requested functionality"):
        return None
    m = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*(MiB|%|W|MHz|C|us|KB/s)?", cell)
    if m:
        num = float(m.group(1))
        return int(num) if num.is_integer() and "." not in m.group(1) else num
    return cell


# query fields that are text even when they look like numbers ("550.135", "8.0")
SMI_TEXT_FIELDS = {"driver_version", "name", "gpu_name", "uuid", "gpu_uuid", "pci.bus_id", "gpu_bus_id", "compute_cap",
                   "vbios_version", "serial", "gpu_serial", "process_name", "timestamp"}


def parse_smi_csv(text):
    """Rows of ``nvidia-smi --query-*=... --format=csv`` as dicts.

    Keys are the query field names without the unit suffix
    (``memory.total [MiB]`` -> ``memory.total``); values are numbers where the
    cell is a number (units stripped), None for N/A, else the string. Works
    with and without ``noheader``/``nounits`` only when a header is present.
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return []
    header = [re.sub(r"\s*\[[^\]]*\]\s*$", "", h.strip()) for h in lines[0].split(",")]
    rows = []
    for line in lines[1:]:
        cells = [c.strip() for c in line.split(", ")] if ", " in line else [c.strip() for c in line.split(",")]
        if len(cells) != len(header):
            # a name with ", " inside is unusual; fall back to plain splitting
            cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(header):
            continue
        rows.append({h: (None if c.lower() in _NA or c.startswith("[") else c) if h in SMI_TEXT_FIELDS
                     else _smi_value(c) for h, c in zip(header, cells)})
    return rows


_SMI_HEADER = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>\S+)\s+Driver Version:\s*(?P<driver>\S+)(?:\s+CUDA Version:\s*(?P<cuda>[\d.]+|N/A))?")
_SMI_ROW1 = re.compile(r"^\|\s+(?P<index>\d+)\s+(?P<name>.+?)\s+(?P<persist>On|Off)\s*\|\s*(?P<bus>[0-9A-Fa-f:.]+)\s+(?P<disp>On|Off)\s*\|\s*(?P<ecc>\S+)\s*\|")
_SMI_ROW2 = re.compile(
    r"^\|\s*(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>P\d+|\S+)\s+(?P<pwr>.*?)\|\s*(?P<used>\d+)MiB\s*/\s*(?P<total>\d+)MiB\s*\|\s*(?P<util>\d+%|N/A)\s+(?P<mode>.+?)\s*\|")
_SMI_PROC = re.compile(
    r"^\|\s+(?P<gpu>\d+)\s+(?:(?P<gi>\S+)\s+(?P<ci>\S+)\s+)?(?P<pid>\d+)\s+(?P<type>C\+G|C|G)\s+(?P<name>.+?)\s+(?P<mem>\d+)MiB\s*\|")


def parse_smi_table(text):
    """The default ``nvidia-smi`` summary table -> dict.

    {"driver_version", "cuda_driver_version" (None for drivers before 410.72
    that did not print it), "gpus": [{index, name, pci_bus_id, ecc_uncorrected,
    memory_used_mib, memory_total_mib, utilization_pct, compute_mode}],
    "processes": [{gpu, pid, type, name, used_memory_mib}]}. Names are
    truncated by nvidia-smi itself ("Tesla V100-SXM2...") -- use the CSV query
    for exact names. Raises ValueError when the header line is missing.
    """
    m = _SMI_HEADER.search(text)
    if not m:
        raise ValueError("no 'NVIDIA-SMI ... Driver Version:' header in nvidia-smi output")
    cuda = m.group("cuda")
    out = {"driver_version": m.group("driver"),
           "cuda_driver_version": cuda if cuda and cuda != "N/A" else None,
           "gpus": [], "processes": []}
    lines = text.splitlines()
    in_procs = False
    for i, line in enumerate(lines):
        if "Processes:" in line:
            in_procs = True
            continue
        if in_procs:
            p = _SMI_PROC.match(line)
            if p:
                out["processes"].append({
                    "gpu": int(p.group("gpu")), "pid": int(p.group("pid")), "type": p.group("type"),
                    "name": p.group("name").strip(), "used_memory_mib": int(p.group("mem"))})
            continue
        r1 = _SMI_ROW1.match(line)
        if not r1:
            continue
        gpu = {"index": int(r1.group("index")), "name": r1.group("name").strip(),
               "pci_bus_id": r1.group("bus"), "ecc_uncorrected": _smi_value(r1.group("ecc"))}
        r2 = _SMI_ROW2.match(lines[i + 1]) if i + 1 < len(lines) else None
        if r2:
            util = r2.group("util")
            gpu.update({
                "memory_used_mib": int(r2.group("used")), "memory_total_mib": int(r2.group("total")),
                "utilization_pct": int(util[:-1]) if util.endswith("%") else None,
                "compute_mode": r2.group("mode").strip()})
        out["gpus"].append(gpu)
    return out


def parse_pmon(text):
    """``nvidia-smi pmon -c N`` -> [{gpu, pid, type, sm_pct, mem_pct, command}] (None for '-')."""
    rows = []
    header = None
    for line in text.splitlines():
        if line.startswith("#"):
            if header is None:
                header = line.lstrip("#").split()
            continue
        cells = line.split()
        if not cells or header is None or len(cells) < 4:
            continue
        rec = dict(zip(header, cells))
        pid = _int(rec.get("pid"))
        if pid is None:
            continue
        rows.append({"gpu": _int(rec.get("gpu")), "pid": pid, "type": rec.get("type"),
                     "sm_pct": _int(rec.get("sm")), "mem_pct": _int(rec.get("mem")),
                     "command": rec.get("command")})
    return rows


# --------------------------------------------------------------------------
# host and scheduler


def collect_host():
    return {
        "hostname": guarded(socket.gethostname),
        "os": platform.system(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "user": os.environ.get("USER") or guarded(lambda: __import__("getpass").getuser()),
    }


def _count_gpu_spec(spec):
    """'2' / 'a100:2' / 'gpu:a100:2' / 'gres/gpu:1' / 'gres:gpu:2,...' -> int or None."""
    total = None
    for part in str(spec).split(","):
        part = part.strip()
        if not part:
            continue
        if "gpu" not in part and not re.fullmatch(r"[\w-]*:?\d+", part):
            continue
        m = re.search(r"(?:^|:)(\d+)$", part)
        if m:
            total = (total or 0) + int(m.group(1))
        elif re.search(r"gpu(?::[\w-]+)?$", part):
            total = (total or 0) + 1      # "gpu" alone means one
    return total


def _count_id_list(ids):
    """'0,1' -> 2; '0-3' -> 4; '' -> 0."""
    n = 0
    for part in str(ids).split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, _, b = part.partition("-")
            if a.isdigit() and b.isdigit():
                n += int(b) - int(a) + 1
                continue
        n += 1
    return n


def visible_device_count(cvd):
    """How many GPUs CUDA_VISIBLE_DEVICES lets a CUDA program see; None when unset."""
    if cvd is None:
        return None
    cvd = cvd.strip()
    if cvd in ("", "NoDevFiles", "none", "void"):
        return 0
    n = 0
    for item in cvd.split(","):
        item = item.strip()
        # CUDA stops at the first invalid entry; -1 hides everything after it
        if not item or item.startswith("-"):
            break
        n += 1
    return n


# Which batch system runs this job, from the variables each one exports to its jobs
# (first match wins: a Flux instance started inside a Slurm job is a Flux job).
_SCHEDULER_JOB_VARS = (("flux", "FLUX_JOB_ID"), ("slurm", "SLURM_JOB_ID"), ("slurm", "SLURM_JOBID"),
                       ("pbs", "PBS_JOBID"), ("lsf", "LSB_JOBID"))


def _visible_gpus_fallback(kind, cvd):
    """(count, source) from CUDA_VISIBLE_DEVICES where the scheduler exports no GPU
    count: PBS Pro's cgroup hook, LSF's -gpu and Flux's -g set it to the GPUs
    the job was given on this node. An unset or empty value proves nothing (a
    site without the hook), so it gives (None, None)."""
    n = visible_device_count(cvd)
    if n:
        return n, "CUDA_VISIBLE_DEVICES (set by %s for the GPUs this job got on this node)" % kind
    return None, None


def collect_scheduler(env):
    kind, job_id = None, None
    for name, var in _SCHEDULER_JOB_VARS:
        if env.get(var):
            kind, job_id = name, env[var]
            break
    # Grid Engine's JOB_ID is too generic a name alone: its jobs also carry SGE_O_WORKDIR
    if kind is None and env.get("JOB_ID") and (env.get("SGE_O_WORKDIR") or env.get("SGE_TASK_ID")):
        kind, job_id = "sge", env["JOB_ID"]
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    gpu_env = {k: v for k, v in sorted(env.items())
               if k.startswith(("SLURM_", "PBS_", "SBATCH_", "LSB_", "FLUX_", "SGE_"))
               and re.search(r"GPU|GRES|TRES", k)}
    facts = {
        "kind": kind,
        "in_job": bool(kind),
        "job_id": job_id,
        "job_name": env.get("SLURM_JOB_NAME") or env.get("PBS_JOBNAME") or env.get("LSB_JOBNAME")
        or (env.get("JOB_NAME") if kind == "sge" else None),
        "partition": env.get("SLURM_JOB_PARTITION") or env.get("PBS_QUEUE") or env.get("LSB_QUEUE")
        or (env.get("QUEUE") if kind == "sge" else None),
        "nodelist": env.get("SLURM_JOB_NODELIST") or env.get("PBS_NODEFILE") or env.get("LSB_DJOB_HOSTFILE")
        or env.get("LSB_HOSTS") or (env.get("PE_HOSTFILE") if kind == "sge" else None),
        "step_id": env.get("SLURM_STEP_ID"),
        "cpus_on_node": _int(env.get("SLURM_CPUS_ON_NODE") or env.get("NCPUS") or env.get("LSB_DJOB_NUMPROC")
                             or (env.get("NSLOTS") if kind == "sge" else None)),
        "gpu_env": gpu_env,
        "job_gpus": env.get("SLURM_JOB_GPUS") or env.get("SLURM_STEP_GPUS"),
        "gres": env.get("SLURM_JOB_GRES") or env.get("SLURM_GRES") or env.get("SLURM_TRES_PER_TASK")
        or env.get("SLURM_TRES_PER_NODE"),
        "cuda_visible_devices": cvd,
        "visible_device_count": visible_device_count(cvd),
    }
    requested, source = None, None
    if kind == "slurm":
        bad = None  # a variable that is set but holds no GPU count: said, not taken for "none"
        raw = env.get("SLURM_GPUS_ON_NODE")
        if raw is not None:
            n = _int(raw)
            if n is not None and n >= 0:
                requested, source = n, "SLURM_GPUS_ON_NODE"
            else:
                bad = "SLURM_GPUS_ON_NODE=%r is not a GPU count" % raw[:40]
        if requested is None:
            for name in ("SLURM_JOB_GPUS", "SLURM_STEP_GPUS"):
                if env.get(name) is not None:
                    requested, source = _count_id_list(env[name]), name
                    break
        if requested is None:
            for name in ("SLURM_GPUS", "SLURM_GPUS_PER_NODE", "SLURM_GPUS_PER_TASK", "SLURM_TRES_PER_TASK",
                         "SLURM_TRES_PER_NODE", "SLURM_JOB_GRES", "SLURM_GRES"):
                if env.get(name):
                    n = _count_gpu_spec(env[name])
                    if n is not None:
                        requested, source = n, name
                        break
        if requested is None and bad:
            requested = unknown(bad + " (a wrapper or a site script overwrote it?); see `scontrol show job $SLURM_JOB_ID`")
        elif requested is None:
            requested, source = 0, "no Slurm GPU variable (SLURM_GPUS_ON_NODE, SLURM_JOB_GPUS, SLURM_GPUS...) is set"
    elif kind == "pbs":
        gpufile = env.get("PBS_GPUFILE")
        ngpus = _int(env.get("NGPUS") or env.get("PBS_NGPUS"))
        if ngpus is not None:
            requested, source = ngpus, "NGPUS"
        elif gpufile:
            requested = guarded(lambda: len([x for x in read_text(gpufile).splitlines() if x.strip()]))
            source = "PBS_GPUFILE"
        else:
            requested, source = _visible_gpus_fallback("the PBS cgroup hook", cvd)
            if requested is None:
                requested = unknown("PBS does not export the GPU request here (no NGPUS, PBS_GPUFILE or "
                                    "CUDA_VISIBLE_DEVICES); see `qstat -f $PBS_JOBID | grep ngpus`")
    elif kind == "sge":
        requested, source = _visible_gpus_fallback("Grid Engine's GPU complex", cvd)
        if requested is None:
            requested = unknown("Grid Engine exports no GPU count and CUDA_VISIBLE_DEVICES is not set; "
                                "see `qstat -j $JOB_ID` (the site's gpu complex, e.g. -l gpu=1)")
    elif kind in ("lsf", "flux"):
        requested, source = _visible_gpus_fallback("LSF (-gpu)" if kind == "lsf" else "Flux (-g)", cvd)
        if requested is None:
            requested = unknown(
                "LSF exports no GPU count and CUDA_VISIBLE_DEVICES is not set; see `bjobs -l $LSB_JOBID`"
                if kind == "lsf" else
                "Flux exports no GPU count and CUDA_VISIBLE_DEVICES is not set; see `flux job info $FLUX_JOB_ID R`")
    else:
        requested = unknown("not inside a Slurm, PBS, LSF, Grid Engine or Flux job "
                            "(no SLURM_JOB_ID / PBS_JOBID / LSB_JOBID / JOB_ID with SGE_O_WORKDIR / FLUX_JOB_ID)")
    facts["gpus_requested"] = requested
    facts["gpus_requested_source"] = source
    return facts


# --------------------------------------------------------------------------
# GPUs: device nodes, kernel driver, NVML, nvidia-smi


def collect_gpu_basics():
    nodes = []
    try:
        nodes = sorted(n for n in os.listdir("/dev") if re.fullmatch(r"nvidia\d+", n))
    except OSError:
        pass
    facts = {
        "device_nodes": ["/dev/" + n for n in nodes],
        "driver_loaded": os.path.exists("/proc/driver/nvidia/version"),
        "kernel_driver_version": None,
        "nvidia_smi": shutil.which("nvidia-smi"),
    }
    if facts["driver_loaded"]:
        text = guarded(read_text, "/proc/driver/nvidia/version")
        if is_unknown(text):
            facts["kernel_driver_version"] = text
        else:
            m = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
            facts["kernel_driver_version"] = m.group(1) if m else unknown("unrecognised /proc/driver/nvidia/version")
    return facts


def _s(value):
    return value.decode() if isinstance(value, bytes) else value


def _nvml_collect():
    import pynvml  # only when importable; nvidia-ml-py provides it

    pynvml.nvmlInit()
    try:
        def opt(fn, *a):
            try:
                return fn(*a)
            except Exception as exc:
                return unknown(_err(exc))

        out = {"driver_version": opt(lambda: _s(pynvml.nvmlSystemGetDriverVersion()))}
        cv = opt(pynvml.nvmlSystemGetCudaDriverVersion)
        out["cuda_driver_version"] = cv if is_unknown(cv) else "%d.%d" % (cv // 1000, (cv % 1000) // 10)
        count = pynvml.nvmlDeviceGetCount()
        devices = []
        for i in range(count):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            mem = opt(pynvml.nvmlDeviceGetMemoryInfo, h)
            util = opt(pynvml.nvmlDeviceGetUtilizationRates, h)
            cc = opt(pynvml.nvmlDeviceGetCudaComputeCapability, h)
            ecc = opt(pynvml.nvmlDeviceGetTotalEccErrors, h, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                      pynvml.NVML_VOLATILE_ECC)
            procs = opt(pynvml.nvmlDeviceGetComputeRunningProcesses, h)
            if not is_unknown(procs):
                procs = [{"pid": int(p.pid),
                          "name": opt(lambda pid=p.pid: _s(pynvml.nvmlSystemGetProcessName(pid))),
                          "used_memory_mib": (int(p.usedGpuMemory) // 1048576
                                              if isinstance(p.usedGpuMemory, int) else None)}
                         for p in procs]
            devices.append({
                "index": i,
                "name": opt(lambda: _s(pynvml.nvmlDeviceGetName(h))),
                "uuid": opt(lambda: _s(pynvml.nvmlDeviceGetUUID(h))),
                "pci_bus_id": opt(lambda: _s(pynvml.nvmlDeviceGetPciInfo(h).busId)),
                "memory_total_mib": mem if is_unknown(mem) else int(mem.total) // 1048576,
                "memory_used_mib": mem if is_unknown(mem) else int(mem.used) // 1048576,
                "utilization_pct": util if is_unknown(util) else int(util.gpu),
                "memory_utilization_pct": util if is_unknown(util) else int(util.memory),
                "compute_capability": cc if is_unknown(cc) else "%d.%d" % tuple(cc),
                "temperature_c": opt(pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU),
                "ecc_uncorrected_volatile": ecc,
                "processes": procs,
            })
        out["count"] = count
        out["devices"] = devices
        return out
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def collect_nvml(timeout):
    """NVML facts or unknown(reason). pynvml import and every call time-limited."""
    try:
        return call_with_timeout(_nvml_collect, timeout)
    except ImportError as exc:
        return unknown("pynvml is not importable in this Python (%s); install nvidia-ml-py" % _err(exc))
    except ProbeTimeout as exc:
        return unknown("NVML %s (driver hung?)" % exc)
    except Exception as exc:
        return unknown(_err(exc))


SMI_FIELDS = ("index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,utilization.gpu,"
              "utilization.memory,temperature.gpu,compute_cap,ecc.errors.uncorrected.volatile.total")


def collect_smi(smi, timeout):
    """The same facts as NVML from nvidia-smi (CSV query plus the table header for the CUDA version)."""
    if not smi:
        return unknown("nvidia-smi not found on PATH")
    try:
        rc, out, err = run_cmd([smi, "--query-gpu=" + SMI_FIELDS, "--format=csv"], timeout)
        if rc != 0 and "compute_cap" in (out + err):
            # drivers before 510 do not know compute_cap; ask without it
            rc, out, err = run_cmd([smi, "--query-gpu=" + SMI_FIELDS.replace(",compute_cap", ""), "--format=csv"], timeout)
        if rc != 0:
            return unknown("nvidia-smi exit %d: %s" % (rc, excerpt(err or out, 300)))
        rows = parse_smi_csv(out)
        rc2, table, err2 = run_cmd([smi], timeout)
        summary = parse_smi_table(table) if rc2 == 0 else {}
    except ProbeTimeout as exc:
        return unknown(str(exc))
    except Exception as exc:
        return unknown("nvidia-smi: %s" % _err(exc))
    procs = summary.get("processes", [])
    devices = []
    for r in rows:
        idx = r.get("index")
        cc = r.get("compute_cap")
        devices.append({
            "index": idx,
            "name": r.get("name"),
            "uuid": r.get("uuid"),
            "pci_bus_id": r.get("pci.bus_id"),
            "memory_total_mib": r.get("memory.total"),
            "memory_used_mib": r.get("memory.used"),
            "utilization_pct": r.get("utilization.gpu"),
            "memory_utilization_pct": r.get("utilization.memory"),
            "compute_capability": (str(cc) if cc is not None else unknown("this driver's nvidia-smi has no compute_cap")),
            "temperature_c": r.get("temperature.gpu"),
            "ecc_uncorrected_volatile": r.get("ecc.errors.uncorrected.volatile.total"),
            "processes": [{"pid": p["pid"], "name": p["name"], "used_memory_mib": p["used_memory_mib"]}
                          for p in procs if p["gpu"] == idx and "C" in p["type"]],
        })
    return {
        "driver_version": rows[0].get("driver_version") if rows else summary.get("driver_version"),
        "cuda_driver_version": summary.get("cuda_driver_version") or unknown("nvidia-smi did not print a CUDA Version"),
        "count": len(devices),
        "devices": devices,
    }


def collect_xid(timeout):
    """Recent 'NVRM: Xid' kernel messages, where the kernel log is readable."""
    dmesg = shutil.which("dmesg")
    if not dmesg:
        return unknown("dmesg not found")
    try:
        rc, out, err = run_cmd([dmesg], timeout)
    except Exception as exc:
        return unknown(_err(exc))
    if rc != 0:
        return unknown("dmesg: %s" % (excerpt(err, 200) or "exit %d" % rc))
    return [ln.strip() for ln in out.splitlines() if "NVRM: Xid" in ln][-20:]


# --------------------------------------------------------------------------
# frameworks, each in a child process of the user's Python

TORCH_CHILD = r"""
import json, sys, time, warnings
t0 = time.time()
r = {}
try:
    import torch
except Exception as e:
    print(%(mark)r + json.dumps({"import_error": "%%s: %%s" %% (type(e).__name__, e)})); sys.exit(0)
r["import_s"] = round(time.time() - t0, 2)
r["version"] = torch.__version__
r["cuda_build"] = getattr(torch.version, "cuda", None)
r["hip_build"] = getattr(torch.version, "hip", None)
r["path"] = getattr(torch, "__file__", None)
def opt(key, fn):
    try:
        r[key] = fn()
    except Exception as e:
        r[key] = {"unknown": "%%s: %%s" %% (type(e).__name__, e)}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    opt("cuda_available", torch.cuda.is_available)
    opt("device_count", torch.cuda.device_count)
    opt("arch_list", torch.cuda.get_arch_list)
    opt("cudnn_version", torch.backends.cudnn.version)
    devs = []
    if r.get("cuda_available") is True:
        for i in range(r["device_count"]):
            d = {"index": i}
            try:
                d["name"] = torch.cuda.get_device_name(i)
                d["capability"] = "%%d.%%d" %% torch.cuda.get_device_capability(i)
            except Exception as e:
                d["error"] = "%%s: %%s" %% (type(e).__name__, e)
            devs.append(d)
    r["devices"] = devs
r["warnings"] = [str(w.message)[:500] for w in caught]
print(%(mark)r + json.dumps(r))
""" % {"mark": MARK}

TF_CHILD = r"""
import json, os, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
t0 = time.time()
r = {}
try:
    import tensorflow as tf
except Exception as e:
    print(%(mark)r + json.dumps({"import_error": "%%s: %%s" %% (type(e).__name__, e)})); sys.exit(0)
r["import_s"] = round(time.time() - t0, 2)
r["version"] = tf.__version__
def opt(key, fn):
    try:
        r[key] = fn()
    except Exception as e:
        r[key] = {"unknown": "%%s: %%s" %% (type(e).__name__, e)}
opt("built_with_cuda", tf.test.is_built_with_cuda)
opt("cuda_build", lambda: tf.sysconfig.get_build_info().get("cuda_version"))
opt("gpus", lambda: [d.name for d in tf.config.list_physical_devices("GPU")])
print(%(mark)r + json.dumps(r))
""" % {"mark": MARK}

CUPY_CHILD = r"""
import json, sys, time
t0 = time.time()
r = {}
try:
    import cupy
except Exception as e:
    print(%(mark)r + json.dumps({"import_error": "%%s: %%s" %% (type(e).__name__, e)})); sys.exit(0)
r["import_s"] = round(time.time() - t0, 2)
r["version"] = cupy.__version__
def opt(key, fn):
    try:
        r[key] = fn()
    except Exception as e:
        r[key] = {"unknown": "%%s: %%s" %% (type(e).__name__, e)}
opt("cuda_runtime", lambda: "%%d.%%d" %% divmod(cupy.cuda.runtime.runtimeGetVersion() // 10, 100))
opt("device_count", cupy.cuda.runtime.getDeviceCount)
print(%(mark)r + json.dumps(r))
""" % {"mark": MARK}

FRAMEWORKS = (("torch", "torch", TORCH_CHILD), ("tensorflow", "tensorflow", TF_CHILD), ("cupy", "cupy", CUPY_CHILD))


class FrameworkRun:
    """A framework child process started now and collected later."""

    def __init__(self, key, module, code, python, started_deadline):
        self.key, self.module = key, module
        self.proc = None
        self.result = None
        self.t0 = time.time()
        self.deadline = started_deadline
        try:
            self.proc = subprocess.Popen(
                [python, "-c", code], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True)
        except Exception as exc:
            self.result = unknown("could not start %s: %s" % (python, _err(exc)))

    def collect(self):
        if self.result is not None:
            return self.result
        wait = max(0.05, self.deadline - time.time())
        try:
            out, err = self.proc.communicate(timeout=wait)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                self.proc.communicate(timeout=0.3)
            except Exception:
                pass
            self.result = unknown("importing %s did not finish within %.1f s (slow file system or hung driver?); "
                                  "run again with --timeout 60" % (self.module, time.time() - self.t0))
            return self.result
        text = out.decode("utf-8", "replace")
        for line in reversed(text.splitlines()):
            if line.startswith(MARK):
                try:
                    data = json.loads(line[len(MARK):])
                except ValueError:
                    break
                if "import_error" in data:
                    self.result = {"installed": False, "import_error": data["import_error"]}
                else:
                    data["installed"] = True
                    self.result = data
                return self.result
        tail = err.decode("utf-8", "replace").strip().splitlines()[-3:]
        self.result = unknown("the %s check exited with %s without a result: %s"
                              % (self.module, self.proc.returncode, " | ".join(tail)[:400]))
        return self.result


def start_frameworks(python, deadline, only=None):
    """Start one child per framework that is installed (import spec found)."""
    runs = {}
    same_python = os.path.realpath(python) == os.path.realpath(sys.executable)
    for key, module, code in FRAMEWORKS:
        if only and key not in only:
            continue
        if same_python:
            try:
                import importlib.util
                spec = importlib.util.find_spec(module)
            except Exception:
                spec = None
            if spec is None:
                runs[key] = {"installed": False, "import_error": "No module named '%s' in %s" % (module, python)}
                continue
        runs[key] = FrameworkRun(key, module, code, python, deadline)
    return runs


# --------------------------------------------------------------------------
# environment and node resources


def detect_container(env):
    if env.get("APPTAINER_CONTAINER") or env.get("APPTAINER_NAME"):
        return "apptainer"
    if env.get("SINGULARITY_CONTAINER") or env.get("SINGULARITY_NAME") or os.path.isdir("/.singularity.d"):
        return "singularity"
    if env.get("ENROOT_ROOTFS") or env.get("NVIDIA_CONTAINER_RUNTIME_PATH") and os.path.exists("/etc/enroot"):
        return "enroot"
    if os.path.exists("/run/.containerenv"):
        return "podman"
    if os.path.exists("/.dockerenv"):
        return "docker"
    try:
        cg = read_text("/proc/1/cgroup", 65536)
        if "kubepods" in cg:
            return "kubernetes"
        if "docker" in cg or "containerd" in cg:
            return "docker"
    except OSError:
        pass
    return None


def collect_env(env, gpu_basics):
    runtime = detect_container(env)
    ldp = [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p]
    if runtime is None:
        passed = None
    else:
        passed = bool(gpu_basics["device_nodes"])
    modules = [m for m in env.get("LOADEDMODULES", "").split(":") if m]
    if env.get("LMOD_CMD") or env.get("LMOD_VERSION"):
        module_system = "lmod"
    elif env.get("MODULESHOME") or env.get("MODULES_CMD"):
        module_system = "environment-modules"
    else:
        module_system = None
    in_venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
    return {
        "container": {
            "runtime": runtime,
            "gpus_passed": passed,
            "nvidia_visible_devices": env.get("NVIDIA_VISIBLE_DEVICES"),
        },
        "module_system": module_system,
        "modules": modules,
        "conda": {"env": env.get("CONDA_DEFAULT_ENV"), "prefix": env.get("CONDA_PREFIX")},
        "venv": env.get("VIRTUAL_ENV") or (sys.prefix if in_venv else None),
        "python": {"executable": sys.executable, "version": platform.python_version()},
        "cuda_home": env.get("CUDA_HOME") or env.get("CUDA_PATH"),
        "nvcc": shutil.which("nvcc"),
        "ld_library_path": ldp,
        "ld_library_path_missing": [p for p in ldp if not os.path.isdir(p)],
    }


def _fs_type(path, mounts):
    best, fstype = "", None
    for mnt, typ in mounts:
        if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
            best, fstype = mnt, typ
    return fstype


def _read_mounts():
    out = []
    try:
        for line in read_text("/proc/mounts").splitlines():
            parts = line.split()
            if len(parts) >= 3:
                out.append((parts[1].replace("\\040", " "), parts[2]))
    except OSError:
        pass
    return out


def disk_facts(path, mounts, timeout):
    if not path:
        return unknown("path not set")
    try:
        path = os.path.realpath(path)
        st = os.statvfs(path)
    except OSError as exc:
        return unknown(_err(exc))
    fstype = _fs_type(path, mounts)
    facts = {
        "path": path,
        "fs_type": fstype,
        "total_gib": round(st.f_blocks * st.f_frsize / 2 ** 30, 2),
        "free_gib": round(st.f_bavail * st.f_frsize / 2 ** 30, 2),
        "free_inodes": st.f_favail if st.f_files else None,
    }
    user = os.environ.get("USER")
    if fstype == "lustre" and shutil.which("lfs") and user:
        cmd = ["lfs", "quota", "-q", "-u", user, path]
    elif shutil.which("quota"):
        cmd = ["quota", "-w", "-s"]
    else:
        cmd = None
    if cmd is None:
        facts["quota"] = unknown("no quota tool here (quota/lfs not found)")
    else:
        try:
            rc, out, err = run_cmd(cmd, timeout)
            text = (out or err).strip()
            facts["quota"] = text[:1000] if rc == 0 else unknown("%s exit %d: %s" % (cmd[0], rc, text[:200]))
        except Exception as exc:
            facts["quota"] = unknown(_err(exc))
    return facts


def collect_cpu():
    facts = {"logical_cpus": os.cpu_count()}
    try:
        facts["allowed_cpus"] = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        facts["allowed_cpus"] = unknown("sched_getaffinity not available")
    try:
        info = read_text("/proc/cpuinfo", 1 << 18)
        model = re.search(r"^model name\s*:\s*(.+)$", info, re.M)
        flags = re.search(r"^(?:flags|Features)\s*:\s*(.+)$", info, re.M)
        facts["model"] = model.group(1).strip() if model else platform.processor() or None
        have = set(flags.group(1).split()) if flags else set()
        facts["flags"] = {f: (f in have) for f in ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile")}
    except OSError as exc:
        facts["model"] = unknown(_err(exc))
        facts["flags"] = unknown(_err(exc))
    return facts


def collect_memory():
    facts = {}
    try:
        info = read_text("/proc/meminfo")
        for key, name in (("MemTotal", "total_gib"), ("MemAvailable", "available_gib")):
            m = re.search(r"^%s:\s+(\d+) kB" % key, info, re.M)
            facts[name] = round(int(m.group(1)) / 2 ** 20, 2) if m else None
    except OSError as exc:
        facts["total_gib"] = facts["available_gib"] = unknown(_err(exc))
    limit = unknown("no cgroup memory limit file found")
    try:
        for line in read_text("/proc/self/cgroup").splitlines():
            hier, _, rest = line.partition(":")
            ctrl, _, cgpath = rest.partition(":")
            if ctrl == "":          # cgroup v2
                f = "/sys/fs/cgroup%s/memory.max" % cgpath
            elif "memory" in ctrl.split(","):
                f = "/sys/fs/cgroup/memory%s/memory.limit_in_bytes" % cgpath
            else:
                continue
            if os.path.exists(f):
                raw = read_text(f).strip()
                limit = None if raw in ("max",) or int(raw) >= 2 ** 60 else round(int(raw) / 2 ** 30, 2)
                break
    except (OSError, ValueError) as exc:
        limit = unknown(_err(exc))
    facts["cgroup_limit_gib"] = limit
    return facts


def collect_resources(env, timeout):
    mounts = _read_mounts()
    try:
        st = os.statvfs("/dev/shm")
        shm = {"total_mib": st.f_blocks * st.f_frsize // 2 ** 20, "free_mib": st.f_bavail * st.f_frsize // 2 ** 20}
    except OSError as exc:
        shm = unknown(_err(exc))
    return {
        "shm": shm,
        "workdir": disk_facts(os.getcwd(), mounts, timeout),
        "home": disk_facts(env.get("HOME"), mounts, timeout),
        "cpu": collect_cpu(),
        "memory": collect_memory(),
    }


# --------------------------------------------------------------------------
# sampling: GPU utilisation over time


def _nvml_sampler():
    import pynvml
    pynvml.nvmlInit()
    handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]

    def read(pid, last_ts):
        rows = []
        for i, h in enumerate(handles):
            u = pynvml.nvmlDeviceGetUtilizationRates(h)
            m = pynvml.nvmlDeviceGetMemoryInfo(h)
            row = {"index": i, "util": int(u.gpu), "mem_used_mib": int(m.used) // 1048576,
                   "mem_total_mib": int(m.total) // 1048576}
            if pid is not None:
                procs = {int(p.pid): p for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)}
                row["pid_present"] = pid in procs
                if pid in procs and isinstance(procs[pid].usedGpuMemory, int):
                    row["pid_mem_mib"] = int(procs[pid].usedGpuMemory) // 1048576
                try:
                    samples = pynvml.nvmlDeviceGetProcessUtilization(h, last_ts.get(i, 0))
                    mine = [s for s in samples if int(s.pid) == pid]
                    if samples:
                        last_ts[i] = max(int(s.timeStamp) for s in samples)
                    row["pid_util"] = max((int(s.smUtil) for s in mine), default=0)
                except Exception:
                    pass
            rows.append(row)
        return rows

    return read, pynvml.nvmlShutdown


def _smi_sampler(smi, timeout):
    def read(pid, last_ts):
        rc, out, err = run_cmd([smi, "--query-gpu=index,utilization.gpu,memory.used,memory.total", "--format=csv"],
                               timeout)
        if rc != 0:
            raise RuntimeError(excerpt(err or out, 200))
        rows = [{"index": r["index"], "util": r["utilization.gpu"], "mem_used_mib": r["memory.used"],
                 "mem_total_mib": r["memory.total"]} for r in parse_smi_csv(out)]
        if pid is not None:
            rc, out, _ = run_cmd([smi, "pmon", "-c", "1"], timeout)
            pm = [p for p in parse_pmon(out) if p["pid"] == pid] if rc == 0 else []
            for row in rows:
                mine = [p for p in pm if p["gpu"] == row["index"]]
                row["pid_present"] = bool(mine)
                row["pid_util"] = max((p["sm_pct"] or 0 for p in mine), default=0)
        return rows

    return read, lambda: None


def sample_gpus(seconds, interval, pid, smi, timeout):
    """Utilisation and memory of each GPU over `seconds` (or of one PID's share)."""
    try:
        read, close = call_with_timeout(_nvml_sampler, timeout)
        source = "nvml"
    except Exception as exc:
        if not smi:
            return unknown("cannot sample: NVML unavailable (%s) and nvidia-smi not found" % _err(exc))
        read, close, source = _smi_sampler(smi, timeout)[0], _smi_sampler(smi, timeout)[1], "nvidia-smi"
    series = {}
    n = 0
    last_ts = {}
    end = time.time() + seconds
    error = None
    try:
        while True:
            t = time.time()
            try:
                rows = call_with_timeout(read, timeout, pid, last_ts)
            except Exception as exc:
                error = _err(exc)
                break
            n += 1
            for row in rows:
                series.setdefault(row["index"], []).append(row)
            if t + interval > end:
                break
            time.sleep(max(0.0, interval - (time.time() - t)))
    finally:
        try:
            call_with_timeout(close, 1.0)
        except Exception:
            pass
    if not n:
        return unknown("sampling failed: %s" % error)
    gpus = []
    for idx, rows in sorted(series.items(), key=lambda kv: (kv[0] is None, kv[0])):
        if pid is not None:
            if not any(r.get("pid_present") for r in rows):
                continue
            utils = [r.get("pid_util", 0) or 0 for r in rows]
        else:
            utils = [r["util"] or 0 for r in rows]
        idle = sum(1 for u in utils if u <= IDLE_UTIL_PCT)
        gpus.append({
            "index": idx,
            "util_mean_pct": round(sum(utils) / len(utils), 1),
            "util_max_pct": max(utils),
            "idle_fraction": round(idle / len(utils), 3),
            "memory_used_max_mib": max((r.get("pid_mem_mib") if pid is not None else r["mem_used_mib"]) or 0
                                       for r in rows),
            "memory_total_mib": rows[-1]["mem_total_mib"],
        })
    facts = {
        "seconds": seconds, "interval_s": interval, "source": source, "pid": pid, "samples": n,
        "idle_threshold_pct": IDLE_UTIL_PCT, "gpus": gpus,
        "max_idle_fraction": max((g["idle_fraction"] for g in gpus), default=None),
        "error": error,
    }
    if pid is not None and not gpus:
        facts["summary"] = "process %d was not seen on any GPU in %d samples over %g s" % (pid, n, seconds)
        facts["max_idle_fraction"] = 1.0
    else:
        facts["summary"] = "; ".join("GPU %s idle %d%% of %g s (mean %g%%)" % (
            g["index"], round(100 * g["idle_fraction"]), seconds, g["util_mean_pct"]) for g in gpus)
    return facts


# --------------------------------------------------------------------------
# derived facts: what the knowledge base asks about


def arch_supported(capability, arch_list):
    """Does a build with kernels for arch_list run on a GPU of this capability?

    sm_XY cubins run on the same major with minor >= Y; compute_XY PTX can be
    JIT-compiled for any capability >= XY.
    """
    major, minor = (int(x) for x in capability.split("."))
    for arch in arch_list:
        m = re.fullmatch(r"(sm|compute)_(\d+)(\d)[a-z]?", arch)
        if not m:
            continue
        a_major, a_minor = int(m.group(2)), int(m.group(3))
        if m.group(1) == "sm" and a_major == major and a_minor <= minor:
            return True
        if m.group(1) == "compute" and (a_major, a_minor) <= (major, minor):
            return True
    return False


def torch_wheel_hint(cuda_driver_version):
    """The newest PyTorch CUDA wheel family a driver supporting this CUDA version can run."""
    v = version_tuple(cuda_driver_version)
    if not v:
        return "cu121"
    for tag, need in (("cu128", (12, 8)), ("cu126", (12, 6)), ("cu124", (12, 4)), ("cu121", (12, 1)),
                      ("cu118", (11, 8))):
        if v[:2] >= need:
            return tag
    return "cu118"


def derive(facts):
    """Facts computed from other facts (documented in docs/probe-facts.md)."""
    torch = facts.get("torch")
    gpu = facts.get("gpu", {})
    if not isinstance(torch, dict) or is_unknown(torch) or not torch.get("installed"):
        return facts        # torch.* paths then read as "not reported": no rule about torch applies
    # architecture coverage: capabilities from torch itself, else from NVML/nvidia-smi
    caps = [d["capability"] for d in torch.get("devices") or [] if isinstance(d.get("capability"), str)]
    if not caps:
        caps = [d["compute_capability"] for d in _devices(gpu) if isinstance(d.get("compute_capability"), str)]
    arch_list = torch.get("arch_list")
    if torch.get("cuda_build") is None:
        torch["missing_archs"] = unknown("CPU-only build: no CUDA kernels at all")
        torch["arch_supported"] = unknown("CPU-only build: no CUDA kernels at all")
    elif not isinstance(arch_list, list) or not arch_list:
        torch["missing_archs"] = unknown("torch.cuda.get_arch_list() gave nothing")
        torch["arch_supported"] = unknown("torch.cuda.get_arch_list() gave nothing")
    elif not caps:
        torch["missing_archs"] = unknown("no GPU compute capability could be read")
        torch["arch_supported"] = unknown("no GPU compute capability could be read")
    else:
        missing = sorted({"sm_" + c.replace(".", "") for c in caps if not arch_supported(c, arch_list)})
        torch["missing_archs"] = missing
        torch["arch_supported"] = not missing
    # driver vs the CUDA runtime torch was built with
    build = torch.get("cuda_build")
    drv = gpu.get("cuda_driver_version")
    warned = any("too old" in w for w in torch.get("warnings") or [])
    if build is None:
        torch["driver_too_old"] = unknown("CPU-only build needs no driver")
    elif warned:
        torch["driver_too_old"] = True
    elif isinstance(drv, str) and version_tuple(drv) and version_tuple(build):
        # CUDA minor-version compatibility (11.1+): same major is enough
        torch["driver_too_old"] = version_tuple(drv)[0] < version_tuple(build)[0] or (
            version_tuple(build)[0] < 11 and version_tuple(drv)[:2] < version_tuple(build)[:2])
    else:
        torch["driver_too_old"] = unknown("the driver's CUDA version could not be read")
    return facts


# --------------------------------------------------------------------------
# the ladder


def _rung(key, status, reason, fix=None, facts=()):
    question = dict(RUNGS)[key]
    return {"id": key, "question": question, "status": status, "reason": reason, "fix": fix, "facts": list(facts)}


def _devices(gpu):
    devices = gpu.get("devices") if isinstance(gpu, dict) else None
    return [d for d in devices if isinstance(d, dict)] if isinstance(devices, list) else []


def _why(value):
    return value["unknown"] if is_unknown(value) else str(value)


def build_ladder(f):
    sched, gpu, env = f["scheduler"], f["gpu"], f["env"]
    rungs = []

    # 1. GPU node?
    nodes, driver = gpu["device_nodes"], gpu["driver_loaded"]
    if driver and nodes:
        rungs.append(_rung("gpu-node", "pass", "NVIDIA driver %s loaded; %d device node(s) (%s)"
                           % (_why(gpu["kernel_driver_version"]), len(nodes), ", ".join(nodes[:4])),
                           facts=("gpu.driver_loaded", "gpu.device_nodes")))
    elif driver and env["container"]["runtime"]:
        rungs.append(_rung("gpu-node", "fail",
                           "the host has the NVIDIA driver, but no /dev/nvidia* device was passed into this %s "
                           "container" % env["container"]["runtime"],
                           "start the container with GPUs: `apptainer exec --nv ...` / `singularity exec --nv ...` / "
                           "`docker run --gpus all ...`",
                           ("gpu.driver_loaded", "gpu.device_nodes", "env.container.runtime")))
    elif driver:
        rungs.append(_rung("gpu-node", "fail", "the NVIDIA driver is loaded but there is no /dev/nvidia[0-9] device node",
                           "the node's GPUs are missing or the driver failed to initialise them; tell your helpdesk "
                           "which node (%s)" % _why(f["host"]["hostname"]), ("gpu.driver_loaded", "gpu.device_nodes")))
    else:
        where = ("this node (not inside a job: a login node?)" if not sched["in_job"]
                 else "node %s" % _why(f["host"]["hostname"]))
        rungs.append(_rung("gpu-node", "fail",
                           "no NVIDIA driver on %s (/proc/driver/nvidia/version missing, no /dev/nvidia* devices)" % where,
                           "run on a GPU node: submit with `sbatch --partition=<gpu partition> --gres=gpu:1 job.sh` or "
                           "get an interactive one with `srun --partition=<gpu partition> --gres=gpu:1 --pty bash`",
                           ("gpu.driver_loaded", "gpu.device_nodes", "scheduler.in_job")))

    # 2. scheduler gave a GPU?
    req = sched["gpus_requested"]
    vis = sched["visible_device_count"]
    if not sched["in_job"]:
        rungs.append(_rung("gpu-allocated", "unknown", "not inside a Slurm, PBS, LSF or Flux job, so no scheduler allocation to check",
                           "run the probe inside the job: add `troubleshoot probe --json > probe-$SLURM_JOB_ID.json` "
                           "(or `python3 node_probe.py --json`) to the job script, or `srun --jobid=<id> --overlap "
                           "python3 node_probe.py` while it runs", ("scheduler.in_job",)))
    elif is_unknown(req):
        rungs.append(_rung("gpu-allocated", "unknown", req["unknown"], None, ("scheduler.gpus_requested",)))
    elif req == 0:
        rungs.append(_rung("gpu-allocated", "fail", "job %s asked for no GPU (%s)" % (sched["job_id"],
                           sched["gpus_requested_source"]),
                           "request one: `#SBATCH --gres=gpu:1` (or `--gpus=1`) on a GPU partition; PBS: "
                           "`#PBS -l select=1:ngpus=1`", ("scheduler.gpus_requested", "scheduler.in_job")))
    elif vis == 0:
        rungs.append(_rung("gpu-allocated", "fail",
                           "the job has %d GPU(s) but CUDA_VISIBLE_DEVICES=%r hides them all" % (req, sched["cuda_visible_devices"]),
                           "do not set or unset CUDA_VISIBLE_DEVICES in the job script or your shell rc files; "
                           "Slurm sets it to the GPUs you were given",
                           ("scheduler.cuda_visible_devices", "scheduler.visible_device_count", "scheduler.gpus_requested")))
    else:
        extra = "" if vis is None else "; CUDA_VISIBLE_DEVICES=%s" % sched["cuda_visible_devices"]
        rungs.append(_rung("gpu-allocated", "pass", "job %s has %d GPU(s) (%s)%s" % (
            sched["job_id"], req, sched["gpus_requested_source"], extra),
            facts=("scheduler.gpus_requested", "scheduler.cuda_visible_devices")))

    # 3. system sees it?
    if is_unknown(gpu.get("count")):
        rungs.append(_rung("system-sees-gpu", "fail", "no GPU could be listed: %s" % gpu["count"]["unknown"],
                           "check `nvidia-smi` on this node; if it fails too, the driver or the GPU is broken: report "
                           "the node name to your helpdesk" if gpu["nvidia_smi"] else
                           "install nvidia-ml-py (`pip install nvidia-ml-py`) or load the module that provides "
                           "`nvidia-smi`, then run again; on a node without the driver there is nothing to see",
                           ("gpu.count", "gpu.source")))
    elif gpu["count"] == 0:
        rungs.append(_rung("system-sees-gpu", "fail", "the driver answers but lists 0 GPUs (%s)" % gpu["source"],
                           "the GPUs are hidden by the job's cgroup or failed; check `nvidia-smi` and tell your helpdesk",
                           ("gpu.count",)))
    else:
        names = sorted({str(d.get("name")) for d in _devices(gpu) if not is_unknown(d.get("name"))})
        rungs.append(_rung("system-sees-gpu", "pass", "%s lists %d GPU(s): %s; driver %s supports CUDA %s" % (
            gpu["source"], gpu["count"], ", ".join(names), _why(gpu.get("driver_version")),
            _why(gpu.get("cuda_driver_version"))), facts=("gpu.count", "gpu.devices", "gpu.cuda_driver_version")))

    # 4. framework sees it?
    rungs.append(_framework_rung(f))

    # 5. code uses it?
    sample = f.get("sample")
    if is_unknown(sample) or sample is None:
        busy = [(d["index"], p["pid"]) for d in _devices(gpu) if isinstance(d.get("processes"), list)
                for p in d["processes"]]
        hint = ("; right now %d compute process(es) on the GPUs" % len(busy)) if busy else ""
        rungs.append(_rung("code-uses-gpu", "unknown", "%s%s" % (_why(sample) if sample else "not sampled", hint),
                           "while the job runs: `srun --jobid=<id> --overlap python3 node_probe.py --sample 30` "
                           "(add `--pid <PID>` for one process)", ("sample",)))
    elif not sample["gpus"]:
        rungs.append(_rung("code-uses-gpu", "fail", sample["summary"],
                           "the program never created a CUDA context: check that it moves the model and data to "
                           "the GPU (`model.to('cuda')`, `tensor.cuda()`) and that the framework sees the GPU (rung 4)",
                           ("sample.gpus", "sample.max_idle_fraction")))
    elif sample["max_idle_fraction"] is not None and sample["max_idle_fraction"] >= 0.9:
        rungs.append(_rung("code-uses-gpu", "fail", sample["summary"],
                           "a GPU that is idle most of the time waits for data or for the CPU: raise DataLoader "
                           "num_workers (and --cpus-per-task), use pin_memory, read data from local/scratch disk, "
                           "increase the batch size; a GPU with no process at all is not used by your code",
                           ("sample.max_idle_fraction", "sample.gpus")))
    else:
        rungs.append(_rung("code-uses-gpu", "pass", sample["summary"], facts=("sample.gpus",)))
    return rungs


def _framework_rung(f):
    torch, tf, cupy = f["torch"], f["tensorflow"], f["cupy"]
    gpu = f["gpu"]
    if isinstance(torch, dict) and torch.get("installed"):
        t = torch
        ver = t.get("version")
        if t.get("cuda_build") is None and t.get("hip_build") is None:
            hint = torch_wheel_hint(gpu.get("cuda_driver_version") if isinstance(gpu.get("cuda_driver_version"), str) else None)
            return _rung("framework-sees-gpu", "fail",
                         "PyTorch %s is a CPU-only build (torch.version.cuda is None)" % ver,
                         "install a CUDA build into this environment: `pip install --force-reinstall torch "
                         "--index-url https://download.pytorch.org/whl/%s` (or the matching conda package "
                         "`pytorch-cuda`)" % hint, ("torch.cuda_build", "torch.version"))
        if t.get("driver_too_old") is True:
            return _rung("framework-sees-gpu", "fail",
                         "PyTorch %s needs CUDA %s but the driver supports only CUDA %s" % (
                             ver, t.get("cuda_build"), _why(gpu.get("cuda_driver_version"))),
                         "install a PyTorch built for CUDA %s or older (`--index-url "
                         "https://download.pytorch.org/whl/%s`), or ask for nodes with a newer driver" % (
                             _why(gpu.get("cuda_driver_version")),
                             torch_wheel_hint(gpu.get("cuda_driver_version") if isinstance(gpu.get("cuda_driver_version"), str) else None)),
                         ("torch.driver_too_old", "torch.cuda_build", "gpu.cuda_driver_version"))
        if t.get("arch_supported") is False:
            return _rung("framework-sees-gpu", "fail",
                         "PyTorch %s has no kernels for %s (it has %s)" % (
                             ver, ", ".join(t["missing_archs"]), " ".join(t.get("arch_list") or [])),
                         "install a PyTorch build that supports this GPU (a newer CUDA build for new GPUs, an older "
                         "release for old GPUs), or use a partition whose GPUs this build supports",
                         ("torch.missing_archs", "torch.arch_list"))
        if t.get("cuda_available") is True and (t.get("device_count") or 0) > 0:
            return _rung("framework-sees-gpu", "pass", "PyTorch %s (CUDA %s) sees %d GPU(s)" % (
                ver, t.get("cuda_build"), t["device_count"]),
                facts=("torch.cuda_available", "torch.device_count"))
        warn = "; ".join(t.get("warnings") or [])
        return _rung("framework-sees-gpu", "fail",
                     "PyTorch %s (CUDA %s): torch.cuda.is_available() is %s%s" % (
                         ver, t.get("cuda_build"), _why(t.get("cuda_available")), (": " + warn[:300]) if warn else ""),
                     "fix the rungs above first (no GPU allocated or visible); if they pass, check "
                     "CUDA_VISIBLE_DEVICES and the driver messages above",
                     ("torch.cuda_available", "torch.device_count"))
    if isinstance(tf, dict) and tf.get("installed"):
        if tf.get("built_with_cuda") is False:
            return _rung("framework-sees-gpu", "fail", "TensorFlow %s is built without CUDA" % tf.get("version"),
                         "install `tensorflow[and-cuda]` (Linux) into this environment",
                         ("tensorflow.built_with_cuda",))
        gpus = tf.get("gpus")
        if isinstance(gpus, list) and gpus:
            return _rung("framework-sees-gpu", "pass", "TensorFlow %s sees %d GPU(s)" % (tf.get("version"), len(gpus)),
                         facts=("tensorflow.gpus",))
        return _rung("framework-sees-gpu", "fail", "TensorFlow %s sees no GPU (%s)" % (tf.get("version"), _why(gpus)),
                     "check that the CUDA/cuDNN libraries TensorFlow needs are installed (`pip install "
                     "tensorflow[and-cuda]`) and that the rungs above pass", ("tensorflow.gpus",))
    if isinstance(cupy, dict) and cupy.get("installed"):
        n = cupy.get("device_count")
        if isinstance(n, int) and n > 0:
            return _rung("framework-sees-gpu", "pass", "CuPy %s sees %d GPU(s)" % (cupy.get("version"), n),
                         facts=("cupy.device_count",))
        return _rung("framework-sees-gpu", "fail", "CuPy %s sees no GPU (%s)" % (cupy.get("version"), _why(n)),
                     "install the cupy-cudaXXx package matching the driver's CUDA version", ("cupy.device_count",))
    reasons = [("%s: %s" % (k, _why(v) if is_unknown(v) else v.get("import_error")))
               for k, v in (("torch", torch), ("tensorflow", tf), ("cupy", cupy)) if isinstance(v, dict)]
    timed_out = [r for r in reasons if "did not finish" in r]
    return _rung("framework-sees-gpu", "unknown",
                 ("; ".join(timed_out) if timed_out else
                  "no GPU framework (torch, tensorflow, cupy) in %s" % sys.executable),
                 "run the probe with the Python your job uses (activate its venv/conda env or `module load` it "
                 "first, or pass --python /path/to/python)" if not timed_out else "run again with --timeout 60",
                 ("torch.installed", "tensorflow.installed", "cupy.installed"))


# --------------------------------------------------------------------------
# collection


def collect(sample_seconds=0.0, pid=None, interval=1.0, timeout=DEFAULT_TIMEOUT, python=None,
            frameworks=None, env=None):
    """Every fact as one JSON-ready dict (schema SCHEMA_ID version SCHEMA_VERSION)."""
    t0 = time.time()
    env = dict(os.environ if env is None else env)
    python = python or sys.executable
    fw_deadline = t0 + max(timeout, float(sample_seconds or 0))
    runs = start_frameworks(python, fw_deadline, frameworks)

    facts = {
        "schema": SCHEMA_ID,
        "version": SCHEMA_VERSION,
        "probe": {"version": PROBE_VERSION, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t0)),
                  "python": python, "argv": sys.argv[1:], "timeout_s": timeout},
        "host": guarded(collect_host),
        "scheduler": collect_scheduler(env),
    }
    basics = collect_gpu_basics()
    nvml = collect_nvml(timeout)
    if not is_unknown(nvml):
        gpu = dict(basics, source="nvml", nvml_error=None, **nvml)
    else:
        smi = collect_smi(basics["nvidia_smi"], timeout)
        if not is_unknown(smi):
            gpu = dict(basics, source="nvidia-smi", nvml_error=nvml["unknown"], **smi)
        else:
            why = "NVML: %s; nvidia-smi: %s" % (nvml["unknown"], smi["unknown"])
            gpu = dict(basics, source=unknown(why), nvml_error=nvml["unknown"],
                       driver_version=unknown(why), cuda_driver_version=unknown(why),
                       count=unknown(why), devices=unknown(why))
    gpu["xid_errors"] = collect_xid(min(timeout, 1.0)) if basics["driver_loaded"] else []
    facts["gpu"] = gpu
    facts["env"] = guarded(collect_env, env, basics)
    facts["resources"] = guarded(collect_resources, env, min(timeout, 1.5))

    if sample_seconds and sample_seconds > 0:
        facts["sample"] = sample_gpus(float(sample_seconds), interval, pid, basics["nvidia_smi"], timeout)
    else:
        facts["sample"] = unknown("not sampled: run with --sample SECONDS (and --pid PID) while the job runs")

    for key, _, _ in FRAMEWORKS:
        run = runs.get(key)
        if run is None:
            facts[key] = unknown("not checked (--frameworks)")
        elif isinstance(run, dict):
            facts[key] = run
        else:
            facts[key] = run.collect()
    try:
        derive(facts)
    except Exception as exc:  # a bug here must not cost the user the other facts
        facts["probe"]["error"] = "derive: %s" % _err(exc)
    try:
        facts["ladder"] = build_ladder(facts)
    except Exception as exc:
        facts["probe"]["error"] = "ladder: %s" % _err(exc)
        facts["ladder"] = [_rung(k, "unknown", "the probe could not judge this (%s)" % _err(exc)) for k, _ in RUNGS]
    facts["probe"]["duration_s"] = round(time.time() - t0, 2)
    return facts


# --------------------------------------------------------------------------
# human output

_MARKS = {"pass": "PASS", "fail": "FAIL", "unknown": " ?? "}


def render(facts, color=False):
    def paint(text, code):
        return "\033[%sm%s\033[0m" % (code, text) if color else text

    colors = {"pass": "32", "fail": "31;1", "unknown": "33"}
    s = facts["scheduler"]
    host = facts["host"].get("hostname") if isinstance(facts["host"], dict) else None
    kind = {"pbs": "PBS", "lsf": "LSF"}.get(s["kind"], str(s["kind"] or "").capitalize())
    job = ("%s job %s" % (kind, s["job_id"]) + (", partition %s" % s["partition"] if s["partition"] else "")
           if s["in_job"] else "not in a batch job")
    lines = ["GPU node probe: %s (%s), Python %s" % (_why(host), job, facts["env"]["python"]["executable"]
                                                     if isinstance(facts["env"], dict) else sys.executable), ""]
    failed = False
    for n, rung in enumerate(facts["ladder"], 1):
        status = rung["status"]
        head = "%d. %-34s [%s]" % (n, rung["question"], _MARKS[status])
        if failed:
            lines.append(paint("%s  (after the first failure)" % head, "2"))
            lines.append(paint("     %s" % rung["reason"], "2"))
            continue
        lines.append(paint(head, colors[status]))
        lines.append("     %s" % rung["reason"])
        if rung["fix"] and status != "pass":
            lines.append("     Fix: %s" % rung["fix"])
        if status == "fail":
            failed = True
            lines.append("     -> fix this first; the rungs below depend on it.")
    lines.append("")
    lines.extend(_notes(facts))
    lines.append("(%.2f s; `--json` for all facts, `--sample 30` to watch GPU use)" % facts["probe"]["duration_s"])
    return "\n".join(lines)


def _notes(f):
    """Other things worth a look, whatever the ladder said."""
    out = []
    res = f.get("resources")
    if isinstance(res, dict):
        shm = res.get("shm")
        if isinstance(shm, dict) and shm.get("total_mib", 1 << 30) < SMALL_SHM_MIB:
            out.append("note: /dev/shm is only %d MiB: PyTorch DataLoader workers may crash (bus error); "
                       "containers: `--shm-size=8g`/`--ipc=host`" % shm["total_mib"])
        cpu = res.get("cpu", {})
        if isinstance(cpu.get("flags"), dict) and not cpu["flags"].get("avx2"):
            out.append("note: this CPU (%s) has no AVX2: many wheels need it (Illegal instruction)" % _why(cpu.get("model")))
    env = f.get("env")
    if isinstance(env, dict) and env.get("ld_library_path_missing"):
        out.append("note: LD_LIBRARY_PATH entries that do not exist: %s" % ", ".join(env["ld_library_path_missing"][:5]))
    gpu = f.get("gpu", {})
    if isinstance(gpu.get("xid_errors"), list) and gpu["xid_errors"]:
        out.append("note: kernel log has GPU Xid errors: %s" % gpu["xid_errors"][-1][:200])
    for d in _devices(gpu):
        ecc = d.get("ecc_uncorrected_volatile")
        if isinstance(ecc, int) and ecc > 0:
            out.append("note: GPU %s has %d uncorrected ECC errors since boot: report the node" % (d["index"], ecc))
    return out


def build_parser(prog="node_probe.py"):
    ap = argparse.ArgumentParser(
        prog=prog,
        description="Check a GPU node the way a helpdesk engineer would: GPU node? GPU allocated? "
                    "seen by the system? by the framework? used by the code?")
    ap.add_argument("--json", action="store_true", help="print all facts as JSON (docs/probe-facts.md)")
    ap.add_argument("--sample", type=float, default=0, metavar="SECONDS",
                    help="record GPU utilisation and memory for SECONDS")
    ap.add_argument("--pid", type=int, help="with --sample: watch this process only")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between samples (default 1)")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                    help="seconds to wait for each framework import / tool (default %(default)s)")
    ap.add_argument("--python", help="inspect the frameworks of this Python instead of the running one")
    ap.add_argument("-o", "--output", metavar="FILE", help="also write the JSON facts to FILE")
    return ap


def collect_from_args(args):
    return collect(sample_seconds=args.sample, pid=args.pid, interval=max(0.1, args.interval),
                   timeout=max(0.1, args.timeout), python=args.python)


def to_json(facts):
    return json.dumps(facts, indent=2, default=str)


def main(argv=None):
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.pid is not None and not args.sample:
        ap.error("--pid needs --sample SECONDS")
    facts = collect_from_args(args)
    if args.output:
        with open(args.output, "w") as fh:
            fh.write(to_json(facts) + "\n")
    if args.json:
        print(to_json(facts))
    else:
        print(render(facts, color=sys.stdout.isatty() and not os.environ.get("NO_COLOR")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
