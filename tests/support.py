"""Helpers shared by the top-level tests (a module of its own: tests/web has
its own conftest, and two modules named `conftest` cannot both be imported)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def required(name):
    """True where CI demands that a service is present (REQUIRE_<NAME>=1)."""
    return os.environ.get(f"REQUIRE_{name.upper()}") == "1"


def run_cli(*args, stdin=None, env=None):
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "gpu_troubleshooter", *map(str, args)], input=stdin,
                          capture_output=True, env=full_env, timeout=120)
