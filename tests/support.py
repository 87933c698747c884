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


def entry_yaml(entry_id, marker, extra="", fixes="fixes:\n  - {title: Do it, text: Do it now.}\n", signature=None):
    """A minimal site entry: one signature, the literal `marker` unless `signature` is given
    ("regex: 'X'"); `extra` is more top-level YAML placed before `causes`."""
    signature = signature or f'literal: "{marker}"'
    return (f"id: {entry_id}\ntitle: Site quirk {entry_id}\nsummary: a site entry\ntags: [site]\nseverity: error\n"
            f"signatures:\n  - {signature}\n    weight: 1.0\n{extra}causes: [the site]\n{fixes}")
