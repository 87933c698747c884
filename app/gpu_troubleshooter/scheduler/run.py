"""Run a scheduler command safely: an argument list (never a shell), a timeout,
and every failure as one line a person can act on."""
import os
import shutil
import subprocess

from ..errors import TroubleshootError


class SchedulerError(TroubleshootError):
    """A scheduler command is missing, failed or timed out."""


def have(command):
    return shutil.which(command) is not None


def run(argv, timeout=30, check=True):
    """(returncode, stdout, stderr) of ``argv``; raises SchedulerError when it cannot run.

    With check=True a non-zero exit raises too, with the command's first error line.
    """
    if not isinstance(argv, (list, tuple)) or not argv:
        raise ValueError("argv must be a non-empty list")
    env = dict(os.environ)
    env.setdefault("LC_ALL", "C")
    env["SLURM_TIME_FORMAT"] = "standard"   # sacct/scontrol dates as ISO 8601
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, errors="replace",
                              timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SchedulerError(f"`{argv[0]}` is not installed here (no scheduler client commands on this machine; "
                             "run this on a login node of the cluster)") from None
    except PermissionError as e:
        raise SchedulerError(f"`{argv[0]}` cannot be run: {e.strerror}") from None
    except subprocess.TimeoutExpired:
        raise SchedulerError(f"`{argv[0]}` did not answer within {timeout} s (is the controller or slurmdbd down?)") from None
    if check and proc.returncode != 0:
        raise SchedulerError(f"`{' '.join(argv[:2])}` failed: {first_line(proc.stderr) or 'exit status %d' % proc.returncode}")
    return proc.returncode, proc.stdout, proc.stderr


def first_line(text):
    for line in (text or "").splitlines():
        line = line.strip()
        if line:
            return line[:300]
    return ""
