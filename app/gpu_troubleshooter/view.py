"""A finding as the user sees it: one view for the terminal, the JSON and the web.

`finding_view` turns an engine Finding (or, for `explain` and the web's entry
pages, a bare Entry) into a frozen FindingView in one language, with the site's
placeholders and the log's values filled in and the fixes chosen and ordered
by fixes.choose_fixes. Renderers only lay the view out; none of them reads the
knowledge model or decides what to show.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Optional

from .fixes import choose_causes, choose_fixes
from .model import Entry, Text
from .record import dataclass
from .text import fill_placeholders, without_absent_values, without_unnamed_pages

__all__ = ["FixView", "FindingView", "finding_view", "entry_view", "site_settings"]


@dataclass(frozen=True)
class CodeView:
    lang: str
    text: str


@dataclass(frozen=True)
class FixView:
    title: str
    text: str
    code: Optional[CodeView]
    held: Optional[bool]          # its condition holds / does not / unknown or none
    scheduler: Optional[str]      # the scheduler it is written for, if any

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title, "text": self.text}
        if self.code is not None:
            out["code"] = {"lang": self.code.lang, "text": self.code.text}
        out["held"] = self.held
        out["scheduler"] = self.scheduler
        return out


@dataclass(frozen=True)
class EvidenceView:
    line: int                     # 1-based; 0 for a fact
    text: str
    span: Optional[tuple[int, int]] = None   # where the entry's signature matched, to clip around it


def _span(entry: Entry, text: str) -> Optional[tuple[int, int]]:
    """The first signature match in an evidence line (the engine does not report it yet)."""
    for sig in entry.signatures:
        try:
            m = re.search(sig.pattern, text, 0 if sig.case_sensitive else re.IGNORECASE)
        except re.error:
            continue
        if m and m.end() > m.start():
            return (m.start(), m.end())
    return None


@dataclass(frozen=True)
class FindingView:
    id: str
    title: str
    summary: str
    severity: str
    actor: str                    # user | site: who can fix it
    refines: tuple[str, ...]      # the broader entries, nearest first
    confidence: Optional[float]   # None for an entry shown without a log
    causes: tuple[str, ...]       # held first, unconditional next, false last (fixes.choose_causes)
    fixes: tuple[FixView, ...]
    evidence: tuple[EvidenceView, ...]
    values: tuple[tuple[str, str], ...]
    confirmed_by: tuple[str, ...]
    ruled_out_by: tuple[str, ...]
    references: tuple[tuple[str, str], ...]   # (title, url)
    leads_to: tuple[str, ...]
    causes_held: tuple[Optional[bool], ...] = ()   # beside `causes`: its condition holds / does not / none or unknown
    shown_values: tuple[tuple[str, str], ...] = ()  # `values` as a person reads them (durations as HH:MM:SS)
    lang: str = "en"              # the language asked for
    fallback_fields: tuple[str, ...] = ()  # fields shown in another language (JSON names: "fixes[2]")

    @property
    def likely_causes(self) -> tuple[str, ...]:
        """The causes the short view may show: all but those whose condition is false for this log."""
        held = self.causes_held or (None,) * len(self.causes)
        return tuple(c for c, h in zip(self.causes, held) if h is not False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (docs/engine-api.md, schema 1 plus added fields)."""
        return {
            "id": self.id,
            "title": self.title,
            "summary": self.summary,
            "severity": self.severity,
            "actor": self.actor,
            "refines": list(self.refines),
            "confidence": None if self.confidence is None else round(self.confidence, 3),
            "evidence": [{"line": e.line, "text": e.text} for e in self.evidence],
            "values": dict(self.values),
            "causes": list(self.causes),
            "causes_held": list(self.causes_held or (None,) * len(self.causes)),
            "fixes": [f.to_dict() for f in self.fixes],
            "references": [{"title": t, "url": u} for t, u in self.references],
            "facts": {"confirmed_by": list(self.confirmed_by), "ruled_out_by": list(self.ruled_out_by)},
            "fallback_fields": list(self.fallback_fields),
        }


PYTORCH_WHEELS = "https://download.pytorch.org/whl/"
_WHEEL_TAG = re.compile(r"^(?:cu\d{3}|cpu|rocm\d+(?:\.\d+)*|xpu)$")


def site_settings(site: Mapping[str, Any]) -> dict[str, Any]:
    """The site's placeholders as fixes and conditions see them. `torch_wheel_index_override`
    (a URL, or a PyTorch variant such as `cu128`) wins over the wheel index a fix chose from
    the log's driver or GPU: it is spelled out as a URL, and `{site.torch_wheel_index}` is it too."""
    out = dict(site)
    override = str(out.get("torch_wheel_index_override") or "").strip()
    if override:
        url = PYTORCH_WHEELS + override if _WHEEL_TAG.match(override) else override
        out["torch_wheel_index_override"] = out["torch_wheel_index"] = url
    return out


def shown_values(entry: Entry, values: Mapping[str, Any]) -> dict[str, Any]:
    """The log's values as a person reads them: a value the entry's conditions compare
    `as: duration` and the log gave as bare seconds (PBS Pro: `walltime 172812 exceeded
    limit 172800`) is shown as HH:MM:SS (48:00:12), as the other schedulers print it.
    Conditions and the JSON's `values` keep the log's own text."""
    from .facts import duration_paths, format_duration
    units: dict[str, str] = {}
    for when in [f.when for f in entry.fixes] + list(entry.cause_when) + [r.when for r in entry.rules]:
        if when is not None:
            duration_paths(when, units)
    out = dict(values)
    for path, unit in units.items():
        name = path[len("value."):] if path.startswith("value.") else None
        if name in out:
            out[name] = format_duration(out[name], unit)
    return out


def _fill(text: Text, lang: str, site: Mapping[str, Any], values: Mapping[str, Any]) -> str:
    return fill_placeholders(text.get(lang), site, values)


def _fill_prose(text: Text, lang: str, site: Mapping[str, Any], values: Mapping[str, Any],
                unnamed: tuple[str, ...] = ()) -> str:
    """A cause or a fix's text: the parts that quote a value this log did not give are left out,
    and so are the parentheses that point to a site page the site did not name (`unnamed`)."""
    return fill_placeholders(without_unnamed_pages(without_absent_values(text.get(lang), values), unnamed),
                             site, values)


def entry_view(entry: Entry, lang: str = "en", site: Optional[Mapping[str, Any]] = None,
               values: Mapping[str, str] = {}, facts: Optional[Mapping[str, Any]] = None,
               scheduler: Optional[str] = None, confidence: Optional[float] = None,
               evidence: tuple[EvidenceView, ...] = (), confirmed_by: tuple[str, ...] = (),
               ruled_out_by: tuple[str, ...] = ()) -> FindingView:
    """The view of one entry; with no log, `values` and `evidence` are empty."""
    site = site_settings(site or {})
    # No user guide named: "(see {site.docs_url})" goes, "check {site.docs_url}" reads "check your
    # cluster's user guide"; a bundled default URL would send every reader to one unrelated page.
    unnamed = () if site.get("docs_url") else ("docs_url",)
    for name, key in (("helpdesk", "site_helpdesk"), ("docs_url", "site_docs")):
        if not site.get(name):  # the site named none: "your cluster's helpdesk" in the reader's language
            from .render import label
            site[name] = label(lang, key, site)  # type: ignore[no-untyped-call]
    raw_values, values = values, shown_values(entry, values)
    info: dict[str, Any] = {}
    english = entry
    if lang != "en":
        from .i18n import localise_entry  # only for a translated language: English never loads it
        entry = localise_entry(entry, lang, site, info)
    chosen = choose_fixes(entry, raw_values, facts, scheduler, site)
    fixes = tuple(
        FixView(title=_fill(fix.title, lang, site, values),
                text=_fill_prose(fix.text, lang, site, values, unnamed).strip(),
                code=CodeView(fix.code.lang, _fill(fix.code.text, lang, site, values).rstrip("\n"))
                if fix.code is not None else None,
                held=held, scheduler=fix.scheduler)
        for fix, held in chosen)
    causes = choose_causes(entry, raw_values, facts, scheduler, site)
    fallback: list[str] = []
    t = info.get("translated")
    if t is not None:
        langs = t.langs
        fallback += [k for k in ("title", "summary") if langs.get(k) != lang]
        fix_at = {id(f): i for i, f in enumerate(entry.fixes)}
        cause_at = {id(c): i for i, c in enumerate(entry.causes)}
        fallback += [f"causes[{j}]" for j, (c, _) in enumerate(causes) if langs.get(f"causes[{cause_at.get(id(c))}]") != lang]
        fallback += [f"fixes[{j}]" for j, (f, _) in enumerate(chosen) if langs.get(f"fixes[{fix_at.get(id(f))}]") != lang]
        confirmed_by, ruled_out_by = (
            _notes_in(items, english, t, lang, name, fallback)
            for items, name in ((confirmed_by, "facts.confirmed_by"), (ruled_out_by, "facts.ruled_out_by")))
    return FindingView(
        id=entry.id,
        title=entry.title.get(lang),
        summary=entry.summary.get(lang),
        severity=entry.severity,
        actor=entry.actor,
        refines=entry.broader or ((entry.refines,) if entry.refines else ()),
        confidence=confidence,
        causes=tuple(_fill_prose(c, lang, site, values, unnamed) for c, _ in causes),
        causes_held=tuple(held for _, held in causes),
        fixes=fixes,
        evidence=tuple(EvidenceView(e.line, e.text, e.span or (_span(entry, e.text) if len(e.text) > 80 else None)) for e in evidence),
        values=tuple(raw_values.items()),
        shown_values=tuple(values.items()),
        lang=lang,
        fallback_fields=tuple(fallback),
        confirmed_by=confirmed_by,
        ruled_out_by=ruled_out_by,
        references=tuple((r.title.get(lang), r.url) for r in entry.references),
        leads_to=entry.leads_to,
    )


def _notes_in(items: tuple[str, ...], entry: Entry, t: Any, lang: str, name: str,
              fallback: list[str]) -> tuple[str, ...]:
    """The facts' lines (`path = value, ... (note)`, facts.apply_fact_rules) with each rule's
    note in the reader's language; a note shown in another language is a fallback field."""
    out = []
    for j, item in enumerate(items):
        for i, rule in enumerate(entry.rules):
            note = rule.note.get("en") if rule.note is not None else ""
            if note and item.endswith(f"({note})") and i < len(t.notes) and t.notes[i]:
                item = item[:-len(note) - 2] + f"({t.notes[i]})"
                if t.langs.get(f"facts[{i}].note") != lang:
                    fallback.append(f"{name}[{j}]")
                break
        out.append(item)
    return tuple(out)


def finding_view(finding: Any, kb: Any = None, lang: str = "en", site: Optional[Mapping[str, Any]] = None,
                 facts: Optional[Mapping[str, Any]] = None, scheduler: Optional[str] = None) -> FindingView:
    """The view of an engine Finding. `site` defaults to the knowledge base's placeholders."""
    if site is None:
        site = getattr(kb, "site", None) or {}
    entry = finding.entry
    if kb is not None and not entry.broader and entry.refines:  # a finding built outside the loader
        entry = kb.get(entry.id) or entry
    return entry_view(entry, lang, site, dict(finding.values), facts, scheduler,
                      confidence=float(finding.confidence),
                      evidence=tuple(EvidenceView(e.line, e.text) for e in finding.evidence),
                      confirmed_by=tuple(finding.confirmed_by), ruled_out_by=tuple(finding.ruled_out_by))
