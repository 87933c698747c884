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
from collections import deque
from functools import cached_property

from .findings import Diagnosis, Evidence, Finding, finer_first, without_explained
from .keylines import KEEP_PER_KIND, PATTERNS as KEY_PATTERNS, KeyLineCollector
from .normalize import clean, decode
from . import reader
from .scanner import Scanner, re2_options, re2_pattern, re2_signature

REPORT_THRESHOLD = 0.5   # below this combined confidence: "no known failure"
FUZZY_FLOOR = 0.80       # a phrase similarity below this adds nothing
FUZZY_WEIGHT = 0.95      # what a perfect phrase match is worth on its own
FUZZY_LIFT = 0.45        # how far a phrase can lift one weak signature's weight
KEEP_PER_SIGNATURE = 4   # per entry and signature: the strongest (then earliest) lines kept
LOOK_PER_SIGNATURE = 32  # non-excluded lines of one signature weighed before it counts as seen enough
SHOWN_EVIDENCE = 8

# Which batch system ran the job, from what it writes into the job's output
# (case-sensitive: these are the schedulers' own words). `log.scheduler` in
# fix conditions; the first one seen wins.
SCHEDULER_MARKERS = (
    # a refused submission names its scheduler too (`sbatch: error:`, `qsub:`, LSF's "Job not
    # submitted."), so the fixes for that scheduler come first on a log of one line
    ("slurm", r"slurmstepd(?:-[\w.-]+)?: |srun: error|(?:srun|sbatch|salloc): fatal: |(?:sbatch|salloc): error: |SLURM_JOB_ID"),
    # Torque's abort mail says "Aborted by PBS Server" and nothing else of PBS's
    ("pbs", r"=>> PBS: |PBS: job killed|PBS_JOBID|PBS Job Id: |\bqsub: |Aborted by PBS Server"),
    ("lsf", r"TERM_[A-Z_]+: |Sender: LSF System|Job not submitted\.|Request aborted by esub|LSF is down|Cannot connect to LSF|\bbsub: "),
    # Grid Engine (SGE, Son of Grid Engine, UGE, OCS): qsub's refusal and acknowledgement,
    # qacct's record of a failed job, and the qmaster it talks to
    ("sge", r"Unable to run job: |Your job(?:-array)? \d+[.\d:-]* \(\"|\bqmaster\b|qacct -j|SGE_TASK_ID"),
    ("flux", r"flux-shell\[\d+\]: |flux-job: |job\.exception type=|flux job info "),
    ("condor", r"Error from slot\S*@|Job was held\.|condor_q "),
    # `kubectl describe` and the kube-scheduler's words; its events name the reporter ("kubelet");
    # "0/3 nodes are available: 3 insufficient nvidia.com/gpu" is written in either case
    ("kubernetes", r"[Rr]eason:\s+OOMKilled|[Ii]nsufficient nvidia\.com/gpu|kubectl |FailedScheduling|"
                   r"UnexpectedAdmissionError|\d+/\d+ nodes are available: |/var/lib/kubelet/|\skubelet\s{2,}"),
)


class _CompiledEntry:
    """An entry's regexes, all RE2 (linear time, whatever a site entry holds)."""

    def __init__(self, entry, problems):
        self.entry, self._problems = entry, problems
        self._exclude = self._exclude_next = self._values = None  # compiled on the entry's first candidate line
        self.broken = False
        self._set = None
        self.noise = None   # _HarmlessLines, for an entry that is not itself harmless

    # what scoring reads, worked out on the entry's first candidate line (most entries never have one)
    @cached_property
    def phrases(self):
        return tuple(p.lower() for p in self.entry.phrases)

    @cached_property
    def weights(self):
        return tuple(s.weight for s in self.entry.signatures)

    @cached_property
    def best_possible(self):
        """The most a line of each signature can be worth (a phrase can lift a weak one)."""
        return tuple(max(w, min(FUZZY_WEIGHT, w + FUZZY_LIFT)) if self.phrases else w for w in self.weights)

    def compile(self):
        """Compile exclude and values (RE2); False, with a problem noted, when RE2 cannot run one."""
        if self._exclude is None and not self.broken:
            try:
                self._exclude = tuple(re2_pattern(x.pattern, x.case_sensitive) for x in self.entry.exclude if not x.next_line)
                self._exclude_next = tuple(re2_pattern(x.pattern, x.case_sensitive) for x in self.entry.exclude if x.next_line)
                self._values = tuple((name, re2_pattern(rx, False)) for name, rx in self.entry.values)
            except Exception as e:  # re2.error: a pattern RE2 cannot run (look-around, backreference)
                self.broken = True
                self._problems.append(f"{self.entry.path}: entry '{self.entry.id}' skipped: "
                                      f"a pattern in exclude/values cannot be compiled: {e}")
        return not self.broken

    @property
    def exclude(self):
        self.compile()
        return self._exclude or ()

    @property
    def exclude_next(self):
        """Excludes tested on the line after a hit (`next_line: true`)."""
        self.compile()
        return self._exclude_next or ()

    @property
    def values(self):
        self.compile()
        return self._values or ()

    def signatures_on(self, raw):
        """Indexes of this entry's signatures that match a raw segment (where RE2
        cannot hold them all in one set, none: the scanner's report still counts)."""
        if self._set is None:
            import re2
            self._set, self._set_ids = re2.Set.SearchSet(re2_options()), []
            for si, sig in enumerate(self.entry.signatures):
                try:
                    self._set.Add(re2_signature(sig.pattern, sig.case_sensitive))
                    self._set_ids.append(si)
                except re2.error:
                    pass  # the scanner's report for this signature still counts
            try:
                self._set.Compile()
            except re2.error:
                self._set = False
        if self._set is False:
            return []
        return [self._set_ids[i] for i in (self._set.Match(raw) or ())]


class _HarmlessLines:
    """Whether a line is one that harmless entries know: one RE2 set, built on first use and
    asked only for lines that already matched a failure's signature or a key-line shape
    (few per chunk: the key scanner hands over only the last ones), not for every line."""

    def __init__(self, signatures):
        self._signatures, self._set = signatures, None

    def __call__(self, raw):
        if not self._signatures:
            return False
        if self._set is None:
            import re2
            self._set = re2.Set.SearchSet(re2_options())
            for sig in self._signatures:
                try:
                    self._set.Add(re2_signature(sig.pattern, sig.case_sensitive))
                except re2.error:
                    pass  # such an entry is reported and left out by the scanner's own check
            self._set.Compile()
        return bool(self._set.Match(raw))


class CompiledKnowledgeBase:
    """The scanner and per-entry regexes for one KnowledgeBase, built once.
    An entry whose regexes RE2 or Hyperscan cannot take is left out and named
    in `problems`: one bad site entry never stops a diagnosis."""

    def __init__(self, kb):
        self.kb = kb
        self.problems = []
        self.entries = [_CompiledEntry(entry, self.problems) for entry in kb.entries]
        self.scanner = self._scanner()
        # A line a harmless entry knows (by a signature that alone would list it) is never
        # evidence of a failure: so a site's harmless entry also silences its noise everywhere.
        noise = self.harmless_line = _HarmlessLines([s for ce in self.entries if ce.entry.harmless
                                                     for s in ce.entry.signatures if s.weight >= REPORT_THRESHOLD])
        for ce in self.entries:
            if not ce.entry.harmless:
                ce.noise = noise
        # The generic shapes of a job's ending (keylines.py) ride the same pass,
        # every match of them (the last ones of each kind are what counts).
        self.key_kinds = [kind for kind, _ in KEY_PATTERNS]
        # A chunk hands over only the last lines of each shape: the collector
        # keeps the last KEEP_PER_KIND of the log anyway.
        self.key_scanner = Scanner([(rx, True) for _, rx in KEY_PATTERNS], all_matches=True,
                                   keep_last=2 * KEEP_PER_KIND)

    def _scanner(self):
        patterns, groups, self.owner = [], [], []
        for ei, ce in enumerate(self.entries):
            for si, sig in enumerate(ce.entry.signatures):
                patterns.append((sig.pattern, sig.case_sensitive))
                groups.append(ei)
                self.owner.append((ei, si))
        self.key_pids = {}  # the key-line shapes ride the main pass too: it says which occur in a chunk
        for k, (_, rx) in enumerate(KEY_PATTERNS):
            self.key_pids[len(patterns)] = k
            patterns.append((rx, True))
            groups.append(-100 - k)
            self.owner.append((None, None))
        self.markers = {}
        for name, rx in SCHEDULER_MARKERS:
            self.markers[len(patterns)] = name
            patterns.append((rx, True))
            groups.append(-1 - len(self.markers))
            self.owner.append((None, name))
        try:
            return Scanner(patterns, groups)
        except Exception:  # a signature the scanner rejects: find its entry, leave that one out
            bad = set()
            for ei, ce in enumerate(self.entries):
                try:
                    Scanner([(s.pattern, s.case_sensitive) for s in ce.entry.signatures])
                except Exception as e:
                    bad.add(ei)
                    self.problems.append(f"{ce.entry.path}: entry '{ce.entry.id}' skipped: the scanner rejects a signature: {e}")
            if not bad:
                raise
            self.entries = [ce for ei, ce in enumerate(self.entries) if ei not in bad]
            return self._scanner()


_COMPILED = {}


def compile_kb(kb) -> CompiledKnowledgeBase:
    held = _COMPILED.get(id(kb))
    if held is None or held.kb is not kb:
        if len(_COMPILED) > 8:
            _COMPILED.clear()
        held = _COMPILED[id(kb)] = CompiledKnowledgeBase(kb)
    return held


class _Line:
    __slots__ = ("line_no", "text", "weights", "weight", "value_texts")

    def __init__(self, line_no, text, weights, value_texts):
        self.line_no, self.text, self.weights, self.value_texts = line_no, text, weights, value_texts
        self.weight = max(weights.values())


class _EntryEvidence:
    """What one entry keeps of a log: per signature, the KEEP_PER_SIGNATURE
    strongest non-excluded lines (earliest first among equals). Bounded memory
    whatever the log; exclusions are decided before a line takes a slot."""

    def __init__(self, ce):
        self.ce = ce
        self.by_sig = {}
        self.looked = {}

    def add(self, hit, reported):
        ce = self.ce
        if not ce.compile():
            return list(range(len(ce.weights)))  # a broken entry: nothing more of it is wanted
        text = clean(decode(hit.raw))
        following = clean(decode(hit.context[1])) if hit.context[1] else ""
        if (any(rx.search(text) for rx in ce.exclude) or any(rx.search(following) for rx in ce.exclude_next)
                or (ce.noise is not None and ce.noise(hit.raw))):
            return ()
        sigs = set(ce.signatures_on(hit.raw)) | set(reported)
        unwrapped = text + following  # a hard wrap splits a message mid-word
        sim = 0.0
        if ce.phrases and max(ce.weights[si] for si in sigs) < FUZZY_WEIGHT:  # else no lift can change what the line is worth
            sim = max(phrase_similarity(ce.phrases, text), phrase_similarity(ce.phrases, unwrapped))
        weights = {}
        for si in sigs:
            w = ce.weights[si]
            if sim >= FUZZY_FLOOR:  # a known message, reworded or retyped
                w = max(w, min(FUZZY_WEIGHT * sim, w + FUZZY_LIFT))
            weights[si] = w
        line = _Line(hit.line_no, text, weights, (text, unwrapped, clean(decode(hit.context[0])) + " " + text))
        done = []
        for si, w in weights.items():
            kept = self.by_sig.setdefault(si, [])
            self.looked[si] = self.looked.get(si, 0) + 1
            if len(kept) < KEEP_PER_SIGNATURE:
                kept.append(line)
            else:
                weakest = min(kept, key=lambda ln: (ln.weights[si], -ln.line_no))
                if w > weakest.weights[si]:
                    kept.remove(weakest)
                    kept.append(line)
            if self.looked[si] >= LOOK_PER_SIGNATURE or (
                    len(kept) >= KEEP_PER_SIGNATURE and min(ln.weights[si] for ln in kept) >= ce.best_possible[si] - 1e-9):
                done.append(si)
        return done

    def lines(self):
        unique = {id(ln): ln for kept in self.by_sig.values() for ln in kept}
        return sorted(unique.values(), key=lambda ln: ln.line_no)


def diagnose_chunks(chunks, kb, source="log", facts=None) -> Diagnosis:
    """Diagnose an iterable of byte chunks that end on line boundaries."""
    return _diagnose(((chunk, len(chunk)) for chunk in chunks), kb, source, facts)


def _diagnose(buffers, kb, source, facts, ahead=0):
    """The scan: `buffers` yields (buffer, end) pairs, buffer[:end] one chunk.
    `ahead`: a chunk stays intact until this many more were yielded (see
    reader.LogReader.buffers(spare=...)): the first pass over the next chunks
    then runs in SCAN_THREADS threads while this one handles the chunk before."""
    ckb = compile_kb(kb)
    owner = ckb.owner
    need = [True] * len(owner)
    pid_of = {}
    for pid, (ei, si) in enumerate(owner):
        if ei is not None:
            pid_of[(ei, si)] = pid
    evidence = {}
    seen_markers = []

    key_pids, keys_present = ckb.key_pids, set()

    def on_hit(hit):
        (pid,) = hit.pattern_ids
        ei, si = owner[pid]
        if si is None:  # a key-line shape: present in this chunk
            keys_present.add(key_pids[pid])
            need[pid] = False
            return
        if ei is None:
            if need[pid]:
                need[pid] = False
                seen_markers.append((hit.line_no, si))
            return
        ev = evidence.get(ei)
        if ev is None:
            ev = evidence[ei] = _EntryEvidence(ckb.entries[ei])
        for done in ev.add(hit, (si,)):
            need[pid_of[(ei, done)]] = False

    keys, key_kinds, key_line = KeyLineCollector(), ckb.key_kinds, [0, "", []]
    harmless_line = ckb.harmless_line

    def on_key(hit):  # every shape a line matches, fed once per line, in log order
        if hit.line_no != key_line[0]:
            flush_key()
            # a line a harmless entry knows never takes one of the few key-line slots
            key_line[:] = [hit.line_no, clean(decode(hit.raw)), [] if not harmless_line(hit.raw) else None]
        if key_line[2] is not None:
            key_line[2].extend(key_kinds[pid] for pid in hit.pattern_ids)

    def flush_key():
        if key_line[2]:
            keys.feed_kinds(key_line[0], key_line[1], key_line[2])
        key_line[:] = [0, "", []]

    line_no, nbytes, last = 1, 0, b"\n"
    scan, key_scan = ckb.scanner.scan, ckb.key_scanner.scan

    def handle(buf, end, newlines, prepared=None):
        nonlocal line_no, nbytes, last
        scan(buf, line_no, need, on_hit, end, prepared=prepared, newlines=newlines)
        key_scan(buf, line_no, None, on_key, end, present=keys_present, newlines=newlines)
        flush_key()
        for pid in key_pids:
            need[pid] = True
        keys_present.clear()
        line_no += newlines() if callable(newlines) else newlines
        nbytes += end
        last = buf[end - 1:end]

    if ahead and ckb.scanner.backend == "hyperscan":
        _pipelined(buffers, ckb.scanner.prepare, handle, ahead)
    else:
        counter = _NewlineCounter()
        try:
            for buf, end in buffers:
                if end:
                    handle(buf, end, counter.count(buf, end))  # the count overlaps the scan: Hyperscan releases the GIL
        finally:
            counter.close()
    lines = line_no - 1 + (0 if last == b"\n" or not nbytes else 1)
    scored = [f for ei, ev in evidence.items() if (f := _score(ev)) is not None]
    harmless = tuple(sorted((f for f in scored if f.entry.harmless), key=lambda f: (f.first_line or 0, f.id)))
    findings = [f for f in scored if not f.entry.harmless]
    if facts is not None:
        findings = _apply_facts(findings, kb, facts)
    # a line known to be harmless is never one that "ended the job"
    harmless_lines = {e.line for f in harmless for e in f.evidence}
    return Diagnosis(source=source, findings=rank(findings), lines=lines, bytes=nbytes, site=kb.site, facts=facts,
                     scheduler=min(seen_markers)[1] if seen_markers else None,
                     key_lines=tuple(k for k in keys.result() if k.line not in harmless_lines), harmless=harmless)


SCAN_THREADS = 2          # threads for the first pass over a large log's chunks (Hyperscan runs without the GIL)
PIPELINE_FROM = 1 << 20   # a log whose first chunk is smaller than this is scanned in one thread


def _pipelined(buffers, prepare, handle, ahead):
    """handle() each chunk in order in this thread, while SCAN_THREADS
    threads run the part of its scan that depends on nothing seen before
    (scanner.prepare(): the first Hyperscan pass) and count its newlines,
    for up to `ahead` chunks ahead of it. What is found is what one thread
    finds: handle() sees the chunks, and each chunk's first-pass results, in
    log order. A small log starts no thread."""
    def first_pass(buf, end):
        return prepare(buf, end), buf.count(b"\n", 0, end)

    # A bare pair of threads and a queue: concurrent.futures would import logging (start-up time)
    import _thread
    import threading
    from _queue import SimpleQueue
    jobs, threads, waiting = SimpleQueue(), [], deque()

    def work():
        while (job := jobs.get()) is not None:
            buf, end, out, done = job
            try:
                out.append(first_pass(buf, end))
            except BaseException as e:  # handed to the handling thread, raised there
                out.append(e)
            done.release()

    def finish(buf, end, out, done):
        done.acquire()
        if isinstance(out[0], BaseException):
            raise out[0]
        prepared, newlines = out[0]
        handle(buf, end, newlines, prepared)

    try:
        for buf, end in buffers:
            if not end:
                continue
            if not threads and end < PIPELINE_FROM:
                handle(buf, end, buf.count(b"\n", 0, end))
                continue
            if not threads:
                threads = [threading.Thread(target=work, name="troubleshoot-scan", daemon=True) for _ in range(SCAN_THREADS)]
                for t in threads:
                    t.start()
            done = _thread.allocate_lock()
            done.acquire()
            waiting.append((buf, end, [], done))
            jobs.put(waiting[-1])
            if len(waiting) > ahead:
                finish(*waiting.popleft())
        while waiting:
            finish(*waiting.popleft())
    finally:
        for _ in threads:
            jobs.put(None)
        for t in threads:
            t.join()


class _NewlineCounter:
    """Counts a chunk's newlines in a second thread while Hyperscan scans it
    (the scan runs without the GIL), so the count costs no wall time on a
    machine with a spare core. Small logs never start the thread."""

    THREAD_FROM = 1 << 20

    def __init__(self):
        self._pool = None

    def count(self, buf, end):
        if end < self.THREAD_FROM:
            n = buf.count(b"\n", 0, end)
            return lambda: n
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="troubleshoot-count")
        return self._pool.submit(buf.count, b"\n", 0, end).result

    def close(self):
        if self._pool is not None:
            self._pool.shutdown(wait=True)


def diagnose_stream(stream, kb, source="log", facts=None) -> Diagnosis:
    """Diagnose a binary stream (plain or compressed); raises LogInputError.
    A stream damaged part-way is diagnosed up to the damage, with a warning."""
    log = reader.LogReader(reader.open_log(stream), source)
    diagnosis = _diagnose(log.buffers(spare=SCAN_THREADS), kb, source, facts, ahead=SCAN_THREADS)
    if log.warnings:
        diagnosis.context["warnings"] = list(log.warnings)
    return diagnosis


def diagnose_path(path, kb, facts=None) -> Diagnosis:
    with reader.open_log(path) as stream:
        return diagnose_stream(stream, kb, source=str(path), facts=facts)


def diagnose_text(text, kb, source="text", facts=None) -> Diagnosis:
    return diagnose_stream(io.BytesIO(text.encode("utf-8", errors="replace")), kb, source=source, facts=facts)


def phrase_similarity(phrases, text):
    """Best rapidfuzz similarity in [0, 1] of a known phrase within `text`."""
    from rapidfuzz import fuzz  # imported only when a weak line needs it: start-up time matters
    text = text.lower()
    best = 0.0
    for phrase in phrases:
        # partial_ratio aligns the shorter string inside the longer one: only
        # use it when the line can hold the whole phrase, or a short line
        # ("out of memory") would fully "contain" a long phrase.
        score = fuzz.partial_ratio(phrase, text) if len(text) >= len(phrase) else fuzz.ratio(phrase, text)
        best = max(best, score / 100.0)
    return best


def _score(ev):
    """A Finding for one entry from its kept lines, or None.

    A line is worth the best of the signatures it matches (ties: the entry's
    first), never their sum; the signatures so chosen on different lines
    combine as 1 - prod(1 - w), each distinct signature counted once."""
    ce = ev.ce
    lines = ev.lines()
    if not lines:
        return None
    best_weight = {}
    for line in lines:
        si = min(line.weights, key=lambda s: (-line.weights[s], s))
        best_weight[si] = max(best_weight.get(si, 0.0), line.weights[si])
    miss = 1.0
    for w in best_weight.values():
        miss *= 1.0 - w
    confidence = min(0.99, 1.0 - miss)
    if confidence < REPORT_THRESHOLD:
        return None
    shown = sorted(lines, key=lambda ln: (-ln.weight, ln.line_no))[:SHOWN_EVIDENCE]
    evidence = tuple(Evidence(ln.line_no, ln.text) for ln in sorted(shown, key=lambda ln: ln.line_no))
    values = {}
    for line in lines:
        _extract_values(ce, line.value_texts, values)
    return Finding(entry=ce.entry, confidence=confidence, evidence=evidence, values=tuple(values.items()))


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
    """Best first: what ended the job before a warning (a warning does not end a job; one that
    causes the failure says so with leads_to), then by confidence, then a root cause before what
    it leads to (an OOM on one rank before the NCCL abort it causes), then earliest line;
    a finer finding right above the broader one it refines (findings.finer_first); a broader
    or consequent finding with no log line of its own is left out (findings.without_explained)."""
    ordered = sorted(findings, key=lambda f: (f.entry.severity == "warning", -round(f.confidence, 2),
                                              f.first_line or 10**12, f.id))
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
    return finer_first(without_explained(ordered))
