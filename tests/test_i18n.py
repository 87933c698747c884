"""Translations beside the entries: loading, per-field fallback, stale detection,
placeholder checks, locale negotiation, and that the bundled ones are current."""
import sys
from pathlib import Path

import pytest
import yaml

from gpu_troubleshooter import i18n
from gpu_troubleshooter.i18n import (check_translation, negotiate, source_hash, translate_entry,
                                     validate_translations)
from gpu_troubleshooter.knowledge import bundled_dir, entry_files

ENTRY = {
    "id": "demo", "title": "The GPU ran out of memory", "summary": "An allocation failed on {value.gpu}.",
    "causes": ["The batch is too large.", {"en": "Another process holds the GPU."}],
    "fixes": [
        {"title": "Make the batch smaller", "text": "Halve `batch_size` until it fits; it asked for {value.requested}.",
         "code": {"lang": "python", "text": "batch_size = 16\n"}},
        {"title": "Look at the GPU", "text": "Run nvidia-smi in the job."},
        {"title": "Only code", "code": {"lang": "bash", "text": "nvidia-smi\n"}},
    ],
}


def field(english, text):
    return {"src": source_hash(english), "text": text}


def write(tmp_path, lang, data):
    entry_path = tmp_path / "area" / "demo.yaml"
    entry_path.parent.mkdir(parents=True, exist_ok=True)
    entry_path.write_text(yaml.safe_dump(ENTRY), encoding="utf-8")
    out = tmp_path / "area" / "demo" / "i18n" / f"{lang}.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return entry_path, out


HR = {
    "title": field(ENTRY["title"], "GPU-u je ponestalo memorije"),
    "summary": field(ENTRY["summary"], "Alokacija na {value.gpu} nije uspjela."),
    "causes": [field(ENTRY["causes"][1], "Drugi proces zauzima GPU.")],
    "fixes": [{"title": field("Make the batch smaller", "Smanjite batch"),
               "text": field(ENTRY["fixes"][0]["text"], "Prepolovite `batch_size` dok ne stane; tražio je {value.requested}.")},
              {"title": field("Only code", "Samo kod")}],
}


def test_source_hash_ignores_wrapping_and_reads_en_maps():
    assert source_hash("a  b\nc") == source_hash("a b c") == source_hash({"en": "a b c"})
    assert source_hash("a b c") != source_hash("a b d") and len(source_hash("x")) == 12


def test_translation_loads_and_falls_back_per_field(tmp_path):
    entry_path, _ = write(tmp_path, "hr", HR)
    t = translate_entry(ENTRY, entry_path, "hr")
    assert t.title == "GPU-u je ponestalo memorije"
    assert t.causes == ["The batch is too large.", "Drugi proces zauzima GPU."]     # found by hash, not position
    assert t.fixes[0] == {"title": "Smanjite batch", "text": HR["fixes"][0]["text"]["text"], "lang": "hr"}
    assert t.fixes[1]["lang"] == "en" and t.fixes[2] == {"title": "Samo kod", "text": "", "lang": "hr"}
    assert "causes[0]" in t.fell_back and "fixes[1]" in t.fell_back and "title" not in t.fell_back
    # Serbian falls back to Croatian, field by field, then English
    s = translate_entry(ENTRY, entry_path, "sr")
    assert s.title == "GPU-u je ponestalo memorije" and "title" in s.fell_back and s.fixes[0]["lang"] == "hr"
    # Korean has no sibling: English
    k = translate_entry(ENTRY, entry_path, "ko")
    assert k.title == ENTRY["title"] and k.fixes[0]["lang"] == "en"
    assert translate_entry(ENTRY, entry_path, "en").fell_back == []


def test_never_mixes_languages_within_one_fix(tmp_path):
    data = dict(HR, fixes=[{"title": field("Make the batch smaller", "Smanjite batch"),
                            "text": field("an older English text", "Stari prijevod")}])
    entry_path, _ = write(tmp_path, "hr", data)
    fix = translate_entry(ENTRY, entry_path, "hr").fixes[0]
    assert fix == {"title": "Make the batch smaller", "text": ENTRY["fixes"][0]["text"], "lang": "en"}
    # sr has the whole fix: hr's half-stale fix does not block it
    write(tmp_path, "sr", {"fixes": [{"title": field("Make the batch smaller", "Smanjite batch (sr)"),
                                      "text": field(ENTRY["fixes"][0]["text"], "Prepolovite `batch_size`; {value.requested}.")}]})
    fix = translate_entry(ENTRY, entry_path, "hr").fixes[0]
    assert fix["lang"] == "sr" and fix["title"] == "Smanjite batch (sr)"


def test_stale_translation_is_reported_and_not_used(tmp_path):
    data = dict(HR, title={"src": source_hash("The old title"), "text": "Stari naslov"})
    entry_path, path = write(tmp_path, "hr", data)
    assert translate_entry(ENTRY, entry_path, "hr").title == ENTRY["title"]
    msgs = [str(w) for w in check_translation(ENTRY, path)]
    assert any("title: stale" in m for m in msgs), msgs
    assert all(":" in m.split(" warning")[0] for m in msgs)          # FILE:LINE
    assert [str(w) for w in validate_translations(tmp_path)] == msgs


def test_two_fixes_with_one_title_are_each_checked_against_their_own_text(tmp_path, monkeypatch):
    """The same advice for Slurm and for PBS shares its title; the text hash says which fix
    a translation is (cuda-driver-stub-library's 'Run it on a GPU node' was reported stale)."""
    slurm, pbs = "Ask for a GPU with `--gres=gpu:1`.", "Ask for a GPU with `-l select=1:ngpus=1`."
    entry = dict(ENTRY, fixes=[{"title": "Run it on a GPU node", "text": slurm},
                               {"title": "Run it on a GPU node", "text": pbs}])
    monkeypatch.setitem(globals(), "ENTRY", entry)
    data = {"fixes": [{"title": field("Run it on a GPU node", "Pokrenite na GPU čvoru"),
                       "text": field(slurm, "Zatražite GPU s `--gres=gpu:1`.")},
                      {"title": field("Run it on a GPU node", "Pokrenite na GPU čvoru"),
                       "text": field(pbs, "Zatražite GPU s `-l select=1:ngpus=1`.")}]}
    entry_path, path = write(tmp_path, "hr", data)
    assert [str(w) for w in check_translation(entry, path)] == []
    fixes = translate_entry(entry, entry_path, "hr").fixes
    assert [f["text"] for f in fixes] == [d["text"]["text"] for d in data["fixes"]]
    # a text that matches neither English fix is still stale
    data["fixes"][1]["text"] = field("an older PBS text", "Stari tekst")
    _, path = write(tmp_path, "hr", data)
    assert any("fixes[2].text: stale" in str(w) for w in check_translation(entry, path))


def test_an_unquoted_all_digit_src_is_named_as_such_not_as_stale(tmp_path):
    data = dict(HR, title={"src": 355571111306, "text": "Naslov"})   # what YAML makes of src: 355571111306
    _, path = write(tmp_path, "hr", data)
    msgs = [str(w) for w in check_translation(ENTRY, path)]
    assert any("src must be a quoted string" in m for m in msgs) and not any("stale" in m for m in msgs), msgs


def test_placeholder_code_span_and_unknown_field_warnings(tmp_path):
    data = {"title": field(ENTRY["title"], "Naslov"), "summary": field(ENTRY["summary"], "Alokacija nije uspjela."),
            "fixes": [{"title": field("Make the batch smaller", "Smanjite batch"),
                       "text": field(ENTRY["fixes"][0]["text"], "Prepolovite batch; {value.requested}."),
                       "code": "batch_size = 16"}, {"title": field("Make the batch smaller", "x"),
                                                    "text": field(ENTRY["fixes"][0]["text"], "`batch_size` {value.reqested}")}],
            "signatures": ["x"]}
    _, path = write(tmp_path, "hr", data)
    msgs = " | ".join(str(w) for w in check_translation(ENTRY, path))
    assert "summary: placeholders differ" in msgs
    assert "fixes[1]: unknown field" in msgs
    assert "fixes[2].text: placeholders differ" in msgs
    assert "unknown field 'signatures'" in msgs
    _, path = write(tmp_path, "hr", {"fixes": [{"title": field("Make the batch smaller", "x"),
                                                "text": field(ENTRY["fixes"][0]["text"], "Prepolovite batch {value.requested}")}]})
    assert "`code` spans differ" in " ".join(map(str, check_translation(ENTRY, path)))


def test_negotiate():
    assert negotiate("hr") == "hr" and negotiate("sr_Latn_RS") == "sr" and negotiate("sr-Latn") == "sr"
    assert negotiate("ko_KR.UTF-8") == "ko" and negotiate("bs_BA") == "hr"
    assert negotiate("de-DE,de;q=0.9,hr;q=0.8") == "hr" and negotiate("fr,ko;q=0.5") == "ko"
    assert negotiate("de_DE") == "en" and negotiate("") == "en" and negotiate("C") == "en" and negotiate(None) == "en"


def test_english_never_imports_babel(monkeypatch):
    monkeypatch.delitem(sys.modules, "babel", raising=False)
    for name in [m for m in sys.modules if m.startswith("babel.")]:
        monkeypatch.delitem(sys.modules, name)
    assert negotiate("en_US.UTF-8") == "en" and negotiate(["en", "C"]) == "en"
    assert "babel" not in sys.modules
    negotiate("hr_HR")
    assert "babel" in sys.modules


# --- the bundled translations --------------------------------------------------

BUNDLED = sorted(bundled_dir().rglob("i18n/*.yaml"))


def test_bundled_translations_are_current_and_clean():
    warnings = validate_translations(bundled_dir())
    assert warnings == [], "\n".join(map(str, warnings[:20]))


def test_translations_are_not_loaded_as_entries():
    assert not [p for p in entry_files(bundled_dir()) if "i18n" in p.relative_to(bundled_dir()).parts]


@pytest.mark.parametrize("lang", ["hr", "sr", "ko"])
def test_every_bundled_entry_has_a_translated_title(lang):
    if not BUNDLED:
        pytest.skip("no bundled translations yet")
    missing = []
    for path in entry_files(bundled_dir()):
        entry = yaml.safe_load(path.read_text(encoding="utf-8"))
        t = translate_entry(entry, path, lang)
        if "title" in t.fell_back:
            missing.append(entry["id"])
    assert not missing, missing


def test_bundled_translations_keep_versions_and_sizes():
    """Every multi-digit number or version of the English (driver 525.60.13, CUDA 12.8, 64 MB,
    29500) appears in the translation too: a cheap check that no figure was lost or altered."""
    import collections
    import re
    number = re.compile(r"\d+(?:\.\d+)+|\d{2,}")
    lost = []
    for path in entry_files(bundled_dir()):
        entry = yaml.safe_load(path.read_text(encoding="utf-8"))
        english = [entry["title"], entry["summary"], *entry["causes"]]
        for lang in ("hr", "sr", "ko"):
            t = translate_entry(entry, path, lang)
            texts = [t.title, t.summary, *t.causes]
            pairs = list(zip(english, texts))
            for fix, tf in zip(entry["fixes"], t.fixes):
                pairs += [(fix["title"], tf["title"]), (fix.get("text", ""), tf["text"])]
            for en, tr in pairs:
                missing = collections.Counter(number.findall(i18n._english(en))) - collections.Counter(number.findall(tr))
                if missing:
                    lost.append((entry["id"], lang, dict(missing)))
    assert not lost, lost[:10]


def test_kb_validate_reports_a_stale_translation_as_a_warning(tmp_path):
    import shutil
    from gpu_troubleshooter.validate import validate
    src = next(p for p in entry_files(bundled_dir()) if p.stem == "dist-port-in-use")
    site = tmp_path / "site" / "distributed"
    site.mkdir(parents=True)
    text = src.read_text(encoding="utf-8")
    (site / src.name).write_text(text.replace("title: The distributed rendezvous port is already in use",
                                              "title: The rendezvous port is taken"), encoding="utf-8")
    shutil.copytree(src.with_suffix("") / "i18n", site / "dist-port-in-use" / "i18n")
    problems, _ = validate(str(tmp_path / "site"), check_examples=False)
    stale = [p for p in problems if "stale" in p.message]
    assert stale and all(p.warning for p in stale), [str(p) for p in problems]
    assert {Path(p.file).name for p in stale} == {"hr.yaml", "sr.yaml", "ko.yaml"}
    assert not [p for p in problems if not p.warning and "i18n" in p.file]


def test_localise_a_model_entry_for_the_renderer():
    from gpu_troubleshooter.i18n import localise_entry
    from gpu_troubleshooter.knowledge import load_knowledge_base
    entry = next(e for e in load_knowledge_base().entries if e.id == "cuda-oom")
    hr = localise_entry(entry, "hr")
    assert hr.title.get("hr").startswith("GPU-u je ponestalo memorije") and hr.title.get("en") == entry.title.get("en")
    assert hr.fixes[0].title.get("hr") != entry.fixes[0].title.get("en")
    assert hr.fixes[0].code == entry.fixes[0].code and hr.fixes[0].when == entry.fixes[0].when
    assert localise_entry(entry, "sr").causes[0].get("sr").startswith("Job-u treba")
    assert localise_entry(entry, "ko").summary.get("ko").startswith("장치에")
    assert localise_entry(entry, "en") is entry and localise_entry(entry, "de") is entry


def test_troubleshoot_lang_wins_over_a_site_forced_lang(monkeypatch):
    # Sites often force LANG=en_US.UTF-8 in their profiles; TROUBLESHOOT_LANG changes only our answers.
    from gpu_troubleshooter.cli import _language
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.setenv("TROUBLESHOOT_LANG", "hr")
    assert _language(None) == "hr"
    assert _language("ko") == "ko"  # --lang still wins
    monkeypatch.delenv("TROUBLESHOOT_LANG")
    assert _language(None) == "en"
