"""The epilog hook: diagnose a job that did not end well, and tell its user.

    troubleshoot epilog [--config /etc/troubleshoot/epilog.conf] [--role node|slurmctld|pbs]

Slurm (see README "The epilog"):
  * ``Epilog=`` on the compute nodes (runs as root where the job's files are):
    decides from SLURM_JOB_EXIT_CODE2 and `scontrol show job` (Reason), drops
    to the job's uid/gid, reads the tail of the job's output and writes
    ``troubleshoot-JOBID.txt`` next to it, atomically and without following
    symbolic links.
  * ``EpilogSlurmctld=`` on the controller (runs as SlurmUser, may not see the
    job's files; the only hook that runs after NODE_FAIL): decides the same
    way and posts to the web service and/or mails the user; it writes no file.
PBS: the ``epilogue`` (root, on the mother superior; arguments job id, user,
group, ..., exit status) does what the node epilog does.

It never fails the epilog: exit status 0 always, a hard time budget
(SIGALRM), everything it does logged to syslog and stderr.
"""
import argparse
import configparser
import json
import os
import shlex
import signal
import sys
import time
from dataclasses import dataclass, field

DEFAULT_CONFIG = "/etc/troubleshoot/epilog.conf"
_CHILDREN = []   # the worker, killed when the budget is spent
DEFAULT_STATES = ("FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE")


@dataclass
class Config:
    states: tuple = DEFAULT_STATES
    nonzero_exit: bool = True          # any non-zero exit code triggers it too
    budget_s: float = 10.0
    max_log_mib: int = 8                # read at most this much of the log (its tail first)
    write: bool = True                  # write troubleshoot-JOBID.txt (node / PBS roles)
    filename: str = "troubleshoot-{job_id}.txt"
    kb_dirs: tuple = ()
    post_url: str = ""                  # e.g. https://troubleshoot.example.org/api/v1/submissions
    post_token_file: str = ""
    post_roles: tuple = ("slurmctld", "pbs")
    mail_command: str = ""              # e.g. /usr/bin/mail -s {subject} {user}
    smtp_host: str = ""
    smtp_port: int = 25
    mail_from: str = "troubleshoot@localhost"
    mail_domain: str = ""               # user@domain; empty: the bare user name
    mail_roles: tuple = ("slurmctld", "pbs")
    source: str = "defaults"
    problems: list = field(default_factory=list)


def _list(text):
    return tuple(x.strip() for x in text.replace(",", " ").split() if x.strip())


def load_config(path):
    """The site's config (INI). A missing or broken file gives the defaults and a logged problem."""
    cfg = Config()
    parser = configparser.ConfigParser(interpolation=None)
    try:
        with open(path, encoding="utf-8") as f:
            parser.read_file(f)
        cfg.source = path
    except FileNotFoundError:
        return cfg
    except (OSError, configparser.Error) as e:
        cfg.problems.append(f"config {path}: {e.__class__.__name__}: {str(e).splitlines()[0]}; using the defaults")
        return cfg
    try:
        if parser.has_section("epilog"):
            s = parser["epilog"]
            cfg.states = _list(s.get("states", ",".join(cfg.states))) or cfg.states
            cfg.nonzero_exit = s.getboolean("nonzero_exit", cfg.nonzero_exit)
            cfg.budget_s = max(1.0, min(120.0, s.getfloat("budget_s", cfg.budget_s)))
            cfg.max_log_mib = max(1, min(256, s.getint("max_log_mib", cfg.max_log_mib)))
            cfg.write = s.getboolean("write", cfg.write)
            cfg.filename = s.get("filename", cfg.filename)
            cfg.kb_dirs = _list(s.get("kb", ""))
        if parser.has_section("post"):
            s = parser["post"]
            cfg.post_url = s.get("url", "")
            cfg.post_token_file = s.get("token_file", "")
            cfg.post_roles = _list(s.get("roles", ",".join(cfg.post_roles)))
        if parser.has_section("mail"):
            s = parser["mail"]
            cfg.mail_command = s.get("command", "")
            cfg.smtp_host = s.get("smtp_host", "")
            cfg.smtp_port = s.getint("smtp_port", cfg.smtp_port)
            cfg.mail_from = s.get("from", cfg.mail_from)
            cfg.mail_domain = s.get("domain", "")
            cfg.mail_roles = _list(s.get("roles", ",".join(cfg.mail_roles)))
    except ValueError as e:
        cfg.problems.append(f"config {path}: {e}; the rest of the file is used")
    if "/" in cfg.filename or cfg.filename.startswith("."):
        cfg.problems.append(f"config {path}: filename must be a plain name, not {cfg.filename!r}; using the default")
        cfg.filename = Config.filename
    return cfg


# ---- logging: syslog and stderr ------------------------------------------------

def log(message, error=False):
    line = f"troubleshoot-epilog: {message}"
    try:
        import syslog
        syslog.openlog("troubleshoot-epilog", 0, syslog.LOG_DAEMON)
        syslog.syslog(syslog.LOG_WARNING if error else syslog.LOG_INFO, message)
    except Exception:
        pass
    try:
        print(line, file=sys.stderr, flush=True)
    except Exception:
        pass


# ---- which job, and did it fail ----------------------------------------------------

def detect_role(env, argv_rest):
    ctx = env.get("SLURM_SCRIPT_CONTEXT", "")
    if ctx == "epilog_slurmctld":
        return "slurmctld"
    if ctx == "epilog_slurmd" or env.get("SLURM_JOB_ID"):
        return "node"
    if argv_rest or env.get("PBS_JOBID"):
        return "pbs"
    return None


def slurm_job(env, role):
    """The scheduler facts of the job this epilog runs for (scontrol + the epilog's environment)."""
    from . import slurm
    from .run import SchedulerError, run
    jobid = env.get("SLURM_JOB_ID", "")
    if not slurm.valid_jobid(jobid):
        raise SchedulerError(f"SLURM_JOB_ID {jobid!r} is not a job id")
    ctl = {}
    try:
        rc, out, _ = run(["scontrol", "show", "job", jobid], timeout=5, check=False)
        if rc == 0:
            ctl = slurm.parse_scontrol(out)
    except SchedulerError as e:
        log(f"job {jobid}: scontrol not usable ({e}); deciding from the environment")
    ctl.setdefault("JobId", jobid)
    if env.get("SLURM_JOB_EXIT_CODE2"):
        ctl.setdefault("ExitCode", env["SLURM_JOB_EXIT_CODE2"])
    for key, var in (("WorkDir", "SLURM_JOB_WORK_DIR"), ("StdOut", "SLURM_JOB_STDOUT"), ("StdErr", "SLURM_JOB_STDERR"),
                     ("Partition", "SLURM_JOB_PARTITION"), ("NodeList", "SLURM_JOB_NODELIST"), ("JobName", "SLURM_JOB_NAME")):
        if env.get(var):
            ctl.setdefault(key, env[var])
    if env.get("SLURM_JOB_USER"):
        ctl.setdefault("UserId", f"{env['SLURM_JOB_USER']}({env.get('SLURM_JOB_UID', '')})")
    if "JobState" not in ctl:
        ctl["JobState"] = "COMPLETING"
    facts = slurm.facts_from_records([], ctl)
    facts["uid"] = _int(env.get("SLURM_JOB_UID"))
    facts["gid"] = _int(env.get("SLURM_JOB_GID"))
    return facts


def _int(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def should_diagnose(sched, cfg):
    """(yes/no, why) for this job."""
    state = sched.get("state") or "?"
    if state in cfg.states:
        return True, f"state {state}"
    code = sched.get("exit_code")
    sig = sched.get("exit_signal")
    if cfg.nonzero_exit and ((isinstance(code, int) and code) or (isinstance(sig, int) and sig)):
        return True, f"exit code {code}:{sig}"
    return False, f"state {state}, exit code {code}:{sig}"


# ---- the work done as the job's user ------------------------------------------------------

def drop_privileges(uid, gid):
    """Become the job's user for good (in a child process). Refuses root and unknown ids."""
    if uid is None or gid is None:
        raise PermissionError("the job's uid/gid are unknown")
    if os.geteuid() != 0:
        if os.geteuid() != uid:
            raise PermissionError(f"running as uid {os.geteuid()}, not as root or the job's user {uid}")
        return
    if uid == 0:
        raise PermissionError("refusing to act for a root job")
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise PermissionError("could not drop privileges")


def write_atomically(directory, name, text):
    """Write directory/name: a new file renamed into place, never through a symbolic link."""
    flags_dir = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
    dfd = os.open(directory, flags_dir)
    try:
        tmp = f".{name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644, dir_fd=dfd)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            os.unlink(tmp, dir_fd=dfd)
            raise
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)   # replaces a symlink itself, never its target
    finally:
        os.close(dfd)
    return os.path.join(directory, name)


def load_kb(cfg):
    """The knowledge base and every module the diagnosis needs, loaded before dropping privileges
    (the job's user may not be able to read the interpreter's or the site's files)."""
    from ..engine import diagnose_text, compile_kb  # noqa: F401
    from ..knowledge import load_knowledge_base
    from ..render import Style, human  # noqa: F401
    from .job import read_log, summary_lines, job_output_files, last_error_line  # noqa: F401
    from . import pbs, slurm  # noqa: F401
    import encodings.idna  # noqa: F401  (lazily imported by some codecs)
    import json  # noqa: F401  (facts.py's condition notes, loaded lazily for start-up time)
    import textwrap  # noqa: F401  (render.py's terminal layout, likewise)
    kb = load_knowledge_base(cfg.kb_dirs)
    diagnose_text("warm-up\n", kb, source="warm-up")   # compiles the patterns now
    return kb


def diagnose_output(sched, cfg, deadline, kb=None):
    """(report text, first finding dict or None, log path, log tail) for the job's output: tail first."""
    from ..engine import diagnose_text
    from ..render import Style, human
    from .job import read_log, summary_lines, job_output_files, last_error_line
    kb = kb if kb is not None else load_kb(cfg)
    facts = {"scheduler": {k: v for k, v in sched.items() if k not in ("uid", "gid")}}
    style = Style(False)
    parts = summary_lines(facts["scheduler"], style)
    first, log_path, tail = None, None, ""
    for label, path in job_output_files(sched):
        if time.monotonic() > deadline:
            parts.append(f"\n(time budget spent before {path} was read)")
            break
        try:
            text, truncated = read_log(path, cfg.max_log_mib * 1024 * 1024)
        except Exception as e:
            parts.append(f"\n  {label}: {e}")
            continue
        log_path = log_path or path
        tail = tail or text[-64 * 1024:]
        try:
            d = diagnose_text(text, kb, source=path, facts=facts)
        except Exception as e:
            parts.append(f"\n  {path}: {e}")
            continue
        if truncated:
            parts.append(f"\n  ({path}: only its last {cfg.max_log_mib} MiB were read)")
        parts.append("")
        parts.append(human(d, style))
        if not d.findings:
            last = last_error_line(text)
            if last:
                parts.append(f"  The last error in this log: {last}")
        if d.findings and first is None:
            first = d.views()[0].to_dict()
    if log_path is None:
        d = diagnose_text("troubleshoot epilog: no readable output file\n", kb, source="scheduler record", facts=facts)
        if d.findings:
            parts.append("")
            parts.append(human(d, style))
            first = d.views()[0].to_dict()
    header = (f"troubleshoot: why job {sched.get('job_id')} did not end well "
              f"(written by the cluster's epilog at {time.strftime('%Y-%m-%d %H:%M:%S')})\n")
    return header + "\n".join(parts) + "\n", first, log_path, tail


def work_as_user(sched, cfg, deadline, write):
    """In a child process dropped to the job's uid/gid: read, diagnose, write. Returns its result dict."""
    kb = load_kb(cfg)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: never returns
        os.close(rfd)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)      # the budget ends the child too
        signal.alarm(max(1, int(deadline - time.monotonic() + 1.999)))
        result = {}
        try:
            drop_privileges(sched.get("uid"), sched.get("gid"))
            report, first, log_path, tail = diagnose_output(sched, cfg, deadline, kb)
            result = {"report": report, "finding": first, "log": log_path, "tail": tail}
            if write:
                directory = os.path.dirname(log_path) if log_path else sched.get("work_dir")
                if sched.get("kind") == "pbs":   # the output may still sit in PBS's spool: write to the job's folder
                    directory = sched.get("work_dir") or directory
                if directory and os.path.isabs(directory):
                    result["written"] = write_atomically(directory, cfg.filename.format(job_id=sched.get("job_id")), report)
                else:
                    result["error"] = "no directory to write the report to"
        except Exception as e:
            result["error"] = f"{e.__class__.__name__}: {e}"
        try:
            os.write(wfd, json.dumps(result, default=str).encode())
        finally:
            os._exit(0)
    os.close(wfd)
    _CHILDREN.append(pid)
    chunks = []
    with os.fdopen(rfd, "rb") as r:
        while True:
            chunk = r.read(65536)
            if not chunk:
                break
            chunks.append(chunk)
    os.waitpid(pid, 0)
    _CHILDREN.remove(pid)
    try:
        return json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        return {"error": "the worker died"}


# ---- telling someone ---------------------------------------------------------------------------

def post_diagnosis(url, token, log_tail, facts, timeout=5.0):
    """POST the log tail and the scheduler facts to the web service (JSON API); returns the result URL or None.

    The one place that talks to the web service: ``POST {url}`` with
    ``{"log": ..., "facts": ...}`` and ``Authorization: Bearer <token>`` when a token is configured
    (``/api/v1/submissions`` stores it for the helpdesk; ``/api/v1/diagnose`` only answers)."""
    import urllib.request
    body = json.dumps({"log": log_tail or "(no readable output file)\n", "facts": facts}, default=str).encode()
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json", "User-Agent": "troubleshoot-epilog"})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    from urllib.parse import urljoin
    with urllib.request.urlopen(req, timeout=timeout) as resp:   # noqa: S310 (the site's own URL)
        answer = json.loads(resp.read(1024 * 1024) or b"{}")
    link = answer.get("url") or answer.get("api_url")
    return urljoin(url, link) if link else None   # the service may answer with a path


def send_mail(cfg, user, subject, body, timeout=5.0):
    """Mail the user through the configured command (argument list, no shell) or SMTP server."""
    to = f"{user}@{cfg.mail_domain}" if cfg.mail_domain else user
    if cfg.mail_command:
        import subprocess
        argv = [arg.format(user=to, subject=subject) for arg in shlex.split(cfg.mail_command)]
        subprocess.run(argv, input=body, text=True, timeout=timeout, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return f"command {argv[0]}"
    if cfg.smtp_host:
        import smtplib
        from email.message import EmailMessage
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = cfg.mail_from, to, subject
        msg.set_content(body)
        with smtplib.SMTP(cfg.smtp_host, cfg.smtp_port, timeout=timeout) as smtp:
            smtp.send_message(msg)
        return f"SMTP {cfg.smtp_host}:{cfg.smtp_port}"
    return None


# ---- the hook ------------------------------------------------------------------------------------

def run_epilog(role, cfg, env, pbs_args=()):
    """Everything the hook does; returns a dict of what happened (for the tests and the log)."""
    start = time.monotonic()
    deadline = start + cfg.budget_s * 0.8
    done = {"role": role}
    if role == "pbs":
        from .pbs import epilogue_job
        sched = epilogue_job(pbs_args, env)
    else:
        sched = slurm_job(env, role)
    done["job_id"] = sched.get("job_id")
    yes, why = should_diagnose(sched, cfg)
    done["why"] = why
    if not yes:
        done["skipped"] = True
        log(f"job {sched.get('job_id')}: nothing to do ({why})")
        return done
    write = cfg.write and role in ("node", "pbs")
    result = work_as_user(sched, cfg, deadline, write) if (write or os.geteuid() == 0) else _in_process(sched, cfg, deadline)
    done.update({k: v for k, v in result.items() if k in ("written", "error", "log")})
    if result.get("written"):
        log(f"job {sched.get('job_id')} ({why}): wrote {result['written']}")
    elif result.get("error"):
        log(f"job {sched.get('job_id')} ({why}): no report written: {result['error']}", error=True)
    finding = result.get("finding")
    title = finding["title"] if finding else (f"{sched.get('state')}" if sched.get("state") else "failed")
    facts = {"scheduler": {k: v for k, v in sched.items() if k not in ("uid", "gid")}}
    if cfg.post_url and role in cfg.post_roles and time.monotonic() < start + cfg.budget_s * 0.9:
        try:
            token = _read_token(cfg.post_token_file)
            done["posted"] = post_diagnosis(cfg.post_url, token, result.get("tail", ""), facts,
                                            timeout=max(1.0, start + cfg.budget_s * 0.9 - time.monotonic()))
            log(f"job {sched.get('job_id')}: posted to {cfg.post_url}: {done['posted']}")
        except Exception as e:
            log(f"job {sched.get('job_id')}: posting to {cfg.post_url} failed: {e}", error=True)
    if (cfg.mail_command or cfg.smtp_host) and role in cfg.mail_roles and sched.get("user") \
            and time.monotonic() < start + cfg.budget_s * 0.95:
        subject = f"Job {sched.get('job_id')} ({sched.get('job_name') or ''}) ended {sched.get('state')}: {title}"
        body = result.get("report") or f"Job {sched.get('job_id')} ended {sched.get('state')}.\n"
        if done.get("posted"):
            body += f"\nThe diagnosis online: {done['posted']}\n"
        try:
            done["mailed"] = send_mail(cfg, sched["user"], subject[:200], body,
                                       timeout=max(1.0, start + cfg.budget_s * 0.95 - time.monotonic()))
            log(f"job {sched.get('job_id')}: mailed {sched['user']} via {done['mailed']}")
        except Exception as e:
            log(f"job {sched.get('job_id')}: mail to {sched['user']} failed: {e}", error=True)
    return done


def _in_process(sched, cfg, deadline):
    """The controller's role: read what SlurmUser may read, write nothing."""
    try:
        report, first, log_path, tail = diagnose_output(sched, cfg, deadline)
        return {"report": report, "finding": first, "log": log_path, "tail": tail}
    except Exception as e:
        return {"error": f"{e.__class__.__name__}: {e}"}


def _read_token(path):
    if not path:
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


def main(argv=None, env=None):
    env = dict(os.environ if env is None else env)
    p = argparse.ArgumentParser(prog="troubleshoot epilog", description="Slurm Epilog/EpilogSlurmctld or PBS "
                                "epilogue: diagnose a job that did not end well and tell its user.")
    p.add_argument("--config", default=env.get("TROUBLESHOOT_EPILOG_CONFIG", DEFAULT_CONFIG))
    p.add_argument("--role", choices=("node", "slurmctld", "pbs"))
    p.add_argument("--json", action="store_true", help="print what was done as JSON (for testing the set-up)")
    p.add_argument("pbs_args", nargs="*", help=argparse.SUPPRESS)
    try:
        args = p.parse_args(argv)
    except SystemExit:
        return 0
    cfg = load_config(args.config)
    for problem in cfg.problems:
        log(problem, error=True)
    role = args.role or detect_role(env, args.pbs_args)
    if role is None:
        log("not run by Slurm or PBS (no SLURM_JOB_ID, no epilogue arguments): nothing to do")
        return 0

    def out_of_time(signum, frame):
        for pid in _CHILDREN:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        log(f"time budget of {cfg.budget_s:.0f} s spent: stopping", error=True)
        os._exit(0)
    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(max(1, int(cfg.budget_s + 0.999)))
    try:
        done = run_epilog(role, cfg, env, args.pbs_args)
        if args.json:
            print(json.dumps(done, default=str))
    except Exception as e:   # never fail the epilog
        log(f"{e.__class__.__name__}: {e}", error=True)
    finally:
        signal.alarm(0)
    return 0
