"""Slurm: what sacct and `scontrol show job` say about a job, as facts.

Every command runs as an argument list through run.py (no shell), with the
caller's own rights: the tool sees what Slurm lets the caller see.

Facts (docs/probe-facts.md, "scheduler facts from the job record") are
values or {"unknown": reason}, like the probe's.
"""
import os
import re
from datetime import datetime, timedelta

from . import FAILED_STATES, NOT_USER_FAULT
from .run import SchedulerError, first_line, have, run

# sacct fields we ask for when this Slurm has them (StdOut/StdErr: 23.02+).
SACCT_FIELDS = ("JobID", "JobIDRaw", "JobName", "User", "State", "ExitCode", "DerivedExitCode", "Elapsed",
                "ElapsedRaw", "Timelimit", "TimelimitRaw", "ReqTRES", "AllocTRES", "ReqMem", "MaxRSS", "NodeList",
                "Partition", "WorkDir", "Submit", "Start", "End", "Reason", "TRESUsageInMax", "StdOut", "StdErr")
DELIM = "\x1f"   # job names and paths may hold '|'
# A job id as Slurm writes it: 123, 123_4, 123_[1-3], 123+1 (het), with an optional .step
JOBID = re.compile(r"^\d{1,12}(?:_\d{1,9}|_\[[\d,\-%]+\])?(?:\+\d{1,4})?(?:\.(?:\d{1,9}|batch|extern|interactive))?$")
# states in sacct --state codes, for --failed
FAILED_STATE_CODES = "FAILED,TIMEOUT,OUT_OF_MEMORY,NODE_FAIL,BOOT_FAIL,PREEMPTED,DEADLINE"

_fields_cache = {}
# `scontrol show job` while the epilog runs says JobState=COMPLETING; its Reason says how it ended.
_COMPLETING = {"TimeLimit": "TIMEOUT", "OutOfMemory": "OUT_OF_MEMORY", "NodeDown": "NODE_FAIL",
               "NonZeroExitCode": "FAILED", "RaisedSignal": "FAILED", "Prolog": "FAILED", "BootFail": "BOOT_FAIL",
               "Deadline": "DEADLINE"}


def valid_jobid(text):
    return bool(JOBID.match(text or ""))


def available_fields():
    """The sacct fields this Slurm knows (`sacct --helpformat`)."""
    if "fields" not in _fields_cache:
        _, out, _ = run(["sacct", "--helpformat"], timeout=15)
        _fields_cache["fields"] = set(out.split())
    return _fields_cache["fields"]


def slurm_version():
    try:
        _, out, _ = run(["sinfo", "--version"], timeout=10)
    except SchedulerError:
        return None
    m = re.search(r"(\d+\.\d+(?:\.\d+)?)", out)
    return m.group(1) if m else None


# ---- parsing helpers (pure: the tests feed them recorded text) -------------

def parse_duration(text):
    """Seconds of '[D-]HH:MM:SS', 'MM:SS', 'MM:SS.mmm'; None for UNLIMITED/empty/unparsable."""
    text = (text or "").strip()
    if not text or text.upper() in ("UNLIMITED", "PARTITION_LIMIT", "INVALID", "NONE", "N/A"):
        return None
    m = re.match(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)(?:\.\d+)?$", text)
    if not m:
        return int(text) * 60 if text.isdigit() else None   # sbatch --time=MM
    days, hours, minutes, seconds = (int(g) if g else 0 for g in m.groups())
    if m.group(2) is None and m.group(1) is not None:     # 'D-HH:MM' is not a sacct form, keep simple
        hours, minutes, seconds = minutes, seconds, 0
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def format_duration(seconds):
    if seconds is None:
        return "?"
    seconds = int(seconds)
    d, rest = divmod(seconds, 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return (f"{d}-" if d else "") + f"{h:02d}:{m:02d}:{s:02d}"


_UNITS = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024, "P": 1024 ** 3}


def parse_mem_mib(text):
    """MiB of '200M', '4000Mc', '1.50G', '123456K', '0' (Slurm's sizes are binary)."""
    text = (text or "").strip()
    m = re.match(r"^([\d.]+)([KMGTP]?)([cn]?)$", text)
    if not m:
        return None
    value = float(m.group(1)) * _UNITS.get(m.group(2) or "M", 1)
    if not m.group(2) and text.isdigit():   # a bare number: bytes in TRES usage, MiB in ReqMem ('0')
        value = float(m.group(1))
    return round(value, 1)


def parse_tres(text):
    """'cpu=1,mem=200M,gres/gpu:a100=1' -> {'cpu': '1', 'mem': '200M', 'gres/gpu:a100': '1'}."""
    out = {}
    for item in (text or "").split(","):
        if "=" in item:
            key, _, value = item.partition("=")
            out[key.strip()] = value.strip()
    return out


def gpu_count(tres):
    """GPUs in a TRES mapping: gres/gpu, else the sum of the typed gres/gpu:TYPE; 0 when there are none."""
    if "gres/gpu" in tres:
        try:
            return int(tres["gres/gpu"])
        except ValueError:
            return None
    typed = [v for k, v in tres.items() if k.startswith("gres/gpu:")]
    try:
        return sum(int(v) for v in typed)
    except ValueError:
        return None


def parse_exit(text):
    """'1:0' -> (1, 0); '0:9' -> (0, 9) (killed by signal 9)."""
    m = re.match(r"^(\d+):(\d+)$", (text or "").strip())
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def base_state(text):
    """'CANCELLED by 1000' -> 'CANCELLED'; 'OUT_OF_ME+' (truncated) -> 'OUT_OF_MEMORY'."""
    word = (text or "").split(" ")[0].strip().upper()
    for full in FAILED_STATES + ("COMPLETED", "COMPLETING", "RUNNING", "PENDING", "REQUEUED", "SUSPENDED", "RESIZING", "REVOKED"):
        if word == full or (word.endswith("+") and full.startswith(word[:-1])):
            return full
    return word or None


def parse_sacct(text, fields):
    """sacct --parsable2 --noheader output (DELIM-separated) -> list of dicts."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split(DELIM)
        if len(parts) != len(fields):
            continue
        rows.append(dict(zip(fields, parts)))
    return rows


def parse_scontrol(text):
    """`scontrol show job` output -> {key: value} (the first record).

    Paths (WorkDir, StdOut, Command, ...) may hold spaces: those keys take the
    rest of their line."""
    whole_line = ("Command", "WorkDir", "StdErr", "StdIn", "StdOut", "Comment", "AdminComment", "SystemComment",
                  "Reason", "SubmitLine")
    out = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            if out:
                break
            continue
        key = line.split("=", 1)[0]
        if key in whole_line and key not in ("Reason",):
            out[key] = line.split("=", 1)[1] if "=" in line else ""
            continue
        for token in line.split():
            if "=" in token:
                k, _, v = token.partition("=")
                out.setdefault(k, v)
    return out


# ---- output file names ------------------------------------------------------

def expand_pattern(pattern, job):
    """Expand sbatch's filename pattern (%j %x %u %A %a %N %n %t %s %%, with widths like %4a)."""
    job_id = str(job.get("job_id") or "")
    array_job, _, array_task = job_id.partition("_")
    values = {
        "j": job.get("job_id_raw") or job_id.split(".")[0],
        "J": job.get("job_id_raw") or job_id,
        "x": job.get("job_name") or "",
        "u": job.get("user") or "",
        "A": array_job if array_task else (job.get("job_id_raw") or job_id),
        "a": array_task if array_task else "4294967294",
        "N": (job.get("first_node") or ""),
        "n": "0", "t": "0", "s": "batch",
    }

    def repl(m):
        if m.group(0) == "%%":
            return "%"
        width, code = m.group(1), m.group(2)
        value = values.get(code, m.group(0))
        if width and value.isdigit():
            value = value.zfill(int(width))
        return value
    return re.sub(r"%%|%(\d*)([jJxuAaNnts])", repl, pattern)


def first_node(nodelist):
    """'gpu[01-04],cpu1' -> 'gpu01' (enough for %N)."""
    m = re.match(r"^([^\[,]+)(?:\[(\d+))?", nodelist or "")
    if not m:
        return ""
    return m.group(1) + (m.group(2) or "")


def output_files(job):
    """The job's output files: [(label, path)], StdOut first; a path may not exist."""
    found = []
    work = job.get("work_dir") or ""
    array = "_" in str(job.get("job_id") or "")
    default = "slurm-%A_%a.out" if array else "slurm-%j.out"
    for label, key in (("stdout", "stdout"), ("stderr", "stderr")):
        pattern = job.get(key)
        if not pattern or pattern in ("(null)", "/dev/null"):
            if label == "stderr":
                continue
            pattern = default
        path = expand_pattern(pattern, job)
        if not os.path.isabs(path) and work:
            path = os.path.join(work, path)
        if path not in [p for _, p in found]:
            found.append((label, path))
    return found


# ---- the job record ---------------------------------------------------------

def _unknown(reason):
    return {"unknown": reason}


def facts_from_records(rows, ctl=None, partition_gpus=None):
    """sacct rows (and `scontrol show job` fields) -> the `scheduler` facts of the job."""
    ctl = ctl or {}
    main = None
    steps = []
    for row in rows:
        jid = row.get("JobID", "")
        if "." in jid:
            steps.append(row)
        elif main is None:
            main = row
    if main is None and not ctl:
        return None
    main = main or {}
    get = lambda k, c=None: (main.get(k) or (ctl.get(c or k) if ctl else None) or "")  # noqa: E731
    state_text = get("State", "JobState")
    state = base_state(state_text)
    if state == "COMPLETING":   # an epilog runs while the job completes: the reason tells how it ended
        state = _COMPLETING.get(ctl.get("Reason") or "", None)
        if state is None:
            state = "FAILED" if parse_exit(get("ExitCode"))[0] or parse_exit(get("ExitCode"))[1] else "COMPLETED"
    exit_code, exit_signal = parse_exit(get("ExitCode"))
    derived = parse_exit(main.get("DerivedExitCode", ""))[0] if main.get("DerivedExitCode") else None
    elapsed = int(main["ElapsedRaw"]) if main.get("ElapsedRaw", "").isdigit() else parse_duration(get("Elapsed", "RunTime"))
    limit_min = main.get("TimelimitRaw", "")
    timelimit = int(limit_min) * 60 if limit_min.isdigit() else parse_duration(get("Timelimit", "TimeLimit"))
    req_tres = parse_tres(main.get("ReqTRES", ""))
    alloc_tres = parse_tres(main.get("AllocTRES", "") or (ctl.get("TRES", "") if state == "RUNNING" else ""))
    req_mem = parse_mem_mib(main.get("ReqMem", ""))
    if req_mem is not None and main.get("ReqMem", "").endswith("c"):
        ncpu = int(alloc_tres.get("cpu", 1) or 1)
        req_mem = round(req_mem * ncpu, 1)
    if "mem" in alloc_tres:
        req_mem = parse_mem_mib(alloc_tres["mem"]) or req_mem
    rss = [parse_mem_mib(s.get("MaxRSS", "")) for s in steps]
    rss = [r for r in rss if r]   # 0: the step ended before the first sample
    gpumem, gpuutil = [], []
    for s in steps:
        usage = parse_tres(s.get("TRESUsageInMax", ""))
        if "gres/gpumem" in usage:
            v = parse_mem_mib(usage["gres/gpumem"])
            if usage["gres/gpumem"].isdigit():
                v = round(int(usage["gres/gpumem"]) / 1048576, 1)
            if v is not None:
                gpumem.append(v)
        if "gres/gpuutil" in usage and usage["gres/gpuutil"].isdigit():
            gpuutil.append(int(usage["gres/gpuutil"]))
    has_acct = bool(main)
    fields = set(main)
    job_id = main.get("JobID") or ctl.get("JobId") or ""
    if ctl.get("ArrayJobId") and ctl.get("ArrayTaskId") and "_" not in job_id:
        job_id = f"{ctl['ArrayJobId']}_{ctl['ArrayTaskId']}"
    user = main.get("User") or re.sub(r"\(\d+\)$", "", ctl.get("UserId", "")) or None
    nodelist = get("NodeList")
    facts = {
        "kind": "slurm",
        "source": "+".join(s for s, ok in (("sacct", has_acct), ("scontrol", bool(ctl))) if ok),
        "job_id": job_id,
        "job_id_raw": main.get("JobIDRaw") or ctl.get("JobId") or job_id,
        "job_name": get("JobName") or None,
        "user": user,
        "state": state,
        "state_text": state_text or None,
        "reason": (ctl.get("Reason") or main.get("Reason") or None),
        "failed": state in FAILED_STATES or bool(exit_code),
        "user_fault": False if state in NOT_USER_FAULT else (None if state in ("RUNNING", "PENDING", "COMPLETED") else True),
        "exit_code": exit_code if exit_code is not None else _unknown("no ExitCode in the job record"),
        "exit_signal": exit_signal if exit_signal is not None else _unknown("no ExitCode in the job record"),
        "derived_exit_code": derived if derived is not None else _unknown("no DerivedExitCode"),
        "elapsed_s": elapsed if elapsed is not None else _unknown("no elapsed time"),
        "timelimit_s": timelimit if timelimit is not None else _unknown("no time limit (UNLIMITED or not recorded)"),
        "req_tres": req_tres if has_acct else _unknown("sacct has no record of this job"),
        "alloc_tres": alloc_tres if (alloc_tres or state not in ("PENDING",)) and (has_acct or alloc_tres) else _unknown("not allocated yet"),
        "gpus_requested": gpu_count(req_tres) if req_tres else _unknown("no ReqTRES"),
        "gpus_allocated": (gpu_count(alloc_tres) if alloc_tres else _unknown("no AllocTRES (the job never started)")),
        "req_mem_mib": req_mem if req_mem else _unknown("no memory request recorded"),
        "max_rss_mib": max(rss) if rss else _unknown("no MaxRSS recorded (job accounting gather off, or the job never ran a step)"),
        "gpu_mem_max_mib": max(gpumem) if gpumem else _unknown("the site does not record gres/gpumem (AccountingStorageTRES)"),
        "gpu_util_max_pct": max(gpuutil) if gpuutil else _unknown("the site does not record gres/gpuutil (AccountingStorageTRES)"),
        "nodelist": nodelist if nodelist and nodelist != "None assigned" else None,
        "partition": get("Partition") or None,
        "partition_gpus": partition_gpus if partition_gpus is not None else _unknown("partition not looked up"),
        "work_dir": get("WorkDir") or None,
        "stdout": ctl.get("StdOut") or (main.get("StdOut") if "StdOut" in fields else None) or None,
        "stderr": ctl.get("StdErr") or (main.get("StdErr") if "StdErr" in fields else None) or None,
        "submit_time": main.get("Submit") or ctl.get("SubmitTime") or None,
        "start_time": main.get("Start") or ctl.get("StartTime") or None,
        "end_time": main.get("End") or ctl.get("EndTime") or None,
        "steps": [{"id": s.get("JobID"), "state": base_state(s.get("State")), "exit_code": parse_exit(s.get("ExitCode"))[0],
                   "exit_signal": parse_exit(s.get("ExitCode"))[1], "max_rss_mib": parse_mem_mib(s.get("MaxRSS", ""))}
                  for s in steps],
    }
    facts["first_node"] = first_node(facts["nodelist"] or "")
    for part, total in (("time_used_pct", facts["timelimit_s"]), ("mem_used_pct", facts["req_mem_mib"])):
        used = facts["elapsed_s"] if part == "time_used_pct" else facts["max_rss_mib"]
        if isinstance(used, (int, float)) and isinstance(total, (int, float)) and total:
            facts[part] = round(100.0 * used / total, 1)
        else:
            facts[part] = _unknown("needs both the usage and the limit")
    if state == "OUT_OF_MEMORY" and not isinstance(facts["max_rss_mib"], (int, float)):
        pass  # the state alone says it; MaxRSS is often 0 for a step killed at once
    return facts


def partition_gpus(partition):
    """GPUs declared on the nodes of a partition (sinfo %G), or None when unknown."""
    if not partition or not have("sinfo"):
        return None
    try:
        _, out, _ = run(["sinfo", "-h", "-p", partition, "-o", "%D\x1f%G"], timeout=15)
    except SchedulerError:
        return None
    total = 0
    for line in out.splitlines():
        nodes, _, gres = line.partition("\x1f")
        for item in gres.split(","):
            m = re.match(r"^gpu(?::[^:(]+)?:(\d+)", item.strip())
            if m and nodes.strip().isdigit():
                total += int(m.group(1)) * int(nodes)
    return total


def query_job(jobid, timeout=30):
    """The scheduler facts of one job, or raise SchedulerError with one clear line."""
    if not valid_jobid(jobid):
        raise SchedulerError(f"'{jobid}' is not a Slurm job id (like 123, 123_4, 123+1 or 123.0)")
    main_id = jobid.split(".")[0]
    fields = [f for f in SACCT_FIELDS if f in available_fields()]
    acct_error = None
    rows = []
    try:
        _, out, _ = run(["sacct", "-P", "-n", "--delimiter", DELIM, "-j", main_id,
                         "--format", ",".join(fields)], timeout=timeout)
        rows = parse_sacct(out, fields)
    except SchedulerError as e:
        acct_error = str(e)
    if "." in jobid:  # one step asked for: keep the job's line and that step
        rows = [r for r in rows if "." not in r.get("JobID", "") or r.get("JobID") == jobid]
    ctl = {}
    if have("scontrol"):
        rc, out, err = run(["scontrol", "show", "job", main_id], timeout=timeout, check=False)
        if rc == 0:
            ctl = parse_scontrol(out)
    if not rows and not ctl:
        why = acct_error or "sacct has no record of it"
        raise SchedulerError(f"job {jobid}: not known to Slurm ({why}; the controller has forgotten it too). "
                             "Check the id, or whether it ran on another cluster (sacct -M) or more than the "
                             "accounting's retention ago.")
    partition = (rows[0].get("Partition") if rows else None) or ctl.get("Partition")
    facts = facts_from_records(rows, ctl, partition_gpus((partition or "").split(",")[0]))
    if acct_error:
        facts["accounting_error"] = acct_error
    return facts


def list_failed(since_s=86400, user=None, all_users=False, timeout=60):
    """Job ids of failed jobs (sacct -X --state ...) that ended in the last ``since_s`` seconds."""
    start = (datetime.now() - timedelta(seconds=since_s)).strftime("%Y-%m-%dT%H:%M:%S")
    end = (datetime.now() + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S")
    argv = ["sacct", "-X", "-P", "-n", "--delimiter", DELIM, "-S", start, "-E", end,
            "--state", FAILED_STATE_CODES, "--format", "JobID,State,End"]
    if all_users:
        argv.append("--allusers")
    elif user:
        if not re.match(r"^[A-Za-z0-9_.][A-Za-z0-9_.@-]{0,63}$", user):
            raise SchedulerError(f"'{user}' is not a user name")
        argv += ["--user", user]
    _, out, _ = run(argv, timeout=timeout)
    ids = []
    for line in out.splitlines():
        jid = line.split(DELIM)[0]
        if jid and valid_jobid(jid) and jid not in ids:
            ids.append(jid)
    return ids


def parse_since(text):
    """'1d', '12h', '30m', '2w' or seconds -> seconds."""
    m = re.match(r"^\s*(\d+)\s*([smhdw]?)\s*$", text or "")
    if not m:
        raise SchedulerError(f"--since '{text}': use a number with s, m, h, d or w (like 1d or 12h)")
    return int(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[m.group(2)]


__all__ = ["query_job", "list_failed", "output_files", "facts_from_records", "parse_sacct", "parse_scontrol",
           "expand_pattern", "parse_duration", "parse_mem_mib", "parse_tres", "valid_jobid", "first_line"]
