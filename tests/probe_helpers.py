"""Shared helpers for the probe tests: the real probe, real subprocesses."""
import importlib.util
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "probes" / "node_probe.py"
SCHEMA = ROOT / "probes" / "probe-facts.schema.json"
SMI = Path(__file__).parent / "fixtures" / "nvidia-smi"


def has_torch():
    if importlib.util.find_spec("torch") is not None:
        return True
    if os.environ.get("REQUIRE_TORCH") == "1":
        pytest.fail("REQUIRE_TORCH=1 but torch is not installed (CI installs torch==2.13.0, the CPU build)")
    return False


def validate(facts):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(facts), key=lambda e: list(e.path))
    assert not errors, "\n".join("%s: %s" % ("/".join(map(str, e.path)), e.message[:300]) for e in errors)


def fake_nvidia_smi(bindir, csv="query-gpu-580.173.02-h200.csv", table="table-580.173.02-h200.txt",
                    pmon="pmon-595.71.05-rtx2080super-load.txt", hang=False):
    """An `nvidia-smi` on PATH that replays recorded real outputs (or hangs)."""
    bindir.mkdir(parents=True, exist_ok=True)
    script = bindir / "nvidia-smi"
    script.write_text("#!%s\n" % sys.executable + textwrap.dedent('''
        import os, re, sys, time
        FIX = %r
        if %r:
            time.sleep(120)
        args = sys.argv[1:]
        query = [a for a in args if a.startswith("--query-gpu=")]
        if query:
            fields = query[0].split("=", 1)[1].split(",")
            lines = open(os.path.join(FIX, %r)).read().splitlines()
            header = lines[0].split(", ")
            names = [re.sub(r"\\s*\\[.*\\]$", "", h) for h in header]
            for f in fields:
                if f not in names:
                    print('Field "%%s" is not a valid field to query.' %% f)
                    sys.exit(2)
            idx = [names.index(f) for f in fields]
            print(", ".join(header[i] for i in idx))
            for line in lines[1:]:
                cells = line.split(", ")
                print(", ".join(cells[i] for i in idx))
        elif args[:1] == ["pmon"]:
            sys.stdout.write(open(os.path.join(FIX, %r)).read())
        elif not args:
            sys.stdout.write(open(os.path.join(FIX, %r)).read())
        else:
            sys.exit(9)
        ''' % (str(SMI), hang, csv, pmon, table)))
    script.chmod(0o755)
    return script
