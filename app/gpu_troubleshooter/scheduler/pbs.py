"""PBS Pro / OpenPBS / Torque: `qstat -xf JOBID` -> the same scheduler facts as Slurm's.

PBS cannot be installed from Debian, so this is tested against recorded
`qstat -xf` output from public sources (tests/fixtures/pbs/README.md).
"""
import os
import re

from .run import SchedulerError, run
from .slurm import parse_duration

JOBID = re.compile(r"^\d{1,12}(?:\[\d*\])?(?:\.[A-Za-z0-9_.-]{1,200})?$")
# qstat's line continuation: a tab (or 8 spaces in some versions) at the start of the next line
_ATTR = re.compile(r"^\s{4}([A-Za-z_][\w.]*) = (.*)$")


def valid_jobid(text):
    return bool(JOBID.match(text or ""))


def parse_qstat_f(text):
    """`qstat -f`/`-xf` output -> [{attribute: value, 'Job Id': id}] (continuation lines joined)."""
    jobs, current, last = [], None, None
    for raw in text.splitlines():
        if raw.startswith("Job Id:") or raw.startswith("Job:"):
            current = {"Job Id": raw.split(":", 1)[1].strip()}
            jobs.append(current)
            last = None
            continue
        if current is None:
            continue
        m = _ATTR.match(raw)
        if m:
            last = m.group(1)
            current[last] = m.group(2).rstrip()
        elif last and (raw.startswith("\t") or raw.startswith("        ")) and raw.strip():
            current[last] += raw.strip()
    return jobs


def parse_mem_kb(text):
    """'13378420kb' / '31gb' / '12000mb' -> MiB."""
    m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:b|w)?\s*$", (text or "").lower())
    if not m:
        return None
    factor = {"": 1 / 1048576, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1048576}[m.group(2)]
    return round(float(m.group(1)) * factor, 1)


def _exit(status_text):
    """(exit code, signal) from PBS's Exit_status: >= 256 is 256 + signal (Torque and PBS Pro); < 0 is PBS's own."""
    try:
        status = int(status_text)
    except (TypeError, ValueError):
        return None, None
    if status >= 256:
        return 0, status - 256
    if status > 128:           # the shell's 128 + signal
        return status, status - 128
    return status, 0


def _gpus(resources):
    for key in ("Resource_List.ngpus", "Resource_List.gpus"):
        if str(resources.get(key, "")).isdigit():
            return int(resources[key])
    for key in ("Resource_List.select", "Resource_List.nodes"):
        value = resources.get(key, "")
        if value:
            total = 0
            for chunk in value.split("+"):
                parts = chunk.split(":")
                count = int(parts[0]) if parts and parts[0].isdigit() else 1
                for p in parts:
                    m = re.match(r"^n?gpus=(\d+)$", p)
                    if m:
                        total += count * int(m.group(1))
            return total
    return 0


def _path(value):
    """'host.domain:/path/file' -> '/path/file'."""
    if not value:
        return None
    host, sep, path = value.partition(":")
    return path if sep and path.startswith("/") else value


def facts_from_qstat(job):
    """One parsed `qstat -xf` record -> scheduler facts (docs/probe-facts.md)."""
    unknown = lambda why: {"unknown": why}  # noqa: E731
    state_letter = job.get("job_state", "")
    status_text = job.get("Exit_status", job.get("exit_status"))
    code, sig = _exit(status_text)
    elapsed = parse_duration(job.get("resources_used.walltime", ""))
    limit = parse_duration(job.get("Resource_List.walltime", ""))
    used_mem = parse_mem_kb(job.get("resources_used.mem", ""))
    req_mem = parse_mem_kb(job.get("Resource_List.mem", ""))
    comment = job.get("comment", "")
    if state_letter in ("Q", "H", "W", "T"):
        state = "PENDING"
    elif state_letter in ("R", "E", "B"):
        state = "RUNNING"
    elif status_text is None:
        state = "COMPLETED" if state_letter in ("F", "C") else state_letter or None
    elif re.search(r"walltime \d+ exceeded limit|job killed: walltime", comment):
        state = "TIMEOUT"
    elif re.search(r"job killed: v?mem", comment):
        state = "OUT_OF_MEMORY"
    elif code == 0 and not sig:
        state = "COMPLETED"
    elif sig and elapsed is not None and limit and elapsed >= limit:
        state = "TIMEOUT"
    elif sig in (9,) and used_mem and req_mem and used_mem >= 0.95 * req_mem:
        state = "OUT_OF_MEMORY"
    elif "deleted" in comment.lower() or "terminated by" in comment.lower():
        state = "CANCELLED"
    elif code is not None and code < 0:
        state = "NODE_FAIL" if code in (-3, -20) else "FAILED"   # JOB_EXEC_RETRY / JOB_EXEC_HOOKERROR and other PBS-side failures
    else:
        state = "FAILED"
    workdir = None
    m = re.search(r"PBS_O_WORKDIR=([^,]+)", job.get("Variable_List", ""))
    if m:
        workdir = m.group(1)
    workdir = job.get("init_work_dir") or workdir or job.get("jobdir")
    exec_host = job.get("exec_host", "")
    gpus = _gpus(job)
    facts = {
        "kind": "pbs",
        "source": "qstat",
        "job_id": job.get("Job Id"),
        "job_id_raw": job.get("Job Id"),
        "job_name": job.get("Job_Name"),
        "user": (job.get("euser") or job.get("Job_Owner", "").split("@")[0]) or None,
        "state": state,
        "state_text": f"job_state {state_letter}" + (f", Exit_status {status_text}" if status_text is not None else ""),
        "reason": comment or None,
        "failed": state in ("FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "CANCELLED") or bool(code),
        "user_fault": False if state == "NODE_FAIL" else (None if state in ("RUNNING", "PENDING", "COMPLETED") else True),
        "exit_code": code if code is not None else unknown("no Exit_status (the job has not ended)"),
        "exit_signal": sig if sig is not None else unknown("no Exit_status (the job has not ended)"),
        "elapsed_s": elapsed if elapsed is not None else unknown("no resources_used.walltime"),
        "timelimit_s": limit if limit is not None else unknown("no Resource_List.walltime"),
        "gpus_requested": gpus,
        "gpus_allocated": gpus if exec_host else unknown("not started (no exec_host)"),
        "req_mem_mib": req_mem if req_mem else unknown("no Resource_List.mem"),
        "max_rss_mib": used_mem if used_mem else unknown("no resources_used.mem"),
        "nodelist": "+".join(h.split("/")[0] for h in exec_host.split("+")) if exec_host else None,
        "partition": job.get("queue"),
        "work_dir": workdir,
        "stdout": _path(job.get("Output_Path")),
        "stderr": _path(job.get("Error_Path")) if job.get("Join_Path", "n") == "n" else None,
        "steps": [],
    }
    for part, used, total in (("time_used_pct", facts["elapsed_s"], facts["timelimit_s"]),
                              ("mem_used_pct", facts["max_rss_mib"], facts["req_mem_mib"])):
        ok = isinstance(used, (int, float)) and isinstance(total, (int, float)) and total
        facts[part] = round(100.0 * used / total, 1) if ok else unknown("needs both the usage and the limit")
    facts["first_node"] = (facts["nodelist"] or "").split("+")[0]
    return facts


def output_files(sched):
    out = []
    for label in ("stdout", "stderr"):
        path = sched.get(label)
        if path and path not in [p for _, p in out]:
            out.append((label, path))
    if not out and sched.get("work_dir") and sched.get("job_name"):
        number = str(sched.get("job_id", "")).split(".")[0]
        out.append(("stdout", os.path.join(sched["work_dir"], f"{sched['job_name']}.o{number}")))
    return out


def query_job(jobid, timeout=30):
    if not valid_jobid(jobid):
        raise SchedulerError(f"'{jobid}' is not a PBS job id (like 123 or 123.server)")
    rc, out, err = run(["qstat", "-xf", jobid], timeout=timeout, check=False)
    if rc != 0 or not out.strip():
        rc2, out2, err2 = run(["qstat", "-f", jobid], timeout=timeout, check=False)   # Torque has no -x
        if rc2 != 0 or not out2.strip():
            why = (err or err2 or "").strip().splitlines()
            raise SchedulerError(f"job {jobid}: not known to PBS ({why[0] if why else 'qstat printed nothing'}); "
                                 "finished jobs are kept only job_history_duration (PBS Pro) or keep_completed (Torque)")
        out = out2
    jobs = parse_qstat_f(out)
    if not jobs:
        raise SchedulerError(f"job {jobid}: qstat's answer has no job record")
    return facts_from_qstat(jobs[0])


def epilogue_job(args, env):
    """The PBS epilogue's arguments (job id, user, group, name, session, limits, used, queue, account, exit status)
    -> scheduler facts; `qstat -xf` fills in more when it answers."""
    import grp
    import pwd
    args = list(args) + [""] * (10 - len(args))
    jobid, user, group, name = args[0] or env.get("PBS_JOBID", ""), args[1], args[2], args[3]
    record = {"Job Id": jobid, "Job_Name": name, "euser": user, "job_state": "F", "Exit_status": args[9] or None,
              "queue": args[7]}
    for chunk in args[5].split(","):
        if "=" in chunk:
            k, _, v = chunk.partition("=")
            record[f"Resource_List.{k}"] = v
    for chunk in args[6].split(","):
        if "=" in chunk:
            k, _, v = chunk.partition("=")
            record[f"resources_used.{k}"] = v
    try:
        if valid_jobid(jobid):
            rc, out, _ = run(["qstat", "-xf", jobid], timeout=5, check=False)
            jobs = parse_qstat_f(out) if rc == 0 else []
            if jobs:
                record = {**jobs[0], **{k: v for k, v in record.items() if v}}
    except SchedulerError:
        pass
    facts = facts_from_qstat(record)
    # in the epilogue the output is still in the spool (unless written directly with -k od)
    home = env.get("PBS_HOME", "/var/spool/pbs")
    spool = os.path.join(home, "spool", f"{jobid}.OU")
    if os.path.exists(spool):
        facts["stdout"] = spool
    try:
        facts["uid"] = pwd.getpwnam(user).pw_uid
        facts["gid"] = grp.getgrnam(group).gr_gid if group else pwd.getpwnam(user).pw_gid
    except (KeyError, TypeError):
        facts["uid"] = facts["gid"] = None
    return facts
