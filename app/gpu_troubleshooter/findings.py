"""Results: small immutable records, and their JSON form (schema 1)."""
from dataclasses import dataclass, field
from typing import Optional

from .text import fill_placeholders, localised

JSON_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Evidence:
    line: int           # 1-based line number in the log; 0 for a fact
    text: str


@dataclass(frozen=True)
class Finding:
    entry: object = field(repr=False)   # the knowledge.Entry that explains it
    confidence: float
    evidence: tuple                     # Evidence records, in log order
    values: tuple = ()                  # (name, value) pairs found in the evidence
    confirmed_by: tuple = ()            # facts that support this finding
    ruled_out_by: tuple = ()            # facts that speak against it

    @property
    def id(self):
        return self.entry.id

    @property
    def first_line(self):
        return min((e.line for e in self.evidence if e.line), default=0)

    def fixes(self, site, lang="en"):
        values = dict(self.values)
        out = []
        for fix in self.entry.data["fixes"]:
            item = {"title": fill_placeholders(localised(fix["title"], lang), site, values),
                    "text": fill_placeholders(localised(fix.get("text", ""), lang), site, values).strip()}
            if fix.get("code"):
                item["code"] = {"lang": fix["code"].get("lang", "text"),
                                "text": fill_placeholders(localised(fix["code"]["text"], lang), site, values).rstrip("\n")}
            out.append(item)
        return out

    def to_dict(self, site, lang="en"):
        data = self.entry.data
        return {
            "id": self.id,
            "title": localised(data["title"], lang),
            "summary": localised(data["summary"], lang),
            "severity": data["severity"],
            "confidence": round(self.confidence, 3),
            "evidence": [{"line": e.line, "text": e.text} for e in self.evidence],
            "values": dict(self.values),
            "causes": [localised(c, lang) for c in data["causes"]],
            "fixes": self.fixes(site, lang),
            "references": list(data.get("references", [])),
            "facts": {"confirmed_by": list(self.confirmed_by), "ruled_out_by": list(self.ruled_out_by)},
        }


@dataclass(frozen=True)
class Diagnosis:
    source: str
    findings: tuple
    lines: int
    bytes: int
    site: dict = field(repr=False, default_factory=dict)
    facts: Optional[dict] = field(repr=False, default=None)
    key_lines: tuple = ()   # keylines.KeyLine: the lines that most likely ended the job

    @property
    def diagnosed(self):
        return bool(self.findings)

    def to_dict(self, lang="en"):
        return {
            "schema": JSON_SCHEMA_VERSION,
            "source": self.source,
            "lines": self.lines,
            "bytes": self.bytes,
            "findings": [f.to_dict(self.site, lang) for f in self.findings],
            "facts": self.facts,
            "key_lines": [k.to_dict() for k in self.key_lines],
        }
