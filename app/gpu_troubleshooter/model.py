"""The typed knowledge model: one frozen record per entry, built once at load.

knowledge.py parses and validates each YAML file (schema.py) and turns it into
these records; every reader (the engine, the renderers, the web pages, `kb
validate`) uses their fields, never the YAML dict. Keeping the model frozen and
free of behaviour lets the loaded knowledge base be cached as one pickle and
shared between threads of the web service.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from .record import dataclass, field

__all__ = ["Text", "Signature", "Code", "Fix", "FactRule", "Reference", "Checked", "Entry", "entry_from_yaml",
           "SCHEMA_VERSION"]

SCHEMA_VERSION = 2  # the newest entry schema this version of the troubleshooter understands


@dataclass(frozen=True)
class Text:
    """A text in one or more languages; English is always there."""

    by_lang: tuple[tuple[str, str], ...]  # (lang, text) pairs, "en" first

    @classmethod
    def of(cls, value: Any) -> Text:
        """From the YAML spelling: a plain string (English) or a {lang: text} map with `en`."""
        if isinstance(value, Mapping):
            pairs = [(str(k), str(v)) for k, v in value.items() if isinstance(v, str)]
            pairs.sort(key=lambda kv: kv[0] != "en")
            return cls(tuple(pairs))
        return cls((("en", "" if value is None else str(value)),))

    def get(self, lang: str = "en") -> str:
        """The text in `lang`, else in English."""
        found = dict(self.by_lang)
        return found.get(lang) or found.get("en") or ""

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(lang for lang, _ in self.by_lang)

    def with_language(self, lang: str, text: str) -> Text:
        """A copy with one translation added or replaced (translations live in i18n/<lang>.yaml)."""
        return Text(tuple((k, v) for k, v in self.by_lang if k != lang) + ((lang, text),))

    def __str__(self) -> str:
        return self.get("en")


@dataclass(frozen=True)
class Signature:
    pattern: str          # a regex; literals are escaped on load
    weight: float
    case_sensitive: bool
    line: int = field(default=0, compare=False)  # where it is written in the entry file
    # exclude only: tested on the line AFTER the matched one ("Step created" right after
    # "step creation temporarily disabled" says the wait is over, not a failure)
    next_line: bool = False


@dataclass(frozen=True)
class Code:
    lang: str
    text: Text


@dataclass(frozen=True)
class Fix:
    title: Text
    text: Text
    code: Optional[Code] = None
    when: Optional[Mapping[str, Any]] = None   # a condition (facts.evaluate), or None: always applies
    scheduler: Optional[str] = None             # slurm | pbs | lsf: only for jobs of that scheduler
    line: int = field(default=0, compare=False)


@dataclass(frozen=True)
class FactRule:
    when: Mapping[str, Any]
    effect: str            # confirms | rules_out | alone
    note: Optional[Text] = None

    def as_rule(self) -> dict[str, Any]:
        """The plain form facts.apply_fact_rules evaluates."""
        rule: dict[str, Any] = {"when": self.when, "effect": self.effect}
        if self.note is not None:
            rule["note"] = self.note.get("en")
        return rule


@dataclass(frozen=True)
class Reference:
    title: Text
    url: str


@dataclass(frozen=True)
class Checked:
    date: str
    versions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entry:
    """One known failure. The first fields are what the engine reads."""

    id: str
    path: str
    signatures: tuple[Signature, ...] = ()
    exclude: tuple[Signature, ...] = ()
    phrases: tuple[str, ...] = ()
    values: tuple[tuple[str, str], ...] = ()   # (name, regex with a group of that name)
    leads_to: tuple[str, ...] = ()
    fact_rules: tuple[dict[str, Any], ...] = ()  # plain rules for facts.apply_fact_rules; typed in `rules`
    title: Text = Text.of("")
    summary: Text = Text.of("")
    tags: tuple[str, ...] = ()
    severity: str = "error"
    causes: tuple[Text, ...] = ()
    cause_when: tuple[Optional[Mapping[str, Any]], ...] = ()   # beside `causes`: each one's condition, or None
    fixes: tuple[Fix, ...] = ()
    references: tuple[Reference, ...] = ()
    rules: tuple[FactRule, ...] = ()
    schema: int = 1
    actor: str = "user"                 # who can fix it: the user, or the site's admins
    refines: Optional[str] = None       # the broader entry this one is a finer case of
    broader: tuple[str, ...] = ()       # refines, transitively (filled in when the whole KB is known)
    aliases: tuple[str, ...] = ()
    checked: Optional[Checked] = None
    draft: bool = False

    @property
    def harmless(self) -> bool:
        """Known noise rather than a failure: reported apart from the findings (Diagnosis.harmless)."""
        return self.severity == "harmless"

    @property
    def area(self) -> str:
        return Path(self.path).parent.name

    def examples(self, kind: str) -> list[Path]:
        """Example logs beside the entry: kind is 'must-match' or 'must-not-match'."""
        folder = Path(self.path).with_suffix("") / kind
        return sorted(folder.glob("*.log")) + sorted(folder.glob("*.log.gz")) if folder.is_dir() else []


def _pattern(item: Mapping[str, Any]) -> str:
    return str(item["regex"]) if "regex" in item else re.escape(str(item["literal"]))


def _code(value: Any) -> Optional[Code]:
    if not value:
        return None
    return Code(lang=str(value.get("lang", "text")), text=Text.of(value.get("text")))


def _is_conditional(cause: Any) -> bool:
    """A cause written as {text: ..., when: ...} rather than as a bare text."""
    return isinstance(cause, Mapping) and "text" in cause and "en" not in cause


def entry_from_yaml(data: Mapping[str, Any], path: str, line: Any = None) -> Entry:
    """An Entry from one YAML document that schema.check_entry found valid.

    `line(*keys)` gives the line of a key path (schema.NodeLines.line)."""
    def where(*keys: Any) -> int:
        return int(line(*keys)) if line is not None else 0

    exclude = [s if isinstance(s, Mapping) else {"regex": s} for s in data.get("exclude", [])]
    rules = tuple(FactRule(when=r["when"], effect=r["effect"], note=Text.of(r["note"]) if r.get("note") else None)
                  for r in data.get("facts", []))
    checked = data.get("checked")
    return Entry(
        id=data["id"],
        path=path,
        signatures=tuple(Signature(_pattern(s), float(s["weight"]), bool(s.get("case", False)), where("signatures", i))
                         for i, s in enumerate(data["signatures"])),
        exclude=tuple(Signature(_pattern(s), 1.0, bool(s.get("case", False)), where("exclude", i),
                                bool(s.get("next_line", False)))
                      for i, s in enumerate(exclude)),
        phrases=tuple(data.get("phrases", [])),
        values=tuple((str(k), str(v)) for k, v in data.get("values", {}).items()),
        leads_to=tuple(data.get("leads_to", [])),
        fact_rules=tuple(dict(r) for r in data.get("facts", [])),
        title=Text.of(data["title"]),
        summary=Text.of(data["summary"]),
        tags=tuple(data["tags"]),
        severity=data["severity"],
        causes=tuple(Text.of(c["text"] if _is_conditional(c) else c) for c in data["causes"]),
        cause_when=tuple(c.get("when") if _is_conditional(c) else None for c in data["causes"]),
        fixes=tuple(Fix(title=Text.of(f["title"]), text=Text.of(f.get("text", "")), code=_code(f.get("code")),
                        when=f.get("when"), scheduler=f.get("scheduler"), line=where("fixes", i))
                    for i, f in enumerate(data["fixes"])),
        references=tuple(Reference(Text.of(r["title"]), str(r["url"])) for r in data.get("references", [])),
        rules=rules,
        schema=int(data.get("schema", 1)),
        actor=data.get("actor", "user"),
        refines=data.get("refines"),
        aliases=tuple(data.get("aliases", [])),
        checked=Checked(str(checked["date"]), tuple(map(str, checked.get("versions", [])))) if checked else None,
        draft=bool(data.get("draft", False)),
    )
