"""Issue 9 section 4, the rest of the review's section 6: fact-rule notes translated, the --full
output's own words in the reader's language, the fields that fell back named in the JSON,
`default_lang` / `lang_fallbacks` from _site.yaml, and Serbian Cyrillic by transliteration."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from pathlib import Path

from gpu_troubleshooter import i18n
from gpu_troubleshooter.facts import SITE_SETTINGS, apply_fact_rules
from gpu_troubleshooter.i18n import (CYRILLIC, check_translation, choose_language, fallback_chain, negotiate,
                                     source_hash, to_cyrillic, translate_entry, translation_path)
from gpu_troubleshooter.knowledge import bundled_dir, entry_files, load_knowledge_base
from gpu_troubleshooter.render import LABELS, Style, human
from gpu_troubleshooter.view import entry_view

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.15 GiB of which 1.20 GiB is free.\n")
ROOT = Path(__file__).resolve().parents[1]
CONTAINER_FACTS = {"env": {"container": {"runtime": "apptainer", "gpus_passed": False}},
                   "gpu": {"driver_loaded": True}}


@pytest.fixture(scope="module")
def kb():
    return load_knowledge_base()


def cli(*args, env=None, stdin=None):
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("LANG", "LC_ALL", "LC_MESSAGES", "LANGUAGE", "TROUBLESHOOT_LANG")}
    full_env.update(env or {}, COLUMNS="100")
    return subprocess.run([sys.executable, "-m", "gpu_troubleshooter.cli", *args], capture_output=True,
                          text=True, env=full_env, input=stdin, timeout=120)


# --- fact-rule notes ----------------------------------------------------------------

def _container_view(kb, lang):
    entry = kb.get("container-no-gpu")
    outcome = apply_fact_rules([r.as_rule() for r in entry.rules], CONTAINER_FACTS)
    assert outcome.alone_by, "the container rule must fire for these facts"
    return entry_view(entry, lang, kb.site, confirmed_by=tuple(outcome.alone_by))


@pytest.mark.parametrize("lang,word", [("hr", "domaćin"), ("sr", "host ima"), ("ko", "호스트")])
def test_fact_notes_are_shown_in_the_readers_language(kb, lang, word):
    english = _container_view(kb, "en").confirmed_by[0]
    view = _container_view(kb, lang)
    line = view.confirmed_by[0]
    assert word in line and "passed into the container" not in line
    # the facts themselves (path = value) are never translated, only the note in brackets
    assert line.split(" (")[0] == english.split(" (")[0]
    assert not [f for f in view.fallback_fields if f.startswith("facts.")]


def test_a_stale_fact_note_falls_back_to_english_and_is_named(tmp_path, kb):
    src = next(p for p in entry_files(bundled_dir()) if p.stem == "container-no-gpu")
    site = tmp_path / "containers"
    site.mkdir()
    text = src.read_text(encoding="utf-8")
    old = "note: the host has the NVIDIA driver but no /dev/nvidia* device was passed into the container"
    assert old in text
    (site / src.name).write_text(text.replace(old, old + " (changed)"), encoding="utf-8")
    shutil.copytree(src.with_suffix("") / "i18n", site / src.stem / "i18n")
    local = load_knowledge_base(extra_dirs=(str(tmp_path),), bundled=False)
    view = _container_view(local, "hr")
    assert view.confirmed_by[0].endswith("(changed))") and "facts.confirmed_by[0]" in view.fallback_fields
    warnings = check_translation(yaml.safe_load((site / src.name).read_text()), site / src.stem / "i18n" / "hr.yaml")
    assert any("facts[1]" in w.message and "stale" in w.message for w in warnings), warnings


def test_a_fact_note_translation_keeps_the_placeholders(tmp_path):
    entry = {"id": "x", "title": "T", "summary": "S", "causes": [], "fixes": [],
             "facts": [{"when": {"fact": "gpu.count", "gt": 0}, "effect": "confirms",
                        "note": "the job sees `nvidia-smi` on {site.gpu_partition}"}]}
    note = entry["facts"][0]["note"]
    path = tmp_path / "x" / "i18n" / "hr.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump({"facts": [{"src": source_hash(note), "text": "posao vidi nvidia-smi na {site.x}"}]}),
                    encoding="utf-8")
    msgs = " | ".join(str(w) for w in check_translation(entry, path))
    assert "facts[1].note: placeholders differ" in msgs and "facts[1].note: `code` spans differ" in msgs
    t = translate_entry(entry, tmp_path / "x.yaml", "hr")
    assert t.notes == ["posao vidi nvidia-smi na {site.x}"] and "facts[0].note" not in t.fell_back


def test_i18n_write_round_trips_fact_notes(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import i18n_write
    finally:
        sys.path.pop(0)
    entry = yaml.safe_load(next(p for p in entry_files(bundled_dir()) if p.stem == "container-no-gpu").read_text())
    draft = yaml.safe_load(i18n_write.draft("container-no-gpu"))
    assert not any(str(n).startswith("TODO") for n in draft["hr"]["facts"])
    built = i18n_write.build(entry, draft, "hr")
    assert [f["src"] for f in built["facts"]] == [source_hash(r["note"]) for r in entry["facts"] if r.get("note")]
    draft["hr"]["facts"] = draft["hr"]["facts"][:1]
    with pytest.raises(SystemExit, match="fact notes"):
        i18n_write.build(entry, draft, "hr")


def test_i18n_write_drafts_a_conditional_cause_with_its_english(tmp_path):
    """A cause written {text, when} shows its English in a stale draft (it showed 'TODO: ')."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import i18n_write
    finally:
        sys.path.pop(0)
    entry = yaml.safe_load(next(p for p in entry_files(bundled_dir()) if p.stem == "python-module-missing").read_text())
    conditional = next(c for c in entry["causes"] if isinstance(c, dict) and "when" in c)
    assert i18n_write._en(conditional) == " ".join(conditional["text"].split())


# --- the message catalog -----------------------------------------------------------

def _fields(text):
    return sorted(re.findall(r"\{[a-z_]+\}", text)), sorted(re.findall(r"`[^`]+`", text))


@pytest.mark.parametrize("lang", ["hr", "sr", "ko"])
def test_the_catalog_is_whole_in_every_language_with_the_same_placeholders(lang):
    assert set(LABELS[lang]) == set(LABELS["en"])
    for key, english in LABELS["en"].items():
        assert _fields(LABELS[lang][key]) == _fields(english), (lang, key)
        words = r"\{[^}]*\}|`[^`]*`|troubleshoot[ a-z-]*"
        if lang == "ko" and re.search(r"[a-z]{3}", re.sub(words, "", english)) and re.search(
                r"\w", re.sub(words, "", LABELS[lang][key])):   # "{url}" alone has nothing to translate
            assert re.search(r"[\uac00-\ud7a3]", LABELS[lang][key]), (key, LABELS[lang][key])


@pytest.mark.parametrize("lang", ["hr", "sr", "ko", CYRILLIC])
def test_full_output_headings_are_in_the_readers_language(kb, lang):
    text = OOM + "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    from gpu_troubleshooter.engine import diagnose_text
    diagnosis = diagnose_text(text, kb, facts=None)
    out = human(diagnosis, Style(False), lang, full=True)
    for english in ("How to fix it:", "Why this happens:", "Evidence:", "Also found (probably", "confidence ",
                    " at line "):
        assert english not in out, (english, out[:2000])
    assert "How to fix it:" in human(diagnosis, Style(False), "en", full=True)
    nothing = human(diagnose_text("all good\n", kb), Style(False), lang, full=True)
    assert "no known failure" not in nothing and "Nothing in this log" not in nothing
    assert "`troubleshoot probe --json`" in nothing
    tb = ('Traceback (most recent call last):\n  File "train.py", line 88, in step\n    x = a @ b\n'
          "ValueError: shapes (3,4) and (5,6) not aligned\n")
    keys = human(diagnose_text(tb, kb), Style(False), lang, full=True)
    assert "ValueError" in keys and "train.py:88" in keys and "Python raised" not in keys and "ended the job" not in keys
    assert "Python raised ValueError in your own code" in human(diagnose_text(tb, kb), Style(False), "en", full=True)


# --- fields that fell back ---------------------------------------------------------

def _partly_translated_kb(tmp_path):
    """cuda-oom with its summary and first fix changed in English: their translations are stale."""
    src = next(p for p in entry_files(bundled_dir()) if p.stem == "cuda-oom")
    entry = yaml.safe_load(src.read_text(encoding="utf-8"))
    entry["summary"] = entry["summary"] + " (Edited.)"
    entry["fixes"][0]["text"] = entry["fixes"][0]["text"] + "\nEdited.\n"
    site = tmp_path / "kb" / "pytorch"
    site.mkdir(parents=True)
    (site / "cuda-oom.yaml").write_text(yaml.safe_dump(entry, allow_unicode=True, sort_keys=False), encoding="utf-8")
    shutil.copytree(src.with_suffix("") / "i18n", site / "cuda-oom" / "i18n")
    return tmp_path / "kb", entry


def test_json_names_the_fields_that_fell_back(tmp_path):
    folder, entry = _partly_translated_kb(tmp_path)
    doc = json.loads(cli("-", "--json", "--kb", str(folder), "--lang", "hr", stdin=OOM).stdout)
    assert doc["schema"] == 1 and doc["lang"] == "hr"
    f = doc["findings"][0]
    assert f["id"] == "cuda-oom" and "summary" in f["fallback_fields"] and "title" not in f["fallback_fields"]
    fell_fixes = [int(x[6:-1]) for x in f["fallback_fields"] if x.startswith("fixes[")]
    assert len(fell_fixes) == 1 and f["fixes"][fell_fixes[0]]["title"] == entry["fixes"][0]["title"]
    assert f["summary"] == entry["summary"]                 # English, whole
    assert doc["fallback_fields"] == [f"cuda-oom:{x}" for x in f["fallback_fields"]]
    whole = json.loads(cli("-", "--json", "--lang", "hr", stdin=OOM).stdout)
    assert whole["findings"][0]["fallback_fields"] == [] and whole["fallback_fields"] == []
    english = json.loads(cli("-", "--json", "--lang", "en", stdin=OOM).stdout)
    assert english["fallback_fields"] == [] and english["findings"][0]["fallback_fields"] == []
    out = cli("-", "--kb", str(folder), "--lang", "hr", "--color", "never", stdin=OOM).stdout
    assert "Još nije prevedeno" in out and "summary" in out


# --- default_lang and lang_fallbacks -------------------------------------------------

def test_language_choice_order():
    site = {"default_lang": "hr"}
    assert choose_language(None, {}, site) == "hr"
    assert choose_language(None, {"LANG": "C.UTF-8"}, site) == "hr"              # C chooses no language
    assert choose_language(None, {"LANG": "en_US.UTF-8"}, site) == "en"          # an explicit English
    assert choose_language(None, {"LANG": "ko_KR.UTF-8"}, site) == "ko"
    assert choose_language(None, {"LC_MESSAGES": "sr_RS.UTF-8", "LANG": "ko_KR.UTF-8"}, site) == "sr"
    assert choose_language(None, {"LC_ALL": "ko_KR.UTF-8", "LC_MESSAGES": "sr_RS.UTF-8"}, site) == "ko"
    assert choose_language(None, {"TROUBLESHOOT_LANG": "sr", "LC_ALL": "ko_KR.UTF-8"}, site) == "sr"
    assert choose_language("ko", {"TROUBLESHOOT_LANG": "sr"}, site) == "ko"
    assert choose_language(None, {"LANG": "de_DE.UTF-8"}, site) == "hr"         # nothing fits: the default
    assert choose_language(None, {}, {}) == "en"


def test_lang_fallbacks_from_the_site():
    site = {"lang_fallbacks": {"hr": ["bs", "sr"], "sr": ["hr", "bs"], "bs": ["hr", "sr"]}}
    assert fallback_chain("hr", site) == ("hr", "bs", "sr", "en")
    assert fallback_chain("bs", site) == ("bs", "hr", "sr", "en")
    assert fallback_chain(CYRILLIC, site) == (CYRILLIC, "hr", "bs", "en")
    assert fallback_chain("hr") == ("hr", "sr", "en") and fallback_chain("ko", site) == ("ko", "en")
    assert choose_language("bs", {}, site) == "bs" and choose_language("bs", {}, {}) == "hr"


def _site_kb(tmp_path, body):
    folder = tmp_path / "site-kb"
    folder.mkdir()
    (folder / "_site.yaml").write_text("placeholders:\n" + body, encoding="utf-8")
    return folder


def test_site_default_lang_and_fallbacks_in_the_cli(tmp_path, kb):
    folder = _site_kb(tmp_path, "  default_lang: hr\n  lang_fallbacks: {hr: [bs, sr], sr: [hr, bs], bs: [hr, sr]}\n")
    loaded = load_knowledge_base(extra_dirs=(str(folder),))
    assert loaded.site["default_lang"] == "hr" and loaded.site["lang_fallbacks"]["bs"] == ["hr", "sr"]
    hr_title = translate_entry(yaml.safe_load(kb.get("cuda-oom").path and open(kb.get("cuda-oom").path).read()),
                               kb.get("cuda-oom").path, "hr").title
    doc = json.loads(cli("-", "--json", "--kb", str(folder), stdin=OOM).stdout)
    assert doc["lang"] == "hr" and doc["findings"][0]["title"] == hr_title
    doc = json.loads(cli("-", "--json", "--kb", str(folder), env={"LANG": "ko_KR.UTF-8"}, stdin=OOM).stdout)
    assert doc["lang"] == "ko"
    # Bosnian has no files of its own: every field comes from Croatian, and says so
    doc = json.loads(cli("-", "--json", "--kb", str(folder), "--lang", "bs_BA", stdin=OOM).stdout)
    f = doc["findings"][0]
    assert doc["lang"] == "bs" and f["title"] == hr_title and "title" in f["fallback_fields"]
    out = cli("-", "--kb", str(folder), "--lang", "bs", "--color", "never", stdin=OOM).stdout
    assert "Kako popraviti:" in out and "How to fix it" not in out     # the catalog falls back the same way
    # without the site, LANG=C stays English
    assert json.loads(cli("-", "--json", env={"LANG": "C"}, stdin=OOM).stdout)["lang"] == "en"


def test_language_site_settings_are_registered_and_documented():
    assert {"default_lang", "lang_fallbacks"} <= SITE_SETTINGS
    text = (bundled_dir() / "_site.yaml").read_text(encoding="utf-8")
    assert "# default_lang:" in text and "# lang_fallbacks: {hr: [bs, sr], sr: [hr, bs], bs: [hr, sr]}" in text
    docs = ROOT / "docs" / "translations.md"
    if docs.exists():
        assert "default_lang" in docs.read_text() and "lang_fallbacks" in docs.read_text()


# --- Serbian Cyrillic ------------------------------------------------------------------

def test_transliteration_of_loanwords_and_asides():
    # a foreign word keeps its letters and takes a Cyrillic case ending, as Serbian Cyrillic writes it
    assert to_cyrillic("u Docker-u i image-i") == "у Docker-у и image-и"
    # an aside in brackets: Serbian is transliterated, a quoted English message is not
    assert to_cyrillic("na nodu (job nije zatražio GPU)") == "на ноду (job није затражио GPU)"
    assert to_cyrillic("poruka (CUDA out of memory) ostaje") == "порука (CUDA out of memory) остаје"
    assert to_cyrillic("docker compose servis") == "docker compose сервис"
    # a quoted message with a slash keeps both its quotes: the prose after it is still Serbian
    # (cuda-driver-libcuda-mismatch's fix was left half in Latin)
    assert to_cyrillic('javlja "Driver/library version mismatch", drajver je ažuriran') == \
        'јавља "Driver/library version mismatch", драјвер је ажуриран'


def test_transliteration_is_letter_by_letter_with_digraphs():
    assert to_cyrillic("Ljudi njihov džep, čvor, šešir, žaba, ćup, đak") == "Људи њихов џеп, чвор, шешир, жаба, ћуп, ђак"
    assert to_cyrillic("LJUBAV") == "ЉУБАВ" or to_cyrillic("LJUBAV") == "LJUBAV"  # all caps reads as a name


@pytest.mark.parametrize("kept", ["`pip install torch --index-url https://x/whl/cu128`", "{site.gpu_partition}",
                                  "https://pytorch.org/get-started/", "/dev/shm", "--nv", "sm_80", "CUDA_VISIBLE_DEVICES",
                                  "GPU", "PyTorch", '"Permission denied"', "srun", "batch", "job-u", "(CUDA out of memory)",
                                  "np.float64", "module load", "nvidia.ko"])
def test_transliteration_never_touches_code_commands_placeholders_or_urls(kept):
    text = f"Pokrenite ovo na nodu: {kept} pa proverite Docker i izlaz."
    out = to_cyrillic(text)
    assert kept.replace("job-u", "job-") in out, out
    assert out.startswith("Покрените ово на ноду:") and "Docker" in out and "проверите" in out


def test_transliteration_is_deterministic_and_total_over_bundled_serbian():
    """Every Serbian text of the bundled translations: the same `code` spans, placeholders and
    URLs after transliteration, no Latin Serbian letters left outside them, and the same result twice."""
    latin_left = []
    for path in sorted(bundled_dir().rglob("i18n/sr.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        texts = [data.get("title", {}).get("text", ""), data.get("summary", {}).get("text", "")]
        texts += [c.get("text", "") for c in data.get("causes") or ()]
        for fx in data.get("fixes") or ():
            texts += [fx.get("title", {}).get("text", ""), (fx.get("text") or {}).get("text", "")]
        for t in texts:
            out = to_cyrillic(t)
            assert out == to_cyrillic(t)
            for pattern in (r"`[^`\n]+`", r"\{(?:site|value)\.[a-z_0-9]+\}", r"https?://\S+"):
                assert sorted(re.findall(pattern, t)) == sorted(re.findall(pattern, out)), (path, pattern)
            prose = re.sub(r"`[^`]*`|\([^()]*\)|\"[^\"]*\"|\S*[/\\_=@$~<>|#.:]\S*|\S*\d\S*", " ", out)
            latin_left += [w for w in re.findall(r"[čćđšž]\w*", prose)]
    assert not latin_left, latin_left[:20]


def test_cyrillic_locales_and_tags():
    assert negotiate("sr_RS.UTF-8@cyrillic") == CYRILLIC and negotiate("sr-Cyrl-RS") == CYRILLIC
    assert negotiate("sr_Cyrl") == CYRILLIC and negotiate("sr_RS.UTF-8@latin") == "sr"
    assert negotiate("sr-Latn") == "sr" and negotiate("de,sr-Cyrl;q=0.5") == CYRILLIC


def test_cli_in_serbian_cyrillic(kb):
    doc = json.loads(cli("-", "--json", env={"LANG": "sr_RS.UTF-8@cyrillic"}, stdin=OOM).stdout)
    sr = json.loads(cli("-", "--json", "--lang", "sr", stdin=OOM).stdout)
    f, s = doc["findings"][0], sr["findings"][0]
    assert doc["lang"] == CYRILLIC and f["title"] == to_cyrillic(s["title"]) != s["title"]
    assert re.search(r"[\u0400-\u04ff]", f["title"]) and f["fallback_fields"] == []
    assert [x.get("code") for x in f["fixes"]] == [x.get("code") for x in s["fixes"]]   # code untouched
    out = cli("-", "--lang", "sr-Cyrl", "--color", "never", stdin=OOM).stdout
    assert "Ко то решава:" in out and "Како поправити:" in out


def test_babel_is_still_lazy():
    # i18n itself imports no Babel: only negotiate() of a non-English tag does
    assert "from babel" not in open(i18n.__file__, encoding="utf-8").read().split("def negotiate")[0]


def test_translation_files_are_stored_for_hr_sr_ko_only():
    names = {p.name for p in bundled_dir().rglob("i18n/*.yaml")}
    assert names <= {"hr.yaml", "sr.yaml", "ko.yaml"}
    assert translation_path("knowledge/a/b.yaml", "hr").as_posix().endswith("a/b/i18n/hr.yaml")


def test_serbian_uses_the_serbian_guides_words():
    """The Serbian guide says "nod" and "job"; "čvor" is the Croatian word (docs/translations.md)."""
    croatian = [(p.parent.parent.name, line.strip()[:80]) for p in bundled_dir().rglob("i18n/sr.yaml")
                for line in p.read_text(encoding="utf-8").splitlines() if re.search(r"\bčvor", line, re.I)]
    assert not croatian, croatian[:5]


@pytest.mark.parametrize("kept", ["uint8", "bf16", "c10d", "nvidia-nccl-cu12", "nvidia-peermem", "flash-attn",
                                  "--hpx:localities", "yarn.nodemanager.vmem-pmem-ratio",
                                  "spark.executor.memory-overhead", "transformers", "peft", "true", "ulimit", "gdb", "queue pair"])
def test_transliteration_keeps_identifiers_with_digits_compounds_and_tool_names(kept):
    # the translation helpers found these turned into Cyrillic (уинт8, нвидиа-peermem, фласх-attn, труе)
    out = to_cyrillic(f"Proverite {kept} na nodu.")
    assert out == f"Проверите {kept} на ноду.", out


def test_transliteration_keeps_product_names_at_the_start_of_a_sentence():
    assert to_cyrillic("Slurm šalje signal. Slurmu treba vreme. Lightning pokreće procese.") == \
        "Slurm шаље сигнал. Slurmu треба време. Lightning покреће процесе."
    assert to_cyrillic("crno-beli ekran") == "црно-бели екран"      # a Serbian compound is still transliterated


def test_transliteration_of_subcommands_dotfiles_and_serbian_prefixes():
    assert to_cyrillic("pokrenite vllm serve i ray status") == "покрените vllm serve и ray status"
    assert to_cyrillic("u .bashrc dodajte red") == "у .bashrc додајте ред"
    # pre+hod and ko+ordinator are Serbian, not English th/oo
    assert to_cyrillic("prethodni koordinator") == "претходни координатор"
    # dd is English (embedding, padding, ddp) except across pod+ (poddirektorijum)
    assert to_cyrillic("embeddinga i padding u poddirektorijumu") == "embeddinga и padding у поддиректоријуму"


def test_transliteration_of_case_endings_quoted_words_and_the_last_sentence():
    # a Serbian ending on a foreign word is Cyrillic (GPU-ovima was left in Latin 44 times)
    assert to_cyrillic("na GPU-ovima i DMA-BUF") == "на GPU-овима и DMA-BUF"
    # only a real case ending is one: the tail of a tool's name stays (not nvidia-сми)
    assert to_cyrillic("pokreće nvidia-smi u Docker-u") == "покреће nvidia-smi у Docker-у"
    assert to_cyrillic("metod 'fork' ili 'forkserver'") == "метод 'fork' или 'forkserver'"
    # the sentence after a kept token ending in a full stop starts a sentence too
    assert to_cyrillic("pozovite MPI_Init. Instalacija radi") == "позовите MPI_Init. Инсталација ради"
    assert to_cyrillic("jax[cuda12] i mpi4py") == "jax[cuda12] и mpi4py"


def test_transliteration_keeps_vowelless_tool_names_but_not_serbian_words():
    # lmgrd and cdlmd came out as лмгрд and цдлмд in the license entries; tmpfs, nvrtc and pdsh alike
    assert to_cyrillic("lmgrd, cdlmd, tmpfs, nvrtc i pdsh na nodu") == "lmgrd, cdlmd, tmpfs, nvrtc и pdsh на ноду"
    # Serbian's own vowel-less words: prepositions, abbreviations, a syllabic r
    assert to_cyrillic("s GPU-om i k nodu, npr. tj. brz vrh") == "с GPU-ом и к ноду, нпр. тј. брз врх"
    assert to_cyrillic("svaka n-torka") == "свака н-торка"      # a single letter is not a tool name
    # a library's lib... name and the tool names the translations use in prose stay Latin
    assert to_cyrillic("libcudart i cudnn u venv; mdrun i ncu") == "libcudart и cudnn у venv; mdrun и ncu"
    assert to_cyrillic("biblioteka i liberalan") == "библиотека и либералан"   # a Serbian word is still one


def test_transliteration_keeps_english_spelled_words_and_quoted_messages():
    # "GPU build" came out as "GPU буилд" 192 times, "compute capability" as "цомпуте capability"
    assert to_cyrillic("GPU build napravljen sa CUDA runtime") == "GPU build направљен са CUDA runtime"
    assert to_cyrillic("buildujte paket, buildovan je") == "buildujte пакет, buildovan је"
    assert to_cyrillic("za compute capability 7.0") == "за compute capability 7.0"
    # a bracketed English message is kept whole, also without "the", "of", "not"...
    assert to_cyrillic("ne nalazi GPU (No compatible CUDA device)") == "не налази GPU (No compatible CUDA device)"
    assert to_cyrillic("novi protobuf (Descriptors cannot be created directly)") == \
        "нови protobuf (Descriptors cannot be created directly)"
    # a Serbian aside in brackets is still transliterated
    assert to_cyrillic("posao (na drugom nodu)") == "посао (на другом ноду)"


def test_transliteration_keeps_english_terms_of_the_same_field():
    # "Adam" came out as "Адам", "Kokkos" as "Коккос", "persistence mode" as "персистенце моде"
    assert to_cyrillic("Kokkos i runner ne rade sa Isaac ili drmaa") == "Kokkos и runner не раде са Isaac или drmaa"
    en = "Adam with a loader daemon: persistence is off"
    assert to_cyrillic("Adam sa loader daemon: persistence je isključen", en) == \
        "Adam са loader daemon: persistence је искључен"
    assert to_cyrillic("Adam sa loader", None) == "Адам са лоадер"       # without the English: as before
    # the English term written lowercase is the same term at the start of a Serbian sentence
    assert to_cyrillic("Segfault se javlja.", "a segfault in the worker") == "Segfault се јавља."
    # words Serbian shares with English are Serbian, also when the English has them
    en = "the model server on the login node: a kernel problem, one signal, data"
    assert to_cyrillic("model server na login nodu: kernel problem, one signal, data", en) == \
        "модел сервер на логин ноду: кернел проблем, оне сигнал, дата"
    # one- and two-letter words (a, i, u, to, on, se) are never taken for terms
    assert to_cyrillic("a to je on", "a to on") == "а то је он"
    # terms the translations use across fields (rank, fork, drain) stay Latin without the English too
    assert to_cyrillic("svaki rank, fork-ovao, u drain stanju") == "сваки rank, fork-ovao, у drain стању"
    # a case ending glued to a foreign word: the word stays Latin; Serbian words that end alike do not
    assert to_cyrillic("enginea, pipelinea, cgroupu, rankova i loaderom", "with the loader") == \
        "enginea, pipelinea, cgroupu, rankova и loaderom"
    assert to_cyrillic("deva, modela, platforma i maska", "the platform mask") == "дева, модела, платформа и маска"


def test_cyrillic_entry_keeps_the_terms_of_its_english_fields(kb):
    from gpu_troubleshooter.i18n import _english_terms
    assert "Adam" in _english_terms("use Adam") and "model" not in _english_terms("the model")
    assert _english_terms(None) == frozenset()
    path = kb.get("kokkos-cuda-arch-mismatch").path
    t = translate_entry(yaml.safe_load(open(path).read()), path, CYRILLIC)
    text = " ".join([t.title, t.summary] + t.causes + [f["text"] for f in t.fixes])
    assert "Kokkos" in text and "Коккос" not in text
