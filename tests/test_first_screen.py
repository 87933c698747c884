"""Issue 9 phase B: the short first screen, languages in the CLI, the helpdesk message
of site-side failures, and scheduler-specific fixes kept out of the short view."""
import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from gpu_troubleshooter.engine import diagnose_text
from gpu_troubleshooter.i18n import load_translation, source_hash, translation_path
from gpu_troubleshooter.knowledge import load_knowledge_base
from gpu_troubleshooter.render import Style, _clip, explain, human
from gpu_troubleshooter.view import entry_view

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.9 GiB memory in "
       "use. Of the allocated memory 75.10 GiB is allocated by PyTorch, and 1.30 GiB is reserved by PyTorch but "
       "unallocated.\n")


@pytest.fixture(scope="module")
def kb():
    return load_knowledge_base()


def cli(*args, env=None, stdin=None):
    full_env = {k: v for k, v in os.environ.items() if k not in ("LANG", "LC_ALL", "LC_MESSAGES", "LANGUAGE")}
    full_env.update(env or {}, COLUMNS="100")
    return subprocess.run([sys.executable, "-m", "gpu_troubleshooter.cli", *args], capture_output=True,
                          text=True, env=full_env, input=stdin, timeout=120)


def test_one_line_oom_fits_a_screen_and_points_to_the_rest(kb):
    d = diagnose_text(OOM, kb)
    short = human(d, Style(False), width=100)
    full = human(d, Style(False), full=True)
    assert len(human(d, Style(False), width=80).splitlines()) <= 45    # a classic 80-column terminal
    lines = short.splitlines()
    assert len(lines) <= 45, short
    assert lines[0].endswith("[cuda-oom, confidence 99%]") or "cuda-oom" in lines[0]
    assert "Who fixes it: you" in short and "Why:" in short
    shown = [ln for ln in lines if ln.startswith("  ") and ln[2:3].isdigit() and ". " in ln[:6]]
    assert 1 <= len(shown) <= 3
    total = len(d.views()[0].fixes)
    assert f"{total - len(shown)} more fixes: troubleshoot explain cuda-oom" in short
    assert "  1 | torch.OutOfMemoryError" in short          # the evidence, with its line number
    assert len(full.splitlines()) > len(lines)
    # the CLI prints the same first screen, and --full everything
    out = cli("-", "--color", "never", stdin=OOM).stdout
    assert len(out.splitlines()) <= 45 and "more fixes: troubleshoot explain cuda-oom" in out
    assert len(cli("-", "--color", "never", "--full", stdin=OOM).stdout.splitlines()) > len(out.splitlines())


def test_json_keeps_every_fix_ordered_with_held(kb):
    d = diagnose_text(OOM, kb)
    doc = d.to_dict()
    fixes = doc["findings"][0]["fixes"]
    assert len(fixes) == len(kb.get("cuda-oom").fixes) and all("held" in f for f in fixes)
    held = [f["held"] for f in fixes]
    rank = {True: 0, None: 1, False: 2}
    assert [rank[h] for h in held] == sorted(rank[h] for h in held)
    assert doc["lang"] == "en"


def test_long_evidence_is_clipped_around_the_match_with_ellipses():
    text = "x" * 300 + " CUDA out of memory. Tried to allocate 2.00 GiB " + "y" * 300
    start = text.index("CUDA")
    out = _clip(text, 80, (start, start + len("CUDA out of memory")))
    assert len(out) == 80 and out.startswith("…") and out.endswith("…") and "CUDA out of memory" in out
    head = _clip("CUDA out of memory " + "z" * 200, 60, (0, 18))
    assert head.startswith("CUDA") and head.endswith("…") and len(head) == 60
    tail = _clip("z" * 200 + " CUDA out of memory", 60, (201, 219))
    assert tail.startswith("…") and tail.endswith("CUDA out of memory") and len(tail) == 60
    assert _clip("short", 60) == "short"


def test_long_evidence_line_in_the_short_view_shows_the_matching_part(kb):
    log = "INFO " + "noise " * 60 + "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB " + "tail " * 40 + "\n"
    d = diagnose_text(log, kb)
    assert d.findings and d.findings[0].entry.id == "cuda-oom"
    evidence = [ln for ln in human(d, Style(False), width=80).splitlines() if ln.startswith("  1 | ")]
    assert evidence and "out of memory" in evidence[0] and evidence[0].count("…") == 2
    assert len(evidence[0]) <= 80


def translated_title(entry, lang):
    field = load_translation(entry.path, lang).get("title")
    if isinstance(field, dict) and field.get("src") == source_hash(entry.title.get("en")):
        return field.get("text")
    return None


@pytest.mark.parametrize("lang", ["hr", "sr", "ko"])
def test_explain_prints_translated_titles_and_falls_back_per_field(kb, lang):
    translated = [e for e in kb.entries if translated_title(e, lang)]
    assert len(translated) >= 24
    for entry in translated:
        first = explain(entry, kb.site, lang).splitlines()[0]
        assert first == f"{entry.id}: {translated_title(entry, lang)}", entry.id
    bare = [e for e in kb.entries if not translation_path(e.path, lang).exists()
            and not translation_path(e.path, {"hr": "sr", "sr": "hr"}.get(lang, "en")).exists()]
    for entry in bare[:5]:   # no translation: English, field by field
        view = entry_view(entry, lang, kb.site)
        assert view.title == entry.title.get("en") and view.summary == entry.summary.get("en")
    # through the CLI, as a user types it; ids and commands stay as they are
    out = cli("explain", "--lang", lang, "cuda-oom").stdout
    assert out.splitlines()[0] == f"cuda-oom: {translated_title(kb.get('cuda-oom'), lang)}"
    assert "PYTORCH_ALLOC_CONF" in out


def test_lang_from_the_environment_and_json_lang_field(kb):
    hr_title = translated_title(kb.get("cuda-oom"), "hr")
    out = cli("-", "--color", "never", env={"LANG": "hr_HR.UTF-8"}, stdin=OOM).stdout
    assert hr_title in out.splitlines()[0]
    out = cli("-", "--json", env={"LC_MESSAGES": "ko_KR.UTF-8", "LANG": "en_US.UTF-8"}, stdin=OOM).stdout
    # LC_ALL > LC_MESSAGES > LANG, as gettext reads them
    doc = json.loads(out)
    assert doc["lang"] == "ko" and doc["findings"][0]["id"] == "cuda-oom"
    assert doc["findings"][0]["title"] == translated_title(kb.get("cuda-oom"), "ko")
    doc = json.loads(cli("-", "--json", "--lang", "sr-Latn-RS", env={"LANG": "ko_KR.UTF-8"}, stdin=OOM).stdout)
    assert doc["lang"] == "sr"
    assert json.loads(cli("-", "--json", env={"LANG": "C.UTF-8"}, stdin=OOM).stdout)["lang"] == "en"


def test_english_start_up_does_not_import_babel(tmp_path):
    log = tmp_path / "oom.log"
    log.write_text(OOM)
    code = ("import sys, contextlib, io; from gpu_troubleshooter.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    main([sys.argv[1], '--lang', 'en'])\n"
            "print('babel' in sys.modules, 'gpu_troubleshooter.i18n' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "False"], out.stderr


SITE_ENTRY = """\
id: site-node-fault
schema: 2
title: The node's GPU fell off the bus
summary: A hardware fault on the node.
tags: [site]
severity: error
actor: site
signatures:
  - literal: "SITE_NODE_FAULT_MARKER"
    weight: 1.0
values:
  node: 'on node (?P<node>[a-z0-9-]+)'
causes:
  - The GPU stopped answering.
fixes:
  - title: Resubmit excluding the node
    text: Ask for another node.
  - title: On PBS
    scheduler: pbs
    text: PBS only.
"""


def test_site_failure_leads_with_a_ready_to_send_helpdesk_message(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TROUBLESHOOT_KB", raising=False)
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "site-node-fault.yaml").write_text(SITE_ENTRY)
    kb = load_knowledge_base([tmp_path / "kb"], strict=True, bundled=False)
    d = replace(diagnose_text("12:00 SITE_NODE_FAULT_MARKER on node gpu-a17\n", kb), scheduler="slurm")
    out = human(d, Style(False))
    lines = out.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.strip().startswith("1. "))
    assert "Send this message to" in lines[first]
    message = "\n".join(lines[first + 1:first + 12])
    assert "Node: gpu-a17" in message and "Job ID: unknown" in message and "Time: unknown" in message
    assert "line 1: 12:00 SITE_NODE_FAULT_MARKER on node gpu-a17" in message
    assert "2. Resubmit excluding the node" in out and "On PBS" not in out


def test_pbs_log_short_view_hides_slurm_fixes(kb):
    log = "=>> PBS: job killed: walltime 01:00:12 exceeded limit 01:00:00\n"
    d = diagnose_text(log, kb)
    assert d.findings
    pbs = replace(d, scheduler=d.scheduler or "pbs")   # the engine's detection where it has landed
    out = human(pbs, Style(False))
    fixes = pbs.views()[0].fixes
    assert any(f.scheduler == "slurm" for f in fixes) or any(f.scheduler == "pbs" for f in fixes)
    fix_part = out.split("How to fix it:")[1].split("Evidence:")[0]
    assert "#SBATCH" not in fix_part and "sacct" not in fix_part and "(Slurm" not in fix_part
    assert "(PBS jobs)" in fix_part
    assert all(f.held is False for f in fixes if f.scheduler == "slurm")


def test_site_message_and_labels_in_the_readers_language(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TROUBLESHOOT_KB", raising=False)
    (tmp_path / "kb").mkdir()
    (tmp_path / "kb" / "site-node-fault.yaml").write_text(SITE_ENTRY)
    kb = load_knowledge_base([tmp_path / "kb"], strict=True, bundled=False)
    d = diagnose_text("SITE_NODE_FAULT_MARKER on node gpu-a17\n", kb)
    hr = human(d, Style(False), "hr")
    assert "Tko to rješava:" in hr and "Čvor: gpu-a17" in hr and "ID posla: nepoznato" in hr
    ko = human(d, Style(False), "ko")
    assert "노드: gpu-a17" in ko and "작업 ID: 알 수 없음" in ko and "SITE_NODE_FAULT_MARKER" in ko
    # the entry itself has no translation: its prose stays English, whole
    assert "Resubmit excluding the node" in ko


@pytest.mark.parametrize("lang,heading,site_line", [("hr", "Kako popraviti:", "administratori vašeg centra"),
                                                    ("sr", "Kako popraviti:", "administratori vašeg centra"),
                                                    ("ko", "해결 방법:", "사이트 관리자")])
def test_explain_headings_and_who_acts_in_the_readers_language(kb, lang, heading, site_line):
    out = explain(kb.get("gpu-fallen-off-bus"), kb.site, lang)
    assert heading in out and site_line in out and "`troubleshoot --json`" in out
    assert "How to fix it:" in explain(kb.get("gpu-fallen-off-bus"), kb.site, "en")
