"""Translations of knowledge-base entries: sidecar files, per-field fallback, staleness.

A translation lives beside its entry, one file per language::

    knowledge/<area>/<id>/i18n/<lang>.yaml        (hr, sr = Serbian in Latin script, ko)

It translates the prose a user reads (title, summary, causes, fix titles and fix
texts, the notes of fact rules), never code, commands, signatures or values. Every translated field stores
``src``, a hash of the English text it was made from::

    title: {src: 3f2a9c0b1d4e, text: "GPU-u je ponestalo memorije (CUDA out of memory)"}
    causes:
      - {src: 9b1c..., text: "..."}
    fixes:
      - title: {src: ..., text: "..."}
        text: {src: ..., text: "..."}
    facts:                      # the `note` of each fact rule that has one
      - {src: ..., text: "..."}

A field is used only while its ``src`` matches the current English text, so an
English change marks the translation stale (``kb validate`` warns) and readers
get English until it is translated again. Causes and fixes are found by the hash
of their English text, not by position, so reordering the English keeps them.

Fallback is per field: sr -> hr -> en and hr -> sr -> en (the languages are
mutually intelligible), ko -> en; a site may set its own siblings in _site.yaml
(``lang_fallbacks: {hr: [bs, sr], sr: [hr, bs], bs: [hr, sr]}``). A fix is shown
wholly in one language: if its title or its text has no current translation in a
language, the next language is tried for the whole fix, and finally English.

Serbian in Cyrillic script (``sr-Cyrl``; locales ``sr_RS.UTF-8@cyrillic``,
``sr-Cyrl-RS``) is not stored: it is the Serbian Latin text transliterated letter by
letter (``to_cyrillic``), leaving `code` spans, placeholders, URLs, paths, options
and foreign names (GPU, PyTorch, Docker) in Latin script.

Locale negotiation uses Babel, imported only when a non-English language is asked.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from dataclasses import field as _dc_field
from functools import lru_cache
from pathlib import Path

import yaml

__all__ = ["LANGUAGES", "FALLBACK", "CYRILLIC", "source_hash", "translation_path", "load_translation",
           "translate_entry", "localise_entry", "negotiate", "choose_language", "fallback_chain", "to_cyrillic",
           "validate_translations", "Warning_"]

CYRILLIC = "sr-Cyrl"      # generated from "sr" by transliteration, never stored
LANGUAGES = ("en", "hr", "sr", "ko", CYRILLIC)
STORED = ("hr", "sr", "ko")   # the languages with translation files
FALLBACK = {"en": ("en",), "hr": ("hr", "sr", "en"), "sr": ("sr", "hr", "en"), "ko": ("ko", "en"),
            CYRILLIC: (CYRILLIC, "hr", "en"),
            "bs": ("bs", "hr", "sr", "en")}   # Bosnian: asked for only where a site lists it in lang_fallbacks
_PLACEHOLDER = re.compile(r"\{(?:site|value)\.[A-Za-z0-9_]+\}")
_CODE_SPAN = re.compile(r"`[^`\n]+`")
_FIELD_KEYS = {"src", "text"}
_TOP_KEYS = {"title", "summary", "causes", "fixes", "facts"}
_FIX_KEYS = {"title", "text"}


def _english(text) -> str:
    if isinstance(text, dict) and "text" in text and "when" in text and "en" not in text:
        text = text["text"]  # a cause with a condition, {text, when}: its text is what is translated
    if isinstance(text, dict):
        text = text.get("en", "")
    elif hasattr(text, "by_lang"):  # model.Text
        text = text.get("en")
    return text if isinstance(text, str) else ""


def source_hash(text) -> str:
    """12 hex characters of the SHA-1 of an English text, whitespace-normalised (so a
    re-wrapped paragraph is not stale)."""
    norm = " ".join(_english(text).split())
    return hashlib.sha1(norm.encode("utf-8")).hexdigest()[:12]


def translation_path(entry_path, lang) -> Path:
    """knowledge/<area>/<id>.yaml -> knowledge/<area>/<id>/i18n/<lang>.yaml"""
    return Path(entry_path).with_suffix("") / "i18n" / f"{lang}.yaml"


@lru_cache(maxsize=512)
def _load(path: str, mtime: float):
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    return data if isinstance(data, dict) else {}


def load_translation(entry_path, lang) -> dict:
    """The parsed translation file of an entry for a language; {} if there is none or it is unreadable."""
    path = translation_path(entry_path, lang)
    try:
        return _load(str(path), path.stat().st_mtime)
    except (OSError, yaml.YAMLError):
        return {}


def _field_text(field, english):
    """The translated text of a {src, text} field if it is current for this English text."""
    if isinstance(field, dict) and isinstance(field.get("text"), str) and field.get("src") == source_hash(english):
        return field["text"]
    return None


def _by_src(items, english):
    h = source_hash(english)
    for item in items or ():
        if isinstance(item, dict) and item.get("src") == h and isinstance(item.get("text"), str):
            return item["text"]
    return None


def _fix_translation(fixes, fix):
    """(title, text) of one fix in one language, or None when not wholly current."""
    title_h = source_hash(fix.get("title"))
    for t in fixes or ():
        if not isinstance(t, dict) or not isinstance(t.get("title"), dict) or t["title"].get("src") != title_h:
            continue
        title = _field_text(t["title"], fix.get("title"))
        if title is None:
            continue
        if _english(fix.get("text")).strip():
            text = _field_text(t.get("text"), fix.get("text"))
            if text is None:
                continue  # never a translated title over an English text
        else:
            text = ""
        return title, text
    return None


# ---------------------------------------------------------------------------
# Serbian Cyrillic, by transliteration of the Serbian Latin text

_LAT2CYR = {"lj": "љ", "nj": "њ", "dž": "џ", "a": "а", "b": "б", "c": "ц", "č": "ч", "ć": "ћ", "d": "д",
            "đ": "ђ", "e": "е", "f": "ф", "g": "г", "h": "х", "i": "и", "j": "ј", "k": "к", "l": "л",
            "m": "м", "n": "н", "o": "о", "p": "п", "r": "р", "s": "с", "š": "ш", "t": "т", "u": "у",
            "v": "в", "z": "з", "ž": "ж"}
# Never transliterated: `code`, {placeholders}, URLs, and words that are not Serbian: paths and
# options (/dev/shm, --nv, sm_80), dotted setting names also with hyphens
# (yarn.nodemanager.vmem-pmem-ratio), anything with a digit or a letter Serbian lacks (q w x y), and
# names written with inner capitals (GPU, PyTorch) or capitalised inside a sentence (Docker).
# A quoted message is tried before a path-like token: '"Driver/library version mismatch"' would
# otherwise lose its opening quote to the token, and the closing quote would pair with the next one.
_KEEP = re.compile(r"`[^`\n]*`|\{[^{}\n]*\}|[a-z][a-z0-9+.-]*://\S+|(?P<paren>\([^()`\n]*\))|\"[^\"\n]*\""
                   r"|(?<!\w)'[^'\s]{1,40}'(?!\w)|[^\s`]*[/\\_=@$~<>|#+][^\s`]*|\w+(?:\.\w+(?:-\w+)*)+|(?<![\w.])\.[A-Za-z]\w*(?:\.\w+)*|(?<![\w-])--?[A-Za-z][\w:-]*")
# commands and tools the translations name in prose without backticks
_COMMANDS = frozenset("""srun sbatch salloc squeue sacct scontrol sinfo qsub qstat qdel tracejob bsub bjobs bhist
pip conda mamba micromamba uv pixi python torchrun mpirun mpiexec apptainer singularity docker podman enroot
module ml spack nvcc ldd gcc cmake git ssh scp rsync vllm ray""".split())
# a command's subcommand stays with it: module load, pip install, conda activate
_SUBCOMMANDS = frozenset("load unload spider purge avail list install uninstall activate create run exec pull shell "
                         "compose build serve start status stop".split())
# a word may hold digits (uint8, bf16, cu12, c10d): it is then not Serbian and stays as written
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*|\S")
# lower-case technical words the translations use in prose without backticks: package, tool and
# value names (transformers, ulimit, true) and English jargon kept as is (queue pair, fault handler)
_TECH_WORDS = frozenset("""true false none null transformers peft accelerate datasets tokenizers diffusers
bitsandbytes deepspeed torch torchvision torchaudio numpy scipy pandas jax jaxlib triton vllm sglang nvidia
hostname ulimit slurmd slurmctld munge gdb sudo make ldconfig dmesg lsof wget curl tar unzip flash attn
pair completion fault handler peermem rendezvous localhost engine placement head actor
gpu cuda cli dev devel smi rocm amd apt get forge core driver intra op id mpi dask
cgroup cgroups cgroupfs venv virtualenv glibc submitit dorado guppy boltz protobuf protoc cudnn cublas cufft
cusolver cusparse cutensornet matmul mdrun mdout nvprof ncu ptrace safetensors ninja clang rocminfo clinfo
modulefile tritonserver slurmstepd slurmdbd scancel ncpus ngpus ngpu mpiprocs nvgpus gres afterok openib nvlink
nvfortran opencv opencl openmp openmpi openblas oneapi comgr amdgpu bash perl rclone gcsfuse fusermount runc
containerd udev initramfs mokutil dlopen argparse autograd importlib distutils distlib sdist sentencepiece
matplotlib tensorboard gradio numba decord spconv bioconda biocontainers anaconda rustup tzdata certifi orjson
setlocale fabricmanager prted orted mkdir pids nodev nosuid pushenv asdf imgaug dlib albumentations reticulate
distilabel cudarc flashinfer canu verl rank fork drain purge unscale demangle glob floating cordon bind trim
bond size mode
runtime compute device devices home site value image pipeline setup config resources distributed""".split())
# product names that keep their Latin letters also at the start of a sentence (Slurm, Lightning),
# with a short case ending too (Slurmu, Lightningom)
_NAMES = ("slurm", "lightning", "lustre", "trainer", "tesla", "ampere", "hopper", "blackwell", "volta", "turing",
          "kepler", "pascal", "maxwell", "docker", "apptainer", "singularity", "nextflow", "snakemake", "python",
          "triton", "dask", "jupyter", "conda", "linux", "ubuntu", "debian", "nvidia", "intel", "amd", "keras",
          "lmod", "spack", "horovod", "megatron", "deepspeed", "rust", "hub", "open", "torque", "grid")
# the case endings Serbian puts after a hyphen on a foreign word (GPU-ovima, Docker-u, image-i);
# any other lowercase tail is part of a name (nvidia-smi, flash-attn) and stays Latin
_CASE_ENDINGS = frozenset("a e i o u om em ju ja je ima ama ovi ova ove ovu ovo ovima ovom ovih ovog ovoj evi eva eve"
                          " evu evima evom ev ov jem jev jeva jevi jevo jevom jevim jevima in ina ine inu inom ovan ovani"
                          " ovana ovano uje ovati ovim evim jeve jevu jevog".split())
_SERBIAN = re.compile(r"[a-zčćđšžA-ZČĆĐŠŽ]+")
# A lowercase word of two or more letters without a vowel is a tool or library name (lmgrd,
# tmpfs, nvrtc, pdsh, fcntl), unless it is one of Serbian's own: abbreviations (npr., tj., tzv.)
# and words whose vowel is a syllabic r (brz, vrh, krv). Single letters (s, k, n-torka) are Serbian.
_VOWELLESS_SERBIAN = frozenset("npr tj tzv sl br st brz vrh krv prst crn trg srp smrt grm trn crv vrt čvrst "
                               "krst trk mrk srž vrš".split())


def _translit_word(word: str) -> str:
    out, i, low = [], 0, word.lower()
    while i < len(word):
        two = low[i:i + 2]
        if two in ("lj", "nj", "dž"):
            digraph = _LAT2CYR[two]
            out.append(digraph.upper() if word[i].isupper() else digraph)
            i += 2
            continue
        ch = word[i]
        letter = _LAT2CYR.get(ch.lower())
        out.append(ch if letter is None else (letter.upper() if ch.isupper() else letter))
        i += 1
    return "".join(out)


# English spellings Serbian Latin does not use (batch, checkpoint, stack, pipeline, free, Kokkos, runner,
# Isaac) and
# the English loanwords the seed guides keep in Latin script (job, jobovi).
# (Serbian pre+hod, ko+ordinator and pod+direktorijum join th, oo and dd across a prefix: prethodni,
# koordinator, poddirektorijum)
_ENGLISH = re.compile(r"ch|(?<!\bpre)th|ck|ph|(?<!\bk)oo|ee|ss|ll|tt|pp|ff|rr|mm|cc|gg|bb|kk|nn|aa|(?<!\bpo)dd|^job",
                      re.I)
# an aside in brackets with one of these is a quoted English message, kept as it is
_ENGLISH_WORDS = frozenset("the of an in is not for with and or at by from out was are see be cannot found failed "
                           "available compatible exceeded running".split())


# every word the lists above keep Latin, for the glued-ending test (one set, not a union per word)
_KNOWN_FOREIGN = _COMMANDS | _TECH_WORDS
# the case endings Serbian glues to a foreign word without a hyphen (enginea, loaderom, streamova)
_GLUED_ENDINGS = ("ovima", "ima", "ovi", "ova", "ove", "ovu", "ovom", "ovog", "om", "em", "a", "u", "e", "i")


def _stem(low: str, words) -> bool:
    """A foreign word of four or more letters with a Serbian case ending glued on (enginea, cgroupu)."""
    return any(low.endswith(e) and len(low) - len(e) >= 4 and low[:-len(e)] in words for e in _GLUED_ENDINGS)


def _foreign(word: str, sentence_start: bool) -> bool:
    if not _SERBIAN.fullmatch(word) or any(c in word.lower() for c in "qwxy") or _ENGLISH.search(word):
        return True
    low = word.lower()
    if low in _KNOWN_FOREIGN or _stem(low, _KNOWN_FOREIGN):
        return True                      # also with a case ending: enginea, pipelinea, cgroupu, sudoa
    if len(low) > 1 and not any(c in "aeiou" for c in low) and low not in _VOWELLESS_SERBIAN:
        return True                      # lmgrd, tmpfs, nvrtc: a name, not a Serbian word
    if low.startswith("lib") and len(low) > 4 and not low.startswith("liber"):
        return True                      # libcuda, libcudart, libfabric: a library's name
    if low.startswith("build"):
        return True                      # build, buildovan, buildujte: no Serbian word starts so
    if word[0].isupper() and any(low.startswith(n) and len(low) - len(n) <= 3 for n in _NAMES):
        return True                      # Slurm, Lightningom: a name also at the start of a sentence
    if any(c.isupper() for c in word[1:]):
        return True                      # GPU, CUDA, PyTorch, NCCL
    return word[0].isupper() and not sentence_start   # Docker, Apptainer, Slurm inside a sentence


# Words Serbian shares with English (Serbian words and loanwords written the Serbian way: model,
# server, kernel, problem, one, pre, data, bio): also when the English text of the same field has them
# they are Serbian and transliterated (see _english_terms).
_SHARED_WITH_ENGLISH = frozenset("""model login program server kernel folder plugin port task log host disk problem
token pod one signal target plus minus argument video test internet tag transport status adapter format link linker
import interpreter simulator generator terminal operator filter region gradient segment plan limit arena master
standard ligand element period minimum maximum portal protein atom alias slot ring pad min data time same meta start
restart reset optimum agent editor administrator parser manifest transfer barostat broker alarm super atlas rate
list fine grad dim bio interval laptop desktop pre top sud put bit sat tip tim set red most more let nit bar
sam ton dan kit instance minute profile platform mask norm monitor sigmoid form hosting""".split())


def _english_terms(english) -> frozenset:
    """The words of a field's English text that a Serbian translation writes the same way are terms
    (Adam, Kokkos, persistence, loader) and stay Latin, unless Serbian shares them (_SHARED_WITH_ENGLISH).
    Words of one or two letters (a, i, u, to, on, se) are never counted."""
    if not english:
        return frozenset()
    return frozenset(w for w in _SERBIAN.findall(english)
                     if len(w) > 2 and w.lower() not in _SHARED_WITH_ENGLISH)


def to_cyrillic(text: str, english: str | None = None) -> str:
    """Serbian Latin -> Serbian Cyrillic, deterministically: lj/nj/dž are one letter each,
    everything that is not Serbian prose stays as written (see _KEEP and _foreign). With the
    English text the Serbian translates, a word written the same in both stays Latin (_english_terms)."""
    return _to_cyrillic(text, _english_terms(english))


def _to_cyrillic(text: str, terms: frozenset) -> str:
    out, pos, start = [], 0, True
    for m in _KEEP.finditer(text):
        out.append(_translit_prose(text[pos:m.start()], start, terms))
        kept = m.group(0)
        if m.group("paren") and _mostly_serbian(kept[1:-1]):
            kept = "(" + _to_cyrillic(kept[1:-1], terms) + ")"   # a Serbian aside, not a quoted English message
        out.append(kept)
        start = kept.endswith((".", "!", "?", ":"))
        pos = m.end()
    out.append(_translit_prose(text[pos:], start, terms))
    return "".join(out)


def _mostly_serbian(text: str) -> bool:
    words = [w.lower() for w in _WORD.findall(text) if w[0].isalpha()]
    return not _ENGLISH_WORDS.intersection(words) and any(not _foreign(w, False) for w in words)


def _translit_prose(text: str, start: bool, terms: frozenset = frozenset()) -> str:
    out, pos, after_command = [], 0, False

    def foreign(piece: str) -> bool:
        # Segfault, Kubelet at the start of a sentence: the English term written lowercase
        low = piece[:1].lower() + piece[1:]
        return piece in terms or low in terms or _stem(low, terms) or _foreign(piece, start)

    for m in _WORD.finditer(text):
        out.append(text[pos:m.start()])
        word = m.group(0)
        if word[0].isalpha():
            parts = re.split(r"([-'])", word)
            pieces = parts[::2]
            # a Serbian case ending after a hyphen: GPU-ovima, Docker-u (not BUF in DMA-BUF, not attn)
            ending = len(pieces) > 1 and parts[-2] == "-" and pieces[-1] in _CASE_ENDINGS
            head = pieces[:-1] if ending else pieces
            foreign_head = len(pieces) > 1 and any(foreign(p) for p in head)
            if after_command and word.lower() in _SUBCOMMANDS:
                out.append(word)         # `module load`
            elif ending and (foreign_head or len(head) == 1):
                # a foreign word or compound with a Serbian case ending (image-i, Docker-a, GPU-ovima):
                # the word stays, the ending is Cyrillic
                out.append("".join(parts[:-1]) + _translit_word(pieces[-1]))
            elif foreign_head:
                out.append(word)         # a foreign compound (nvidia-peermem, DMA-BUF, flash-attn) stays
            else:
                out.append("".join(p if p in "-'" or foreign(p) else _translit_word(p) for p in parts))
            after_command = word.lower() in _COMMANDS
            start = False
        else:
            out.append(word)
            after_command = False
            if word in ".!?:":
                start = True
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def fallback_chain(lang: str, site=None) -> tuple:
    """The languages tried for one field, in order, ending in English: the language itself,
    then its siblings (the site's `lang_fallbacks` from _site.yaml, else FALLBACK), then en.
    sr-Cyrl is transliterated Serbian, then Serbian's own siblings (in Latin script)."""
    if lang == "en":
        return ("en",)
    if lang == CYRILLIC:
        return (CYRILLIC,) + tuple(c for c in fallback_chain("sr", site) if c != "sr")
    configured = (site or {}).get("lang_fallbacks") if isinstance(site, dict) else None
    siblings = configured.get(lang) if isinstance(configured, dict) else None
    if isinstance(siblings, str):
        siblings = siblings.replace(",", " ").split()
    if not isinstance(siblings, (list, tuple)):
        siblings = [c for c in FALLBACK.get(lang, (lang, "en")) if c not in (lang, "en")]
    chain = [lang] + [str(c) for c in siblings] + ["en"]
    return tuple(dict.fromkeys(chain))


def _file_for(entry_path, code):
    if code == "en":
        return {}
    return load_translation(entry_path, "sr" if code == CYRILLIC else code)


def _in(code, text, english=None):
    return to_cyrillic(text, _english(english)) if code == CYRILLIC and text else text


@dataclass
class Translated:
    """An entry's readable texts in the asked language, with the language each came from."""
    lang: str
    title: str
    summary: str
    causes: list
    fixes: list               # [{"title", "text", "lang"}] in the entry's fix order
    fell_back: list           # names of fields shown in another language than `lang`
    notes: list = _dc_field(default_factory=list)   # one per fact rule: its note in the reader's language, or None
    langs: dict = _dc_field(default_factory=dict)   # field name -> the language it is shown in


def translate_entry(entry_data: dict, entry_path, lang: str, chain=None) -> Translated:
    """The entry's title, summary, causes, fix prose and fact-rule notes in `lang`, field by
    field with fallback (`chain`, default fallback_chain(lang)); never a mix of languages within
    one fix. Code is not touched: callers keep each fix's `code` from the English entry."""
    chain = tuple(chain or fallback_chain(lang))
    files = {code: _file_for(entry_path, code) for code in chain}
    fell, langs = [], {}

    def pick(name, english, getter):
        for code in chain:
            if code == "en":
                break
            got = getter(files[code])
            if got:
                if code != lang:
                    fell.append(name)
                langs[name] = code
                return _in(code, got, english)
        if lang != "en":
            fell.append(name)
        langs[name] = "en"
        return _english(english)

    title = pick("title", entry_data.get("title"), lambda f: _field_text(f.get("title"), entry_data.get("title")))
    summary = pick("summary", entry_data.get("summary"),
                   lambda f: _field_text(f.get("summary"), entry_data.get("summary")))
    causes = [pick("causes[%d]" % i, c, lambda f, c=c: _by_src(f.get("causes"), c))
              for i, c in enumerate(entry_data.get("causes") or ())]
    fixes = []
    for i, fix in enumerate(entry_data.get("fixes") or ()):
        chosen = None
        for code in chain:
            if code == "en":
                break
            got = _fix_translation(files[code].get("fixes"), fix)
            if got:
                chosen = (_in(code, got[0], fix.get("title")), _in(code, got[1], fix.get("text")), code)
                break
        if chosen is None:
            chosen = (_english(fix.get("title")), _english(fix.get("text")), "en")
        if chosen[2] != lang and lang != "en":
            fell.append("fixes[%d]" % i)
        langs["fixes[%d]" % i] = chosen[2]
        fixes.append({"title": chosen[0], "text": chosen[1], "lang": chosen[2]})
    notes = []
    for i, rule in enumerate(entry_data.get("facts") or ()):
        note = rule.get("note") if isinstance(rule, dict) else getattr(rule, "note", None)
        notes.append(pick("facts[%d].note" % i, note, lambda f, n=note: _by_src(f.get("facts"), n))
                     if note else None)
    return Translated(lang=lang, title=title, summary=summary, causes=causes, fixes=fixes, fell_back=fell,
                      notes=notes, langs=langs)


def localise_entry(entry, lang: str, site=None, info=None):
    """A copy of a model.Entry whose title, summary, causes, fix texts and fact-rule notes also
    carry `lang` (``Text.get(lang)``), chosen by translate_entry's fallback: a Serbian reader may
    get a Croatian fix, but never a fix half in one language. English and unknown languages
    return the entry unchanged. Code blocks are never touched. `info`, a dict, receives the
    Translated result (which language each field came from)."""
    import dataclasses
    if lang == "en" or lang not in FALLBACK and not _site_language(lang, site):
        return entry
    data = {"title": entry.title, "summary": entry.summary, "causes": list(entry.causes),
            "fixes": [{"title": f.title, "text": f.text} for f in entry.fixes],
            "facts": [{"note": r.note} for r in entry.rules]}
    t = translate_entry(data, entry.path, lang, fallback_chain(lang, site))
    if info is not None:
        info["translated"] = t
    fixes = tuple(dataclasses.replace(f, title=f.title.with_language(lang, tf["title"]),
                                      text=f.text.with_language(lang, tf["text"]))
                  for f, tf in zip(entry.fixes, t.fixes))
    rules = tuple(dataclasses.replace(r, note=r.note.with_language(lang, n)) if r.note is not None and n else r
                  for r, n in zip(entry.rules, t.notes))
    return dataclasses.replace(entry, title=entry.title.with_language(lang, t.title),
                               summary=entry.summary.with_language(lang, t.summary),
                               causes=tuple(c.with_language(lang, tc) for c, tc in zip(entry.causes, t.causes)),
                               fixes=fixes, rules=rules)


def _site_language(lang, site):
    configured = (site or {}).get("lang_fallbacks") if isinstance(site, dict) else None
    return isinstance(configured, dict) and lang in configured


def negotiate(preferred, available=LANGUAGES, default="en") -> str:
    """The best available language for a list of preferences (``--lang``, ``LANG``-style
    ``ko_KR.UTF-8``, ``sr_RS.UTF-8@cyrillic``, or an ``Accept-Language`` header). Babel does the
    matching and is imported only when something other than English is asked for. English
    asked is English; nothing asked, or nothing available, is `default`."""
    if isinstance(preferred, str):
        preferred = _accept_language(preferred) if "," in preferred or ";" in preferred else [preferred]
    tags = []
    for p in preferred or ():
        if not p:
            continue
        raw = str(p)
        cyrillic = "@cyrillic" in raw.lower()
        tag = raw.split(".")[0].split("@")[0].replace("-", "_").strip()
        if tag and tag not in ("C", "POSIX"):
            if cyrillic and tag.lower().split("_")[0] == "sr" and "cyrl" not in tag.lower():
                tag = "sr_Cyrl"
            tags.append(tag)
    if not tags:
        return default
    if all(t.lower().split("_")[0] == "en" for t in tags):
        return "en"
    from babel import Locale  # lazily: English never needs it
    # Babel reports the available identifier that matched; sr-Latn / sr_Latn_RS fall to sr,
    # sr-Cyrl / sr_Cyrl_RS to sr_Cyrl; Bosnian and Montenegrin (mutually intelligible) to hr
    # and sr unless the site lists them in lang_fallbacks (then they are available themselves).
    offered = [a.replace("-", "_") for a in available]
    aliases = {k: v for k, v in {"bs": "hr", "cnr": "sr", "sh": "hr"}.items() if k not in offered}
    norm = []
    for t in tags:
        parts = t.split("_")
        base = parts[0].lower()
        if base == "sr" and any(x.lower() == "cyrl" for x in parts[1:]):
            norm.append("sr_Cyrl")
            continue
        norm.append(aliases.get(base, base) if base in aliases else "_".join([base] + parts[1:]))
    match = Locale.negotiate(norm, offered, sep="_") if norm else None
    if not match:
        return default
    return CYRILLIC if str(match) == "sr_Cyrl" else str(match)


def choose_language(asked=None, environ=None, site=None) -> str:
    """The answer language, in order: `asked` (--lang), TROUBLESHOOT_LANG, LC_ALL /
    LC_MESSAGES / LANG (as gettext reads them; C and POSIX say nothing), then the site's
    `default_lang`; each negotiated (Babel) against the languages there are."""
    import os
    env = os.environ if environ is None else environ
    available = LANGUAGES + tuple(k for k in ((site or {}).get("lang_fallbacks") or {}) if k not in LANGUAGES) \
        if isinstance((site or {}).get("lang_fallbacks"), dict) else LANGUAGES
    default = str((site or {}).get("default_lang") or "en")
    default = negotiate(default, available, "en") if default != "en" else "en"
    # the first one set decides, as gettext reads them; C / POSIX choose no language: the site's default
    wanted = next((w for w in (asked, env.get("TROUBLESHOOT_LANG"), env.get("LC_ALL"), env.get("LC_MESSAGES"),
                               env.get("LANG")) if w), None)
    if not wanted or str(wanted).split(".")[0].split("@")[0] in ("C", "POSIX"):
        return default
    return negotiate(wanted, available, default)


def _accept_language(header: str):
    items = []
    for n, part in enumerate(header.split(",")):
        bits = part.strip().split(";")
        q = 1.0
        for b in bits[1:]:
            if b.strip().startswith("q="):
                try:
                    q = float(b.strip()[2:])
                except ValueError:
                    q = 0.0
        if bits[0].strip() and bits[0].strip() != "*" and q > 0:
            items.append((-q, n, bits[0].strip()))
    return [tag for _, _, tag in sorted(items)]


# ---------------------------------------------------------------------------
# validation (`kb validate` reports these as warnings)

@dataclass(frozen=True)
class Warning_:
    file: str
    line: int
    message: str

    def __str__(self):
        return f"{self.file}:{self.line}: warning: {self.message}"


def _line_finder(text):
    lines = text.splitlines()

    def line_of(needle, start=0):
        for i in range(start, len(lines)):
            if needle in lines[i]:
                return i + 1
        return 1
    return line_of


def _tokens(text):
    text = " ".join(text.split())  # a `code span` may be wrapped over two lines in the YAML
    return sorted(_PLACEHOLDER.findall(text)), sorted(_CODE_SPAN.findall(text))


def _compare(english, translated, where):
    out = []
    (ep, ec), (tp, tc) = _tokens(_english(english)), _tokens(translated)
    if ep != tp:
        out.append(f"{where}: placeholders differ from the English ({', '.join(ep) or 'none'} vs {', '.join(tp) or 'none'})")
    if ec != tc:
        missing = sorted(set(ec) - set(tc))
        extra = sorted(set(tc) - set(ec))
        out.append(f"{where}: `code` spans differ from the English (missing {missing or 'none'}, extra {extra or 'none'})")
    return out


def check_translation(entry_data: dict, path: Path) -> list:
    """Warnings for one translation file against its English entry."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
        data = yaml.safe_load(raw)
    except (OSError, yaml.YAMLError) as e:
        return [Warning_(str(path), 1, f"cannot read translation: {e}")]
    line_of = _line_finder(raw)
    if not isinstance(data, dict):
        return [Warning_(str(path), 1, "a translation must be a mapping of title, summary, causes, fixes")]
    out = []

    def warn(message, needle=None):
        out.append(Warning_(str(path), line_of(needle) if needle else 1, message))

    lang = path.stem
    if not re.fullmatch(r"[a-z]{2,3}", lang) or lang == "en":
        warn(f"unknown language '{lang}' (translations: {', '.join(STORED)}, or a site's own ISO 639 code; "
             f"{CYRILLIC} is made from sr, never stored)")
    for key in data:
        if key not in _TOP_KEYS:
            warn(f"unknown field '{key}' (known: {', '.join(sorted(_TOP_KEYS))})", f"{key}:")

    def check_field(field, english, where, needle):
        if not isinstance(field, dict) or set(field) - _FIELD_KEYS or not isinstance(field.get("text"), str):
            warn(f"{where}: must be {{src: HASH, text: ...}} (unknown or missing field)", needle)
            return
        if not isinstance(field.get("src"), str):
            # an all-digit hash written without quotes is read by YAML as a number
            warn(f"{where}: src must be a quoted string (src: '{field.get('src')}'), YAML read it as "
                 f"{type(field.get('src')).__name__}", str(field.get("src")))
            return
        if field.get("src") != source_hash(english):
            warn(f"{where}: stale: the English text changed since it was translated (src {field.get('src')} != "
                 f"{source_hash(english)})", str(field.get("src")))
            return
        for m in _compare(english, field["text"], where):
            warn(m, str(field.get("src")))

    for key in ("title", "summary"):
        if key in data:
            check_field(data[key], entry_data.get(key), key, f"{key}:")
    causes_en = {source_hash(c): c for c in entry_data.get("causes") or ()}
    for i, c in enumerate(data.get("causes") or ()):
        src = str(c.get("src")) if isinstance(c, dict) else ""
        check_field(c, causes_en.get(src, ""), f"causes[{i + 1}]", src)
    notes_en = {source_hash(r["note"]): r["note"] for r in entry_data.get("facts") or ()
                if isinstance(r, dict) and r.get("note")}
    for i, n in enumerate(data.get("facts") or ()):
        src = str(n.get("src")) if isinstance(n, dict) else ""
        if src and src not in notes_en:
            warn(f"facts[{i + 1}]: stale: no fact rule's note has this English text any more (src {src})", src)
            continue
        check_field(n, notes_en.get(src, ""), f"facts[{i + 1}].note", src)
    # Two fixes may share a title (the same advice for Slurm and for PBS): the translation's
    # text hash says which of them it is, as _fix_translation reads it.
    fixes_en: dict = {}
    for f in entry_data.get("fixes") or ():
        if isinstance(f, dict):
            fixes_en.setdefault(source_hash(f.get("title")), []).append(f)
    for i, fx in enumerate(data.get("fixes") or ()):
        where = f"fixes[{i + 1}]"
        if not isinstance(fx, dict) or set(fx) - _FIX_KEYS:
            warn(f"{where}: unknown field(s) {sorted(set(fx) - _FIX_KEYS) if isinstance(fx, dict) else fx!r} "
                 f"(a fix translates title and text only)")
            continue
        title = fx.get("title")
        src = str(title.get("src")) if isinstance(title, dict) else ""
        same_title = fixes_en.get(src) or []
        text_src = str(fx["text"].get("src")) if isinstance(fx.get("text"), dict) else None
        english = next((f for f in same_title if text_src and source_hash(f.get("text")) == text_src),
                       same_title[0] if same_title else None)
        if english is None:
            warn(f"{where}: stale: no English fix has this title any more (src {src})", str(src))
            continue
        check_field(title, english.get("title"), where + ".title", str(src))
        if _english(english.get("text")).strip():
            if "text" not in fx:
                warn(f"{where}: the fix has a text but the translation has none; the whole fix stays English",
                     str(src))
            else:
                check_field(fx["text"], english.get("text"), where + ".text", str(fx["text"].get("src")
                                                                                     if isinstance(fx["text"], dict)
                                                                                     else src))
        elif "text" in fx:
            warn(f"{where}: the English fix has no text to translate", str(src))
    return out


def validate_translations(root) -> list:
    """Warnings for every translation under a knowledge folder (stale hash, placeholder or
    `code` span mismatch, unknown field, translation of a missing entry)."""
    root = Path(root)
    out = []
    for path in sorted(root.rglob("i18n/*.yaml")):
        entry_path = path.parent.parent.with_suffix(".yaml")
        try:
            entry = yaml.safe_load(entry_path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            out.append(Warning_(str(path), 1, f"no readable entry {entry_path.name} for this translation"))
            continue
        if isinstance(entry, dict):
            out += check_translation(entry, path)
    return out
