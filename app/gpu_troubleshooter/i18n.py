"""Translations of knowledge-base entries: sidecar files, per-field fallback, staleness.

A translation lives beside its entry, one file per language::

    knowledge/<area>/<id>/i18n/<lang>.yaml        (hr, sr = Serbian in Latin script, ko)

It translates the prose a user reads (title, summary, causes, fix titles and fix
texts), never code, commands, signatures or values. Every translated field stores
``src``, a hash of the English text it was made from::

    title: {src: 3f2a9c0b1d4e, text: "GPU-u je ponestalo memorije (CUDA out of memory)"}
    causes:
      - {src: 9b1c..., text: "..."}
    fixes:
      - title: {src: ..., text: "..."}
        text: {src: ..., text: "..."}

A field is used only while its ``src`` matches the current English text, so an
English change marks the translation stale (``kb validate`` warns) and readers
get English until it is translated again. Causes and fixes are found by the hash
of their English text, not by position, so reordering the English keeps them.

Fallback is per field: sr -> hr -> en and hr -> sr -> en (the languages are
mutually intelligible), ko -> en. A fix is shown wholly in one language: if its
title or its text has no current translation in a language, the next language is
tried for the whole fix, and finally English.

Locale negotiation uses Babel, imported only when a non-English language is asked.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

__all__ = ["LANGUAGES", "FALLBACK", "source_hash", "translation_path", "load_translation", "translate_entry",
           "localise_entry", "negotiate", "validate_translations", "Warning_"]

LANGUAGES = ("en", "hr", "sr", "ko")
FALLBACK = {"en": ("en",), "hr": ("hr", "sr", "en"), "sr": ("sr", "hr", "en"), "ko": ("ko", "en")}
_PLACEHOLDER = re.compile(r"\{(?:site|value)\.[A-Za-z0-9_]+\}")
_CODE_SPAN = re.compile(r"`[^`\n]+`")
_FIELD_KEYS = {"src", "text"}
_TOP_KEYS = {"title", "summary", "causes", "fixes"}
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


@dataclass
class Translated:
    """An entry's readable texts in the asked language, with the language each came from."""
    lang: str
    title: str
    summary: str
    causes: list
    fixes: list               # [{"title", "text", "lang"}] in the entry's fix order
    fell_back: list           # names of fields shown in another language than `lang`


def translate_entry(entry_data: dict, entry_path, lang: str) -> Translated:
    """The entry's title, summary, causes and fix prose in `lang`, field by field with
    fallback (FALLBACK); never a mix of languages within one fix. Code is not touched:
    callers keep each fix's `code` from the English entry."""
    chain = FALLBACK.get(lang, (lang, "en") if lang != "en" else ("en",))
    files = {code: (load_translation(entry_path, code) if code != "en" else {}) for code in chain}
    fell = []

    def pick(name, english, getter):
        for code in chain:
            if code == "en":
                break
            got = getter(files[code])
            if got:
                if code != lang:
                    fell.append(name)
                return got
        if lang != "en":
            fell.append(name)
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
                chosen = (got[0], got[1], code)
                break
        if chosen is None:
            chosen = (_english(fix.get("title")), _english(fix.get("text")), "en")
        if chosen[2] != lang and lang != "en":
            fell.append("fixes[%d]" % i)
        fixes.append({"title": chosen[0], "text": chosen[1], "lang": chosen[2]})
    return Translated(lang=lang, title=title, summary=summary, causes=causes, fixes=fixes, fell_back=fell)


def localise_entry(entry, lang: str):
    """A copy of a model.Entry whose title, summary, causes and fix texts also carry `lang`
    (``Text.get(lang)``), chosen by translate_entry's fallback: a Serbian reader may get a
    Croatian fix, but never a fix half in one language. English and unknown languages return
    the entry unchanged. Code blocks are never touched."""
    import dataclasses
    if lang == "en" or lang not in FALLBACK:
        return entry
    data = {"title": entry.title, "summary": entry.summary, "causes": list(entry.causes),
            "fixes": [{"title": f.title, "text": f.text} for f in entry.fixes]}
    t = translate_entry(data, entry.path, lang)
    fixes = tuple(dataclasses.replace(f, title=f.title.with_language(lang, tf["title"]),
                                      text=f.text.with_language(lang, tf["text"]))
                  for f, tf in zip(entry.fixes, t.fixes))
    return dataclasses.replace(entry, title=entry.title.with_language(lang, t.title),
                               summary=entry.summary.with_language(lang, t.summary),
                               causes=tuple(c.with_language(lang, tc) for c, tc in zip(entry.causes, t.causes)),
                               fixes=fixes)


def negotiate(preferred, available=LANGUAGES, default="en") -> str:
    """The best available language for a list of preferences (``--lang``, ``LANG``-style
    ``ko_KR.UTF-8``, or an ``Accept-Language`` header). Babel does the matching and is
    imported only when something other than English is asked for."""
    if isinstance(preferred, str):
        preferred = _accept_language(preferred) if "," in preferred or ";" in preferred else [preferred]
    tags = []
    for p in preferred or ():
        if not p:
            continue
        tag = str(p).split(".")[0].split("@")[0].replace("-", "_").strip()
        if tag and tag not in ("C", "POSIX"):
            tags.append(tag)
    if not tags or all(t.lower().split("_")[0] == "en" for t in tags):
        return default
    from babel import Locale  # lazily: English never needs it
    # Babel reports the available identifier that matched; sr-Latn / sr_Latn_RS fall to sr,
    # Bosnian and Montenegrin (mutually intelligible) to hr.
    aliases = {"bs": "hr", "cnr": "sr", "sh": "hr"}
    norm = []
    for t in tags:
        parts = t.split("_")
        base = parts[0].lower()
        if base == "sr" and any(p.lower() == "cyrl" for p in parts[1:]):
            pass  # only Latin script is translated; Serbian readers read it too
        norm.append(aliases.get(base, base))
    found = Locale.negotiate(norm, list(available), sep="_") if norm else None
    return str(found) if found else default


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
    if lang not in LANGUAGES or lang == "en":
        warn(f"unknown language '{lang}' (translations: {', '.join(LANGUAGES[1:])})")
    for key in data:
        if key not in _TOP_KEYS:
            warn(f"unknown field '{key}' (known: {', '.join(sorted(_TOP_KEYS))})", f"{key}:")

    def check_field(field, english, where, needle):
        if not isinstance(field, dict) or set(field) - _FIELD_KEYS or not isinstance(field.get("text"), str):
            warn(f"{where}: must be {{src: HASH, text: ...}} (unknown or missing field)", needle)
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
    fixes_en = {source_hash(f.get("title")): f for f in entry_data.get("fixes") or () if isinstance(f, dict)}
    for i, fx in enumerate(data.get("fixes") or ()):
        where = f"fixes[{i + 1}]"
        if not isinstance(fx, dict) or set(fx) - _FIX_KEYS:
            warn(f"{where}: unknown field(s) {sorted(set(fx) - _FIX_KEYS) if isinstance(fx, dict) else fx!r} "
                 f"(a fix translates title and text only)")
            continue
        title = fx.get("title")
        src = str(title.get("src")) if isinstance(title, dict) else ""
        english = fixes_en.get(src)
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
