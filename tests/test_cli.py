"""The command line as a user and a script see it: output, JSON, exit status."""
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

from support import run_cli

DEMO = Path(__file__).parent / "fixtures" / "kb" / "demo"
OOM = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 1.20 GiB free)\n"
DEMO_ONLY = {"TROUBLESHOOT_KB": str(DEMO), "TROUBLESHOOT_BUNDLED_KB": "0"}


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_json_document_shape_and_exit_1_when_diagnosed(tmp_path):
    log = write(tmp_path, "slurm-1.out", "hello\n" + OOM)
    r = run_cli("--json", log, env=DEMO_ONLY)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == 1 and doc["source"] == str(log)
    top = doc["findings"][0]
    assert top["id"] == "demo-oom" and 0 < top["confidence"] <= 1
    assert top["evidence"] == [{"line": 2, "text": OOM.strip()}]
    assert top["values"]["requested"] == "2.00 GiB"
    assert top["fixes"][0]["code"]["text"] == "#SBATCH --partition=demo-gpu"


def test_clean_log_exit_0_and_empty_findings(tmp_path):
    log = write(tmp_path, "ok.out", "epoch 1 loss 0.1\ndone\n")
    r = run_cli("--json", log, env=DEMO_ONLY)
    assert r.returncode == 0 and json.loads(r.stdout)["findings"] == []
    r = run_cli(log, env=DEMO_ONLY)
    assert r.returncode == 0 and "no known failure" in r.stdout.decode()


def test_harmless_lines_keep_exit_0_and_are_named_as_harmless(tmp_path):
    noise = "E0000 cuda_dnn.cc:8310] Unable to register demo factory: already registered\n"
    log = write(tmp_path, "noisy.out", noise + "epoch 1 loss 0.1\n" + noise + "done\n")
    r = run_cli("--json", log, env=DEMO_ONLY)
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and doc["findings"] == []
    assert [h["id"] for h in doc["harmless"]] == ["demo-noise"] and doc["harmless"][0]["evidence"][0]["line"] == 1
    out = run_cli(log, env=DEMO_ONLY).stdout.decode()
    assert "no known failure" in out and "Harmless, no action needed" in out
    assert "Demo start-up noise (lines 1, 3)" in out
    out_hr = run_cli("--lang", "hr", log, env=DEMO_ONLY).stdout.decode()
    assert "Bezopasno, ništa ne treba poduzeti" in out_hr and "(retci 1, 3)" in out_hr


def test_human_output_puts_fix_before_evidence_and_no_colour_off_a_tty(tmp_path):
    log = write(tmp_path, "slurm-2.out", OOM)
    out = run_cli(log, env=DEMO_ONLY).stdout.decode()
    assert out.index("How to fix it") < out.index("Evidence") and "\x1b[" not in out
    assert "#SBATCH --partition=demo-gpu" in out and "2 | " not in out and "1 | RuntimeError" in out
    coloured = run_cli("--color", "always", log, env=DEMO_ONLY).stdout.decode()
    assert "\x1b[" in coloured
    # an explicit --color beats NO_COLOR (no-color.org: command-line flags override it); auto honours it
    assert "\x1b[" in run_cli("--color", "always", log, env={**DEMO_ONLY, "NO_COLOR": "1"}).stdout.decode()
    assert "\x1b[" not in run_cli("--color", "never", log, env=DEMO_ONLY).stdout.decode()


def test_no_color_turns_auto_colour_off_on_a_terminal(monkeypatch):
    """The auto case the subprocess test above cannot reach (its stdout is a pipe, never a tty)."""
    from gpu_troubleshooter.cli import _use_colour

    class Tty:
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert _use_colour("auto", Tty())
    monkeypatch.setenv("NO_COLOR", "")  # empty: not set (no-color.org)
    assert _use_colour("auto", Tty())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not _use_colour("auto", Tty()) and _use_colour("always", Tty())
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert not _use_colour("auto", Tty())


def test_stdin_gzip_and_globs(tmp_path):
    r = run_cli("--json", "-", stdin=gzip.compress(OOM.encode()), env=DEMO_ONLY)
    assert r.returncode == 1 and json.loads(r.stdout)["findings"][0]["id"] == "demo-oom"
    write(tmp_path, "slurm-10.out", OOM)
    write(tmp_path, "slurm-11.out", "fine\n")
    r = run_cli("--json", str(tmp_path / "slurm-*.out"), env=DEMO_ONLY)
    docs = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert [bool(d["findings"]) for d in docs] == [True, False] and r.returncode == 1


def test_bad_input_is_one_line_on_stderr_exit_2(tmp_path):
    empty = write(tmp_path, "empty.out", "")
    for target in (tmp_path / "missing.out", empty):
        r = run_cli(target, env=DEMO_ONLY)
        err = r.stderr.decode()
        assert r.returncode == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_broken_site_entry_is_skipped_with_file_and_line(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "broken.yaml").write_text("id: broken\ntitle: [unclosed\n")
    log = write(tmp_path, "a.out", OOM)
    r = run_cli("--kb", site, log, env=DEMO_ONLY)
    err = r.stderr.decode()
    assert r.returncode == 1 and f"{site / 'broken.yaml'}:" in err and "YAML syntax error" in err


def test_kb_validate_reports_every_problem_with_file_and_line(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "bad-regex.yaml").write_text(
        "id: bad-regex\ntitle: T\nsummary: S\ntags: [x]\nseverity: error\nsurprise: 1\n"
        "signatures:\n  - regex: '(a+)+b'\n    weight: 1\n  - regex: '(?<=x)y'\n    weight: 0.5\n"
        "causes: [c]\nfixes:\n  - {title: t, text: x}\n")
    r = run_cli("kb", "validate", site, env={"TROUBLESHOOT_KB": "", "TROUBLESHOOT_BUNDLED_KB": "0"})
    out = r.stdout.decode()
    assert r.returncode == 1
    assert f"{site / 'bad-regex.yaml'}:6: unknown key 'surprise'" in out
    assert ":8: signatures[1]: regex has a nested unbounded repeat" in out
    assert ":10: signatures[2]: signature regex uses look-around" in out
    assert "needs at least 3 example logs" in out


def test_kb_list_json_and_explain():
    rows = json.loads(run_cli("kb", "list", "--json", env=DEMO_ONLY).stdout)
    assert {"id": "demo-oom", "title": "Demo GPU out of memory"}.items() <= next(r for r in rows if r["id"] == "demo-oom").items()
    out = run_cli("explain", "demo-oom", env=DEMO_ONLY).stdout.decode()
    assert "How to fix it" in out and "demo-gpu" in out
    r = run_cli("explain", "demo-oon", env=DEMO_ONLY)
    assert r.returncode == 2 and "Did you mean 'demo-oom'" in r.stderr.decode()


def test_start_up_path_imports_no_torch_pynvml_or_flask(tmp_path):
    """Nothing heavy on the diagnosis path; with a warm cache not even the YAML parser."""
    log = write(tmp_path, "x.out", OOM)
    code = ("import sys; from gpu_troubleshooter.cli import main; main(['--json', %r]); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'torch', 'pynvml', 'flask', 'tensorflow', 'sqlalchemy', 'babel', 'yaml'}), file=sys.stderr)") % str(log)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for _ in range(2):  # the first run parses the entries and fills the cache
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.stderr.strip().splitlines()[-1] == "[]", r.stderr


def test_version_has_one_source():
    from importlib.metadata import version
    r = run_cli("--version")
    assert r.returncode == 0 and r.stdout.decode().strip() == f"troubleshoot {version('hpc-gpu-troubleshooter')}"


def test_stdin_twice_is_a_usage_error_not_a_traceback():
    r = run_cli("-", "-", stdin=OOM.encode(), env=DEMO_ONLY)
    err = r.stderr.decode()
    assert r.returncode == 2 and "Traceback" not in err and "can be read only once" in err
