import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def kb():
    from gpu_troubleshooter.knowledge import load_knowledge_base
    return load_knowledge_base(strict=True)


def required(name):
    """True where CI demands that a service is present (REQUIRE_<NAME>=1)."""
    return os.environ.get(f"REQUIRE_{name.upper()}") == "1"


def run_cli(*args, stdin=None, env=None):
    import subprocess
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "gpu_troubleshooter", *map(str, args)], input=stdin,
                          capture_output=True, env=full_env, timeout=120)
