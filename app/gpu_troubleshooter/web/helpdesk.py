"""What the helpdesk learns from submissions.

- unknown failures, grouped by the template of their key line (a plain
  database GROUP BY, so it works across gunicorn workers and processes);
- a draft knowledge-base entry made from such a group;
- "did this fix it?" feedback, counted per entry;
- outages: several failed jobs on one node within a window.

Business logic only; the views call these functions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

from sqlalchemy import case, func, select

from gpu_troubleshooter.template import template_key, template_of

from .models import NO_MATCH, Feedback, Submission, utcnow

# Where a node name shows in a log (Slurm, NCCL, PBS); facts come first.
_NODE_IN_LOG = tuple(re.compile(rx) for rx in (
    r"srun: error: (?P<node>[A-Za-z][\w.-]{0,62}): tasks? [\d,-]+:",
    r"\*\*\* (?:JOB|STEP) [\d._]+ ON (?P<node>[A-Za-z][\w.-]{0,62}) ",
    r"slurmstepd: error: .*? node (?P<node>[A-Za-z][\w.-]{0,62})\b",
    r"^(?:\S+\s)?(?P<node>[A-Za-z][\w.-]{0,62}):\d+:\d+ \[\d+\] NCCL",
    r"exec_host = (?P<node>[A-Za-z][\w.-]{0,62})/",
))


def _fact(facts, path: str) -> Optional[str]:
    node = facts.get("facts") if isinstance(facts, dict) and isinstance(facts.get("facts"), dict) else facts
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):  # a fact may be {"value": ...} or {"unknown": reason}
        node = node.get("value")
    return node if isinstance(node, str) and node else None


def node_of(diagnosis: dict, facts: Optional[dict], tail: str) -> str:
    """The node the job failed on: the facts when they name one, else the log."""
    nodelist = _fact(facts, "scheduler.nodelist")
    if nodelist and re.fullmatch(r"[A-Za-z][\w.-]{0,62}", nodelist):  # one node, not a range
        return nodelist
    host = _fact(facts, "host.hostname")
    if host:
        return host[:120]
    lines: List[str] = [e.get("text", "") for f in diagnosis.get("findings") or [] for e in f.get("evidence", [])]
    lines += [k.get("text", "") for k in diagnosis.get("key_lines") or []]
    lines += tail.splitlines()[-200:]
    for line in lines:
        for rx in _NODE_IN_LOG:
            m = rx.search(line)
            if m:
                return m.group("node")[:120]
    return ""


def job_user(facts: Optional[dict]) -> str:
    return (_fact(facts, "scheduler.user") or _fact(facts, "host.user") or "")[:120]


def key_line_of(diagnosis: dict) -> str:
    """The first key line of a diagnosis with no known failure ('' otherwise)."""
    if diagnosis.get("findings"):
        return ""
    keys = diagnosis.get("key_lines") or []
    return str(keys[0].get("text", "")) if keys else ""


def apply_learning_fields(row: Submission, diagnosis: dict) -> None:
    """Fill the columns grouping, outages and figures query; called when a scan is recorded."""
    row.key_line = key_line_of(diagnosis)
    row.key_template = template_of(row.key_line) if row.key_line else ""
    row.template_key = template_key(row.key_template) if row.key_template else ""
    row.node = node_of(diagnosis, row.facts, row.tail or "")
    row.job_user = job_user(row.facts)
    findings = diagnosis.get("findings") or []
    row.node_level = bool(findings) and findings[0].get("actor") == "site"


# --- unknown failures, grouped ---------------------------------------------

@dataclass(frozen=True)
class UnknownGroup:
    key: str
    template: str
    count: int
    first_seen: datetime
    last_seen: datetime
    last_7_days: int
    previous_7_days: int

    @property
    def trend(self) -> str:
        if self.last_7_days > self.previous_7_days:
            return "rising"
        return "falling" if self.last_7_days < self.previous_7_days else "steady"


def unknown_groups(session, now: Optional[datetime] = None, limit: int = 200) -> List[UnknownGroup]:
    now = now or utcnow()
    week, fortnight = now - timedelta(days=7), now - timedelta(days=14)
    recent = func.sum(case((Submission.created_at >= week, 1), else_=0))
    before = func.sum(case(((Submission.created_at >= fortnight) & (Submission.created_at < week), 1), else_=0))
    rows = session.execute(
        select(Submission.template_key, func.min(Submission.key_template), func.count(Submission.id),
               func.min(Submission.created_at), func.max(Submission.created_at), recent, before)
        .where(Submission.failure_class == NO_MATCH, Submission.template_key != "", Submission.state == "done")
        .group_by(Submission.template_key)
        .order_by(func.count(Submission.id).desc(), func.max(Submission.created_at).desc())
        .limit(limit)
    ).all()
    return [UnknownGroup(k, t, int(c), first, last, int(r or 0), int(b or 0)) for k, t, c, first, last, r, b in rows]


def group_submissions(session, key: str, limit: int = 100) -> Sequence[Submission]:
    return session.scalars(select(Submission).where(Submission.template_key == key, Submission.failure_class == NO_MATCH)
                           .order_by(Submission.created_at.desc()).limit(limit)).all()


# --- a draft entry from a group -------------------------------------------------

_MASK_REGEX = {"<NUM>": r"[-+]?\d[\d.,]*\s?\w{0,3}", "<PATH>": r"\S+", "<HEX>": r"(?:0x)?[0-9a-fA-F]+",
               "<IP>": r"[\d.:]+", "<NODE>": r"[\w.-]+", "<TIME>": r"[\d:.T -]+", "<EMAIL>": r"\S+",
               "<UUID>": r"[0-9a-fA-F-]{36}", "<URL>": r"\S+"}
_MASK = re.compile("|".join(re.escape(m) for m in _MASK_REGEX))


def signature_of(template: str) -> str:
    """A linear-time regex (no nested repeats) that matches every line of the group."""
    parts, pos = [], 0
    for m in _MASK.finditer(template):
        parts.append(re.escape(template[pos:m.start()]))
        parts.append(_MASK_REGEX[m.group(0)])
        pos = m.end()
    parts.append(re.escape(template[pos:]))
    return "".join(parts).replace("\\ ", " ").strip()


def draft_id(template: str) -> str:
    words = re.findall(r"[a-z]+", template.lower().replace("<num>", " ").replace("<path>", " "))
    stem = "-".join(w for w in words if len(w) > 2)[:40].strip("-") or "unknown"
    return f"draft-{stem}-{template_key(template)[:6]}"


def write_draft(folder: Path, template: str, rows: Iterable[Submission]) -> Path:
    """Write `<folder>/drafts/<id>.yaml` and the group's redacted logs as its must-match examples.

    A draft carries `draft: true`: `kb validate` checks it (and warns that it
    has no near misses yet) but the engine never uses it until a person
    removes that line and writes the fixes."""
    entry_id = draft_id(template)
    area = folder / "drafts"
    examples = area / entry_id / "must-match"
    examples.mkdir(parents=True, exist_ok=True)
    count = 0
    for row in rows:
        text = row.tail or row.key_line
        if text:
            (examples / f"submission-{row.id}.log").write_text(text.rstrip("\n") + "\n", encoding="utf-8")
            count += 1
    sig = signature_of(template).replace("'", "''")
    title = template[:70].replace("'", "''")
    (area / f"{entry_id}.yaml").write_text(f"""\
# Draft made by the helpdesk from {count} submission(s) with no known failure.
# To promote it: write the title, causes and fixes, add >= 2 near misses in
# {entry_id}/must-not-match/, check with `troubleshoot kb validate`, then
# delete the `draft: true` line.
id: {entry_id}
schema: 2
draft: true
title: '{title}'
summary: 'TODO: what this failure means, in one line'
tags: [draft]
severity: error
actor: user
signatures:
  - regex: '{sig}'
    weight: 1.0
causes:
  - 'TODO: why this happens'
fixes:
  - title: 'TODO: the first thing to try'
    text: 'TODO'
""", encoding="utf-8")
    return area / f"{entry_id}.yaml"


# --- feedback -------------------------------------------------------------------

@dataclass(frozen=True)
class EntryFeedback:
    entry_id: str
    shown: int
    fixed: int
    not_fixed: int
    wrong: int
    fixes_taken: tuple   # ((fix number, times), ...) most taken first

    @property
    def rejected(self) -> int:
        return self.not_fixed + self.wrong

    @property
    def needs_review(self) -> bool:
        """Often rejected: at least 3 answers and a third of them say it did not help."""
        answered = self.fixed + self.rejected
        return answered >= 3 and self.rejected * 3 >= answered


def feedback_by_entry(session, since: Optional[datetime] = None) -> List[EntryFeedback]:
    subs = select(Submission.failure_class, func.count(Submission.id)).where(Submission.failure_class != NO_MATCH)
    fb = select(Feedback.entry_id, Feedback.verdict, func.count(Feedback.id)).where(Feedback.entry_id != "")
    taken = select(Feedback.entry_id, Feedback.fix_taken, func.count(Feedback.id)).where(Feedback.fix_taken.is_not(None))
    if since is not None:
        subs, fb, taken = (subs.where(Submission.created_at >= since), fb.where(Feedback.created_at >= since),
                           taken.where(Feedback.created_at >= since))
    shown = dict(session.execute(subs.group_by(Submission.failure_class)).all())
    verdicts: dict = {}
    for entry_id, verdict, n in session.execute(fb.group_by(Feedback.entry_id, Feedback.verdict)).all():
        verdicts.setdefault(entry_id, {})[verdict] = n
    fixes: dict = {}
    for entry_id, fix, n in session.execute(taken.group_by(Feedback.entry_id, Feedback.fix_taken)).all():
        fixes.setdefault(entry_id, []).append((fix, n))
    out = []
    for entry_id in sorted(set(shown) | set(verdicts)):
        v = verdicts.get(entry_id, {})
        out.append(EntryFeedback(entry_id, int(shown.get(entry_id, 0)), v.get("fixed", 0), v.get("not_fixed", 0),
                                 v.get("wrong_diagnosis", 0),
                                 tuple(sorted(fixes.get(entry_id, []), key=lambda p: (-p[1], p[0])))))
    return sorted(out, key=lambda e: (not e.needs_review, -e.shown, e.entry_id))


# --- outages --------------------------------------------------------------------

@dataclass(frozen=True)
class Outage:
    node: str
    jobs: int
    users: int
    since: datetime
    node_level: int   # how many of them the site must fix (Xid, ECC, fallen off the bus, ...)
    classes: tuple

    @property
    def action(self) -> str:
        return (f'scontrol update NodeName={self.node} State=DRAIN Reason="helpdesk: {self.jobs} failed jobs since '
                f'{self.since:%Y-%m-%d %H:%M}"')


def outages(session, window_hours: float, min_jobs: int, min_node_level: int = 2,
            now: Optional[datetime] = None) -> List[Outage]:
    """Nodes with at least `min_jobs` failed submissions (or `min_node_level`
    failures of a node-level entry) within the window."""
    since = (now or utcnow()) - timedelta(hours=window_hours)
    rows = session.execute(
        select(Submission.node, func.count(Submission.id),
               func.count(func.distinct(case((Submission.job_user != "", Submission.job_user)))),
               func.min(Submission.created_at), func.sum(case((Submission.node_level.is_(True), 1), else_=0)))
        .where(Submission.node != "", Submission.created_at >= since, Submission.state == "done")
        .group_by(Submission.node)
    ).all()
    found = []
    for node, jobs, users, first, node_level in rows:
        node_level = int(node_level or 0)
        if jobs >= min_jobs or node_level >= min_node_level:
            classes = tuple(c or "no known failure" for c in session.scalars(
                select(Submission.failure_class).where(Submission.node == node, Submission.created_at >= since)
                .distinct()))
            found.append(Outage(node, int(jobs), int(users), first, node_level, classes))
    return sorted(found, key=lambda o: (-o.jobs, o.node))
