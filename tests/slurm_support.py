"""The real Slurm cluster of the tests (tests/slurm/start-cluster.sh).

The tests submit real jobs. Slurm enforces time limits about every 30 s and
the shortest --time is one minute, so the TIMEOUT job takes ~90 s: it is
submitted once the tests are collected (tests/conftest.py, or earlier by .ci/run
through $TROUBLESHOOT_TEST_TIMEOUT_JOB) and checked by the last test.
"""
import atexit
import os
import shutil
import subprocess
import tempfile
import time

STATE = os.environ.get("TROUBLESHOOT_SLURM_STATE", "/var/tmp/troubleshoot-slurm")   # start-cluster.sh
FINAL = ("COMPLETED", "FAILED", "TIMEOUT", "OUT_OF_MEMORY", "CANCELLED", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE")
_state = {}

TIMEOUT_SCRIPT = """#!/bin/bash
#SBATCH --job-name=ts-timeout
#SBATCH --time=1
#SBATCH --gres=gpu:1
echo "training epoch 1"
sleep 600
"""


def slurm_up():
    """True when sbatch works against a running controller."""
    if "up" not in _state:
        ok = shutil.which("sbatch") is not None and shutil.which("sacct") is not None
        if ok:
            try:
                ok = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=10).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
        _state["up"] = ok
    return _state["up"]


def job_dir():
    if "dir" not in _state:
        d = tempfile.mkdtemp(prefix="ts-slurm-")
        os.chmod(d, 0o755)
        atexit.register(shutil.rmtree, d, True)
        _state["dir"] = d
    return _state["dir"]


def submit(script_text, *options, name="job.sh", cwd=None):
    """(returncode, job id or '', stderr) of sbatch on a script written to the job folder."""
    cwd = cwd or job_dir()
    path = os.path.join(cwd, name)
    with open(path, "w") as f:
        f.write(script_text)
    proc = subprocess.run(["sbatch", "--parsable", *options, path], capture_output=True, text=True, cwd=cwd, timeout=30)
    return proc.returncode, proc.stdout.strip().split(";")[0], proc.stderr


def state(jobid, complete=False):
    """The job's State in sacct; with complete=True "" until the record also has its TRES
    (slurmdbd may store the end of a short job before its start record)."""
    proc = subprocess.run(["sacct", "-X", "-n", "-P", "-j", jobid, "-o", "State,ReqTRES,AllocTRES"],
                          capture_output=True, text=True, timeout=30)
    fields = ((proc.stdout.strip().splitlines() or [""])[0] + "||").split("|")
    if complete and not (fields[1] and fields[2]):
        return ""
    return fields[0].split(" ")[0]


def wait(jobid, timeout=120):
    """Wait until the job ended and sacct shows its final state; returns the state."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        last = state(jobid, complete=True)
        if last in FINAL:
            return last
        time.sleep(1)
    return last


def timeout_job():
    """The id of the TIMEOUT job (submitted once per session, or by .ci/run)."""
    if "timeout_job" not in _state:
        jid = os.environ.get("TROUBLESHOOT_TEST_TIMEOUT_JOB", "")
        if not jid or not state(jid):   # or one still running from an earlier session here
            queued = subprocess.run(["squeue", "-h", "--name=ts-timeout", "-o", "%i"], capture_output=True,
                                    text=True, timeout=30).stdout.split()
            jid = queued[-1] if queued else ""
        if not jid:
            _, jid, _ = submit(TIMEOUT_SCRIPT, name="timeout.sh")
        _state["timeout_job"] = jid
    return _state["timeout_job"]


def submit_background_jobs():
    """Called when the session starts: start the slow job now, so it is over when its test runs."""
    try:
        if slurm_up():
            timeout_job()
    except Exception:  # the Slurm tests report the real problem themselves
        pass
