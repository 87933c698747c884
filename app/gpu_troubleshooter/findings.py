"""Results: small immutable records, and their JSON form (schema 1).

What a finding looks like to a user (texts, chosen fixes) is view.py's job;
these records only hold what the engine found.
"""
from typing import TYPE_CHECKING, Optional

from .record import dataclass, field

if TYPE_CHECKING:  # model imports nothing from here; the import is for the annotations only
    from .model import Entry

JSON_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Evidence:
    line: int           # 1-based line number in the log; 0 for a fact
    text: str


@dataclass(frozen=True)
class Finding:
    entry: "Entry" = field(repr=False)  # the model.Entry that explains it
    confidence: float
    evidence: tuple[Evidence, ...]      # in log order
    values: tuple[tuple[str, str], ...] = ()  # (name, value) pairs found in the evidence
    confirmed_by: tuple[str, ...] = ()  # facts that support this finding
    ruled_out_by: tuple[str, ...] = ()  # facts that speak against it

    @property
    def id(self):
        return self.entry.id

    @property
    def first_line(self):
        return min((e.line for e in self.evidence if e.line), default=0)

    def view(self, kb=None, lang="en", site=None, facts=None, scheduler=None):
        """This finding as the user sees it (view.FindingView)."""
        from .view import finding_view
        return finding_view(self, kb, lang, site, facts, scheduler)


def _broader(entry):
    """The ids an entry refines, nearest first (model.Entry.broader, else its own `refines`)."""
    return getattr(entry, "broader", ()) or ((entry.refines,) if getattr(entry, "refines", None) else ())


def _milder(finer, broader):
    """A warning that refines an error: it does not end a job, so it never jumps above one."""
    return getattr(finer, "severity", "error") == "warning" and getattr(broader, "severity", "error") == "error"


def finer_first(ordered):
    """Findings in the engine's order, except that a finding which refines another one found
    in the same log (`refines`, transitively: model.Entry.broader) ranks right above it:
    `nccl-socket-interface` before `nccl-failure`, whatever their confidences. Nothing else
    moves; a broader finding found alone stays where it was. A finer warning stays below a
    broader error found beside it: torch's "UserWarning: CUDA initialization: Found no NVIDIA
    driver" (the run went on, on the CPU) does not outrank the "RuntimeError: Found no NVIDIA
    driver" that ended the job, and the engine's order already puts what ended a job first."""
    out = list(ordered)
    guard = len(out) ** 2 + 1          # a refines cycle (kb validate rejects it) cannot loop forever
    moved = True
    while moved and guard:
        moved, guard = False, guard - 1
        where = {f.id: i for i, f in enumerate(out)}
        for i, finding in enumerate(out):
            above = [where[b] for b in _broader(finding.entry)
                     if where.get(b, i) < i and not _milder(finding.entry, out[where[b]].entry)]
            if above:
                out.insert(min(above), out.pop(i))
                moved = True
                break
    return tuple(out)


def without_explained(ordered):
    """Findings less those another finding explains line for line: a broader entry it refines
    (`cublas-execution-failed` under `cublas-invalid-value`) or a consequence it leads to
    (`python-module-missing` under `torch-api-removed`), when every log line that is evidence
    for it is also evidence for the finer or causing finding. Listed anyway, such a finding
    only repeats the same line with the broader entry's advice, which is wrong here
    (`pip install pkg_resources`). A finding with a line of its own stays."""
    lines = {id(f): {e.line for e in f.evidence if e.line} for f in ordered}

    def explained(finding):
        own = lines[id(finding)]
        return bool(own) and any(
            other is not finding and own <= lines[id(other)]
            and (finding.id in _broader(other.entry) or finding.id in getattr(other.entry, "leads_to", ()))
            for other in ordered)

    return tuple(f for f in ordered if not explained(f))


# what the JSON keeps of a harmless finding's view: no causes, fixes or confidence to act on
HARMLESS_FIELDS = ("id", "title", "summary", "evidence")


@dataclass(frozen=True)
class Diagnosis:
    source: str
    findings: tuple[Finding, ...]
    lines: int
    bytes: int
    site: dict = field(repr=False, default_factory=dict)
    facts: Optional[dict] = field(repr=False, default=None)
    scheduler: Optional[str] = None     # slurm | pbs | lsf, as the engine saw it in the log
    key_lines: tuple = ()               # keylines.KeyLine: the lines that most likely ended the job
    harmless: tuple[Finding, ...] = ()  # known noise (entries of severity harmless), in log order: not failures
    context: dict = field(repr=False, default_factory=dict)  # what else the reader/engine saw: warnings

    @property
    def diagnosed(self):
        return bool(self.findings)

    def views(self, lang="en"):
        """The findings as the user sees them (view.FindingView), best first."""
        return self._views(self.findings, lang)

    def harmless_views(self, lang="en"):
        """The harmless lines' entries as the user sees them (view.FindingView), in log order."""
        return self._views(self.harmless, lang)

    def _views(self, found, lang):
        return tuple(f.view(lang=lang, site=self.site, facts=self.facts, scheduler=self.scheduler) for f in found)

    def to_dict(self, lang="en"):
        findings = [v.to_dict() for v in self.views(lang)]
        return {
            "schema": JSON_SCHEMA_VERSION,
            "source": self.source,
            "lines": self.lines,
            "bytes": self.bytes,
            "scheduler": self.scheduler,
            "lang": lang,
            # the fields shown in another language than `lang` (sr <-> hr, else English), as "ID:field"
            "fallback_fields": [f"{f['id']}:{name}" for f in findings for name in f["fallback_fields"]],
            "findings": findings,
            "facts": self.facts,
            "key_lines": [k.to_dict() for k in self.key_lines],
            "harmless": [{k: d[k] for k in HARMLESS_FIELDS} for d in (v.to_dict() for v in self.harmless_views(lang))],
            **({"warnings": list(self.context["warnings"])} if self.context.get("warnings") else {}),
        }
