"""Write an entry's translation files from a draft, with the right source hashes.

    python tools/i18n_write.py DRAFT.yaml [DRAFT.yaml ...]
    python tools/i18n_write.py --coverage
    python tools/i18n_write.py --draft ID > DRAFT.yaml

A draft holds the texts of one entry in each language, in the English entry's
order (nothing to hash by hand)::

    id: slurm-node-failure
    hr:
      title: ...
      summary: ...
      causes: [..., ...]              # one per English cause, same order
      fixes:                          # one per English fix, same order
        - [fix title, fix text]       # a fix with no English text: [fix title]
      facts: [..., ...]               # one per English fact rule that has a `note`, same order
    sr: {...}
    ko: {...}

It writes knowledge/<area>/<id>/i18n/<lang>.yaml in the format i18n.py reads
(each field {src: source_hash(English), text: ...}) and refuses a draft whose
counts differ from the English entry. `kb validate` then checks placeholders,
`code` spans and staleness. --coverage lists the entries translated whole in
hr, sr and ko (every field current, no fallback). --draft ID prints a draft of an
entry's current translations, each stale or missing field as "TODO: <English>", to edit
and write back after the English changed (the writer refuses a TODO left in).
"""
from __future__ import annotations

import sys
from pathlib import Path

import yaml

from gpu_troubleshooter.i18n import (_by_src, _english, _field_text, _fix_translation, load_translation, source_hash,
                                     translate_entry, translation_path)
from gpu_troubleshooter.knowledge import bundled_dir, entry_files

NAMES = {"hr": "Croatian", "sr": "Serbian (Latin script)", "ko": "Korean"}


def _entries():
    return {p.stem: p for p in entry_files(bundled_dir())}


def _field(english, text):
    if text.startswith("TODO:"):
        raise SystemExit(f"an untranslated field is left in the draft: {text[:70]}")
    return {"src": source_hash(english), "text": text}


def _notes(entry) -> list:
    """The English notes of the entry's fact rules, in order (rules without a note skipped)."""
    return [r["note"] for r in entry.get("facts") or () if isinstance(r, dict) and r.get("note")]


def _en(text) -> str:
    # the English that source_hash hashes ({text, when} causes and {en: ...} included)
    return " ".join(_english(text).split())


def draft(entry_id: str) -> str:
    """A draft of the entry's current translations; stale or missing fields read 'TODO: <English>'."""
    entry_path = _entries()[entry_id]
    entry = yaml.safe_load(entry_path.read_text(encoding="utf-8"))
    out: dict = {"id": entry_id}
    for lang in ("hr", "sr", "ko"):
        f = load_translation(entry_path, lang)

        def cur(got, english):
            return got if got else "TODO: " + _en(english)
        d = {"title": cur(_field_text(f.get("title"), entry["title"]), entry["title"]),
             "summary": cur(_field_text(f.get("summary"), entry["summary"]), entry["summary"]),
             "causes": [cur(_by_src(f.get("causes"), c), c) for c in entry.get("causes") or ()],
             "fixes": []}
        for fix in entry.get("fixes") or ():
            got = _fix_translation(f.get("fixes"), fix)
            has_text = source_hash(fix.get("text")) != source_hash("")
            pair = [got[0], got[1].strip()] if got else ["TODO: " + _en(fix["title"]), "TODO: " + _en(fix.get("text"))]
            d["fixes"].append(pair if has_text else pair[:1])
        if _notes(entry):
            d["facts"] = [cur(_by_src(f.get("facts"), n), n) for n in _notes(entry)]
        out[lang] = d
    return yaml.safe_dump(out, allow_unicode=True, sort_keys=False, width=100)


def build(entry: dict, draft: dict, lang: str) -> dict:
    eid = entry["id"]
    d = draft[lang]
    causes, fixes = entry.get("causes") or [], entry.get("fixes") or []
    if len(d.get("causes") or []) != len(causes):
        raise SystemExit(f"{eid}/{lang}: {len(d.get('causes') or [])} causes, the English has {len(causes)}")
    if len(d.get("fixes") or []) != len(fixes):
        raise SystemExit(f"{eid}/{lang}: {len(d.get('fixes') or [])} fixes, the English has {len(fixes)}")
    out = {"title": _field(entry["title"], d["title"].strip()),
           "summary": _field(entry["summary"], d["summary"].strip()),
           "causes": [_field(en, tr.strip()) for en, tr in zip(causes, d["causes"])],
           "fixes": []}
    for i, (en, tr) in enumerate(zip(fixes, d["fixes"])):
        tr = [tr] if isinstance(tr, str) else list(tr)
        item = {"title": _field(en["title"], tr[0].strip())}
        has_text = source_hash(en.get("text")) != source_hash("")
        if has_text:
            if len(tr) < 2 or not tr[1].strip():
                raise SystemExit(f"{eid}/{lang}: fix {i + 1} has an English text but the draft has none")
            item["text"] = _field(en["text"], tr[1].strip() + "\n")
        elif len(tr) > 1 and tr[1].strip():
            raise SystemExit(f"{eid}/{lang}: fix {i + 1} has no English text to translate")
        out["fixes"].append(item)
    notes = _notes(entry)
    if len(d.get("facts") or []) != len(notes):
        raise SystemExit(f"{eid}/{lang}: {len(d.get('facts') or [])} fact notes, the English has {len(notes)}")
    if notes:
        out["facts"] = [_field(en, tr.strip()) for en, tr in zip(notes, d["facts"])]
    return out


def write(draft_path: str) -> list:
    draft = yaml.safe_load(Path(draft_path).read_text(encoding="utf-8"))
    entry_path = _entries()[draft["id"]]
    entry = yaml.safe_load(entry_path.read_text(encoding="utf-8"))
    built = {lang: build(entry, draft, lang) for lang in ("hr", "sr", "ko") if lang in draft}  # all or nothing
    written = []
    for lang, data in built.items():
        path = translation_path(entry_path, lang)
        path.parent.mkdir(parents=True, exist_ok=True)
        head = (f"# {NAMES[lang]} translation of {entry['id']}. src: hash of the English text each field "
                f"translates (i18n.py).\n")
        path.write_text(head + yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=100),
                        encoding="utf-8")
        written.append(path)
    return written


def whole(lang_codes=("hr", "sr", "ko")) -> list:
    """Ids of the entries whose every field is translated and current in each language."""
    out = []
    for path in entry_files(bundled_dir()):
        entry = yaml.safe_load(path.read_text(encoding="utf-8"))
        if all(not translate_entry(entry, path, lang).fell_back for lang in lang_codes):
            out.append(entry["id"])
    return out


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--draft":
        sys.stdout.write(draft(sys.argv[2]))
    elif sys.argv[1:] == ["--coverage"]:
        ids = whole()
        print(len(ids), "entries translated whole in hr, sr and ko:", " ".join(sorted(ids)))
    else:
        for arg in sys.argv[1:]:
            for p in write(arg):
                print("wrote", p)
