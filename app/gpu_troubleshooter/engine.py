"""Log + knowledge base (+ probe facts) -> ranked findings.

Two stages, so that the expensive part only sees candidates:
1. scan: every signature of every entry in one linear-time pass over the
   byte stream (scanner.py); memory is bounded by what is kept per entry.
2. score: the few candidate lines are cleaned (ANSI, rank prefixes, progress
   bars), checked against each entry's exclusions, compared with its known
   phrases by rapidfuzz (so reworded, retyped or hard-wrapped messages still
   count), their values extracted, and the entries ranked root cause first.
"""
import io
import re
from collections import deque
from dataclasses import dataclass

from rapidfuzz import fuzz

from .findings import Diagnosis, Evidence, Finding
from .keylines import PATTERNS as KEY_PATTERNS, KeyLineCollector
from .normalize import clean, decode
from . import reader
from .reader import open_log
from .scanner import Scanner

REPORT_THRESHOLD = 0.5   # below this combined confidence: "no known failure"
FUZZY_FLOOR = 0.80       # a phrase similarity below this adds nothing
FUZZY_WEIGHT = 0.95      # what a perfect phrase match is worth on its own
FUZZY_LIFT = 0.45        # how far a phrase can lift one weak signature's weight
KEEP_HITS = 40           # per entry: the first and the last this many lines
SHOWN_EVIDENCE = 8


@dataclass
class _CompiledEntry:
    entry: object
    exclude: tuple
    values: tuple
    phrases: tuple


class CompiledKnowledgeBase:
    """The scanner and per-entry regexes for one KnowledgeBase, built once."""

    def __init__(self, kb):
        self.kb = kb
        patterns, self.owner = [], []
        self.entries = []
        for ei, entry in enumerate(kb.entries):
            for si, sig in enumerate(entry.signatures):
                patterns.append((sig.pattern, sig.case_sensitive))
                self.owner.append((ei, si))
            self.entries.append(_CompiledEntry(
                entry=entry,
                exclude=tuple(re.compile(x.pattern, 0 if x.case_sensitive else re.IGNORECASE) for x in entry.exclude),
                values=tuple((name, re.compile(rx, re.IGNORECASE)) for name, rx in entry.values),
                phrases=tuple(p.lower() for p in entry.phrases),
            ))
        # The generic shapes of a job's ending (keylines.py) ride the same pass.
        self.key_kinds = {}
        for kind, rx in KEY_PATTERNS:
            self.key_kinds[len(patterns)] = kind
            patterns.append((rx, True))
            self.owner.append((-1, -1))
        self.scanner = Scanner(patterns)


_COMPILED = {}


def compile_kb(kb) -> CompiledKnowledgeBase:
    held = _COMPILED.get(id(kb))
    if held is None or held.kb is not kb:
        held = _COMPILED[id(kb)] = CompiledKnowledgeBase(kb)
    return held


class _EntryHits:
    """The first and last KEEP_HITS candidate lines of one entry: flat memory."""

    def __init__(self):
        self.first, self.last, self.count = [], deque(maxlen=KEEP_HITS), 0

    def add(self, item):
        self.count += 1
        (self.first if len(self.first) < KEEP_HITS else self.last).append(item)

    def __iter__(self):
        yield from self.first
        yield from self.last


def diagnose_stream(stream, kb, source="log", facts=None) -> Diagnosis:
    """Diagnose a binary stream (plain or compressed); raises LogInputError."""
    ckb = compile_kb(kb)
    hits = {}
    keys = KeyLineCollector()
    line_no, nbytes, last = 1, 0, b"\n"
    for chunk in reader.iter_chunks(open_log(stream), source, reader.CHUNK_SIZE):
        for hit in ckb.scanner.scan(chunk, line_no):
            sigs_by_entry = {}
            kinds = [ckb.key_kinds[pid] for pid in hit.pattern_ids if pid in ckb.key_kinds]
            if kinds:
                keys.feed_kinds(hit.line_no, clean(decode(hit.raw)), kinds)
            for pid in hit.pattern_ids:
                ei, si = ckb.owner[pid]
                if ei < 0:
                    continue
                sigs_by_entry.setdefault(ei, set()).add(si)
            for ei, sigs in sigs_by_entry.items():
                hits.setdefault(ei, _EntryHits()).add((hit, frozenset(sigs)))
        line_no += chunk.count(b"\n")
        nbytes += len(chunk)
        last = chunk[-1:]
    lines = line_no - 1 + (0 if last == b"\n" else 1)
    findings = [f for ei, h in hits.items() if (f := _score(ckb.entries[ei], h)) is not None]
    if facts is not None:
        findings = _apply_facts(findings, kb, facts)
    return Diagnosis(source=source, findings=rank(findings), lines=lines, bytes=nbytes, site=kb.site, facts=facts,
                     key_lines=keys.result())


def diagnose_path(path, kb, facts=None) -> Diagnosis:
    with open_log(path) as stream:
        return diagnose_stream(stream, kb, source=str(path), facts=facts)


def diagnose_text(text, kb, source="text", facts=None) -> Diagnosis:
    return diagnose_stream(io.BytesIO(text.encode("utf-8", errors="replace")), kb, source=source, facts=facts)


def phrase_similarity(phrases, text):
    """Best rapidfuzz similarity in [0, 1] of a known phrase within `text`."""
    text = text.lower()
    best = 0.0
    for phrase in phrases:
        # partial_ratio aligns the shorter string inside the longer one: only
        # use it when the line can hold the whole phrase, or a short line
        # ("out of memory") would fully "contain" a long phrase.
        score = fuzz.partial_ratio(phrase, text) if len(text) >= len(phrase) else fuzz.ratio(phrase, text)
        best = max(best, score / 100.0)
    return best


def _score(ce, entry_hits):
    """A Finding for one entry from its candidate lines, or None."""
    entry = ce.entry
    best_weight = {}
    scored = []
    values = {}
    for hit, sigs in entry_hits:
        text = clean(decode(hit.raw))
        if any(rx.search(text) for rx in ce.exclude):
            continue
        following = clean(decode(hit.context[1])) if len(hit.context) > 1 else ""
        unwrapped = text + following  # a hard wrap splits a message mid-word
        sim = max(phrase_similarity(ce.phrases, text), phrase_similarity(ce.phrases, unwrapped)) if ce.phrases else 0.0
        line_weight = 0.0
        for si in sigs:
            w = entry.signatures[si].weight
            if sim >= FUZZY_FLOOR:  # a known message, reworded or retyped
                w = max(w, min(FUZZY_WEIGHT * sim, w + FUZZY_LIFT))
            best_weight[si] = max(best_weight.get(si, 0.0), w)
            line_weight = max(line_weight, w)
        scored.append((line_weight, hit.line_no, text))
        _extract_values(ce, (text, unwrapped, clean(decode(hit.context[0])) + " " + text), values)
    if not scored:
        return None
    miss = 1.0
    for w in best_weight.values():
        miss *= 1.0 - w
    confidence = min(0.99, 1.0 - miss)
    if confidence < REPORT_THRESHOLD:
        return None
    shown = sorted(scored, key=lambda s: (-s[0], s[1]))[:SHOWN_EVIDENCE]
    evidence = tuple(Evidence(line, text) for _, line, text in sorted(shown, key=lambda s: s[1]))
    return Finding(entry=entry, confidence=confidence, evidence=evidence, values=tuple(values.items()))


def _extract_values(ce, texts, values):
    for name, rx in ce.values:
        if name in values:
            continue
        for text in texts:
            m = rx.search(text)
            if m and m.group(name):
                values[name] = m.group(name).strip()
                break


def _apply_facts(findings, kb, facts):
    """Facts confirm, weaken or (alone) create findings; see facts.py."""
    from .facts import apply_fact_rules  # only when facts were given
    by_id = {f.id: f for f in findings}
    out = []
    for entry in kb.entries:
        if not entry.fact_rules:
            if entry.id in by_id:
                out.append(by_id[entry.id])
            continue
        outcome = apply_fact_rules(entry.fact_rules, facts)
        found = by_id.get(entry.id)
        if found is None:
            if outcome.alone_by and not outcome.ruled_out_by:
                out.append(Finding(entry=entry, confidence=0.9, evidence=tuple(Evidence(0, f"fact: {n}") for n in outcome.alone_by),
                                   confirmed_by=tuple(outcome.alone_by)))
            continue
        confidence = found.confidence
        if outcome.confirmed_by or outcome.alone_by:
            confidence = 1.0 - (1.0 - confidence) * 0.5
        if outcome.ruled_out_by:
            confidence *= 0.4
        if confidence >= REPORT_THRESHOLD:
            out.append(Finding(entry=entry, confidence=min(confidence, 0.99), evidence=found.evidence, values=found.values,
                               confirmed_by=tuple(outcome.confirmed_by) + tuple(outcome.alone_by),
                               ruled_out_by=tuple(outcome.ruled_out_by)))
    return out


def rank(findings):
    """Best first: by confidence, then a root cause before what it leads to
    (an OOM on one rank before the NCCL abort it causes), then earliest line."""
    ordered = sorted(findings, key=lambda f: (-round(f.confidence, 2), f.first_line or 10**12, f.id))
    present = {f.id for f in ordered}
    moved = True
    guard = len(ordered) ** 2 + 1
    while moved and guard:
        moved, guard = False, guard - 1
        for i, later in enumerate(ordered):
            for j in range(i):
                earlier = ordered[j]
                if earlier.id in later.entry.leads_to and later.id not in earlier.entry.leads_to and earlier.id in present:
                    ordered.insert(j, ordered.pop(i))
                    moved = True
                    break
            if moved:
                break
    return tuple(ordered)
