"""The typed knowledge model, the finding view and fix choice, and hostile site entries.

A site entry that is broken in any way is reported once with FILE:LINE and
skipped; the bundled entries (and the other site entries) still diagnose.
"""
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from gpu_troubleshooter.engine import diagnose_text
from gpu_troubleshooter.fixes import choose_fixes
from gpu_troubleshooter.knowledge import entry_files, load_knowledge_base, parse_entry
from gpu_troubleshooter.model import Text
from gpu_troubleshooter.render import Style, explain, human
from support import entry_yaml, run_cli

DEMO = Path(__file__).parent / "fixtures" / "kb" / "demo"
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.08 GiB memory in use.\n")
OOM_LOG = "epoch 1\n" + OOM + "srun: error: node1: task 0: Exited with exit code 1\n"


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """A private cache and no $TROUBLESHOOT_KB, so each test sees only its own folders."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TROUBLESHOOT_KB", raising=False)
    monkeypatch.delenv("TROUBLESHOOT_BUNDLED_KB", raising=False)
    return tmp_path


def test_text_falls_back_to_english():
    t = Text.of({"hr": "Nema memorije", "en": "Out of memory"})
    assert t.get("hr") == "Nema memorije" and t.get("ko") == "Out of memory" and t.get() == "Out of memory"
    assert Text.of("plain").get("sr") == "plain" and t.languages[0] == "en"


def test_the_result_records_are_typed_too():
    """Findings and diagnoses carry typed fields (as the model does), so mypy checks what renderers read."""
    from typing import get_type_hints

    from gpu_troubleshooter.findings import Diagnosis, Evidence, Finding
    from gpu_troubleshooter.model import Entry
    hints = get_type_hints(Finding, localns={"Entry": Entry})
    assert hints["entry"] is Entry and hints["evidence"] == tuple[Evidence, ...]
    assert hints["values"] == tuple[tuple[str, str], ...] and hints["confirmed_by"] == tuple[str, ...]
    assert get_type_hints(Diagnosis)["findings"] == tuple[Finding, ...]


def test_files_inside_an_entrys_folder_are_not_entries(tmp_path):
    (tmp_path / "area" / "quirk" / "i18n").mkdir(parents=True)
    (tmp_path / "area" / "quirk" / "notes").mkdir()
    (tmp_path / "area" / "quirk.yaml").write_text(entry_yaml("quirk", "SITE_QUIRK_ONE"))
    (tmp_path / "area" / "quirk" / "i18n" / "hr.yaml").write_text("title: Hrvatski\n")
    (tmp_path / "area" / "quirk" / "notes" / "extra.yaml").write_text("id: extra\n")
    (tmp_path / "i18n").mkdir()
    (tmp_path / "i18n" / "ko.yaml").write_text("title: x\n")
    assert entry_files(tmp_path) == [tmp_path / "area" / "quirk.yaml"]


def test_entry_fields_are_typed_with_defaults(isolated):
    site = isolated / "site"
    site.mkdir()
    (site / "broad.yaml").write_text(entry_yaml("broad", "SITE_BROAD_MARKER"))
    (site / "mid.yaml").write_text(entry_yaml("mid", "SITE_MID_MARKER", "refines: broad\n"))
    (site / "fine.yaml").write_text(entry_yaml("fine", "SITE_FINE_MARKER", "schema: 2\nactor: site\nrefines: mid\n"
                                               "aliases: [old-fine]\ndraft: false\nchecked: {date: 2026-11-01, versions: [slurm 24]}\n"))
    kb = load_knowledge_base([site], strict=True, bundled=False)
    fine, broad = kb.get("fine"), kb.get("broad")
    assert (broad.actor, broad.refines, broad.schema, broad.draft) == ("user", None, 1, False)
    assert (fine.actor, fine.refines, fine.broader, fine.aliases) == ("site", "mid", ("mid", "broad"), ("old-fine",))
    assert fine.checked.date == "2026-11-01" and fine.checked.versions == ("slurm 24",) and fine.draft is False
    assert fine.title.get() == "Site quirk fine" and fine.fixes[0].title.get() == "Do it" and fine.fixes[0].line == 17
    assert fine.signatures[0].line == 7 and not hasattr(fine, "data")


FIXES = """fixes:
  - {title: Anywhere, text: always}
  - {title: On PBS, text: qsub, scheduler: pbs}
  - {title: Big request, text: big, when: {fact: value.requested, equals: 2.00 GiB}}
  - {title: On Slurm, text: sbatch, scheduler: slurm}
  - {title: Small request, text: small, when: {fact: value.requested, equals: 1 KiB}}
  - {title: Two GPUs, text: gpus, when: {fact: gpu.count, ge: 2}}
"""


def test_a_draft_is_validated_but_never_diagnoses(isolated):
    site = isolated / "site"
    site.mkdir()
    (site / "drafty.yaml").write_text(entry_yaml("drafty", "SITE_DRAFT_MARKER", "draft: true\n"))
    kb = load_knowledge_base([site], strict=True, bundled=False)
    assert kb.get("drafty") is None and [e.id for e in kb.drafts] == ["drafty"]
    assert diagnose_text("SITE_DRAFT_MARKER\n", kb).findings == ()


def test_choose_fixes_puts_holding_first_and_other_schedulers_last(isolated):
    site = isolated / "site"
    site.mkdir()
    (site / "quirk.yaml").write_text(entry_yaml("quirk", "SITE_QUIRK_MARKER",  # a `when` may only name declared values
                                                "values:\n  requested: 'req (?P<requested>\\S+ \\S+)'\n", FIXES))
    entry = load_knowledge_base([site], strict=True, bundled=False).get("quirk")
    chosen = choose_fixes(entry, {"requested": "2.00 GiB"}, None, "slurm")
    assert [(f.title.get(), held) for f, held in chosen] == [
        ("Big request", True), ("On Slurm", True), ("Anywhere", None), ("Two GPUs", None),
        ("On PBS", False), ("Small request", False)]
    with_facts = choose_fixes(entry, {}, {"gpu": {"count": 4}}, None)
    assert [(f.title.get(), held) for f, held in with_facts][:2] == [("Two GPUs", True), ("Anywhere", None)]
    assert dict((f.title.get(), held) for f, held in with_facts)["On PBS"] is None  # scheduler unknown: no verdict


def test_json_and_human_output_show_who_acts_refines_and_held(isolated):
    site = isolated / "site"
    site.mkdir()
    (site / "broad.yaml").write_text(entry_yaml("broad", "SITE_BROAD_MARKER"))
    (site / "quirk.yaml").write_text(entry_yaml("quirk", "SITE_QUIRK_MARKER", "actor: site\nrefines: broad\n"
                                                "values:\n  requested: 'req (?P<requested>\\S+ \\S+)'\n", FIXES))
    kb = load_knowledge_base([site], strict=True, bundled=False)
    d = replace(diagnose_text("x SITE_QUIRK_MARKER req 2.00 GiB\n", kb), scheduler="slurm")
    doc = d.to_dict()
    top = doc["findings"][0]
    assert doc["schema"] == 1 and top["id"] == "quirk" and top["actor"] == "site" and top["refines"] == ["broad"]
    assert all(set(f) >= {"title", "text", "held", "scheduler"} for f in top["fixes"])
    assert [(f["title"], f["held"]) for f in top["fixes"]][:2] == [("Big request", True), ("On Slurm", True)]
    assert [f["title"] for f in top["fixes"] if f["held"] is False] == ["On PBS", "Small request"]
    assert doc["scheduler"] == "slurm" and top["fixes"][1]["scheduler"] == "slurm"
    out = human(d, Style(False), full=True)
    assert "Your site's admins must fix this" in out and "A finer case of: broad" in out
    short = human(d, Style(False))     # the first screen: a site failure leads with the helpdesk message
    assert "Who fixes it: the site's admins" in short and "1. Send this message to" in short
    assert "On PBS" not in short and "Small request" not in short and "2. Big request" in short
    assert "5. On PBS  (PBS jobs; probably not for this job)" in out and "1. Big request\n" in out
    assert "Your site's admins must fix this" in explain(kb.get("quirk"), kb.site)


# Each hostile site entry: (file name, content as bytes, the words its one problem line must hold)
HOSTILE = [
    ("bad-yaml.yaml", b"id: bad-yaml\ntitle: [unclosed\n", "YAML syntax error"),
    ("latin1.yaml", entry_yaml("latin1", "SITE_LATIN1_MARKER").replace("a site entry", "caf\u00e9").encode("latin-1"),
     "not UTF-8"),
    ("atomic.yaml", entry_yaml("atomic", "SITE_ATOMIC").replace('literal: "SITE_ATOMIC"', "regex: '(?>SITE)ATOMIC'")
     .encode(), "RE2"),
    ("lookahead-exclude.yaml", entry_yaml("lookahead-exclude", "SITE_LOOK_X", "exclude: ['SITE_LOOK_X(?!y)']\n").encode(),
     "look-around"),
    ("nested-exclude.yaml", entry_yaml("nested-exclude", "SITE_NEST_X", "exclude: ['(x+)+y']\n").encode(),
     "nested unbounded repeat"),
    ("huge-repeat-values.yaml", entry_yaml("huge-repeat-values", "SITE_HANG_V", "values:\n  v: '(?P<v>x{2000})'\n").encode(),
     "RE2"),
    ("newer.yaml", entry_yaml("newer", "SITE_NEWER", "runbook: http://x\n").encode(), "newer troubleshooter"),
    # next_line belongs to exclude (it tests the line after a hit), and is a boolean
    ("next-line-signature.yaml", entry_yaml("next-line-signature", "SITE_NL_SIG").replace("    weight: 1.0\n", "    weight: 1.0\n    next_line: true\n")
     .encode(), "unknown key(s) ['next_line']"),
    ("next-line-not-bool.yaml", entry_yaml("next-line-not-bool", "SITE_NL_X", "exclude: [{regex: 'done', next_line: 'yes'}]\n").encode(),
     "next_line must be true or false"),
    ("newer-schema.yaml", entry_yaml("newer-schema", "SITE_NEWER_S", "schema: 3\n").encode(), "upgrade"),
    # Hyperscan reads bytes: a curly quote in a class is three one-byte alternatives, and RE2 would disagree
    ("curly-class.yaml", entry_yaml("curly-class", "x").replace('literal: "x"', "regex: \"KeyError: [''\u2018]SITE_CURLY\"")
     .encode(), "non-ASCII character '\u2018'"),
    ("curly-repeat.yaml", entry_yaml("curly-repeat", "x").replace('literal: "x"', "regex: 'SITE doesn\u2019?t CURLY'")
     .encode(), "non-ASCII character '\u2019'"),
]


def _problem_lines(stderr, name):
    return [line for line in stderr.splitlines() if f"{name}:" in line]


@pytest.mark.parametrize("name,content,words", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_site_entry_is_skipped_and_the_oom_still_found(isolated, name, content, words):
    site = isolated / "site"
    site.mkdir()
    (site / name).write_bytes(content)
    (site / "good.yaml").write_text(entry_yaml("good", "SITE_GOOD_MARKER"))
    kb = load_knowledge_base([site])
    mine = [p for p in kb.problems if p.file.endswith(name)]
    assert len(mine) == 1 and words in mine[0].message and mine[0].line >= 1, kb.problems
    assert Path(name).stem not in {e.id for e in kb.entries} and kb.get("good") is not None
    ids = [f.id for f in diagnose_text(OOM_LOG + "SITE_GOOD_MARKER\n", kb).findings]
    assert "cuda-oom" in ids and "good" in ids


def test_a_signature_only_hyperscan_rejects_is_skipped_not_a_crash(isolated):
    pytest.importorskip("hyperscan")
    site = isolated / "site"
    site.mkdir()
    (site / "hs.yaml").write_text(entry_yaml("hs", "x").replace('literal: "x"', "regex: 'SITE_HS$MARKER'"))
    kb = load_knowledge_base([site])
    [problem] = [p for p in kb.problems if p.file.endswith("hs.yaml")]
    assert problem.line == 7 and "rejected by the scanner" in problem.message
    assert [f.id for f in diagnose_text(OOM_LOG, kb).findings][0] == "cuda-oom"


def test_site_file_broken_or_list_shaped_and_duplicate_ids(isolated):
    for n, site_text in enumerate(("placeholders:\n\tgpu_partition: [\n", "- a\n- b\n")):
        site = isolated / f"site{n}"
        (site / "a").mkdir(parents=True)
        (site / "b").mkdir()
        (site / "_site.yaml").write_text(site_text)
        (site / "a" / "dup.yaml").write_text(entry_yaml("dup", "SITE_DUP_A"))
        (site / "b" / "dup.yaml").write_text(entry_yaml("dup", "SITE_DUP_B"))
        kb = load_knowledge_base([site])
        assert len([p for p in kb.problems if p.file.endswith("_site.yaml")]) == 1
        [dup] = [p for p in kb.problems if "duplicate id" in p.message]
        assert dup.file == str(site / "b" / "dup.yaml") and dup.line == 1
        assert kb.site["gpu_partition"] == "gpu"  # the bundled placeholders still hold
        assert [f.id for f in diagnose_text(OOM_LOG, kb).findings][0] == "cuda-oom"


def test_site_entry_with_a_bundled_id_replaces_it(isolated):
    site = isolated / "site"
    site.mkdir()
    (site / "cuda-oom.yaml").write_text(entry_yaml("cuda-oom", "SITE_OWN_OOM_MARKER"))
    kb = load_knowledge_base([site], strict=True)
    assert kb.get("cuda-oom").path == str(site / "cuda-oom.yaml")
    r = run_cli("kb", "validate", "--no-examples", site, env={"XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"]})
    assert r.returncode == 0 and "warning: replaces the bundled entry 'cuda-oom'" in r.stdout.decode()


def test_cli_reports_each_hostile_entry_once_and_still_diagnoses(isolated):
    site = isolated / "site"
    site.mkdir()
    for name, content, _ in HOSTILE:
        (site / name).write_bytes(content)
    (site / "_site.yaml").write_text("- not\n- a mapping\n")
    log = isolated / "slurm-1.out"
    log.write_text(OOM_LOG)
    env = {"XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"], "TROUBLESHOOT_KB": ""}
    for _ in range(2):  # the second run reads the cache and must say the same
        r = run_cli("--json", "--kb", site, log, env=env)
        err = r.stderr.decode()
        assert r.returncode == 1 and "Traceback" not in err, err
        assert json.loads(r.stdout)["findings"][0]["id"] == "cuda-oom"
        for name, _, words in HOSTILE + [("_site.yaml", b"", "placeholders")]:
            lines = _problem_lines(err, str(site / name))
            assert len(lines) == 1 and words in lines[0], (name, err)
    r = run_cli("kb", "validate", "--no-examples", site, env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr.decode()


def test_kb_validate_warns_about_a_prefix_signature_without_failing(isolated):
    site = isolated / "site"
    site.mkdir()
    (site / "wrapped.yaml").write_text(entry_yaml("wrapped", "Invalid generic resource (gres) specification").replace(
        "    weight: 1.0\n", "    weight: 1.0\n  - literal: \"Invalid generic resource\"\n    weight: 0.9\n", 1))
    r = run_cli("kb", "validate", "--no-examples", site, env={"XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"]})
    out = r.stdout.decode()
    assert r.returncode == 0, out + r.stderr.decode()
    assert f"{site / 'wrapped.yaml'}:9: warning: signatures[2] ('Invalid generic resource') is a prefix of signatures[1]" in out
    assert "1 warning(s)" in out


def test_the_prefix_warning_is_not_quadratic_in_the_signatures():
    # every pair was compared: 5,000 signatures took 6 s, 20,000 about 100 s of `kb validate`
    import re
    import threading

    from gpu_troubleshooter.model import Entry, Signature
    from gpu_troubleshooter.validate import prefix_warnings
    texts = [f"MYSITE_HUGE_{i:05d} failure code {i}" for i in range(20_000)] + ["MYSITE_HUGE_00042 failure"]
    entry = Entry(id="huge", path="/site/huge.yaml",
                  signatures=tuple(Signature(re.escape(t), 0.9, False, line=n) for n, t in enumerate(texts, 7)))
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("out", prefix_warnings(entry)), daemon=True)
    worker.start()
    worker.join(20)
    assert "out" in box, "prefix_warnings still running after 20 s"
    [warning] = box["out"]
    assert warning.line == 20_007 and "signatures[20001] ('MYSITE_HUGE_00042 failure') is a prefix of signatures[43]" \
        in warning.message


def test_bundled_entries_skip_the_re2_compile_at_run_time_but_kb_validate_checks_them(isolated, monkeypatch):
    from gpu_troubleshooter import knowledge
    fake_bundled = isolated / "bundled"
    fake_bundled.mkdir()
    (fake_bundled / "shipped.yaml").write_text(entry_yaml("shipped", "x").replace('literal: "x"', "regex: 'SHIP(?#c)PED'"))
    monkeypatch.setattr(knowledge, "bundled_dir", lambda: fake_bundled)
    assert knowledge.load_knowledge_base(strict=True).get("shipped") is not None
    by_id, problems = knowledge.collect(full=True)
    assert "shipped" not in by_id and [p.line for p in problems if "RE2" in p.message] == [7]


def test_only_a_bundled_entry_skips_the_regex_checks(isolated):
    """A bundled entry's regexes were checked by `kb validate` before release, so a
    normal load skips that (a third of a cold start); a site entry never does."""
    path = isolated / "nested-sig.yaml"
    path.write_text(entry_yaml("nested-sig", "x").replace('literal: "x"', "regex: '(SITE_NEST+)+Y'"))
    entry, problems = parse_entry(path, trusted=True)
    assert entry is not None and problems == []
    entry, problems = parse_entry(path)
    assert entry is None and ["nested unbounded repeat" in p.message for p in problems] == [True]


def test_kb_validate_warns_when_a_yaml_comment_cuts_a_title(isolated):
    """`title: Make #!/bin/bash the first line` loads as "Make": YAML reads " #" as a comment."""
    from gpu_troubleshooter.validate import comment_in_prose_warnings
    path = isolated / "cut.yaml"
    path.write_text(entry_yaml("cut", "SITE_CUT", fixes="fixes:\n  - title: Make #!/bin/bash the first line\n"
                                                       "  - title: \"Quoted #!/bin/bash is whole\"\n"
                                                       "  - {title: Keep it, text: 'Run it # twice'}\n"))
    assert [(p.line, p.warning) for p in comment_in_prose_warnings(path)] == [(11, True)]  # the first fix only
    assert "put the value in quotes" in comment_in_prose_warnings(path)[0].message
