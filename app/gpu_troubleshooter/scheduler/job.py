"""`troubleshoot job JOBID`: the scheduler's record of a job joined with what its log says.

    troubleshoot job 12345                 one job (Slurm: sacct + scontrol; PBS: qstat -xf)
    troubleshoot job 12345_7 12345.0       an array task, a step
    troubleshoot job --failed --since 1d   your failed jobs of the last day
    troubleshoot job --failed --user alice --since 12h     (staff: whom Slurm lets you see)

Exit status: 0 the job ended well and its log shows no known failure,
1 a failure (scheduler state or diagnosis), 2 usage error or the job could not be looked up.
"""
import argparse
import json
import os
import re
import sys

from ..errors import TroubleshootError
from .run import SchedulerError, have

EXIT_CLEAN, EXIT_FOUND, EXIT_ERROR = 0, 1, 2
MAX_LOG_BYTES = 64 * 1024 * 1024     # a bigger output file is diagnosed from its tail


def build_parser(prog="troubleshoot job"):
    p = argparse.ArgumentParser(prog=prog, description="Diagnose a batch job from the scheduler's record of it "
                                "(state, exit code, time, memory, GPUs) and its output files.")
    p.add_argument("jobids", nargs="*", metavar="JOBID", help="Slurm job id (123, 123_4, 123.0) or PBS job id (123.server)")
    p.add_argument("--failed", action="store_true", help="diagnose every failed job in the time range (--since)")
    p.add_argument("--since", default="1d", help="with --failed: how far back (like 1d, 12h, 30m; default 1d)")
    p.add_argument("--user", help="with --failed: this user's jobs (staff; Slurm decides what you may see); 'all' for everyone")
    p.add_argument("--scheduler", choices=("auto", "slurm", "pbs"), default="auto")
    p.add_argument("--json", action="store_true", help="one JSON object per job")
    p.add_argument("--kb", action="append", default=[], metavar="DIR", help="extra knowledge-base folder")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.add_argument("--lang", default="en")
    p.add_argument("--max", type=int, default=50, help="with --failed: at most this many jobs (default 50)")
    return p


def detect_scheduler(choice, jobid=""):
    if choice != "auto":
        return choice
    if have("sacct") or have("scontrol"):
        if "." in jobid and not jobid.split(".")[-1].isdigit() and jobid.split(".")[-1] not in ("batch", "extern"):
            return "pbs" if have("qstat") else "slurm"
        return "slurm"
    if have("qstat"):
        return "pbs"
    raise SchedulerError("no scheduler commands here (neither sacct nor qstat is on PATH); "
                         "run this on a login node, or diagnose the log file itself: troubleshoot slurm-123.out")


def job_facts(jobid, scheduler="auto"):
    """{'scheduler': {...}} for one job; raises SchedulerError."""
    kind = detect_scheduler(scheduler, jobid)
    if kind == "slurm":
        from . import slurm
        return {"scheduler": slurm.query_job(jobid)}
    from . import pbs
    return {"scheduler": pbs.query_job(jobid)}


def job_output_files(sched):
    if sched.get("kind") == "pbs":
        from .pbs import output_files
    else:
        from .slurm import output_files
    return output_files(sched)


def read_log(path, limit=MAX_LOG_BYTES):
    """The text of an output file (its last ``limit`` bytes), or raise with one line."""
    from ..errors import LogInputError
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise LogInputError(f"{path}: no such file (moved or deleted, or the job never started)") from None
    except PermissionError:
        raise LogInputError(f"{path}: not readable by you (ask the job's owner, or run as staff)") from None
    except OSError as e:
        if e.errno == 40:  # ELOOP: a symlink, refused on purpose
            raise LogInputError(f"{path}: is a symbolic link; pass the real file to `troubleshoot` instead") from None
        raise LogInputError(f"{path}: cannot open: {e.strerror}") from None
    import stat
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise LogInputError(f"{path}: not a regular file")
        truncated = st.st_size > limit
        if truncated:
            f.seek(st.st_size - limit)
        data = f.read(limit)
    text = data.decode("utf-8", errors="replace")
    if truncated:
        text = text.split("\n", 1)[-1]
    return text, truncated


_ERROR_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception|Interrupt)|[\w.]*Error)\b.*|^.*\b(?:error|Error|ERROR)\b.*")


def last_error_line(text):
    """The last line that looks like an error (a Python exception first), for a log no entry explains."""
    lines = text.splitlines()[-2000:]
    for pattern in (re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)(?::.*)?$"), _ERROR_LINE):
        for line in reversed(lines):
            line = line.strip()
            if line and pattern.match(line):
                return line[:300]
    return None


def diagnose_job(jobid, kb, scheduler="auto", log_limit=MAX_LOG_BYTES):
    """(facts, [result]) for one job; a result is a dict: label, path, diagnosis (or None), note, last_error."""
    from ..engine import diagnose_text
    facts = job_facts(jobid, scheduler)
    sched = facts["scheduler"]
    results = []
    for label, path in job_output_files(sched):
        try:
            text, truncated = read_log(path, log_limit)
        except TroubleshootError as e:
            results.append({"label": label, "path": path, "diagnosis": None, "note": str(e), "last_error": None})
            continue
        note = f"only its last {log_limit // (1024 * 1024)} MiB were read" if truncated else None
        try:
            d = diagnose_text(text, kb, source=path, facts=facts)
        except TroubleshootError as e:   # an empty or binary file
            results.append({"label": label, "path": path, "diagnosis": None, "note": str(e), "last_error": None})
            continue
        results.append({"label": label, "path": path, "diagnosis": d, "note": note,
                        "last_error": None if d.findings else last_error_line(text)})
    if not any(r["diagnosis"] is not None for r in results):
        # no readable log: what the scheduler facts show on their own
        d = diagnose_text("troubleshoot job: no readable output file\n", kb, source="scheduler record", facts=facts)
        results.append({"label": "facts", "path": None, "diagnosis": d, "note": None, "last_error": None})
    return facts, results


def summary_lines(sched, style):
    from .slurm import format_duration
    out = []
    name = f" ({sched['job_name']})" if sched.get("job_name") else ""
    where = ", ".join(x for x in (f"user {sched['user']}" if sched.get("user") else "",
                                  f"partition {sched['partition']}" if sched.get("partition") else "",
                                  f"node {sched['nodelist']}" if sched.get("nodelist") else "") if x)
    out.append(style(f"Job {sched['job_id']}{name}", "bold") + (f"  {where}" if where else ""))
    state = sched.get("state") or "?"
    code, sig = sched.get("exit_code"), sched.get("exit_signal")
    exit_text = ""
    if isinstance(code, int):
        exit_text = f", exit code {code}" + (f", killed by signal {sig}" if isinstance(sig, int) and 0 < sig < 65 else "")
    colour = "green" if state in ("COMPLETED", "RUNNING", "PENDING") and not code else "red"
    reason = f"  (reason: {sched['reason']})" if sched.get("reason") not in (None, "None") else ""
    out.append(f"  State:   {style(state, colour, 'bold')}{exit_text}{reason}")
    el, lim = sched.get("elapsed_s"), sched.get("timelimit_s")
    if isinstance(el, int):
        limit = f" of {format_duration(lim)} limit" if isinstance(lim, int) else ""
        pct = f" ({sched['time_used_pct']:.0f}%)" if isinstance(sched.get("time_used_pct"), float) else ""
        out.append(f"  Time:    {format_duration(el)}{limit}{pct}")
    rss, req = sched.get("max_rss_mib"), sched.get("req_mem_mib")
    if isinstance(req, (int, float)) or isinstance(rss, (int, float)):
        used = f"{_mib(rss)} used (MaxRSS)" if isinstance(rss, (int, float)) else "peak use not recorded"
        of = (" of " if isinstance(rss, (int, float)) else "; ") + f"{_mib(req)} requested" if isinstance(req, (int, float)) else ""
        out.append(f"  Memory:  {used}{of}")
    gr, ga = sched.get("gpus_requested"), sched.get("gpus_allocated")
    if isinstance(gr, int) or isinstance(ga, int):
        gres = ", ".join(f"{k}={v}" for k, v in (sched.get("alloc_tres") or {}).items() if k.startswith("gres/gpu:")) \
            if isinstance(sched.get("alloc_tres"), dict) else ""
        text = f"{gr if isinstance(gr, int) else '?'} requested, {ga if isinstance(ga, int) else '?'} allocated" + (f" ({gres})" if gres else "")
        if ga == 0:
            text += style("  <- no GPU", "yellow")
        out.append(f"  GPUs:    {text}")
    if isinstance(sched.get("gpu_mem_max_mib"), (int, float)) or isinstance(sched.get("gpu_util_max_pct"), int):
        out.append(f"  GPU use: peak memory {_mib(sched.get('gpu_mem_max_mib'))}, peak utilisation "
                   f"{sched.get('gpu_util_max_pct') if isinstance(sched.get('gpu_util_max_pct'), int) else '?'}%")
    if sched.get("user_fault") is False:
        out.append(style(f"  {state}: the system ended this job, not your program. Resubmit it "
                         "(or use --requeue); tell the helpdesk if it happens again.", "yellow"))
    if sched.get("accounting_error"):
        out.append(f"  Note: accounting not read: {sched['accounting_error']}")
    return out


def _mib(value):
    if not isinstance(value, (int, float)):
        return "?"
    if value < 1:
        return f"{value * 1024:.0f} KiB"
    return f"{value / 1024:.1f} GiB" if value >= 1024 else f"{value:.0f} MiB"


def _render_one(jobid, facts, results, style, lang):
    from ..render import human
    lines = summary_lines(facts["scheduler"], style)
    for r in results:
        lines.append("")
        d = r["diagnosis"]
        if d is None:
            lines.append(f"  {r['label']}: {r['note']}")
            continue
        if r["note"]:
            lines.append(f"  ({r['path']}: {r['note']})")
        if not d.findings and r["path"] is None:
            continue   # no log and the facts alone show nothing: the summary says it all
        lines.append(human(d, style, lang))
        if r["last_error"]:
            lines.append(f"  The last error in this log: {style(r['last_error'], 'yellow')}")
    return "\n".join(lines)


def _json_one(jobid, facts, results, lang):
    return {"schema": 1, "job": jobid, "facts": facts,
            "files": [{"label": r["label"], "path": r["path"],
                       "error": r["note"] if r["diagnosis"] is None else None,
                       "note": r["note"] if r["diagnosis"] is not None else None,
                       "last_error": r["last_error"],
                       "diagnosis": r["diagnosis"].to_dict(lang) if r["diagnosis"] is not None else None}
                      for r in results]}


def _job_status(facts, results):
    found = any(r["diagnosis"] is not None and r["diagnosis"].findings for r in results)
    return EXIT_FOUND if found or facts["scheduler"].get("failed") else EXIT_CLEAN


def main(argv, use_colour, load_kb):
    p = build_parser()
    args = p.parse_args(argv)
    if not args.jobids and not args.failed:
        p.error("give a JOBID, or --failed [--since 1d]")
    from ..render import Style
    style = Style(use_colour(args.color, sys.stdout))
    try:
        kb = load_kb(args.kb)
        jobids = list(args.jobids)
        if args.failed:
            kind = detect_scheduler(args.scheduler)
            if kind != "slurm":
                raise SchedulerError("--failed works with Slurm only so far; give PBS job ids one by one")
            from .slurm import list_failed, parse_since
            user = None if args.user in (None, "all") else args.user
            found = list_failed(parse_since(args.since), user=user, all_users=args.user == "all")
            if not found and not jobids:
                print(f"No failed jobs in the last {args.since}" + (f" for {args.user}" if args.user else "") + ".")
                return EXIT_CLEAN
            if len(found) > args.max:
                print(f"troubleshoot job: {len(found)} failed jobs; showing the newest {args.max} (--max)", file=sys.stderr)
                found = found[-args.max:]
            jobids += found
    except TroubleshootError as e:
        print(f"troubleshoot job: {e}", file=sys.stderr)
        return EXIT_ERROR
    status = EXIT_CLEAN
    for n, jobid in enumerate(jobids):
        try:
            facts, results = diagnose_job(jobid, kb, args.scheduler)
        except TroubleshootError as e:
            print(f"troubleshoot job: {e}", file=sys.stderr)
            if args.json:
                print(json.dumps({"schema": 1, "job": jobid, "error": str(e)}))
            status = EXIT_ERROR
            continue
        if args.json:
            print(json.dumps(_json_one(jobid, facts, results, args.lang), ensure_ascii=False, default=str))
        else:
            if n:
                print("\n" + "-" * 72)
            print(_render_one(jobid, facts, results, style, args.lang))
        if status != EXIT_ERROR:
            status = max(status, _job_status(facts, results))
    return status
