"""One linear-time pass of every signature of every entry over a chunk.

Hyperscan compiles all patterns into a single automaton and reports
(pattern, offset). Every pattern is compiled with HS_FLAG_SINGLEMATCH, so
one scan of a chunk costs one callback per pattern present, however many
lines match: the Python work per chunk does not grow with the number of
matches. The engine says which patterns it still needs (`need[pid]`): a
pattern whose evidence is complete is not processed again, and a pattern
that still needs more (its line was excluded, or it is not yet saturated)
gets a rescan from after that line, over a window that grows while it finds
nothing. Once the rescans of a chunk have read RESCAN_BUDGET times its size,
the rest of the chunk is scanned once with every match reported (a second
database, compiled on first use): linear in any case, and no line is ever
skipped.

Where no Hyperscan wheel exists, RE2 (linear time too) finds candidate
lines with one alternation, and an RE2 set says which patterns each holds.

Everything per match is O(1) in the length of the line: line numbers are
counted from the nearest known point, and a segment (the carriage-return
piece of a progress-bar line that holds the match) is cut from a bounded
window around the match, never by searching the whole line.

A Scanner is safe to share between threads: each thread gets its own
Hyperscan scratch space.
"""
import bisect
import threading

from .cache import default_cache
from .gaps import open_gaps
from .record import dataclass

try:
    from _blake2 import blake2b  # hashlib would load OpenSSL first: start-up time
except ImportError:  # pragma: no cover
    from hashlib import blake2b

try:
    import hyperscan
except ImportError:  # no wheel for this platform: the portable fallback
    hyperscan = None

MAX_SEGMENT = 4000        # bytes kept of one matched segment (centred on the match)
MAX_CONTEXT = 4000        # bytes kept of the line before and after
RESCAN_WINDOW = 4 * 1024   # a rescan for a pattern that wants more lines looks this far first (doubling)
TAIL_WINDOW = 256 * 1024   # all-matches patterns that keep only their last lines: the tail scanned first,
TAIL_FIRST = 16 * 1024     # or this much of it, where the patterns present are known
RESCAN_BUDGET = 3          # x the chunk: bytes rescanned, then one all-matches scan of the rest
PROBE = 8 * 1024           # bytes looked at (twice per chunk) to tell whether a chunk repeats its lines
RUN_HEAD = 6               # of a run of identical lines, the first this many (and the last) are scanned:
RUN_MIN = RUN_HEAD + 2     # enough for the engine's strongest-then-earliest evidence to pick the same lines
RUN_GIVE_UP = 256          # lines in a row without a run: the rest of the chunk is scanned as it is
# RE2's memory budget for the whole-KB alternation and set (no Hyperscan): a cap that
# its compiled programs and lazily built DFA states may grow to, not an allocation.
# RE2's default (8 MiB) cannot compile the set of the bundled KB's ~1,500 signatures.
RE2_MAX_MEM = 256 << 20
# A DFA out of that budget (a huge site KB) falls back to the slower NFA, and RE2
# would log "DFA out of memory" on stderr at every search: not the user's business.
RE2_LOG_ERRORS = False


@dataclass(frozen=True)
class LineHit:
    line_no: int            # 1-based line number in the whole log
    raw: bytes              # the carriage-return segment that matched (at most MAX_SEGMENT bytes)
    context: tuple          # (raw bytes of the line before, the line after) - each may be b""
    pattern_ids: frozenset  # the patterns reported on this segment (the engine checks for more)


def re2_options():
    """The options of every RE2 program that runs signatures (the scanner's fallback, the engine's per-entry sets)."""
    import re2
    options = re2.Options()
    options.max_mem = RE2_MAX_MEM
    options.log_errors = RE2_LOG_ERRORS
    return options


def re2_signature(pattern, case_sensitive):
    """A signature as RE2 source (bytes), exactly as the scanner runs it: with open
    gaps (gaps.py), its case, and ^/$ at line ends. Every RE2 use of a signature
    goes through here, so the engine never counts a line the scanner would not."""
    return (("" if case_sensitive else "(?i)") + "(?m)" + open_gaps(pattern)).encode()


def re2_pattern(pattern, case_sensitive, multiline=False):
    """A compiled RE2 regex (str patterns, str text); raises re2.error."""
    import re2  # only once a line needs it: start-up time matters
    prefix = ("" if case_sensitive else "(?i)") + ("(?m)" if multiline else "")
    return re2.compile(prefix + pattern)


class _Lines:
    """Line numbers and line starts of offsets in one chunk. Each look-up counts
    newlines only from the nearest offset already known, so the cost of a hit
    does not depend on how long its line is or where the chunk began.

    `newlines` (the chunk's newline count, or a callable giving it; the engine
    counts every chunk anyway) makes the chunk's end a known point too: a hit
    near the end (the key lines of a job's ending) counts back from there
    instead of over the whole chunk again."""

    def __init__(self, chunk, first_line_no, end=None, newlines=None):
        self.chunk = chunk
        self.points = [(0, first_line_no, 0)]  # (offset, line_no, line_start), sorted
        self.end = end if newlines is not None else None  # a point once first needed
        self.newlines = newlines

    def at(self, off):
        points = self.points
        i = bisect.bisect_right(points, (off, float("inf"))) - 1
        base, line_no, start = points[i]
        if off == base:
            return line_no, start
        after = points[i + 1][0] if i + 1 < len(points) else self.end
        if after is not None and after - off < off - base:  # nearer the next known point: count back from it
            if i + 1 == len(points):  # the chunk's end (hits lie before it: its line start is never read)
                newlines = self.newlines() if callable(self.newlines) else self.newlines
                points.append((after, points[0][1] + newlines, -1))
                self.end = None
            line_no = points[i + 1][1] - self.chunk.count(b"\n", off, after)
            nl = self.chunk.rfind(b"\n", base, off)
            if nl >= 0:
                start = nl + 1
        else:
            n = self.chunk.count(b"\n", base, off)
            if n:
                line_no += n
                start = self.chunk.rfind(b"\n", base, off) + 1
        points.insert(i + 1, (off, line_no, start))
        return line_no, start


def _segment(chunk, size, line_start, off):
    """(start, end) of the carriage-return segment holding `off`, cut to a
    window of MAX_SEGMENT bytes around it: bounded work whatever the line."""
    half = MAX_SEGMENT // 2
    lo = max(line_start, off - half)
    cr = chunk.rfind(b"\r", lo, off)
    start = cr + 1 if cr >= 0 else lo
    hi = min(size, off + half)
    end = hi
    for stop in (b"\r", b"\n"):
        at = chunk.find(stop, off, end)
        if at >= 0:
            end = at
    if end <= start:  # a match that ends on the separator itself
        end = min(hi, start + 1)
    return start, end


def _around(chunk, size, line_start, seg_end):
    """The raw line before `line_start` and the line after `seg_end`, each at most MAX_CONTEXT bytes."""
    before = b""
    if line_start > 0:
        prev_end = line_start - 1
        lo = max(0, prev_end - MAX_CONTEXT)
        nl = chunk.rfind(b"\n", lo, prev_end)
        before = bytes(chunk[(nl + 1 if nl >= 0 else lo):prev_end])
    after = b""
    nl = chunk.find(b"\n", seg_end, min(size, seg_end + MAX_CONTEXT))
    if nl >= 0 and nl + 1 < size:
        end = chunk.find(b"\n", nl + 1, min(size, nl + 1 + MAX_CONTEXT))
        after = bytes(chunk[nl + 1:(end if end >= 0 else min(size, nl + 1 + MAX_CONTEXT))])
    return before, after


class Scanner:
    """Scan byte chunks for a list of (regex, case_sensitive) patterns.

    `groups[pid]` (optional) names who owns a pattern (an entry): a segment is
    handed to `on_hit` once per group, with the group's reported patterns."""

    def __init__(self, patterns, groups=None, use_hyperscan=True, all_matches=False, keep_last=None):
        """`all_matches`: report every match (no `need`), for the few generic
        shapes whose last lines count (keylines.py); `keep_last`: per chunk,
        hand over only the last this many matches of each pattern."""
        self.patterns = [(open_gaps(p), cs) for p, cs in patterns]
        self.all_matches, self.keep_last = all_matches, keep_last
        self.groups = list(groups) if groups is not None else list(range(len(self.patterns)))
        self._local = threading.local()
        self._lock = threading.Lock()
        self._db = self._db_all = None
        self._each = None
        if not self.patterns:
            self.backend = "none"
        elif hyperscan is not None and use_hyperscan:
            self.backend = "hyperscan"
            if not all_matches:
                self._db = self._hyperscan_db(single=True)
            # all_matches: loaded on first use (_all_matches_db), as a log with none of
            # these shapes (most long logs' chunks) never scans with it: start-up time
        else:
            import re2
            self.backend = "re2"
            self._options = options = re2_options()
            alternation = "|".join(f"(?:{p})" if cs else f"(?i:{p})" for p, cs in self.patterns)
            self._any = re2.compile(("(?m)" + alternation).encode(), options)
            self._set = re2.Set.SearchSet(options)
            for p, cs in self.patterns:
                self._set.Add(re2_signature(p, cs))
            self._set.Compile()
            self._each = [None] * len(self.patterns)  # compiled on first use

    # -- Hyperscan databases and per-thread scratch ------------------------

    def _hyperscan_db(self, single):
        flag = hyperscan.HS_FLAG_SINGLEMATCH if single else 0
        key = blake2b(repr((hyperscan.__version__, single, self.patterns)).encode(), digest_size=12).hexdigest()
        kind = "hs" if single else "hs-all"
        cache = default_cache()
        try:
            return hyperscan.loadb(cache.load_bytes(kind, key, "db"), hyperscan.HS_MODE_BLOCK)
        except (OSError, hyperscan.error, TypeError, ValueError):
            pass
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        flags = [(0 if cs else hyperscan.HS_FLAG_CASELESS) | hyperscan.HS_FLAG_MULTILINE | flag for _, cs in self.patterns]
        db.compile(expressions=[p.encode() for p, _ in self.patterns], ids=list(range(len(self.patterns))), flags=flags)
        cache.store_bytes(kind, key, hyperscan.dumpb(db), "db")  # atomic; a failed write only costs start-up time
        return db

    def _scratch(self, name, db):
        """This thread's scratch for `db`: Hyperscan scratch must never be used by two scans at once."""
        scratch = getattr(self._local, name, None)
        if scratch is None:
            scratch = hyperscan.Scratch(db)
            setattr(self._local, name, scratch)
        return scratch

    def _all_matches_db(self):
        if self._db_all is None:
            with self._lock:
                if self._db_all is None:
                    self._db_all = self._hyperscan_db(single=False)
        return self._db_all

    # -- scanning ------------------------------------------------------------

    def prepare(self, chunk, end, first=True):
        """The part of a scan that does not depend on `need` (what the caller
        has already seen), so another thread can do it ahead of time: the
        folding of repeated lines and the first pass over the whole chunk
        (Hyperscan runs it without the GIL). Returns `prepared` for scan():
        the same chunk must be scanned with it, and not changed before."""
        skips = None
        if _repetitive(chunk, end):
            collapsed, skips = _collapse_runs(chunk, end)
            if skips:
                chunk, end = collapsed, len(collapsed)
        found = self._first_pass(memoryview(chunk)[:end], 0, end) if first and end else None
        return chunk, end, skips, found

    def _first_pass(self, view, pos, stop):
        """(offset, pid) of the first match of each pattern in view[pos:stop], sorted."""
        found = []
        add = found.append

        def first(pid, start, match_end, flags, ctx):
            add((pos + max(match_end - 1, 0), pid))
        self._db.scan(view[pos:stop], first, scratch=self._scratch("single", self._db))
        found.sort()
        return found

    def scan(self, chunk, first_line_no: int, need=None, on_hit=None, end=None, present=None, prepared=None,
             newlines=None):
        """Hand each matching segment of `chunk[:end]` (bytes or a reused
        bytearray) to `on_hit(LineHit)` (or return them as a list).
        `need[pid]` false: the caller has enough of that pattern, do not report
        it again. `first_line_no`: number of the chunk's first line.
        `prepared`: what prepare() returned for this chunk (Hyperscan, not
        all_matches), perhaps in another thread; the result is the same.
        `present` (keep_last scanners): the patterns known to occur in the
        chunk; an empty set means nothing to do. `newlines`: the number of
        newlines in chunk[:end] (or a callable giving it), when the caller
        knows it: line numbers near the chunk's end are then counted back from it."""
        end = len(chunk) if end is None else end
        if self.backend == "none" or not end:
            return []
        collected = []
        if on_hit is None:
            on_hit = collected.append
        if need is None:
            need = [True] * len(self.patterns)
        if self.backend == "hyperscan" and self.all_matches and self.keep_last:
            if present is None or present:
                self._last_matches(chunk, end, _ChunkState(chunk, end, first_line_no, self.groups, on_hit,
                                                           newlines=newlines), present)
        elif self.backend == "hyperscan" and self.all_matches:
            self._all_matches(memoryview(chunk)[:end], 0, end, need,
                              _ChunkState(chunk, end, first_line_no, self.groups, on_hit, newlines=newlines))
        elif self.backend == "hyperscan":
            chunk, end, skips, found = prepared if prepared is not None else self.prepare(chunk, end, first=False)
            self._scan_hyperscan(chunk, end, need, _ChunkState(chunk, end, first_line_no, self.groups, on_hit, skips, newlines),
                                 found)
        else:
            chunk = bytes(memoryview(chunk)[:end])
            self._scan_re2(chunk, need, _ChunkState(chunk, end, first_line_no, self.groups, on_hit, newlines=newlines))
        return collected

    def _scan_hyperscan(self, chunk, end, need, state, found=None):
        view = memoryview(chunk)[:end]
        budget = RESCAN_BUDGET * end + RESCAN_WINDOW  # bytes rescanned in this chunk before the all-matches scan
        pos, stop, window, wanted = 0, end, RESCAN_WINDOW, None
        while True:
            if found is None:
                found = self._first_pass(view, pos, stop)
            budget -= stop - pos
            again = None
            for off, pid in found:
                if not need[pid]:
                    continue
                seg_end = state.hit(off, pid)
                if need[pid]:  # still wants more of this pattern: look again after this segment
                    again = seg_end + 1 if again is None else min(again, seg_end + 1)
            reported = {pid for _, pid in found if need[pid]}
            # patterns that may still occur further on: reported now or before, and still wanted
            wanted = reported if wanted is None else {pid for pid in wanted if need[pid]} | reported
            if not wanted:
                return
            if again is not None:
                pos, window = again, RESCAN_WINDOW
            else:  # none of them in this window: look further, in a larger one
                pos, window = stop, window * 2
            if pos >= end:
                return
            if budget <= 0:  # many wanted lines here: every match of the rest, once
                self._all_matches(view, pos, end, need, state)
                return
            nl = chunk.find(b"\n", pos + window, end)  # windows end on a line boundary,
            if nl < 0:
                nl = chunk.find(b"\r", pos + window, end)  # or a progress bar's update
            stop = end if nl < 0 else nl + 1
            found = None

    def _last_matches(self, chunk, end, state, present=None):
        """The last `keep_last` matches of each pattern in the chunk, without a
        Python call per match of the rest: every match of the chunk's tail;
        the part before it only when a pattern there is still short of lines."""
        view = memoryview(chunk)[:end]
        db = self._all_matches_db()
        # With `present` known, a short tail first, four times longer while a pattern
        # present is short of lines there: lines that all match cost a call per match
        # of TAIL_FIRST bytes, not of TAIL_WINDOW.
        window = TAIL_FIRST if present is not None else TAIL_WINDOW
        while True:
            nl = chunk.rfind(b"\n", 0, max(0, end - window)) if end > window else -1
            lo = nl + 1  # the tail starts on a line boundary
            tail = []
            db.scan(view[lo:end], lambda pid, s, e, f, c, lo=lo, add=tail.append: add((lo + max(e - 1, 0), pid)),
                    scratch=self._scratch("all", db))
            counts = {}
            for _, pid in tail:
                counts[pid] = counts.get(pid, 0) + 1
            if not lo or window >= TAIL_WINDOW or present is None or all(counts.get(pid, 0) >= self.keep_last for pid in present):
                break
            window *= 4
        found = tail
        if lo and (present is None or window >= TAIL_WINDOW):
            if present is None:  # which patterns occur before the tail at all
                if self._db is None:
                    with self._lock:
                        if self._db is None:
                            self._db = self._hyperscan_db(single=True)
                present = set()
                self._db.scan(view[:lo], lambda pid, s, e, f, c: present.add(pid), scratch=self._scratch("single", self._db))
            short = {pid for pid in present if counts.get(pid, 0) < self.keep_last}
            if short:
                head = []

                def collect(pid, s, e, f, c):
                    if pid in short:
                        head.append((max(e - 1, 0), pid))
                db.scan(view[:lo], collect, scratch=self._scratch("all", db))
                found = head + tail
        found.sort()
        for off, pid in _last_of_each(found, self.keep_last):
            state.hit(off, pid)

    def _all_matches(self, view, pos, end, need, state):
        db = self._all_matches_db()
        found = []

        def collect(pid, start, match_end, flags, ctx):
            if need[pid]:
                found.append((pos + max(match_end - 1, 0), pid))
        db.scan(view[pos:end], collect, scratch=self._scratch("all", db))
        found.sort()
        if self.keep_last and len(found) > self.keep_last:
            found = _last_of_each(found, self.keep_last)
        for off, pid in found:
            if need[pid]:
                state.hit(off, pid)

    def _one(self, pid):
        """Pattern `pid` alone, compiled on first use (RE2)."""
        rx = self._each[pid]
        if rx is None:
            import re2
            rx = self._each[pid] = re2.compile(re2_signature(*self.patterns[pid]), self._options)
        return rx

    def _scan_re2(self, chunk, need, state):
        pos = 0
        while pos < len(chunk):
            m = self._any.search(chunk, pos)
            if m is None:
                return
            nl = chunk.rfind(b"\n", pos, m.start())  # pos is always a line start
            start = nl + 1 if nl >= 0 else pos
            end = chunk.find(b"\n", m.end())
            end = len(chunk) if end < 0 else end
            # the line and the next one: a signature may run over a hard wrap (Hyperscan
            # finds it even where another one matched earlier on the first line)
            wrap = chunk.find(b"\n", end + 1) if end < len(chunk) else -1
            line = chunk[start:(len(chunk) if wrap < 0 else wrap)]
            pids = self._set.Match(line)
            if not pids:  # _any matched here, so the set's DFA ran out of its budget (RE2 then says "none")
                pids = [pid for pid in range(len(self.patterns)) if need[pid] and self._one(pid).search(line)]
            for pid in pids:
                if not need[pid]:
                    continue
                rx = self._one(pid)
                for lm in rx.finditer(line):
                    if not need[pid]:
                        break
                    state.hit(start + max(lm.end() - 1, lm.start()), pid)
            pos = end + 1


def _last_of_each(found, n):
    """The last `n` (offset, pid) of each pid, still in offset order."""
    seen, out = {}, []
    for off, pid in reversed(found):
        k = seen.get(pid, 0)
        if k < n:
            seen[pid] = k + 1
            out.append((off, pid))
    out.reverse()
    return out


def _repetitive(chunk, end):
    """Whether the chunk looks like a flood of one repeated line (a warning
    printed every step): two small probes, at its start and its middle, where
    most lines equal the line before. Costs ~2 x PROBE bytes per chunk."""
    if end < 4 * PROBE:
        return False
    for at in (0, end // 2):
        lines = bytes(chunk[at:at + PROBE]).split(b"\n")[1:-1]  # whole lines only
        if len(lines) >= 8 and sum(map(bytes.__eq__, lines, lines[1:])) * 4 >= len(lines) * 3:
            return True
    return False


def _run_length(chunk, pos, width, end):
    """How many copies of the line chunk[pos:pos+width] follow one another from `pos`."""
    def holds(k):  # chunk[pos:pos+k*width] is k copies: it has period `width`
        stop = pos + k * width
        return stop <= end and chunk[pos + width:stop] == chunk[pos:stop - width]
    if not holds(RUN_MIN):
        return 1
    lo, hi = RUN_MIN, RUN_MIN * 2
    while holds(hi):
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # holds(lo), not holds(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if holds(mid) else (lo, mid)
    return lo


def _collapse_runs(chunk, end):
    """chunk[:end] with each run of RUN_MIN or more identical lines cut to
    its first RUN_HEAD copies and its last one, and the skips: sorted (offset in the
    new text, lines left out before it). Exact for what the engine sees:
    every (line before, line, line after) of the original is still there,
    and so is every match spanning at most RUN_HEAD + 1 lines; line numbers are
    mapped back. Runs are found by comparing the text with itself shifted
    by one line (memcmp), so a run costs O(log n) Python steps."""
    pieces, skips = [], []
    pos = kept_from = 0
    removed_bytes = removed_lines = 0
    plain = 0
    while pos < end:
        nl = chunk.find(b"\n", pos, end)
        if nl < 0:
            break
        width = nl + 1 - pos
        k = _run_length(chunk, pos, width, end) if width <= end // RUN_MIN else 1
        if k < RUN_MIN:
            pos = nl + 1
            plain += 1
            if plain >= RUN_GIVE_UP:  # no flood here after all: leave the rest as it is
                break
            continue
        plain = 0
        cut = pos + RUN_HEAD * width
        pieces.append(chunk[kept_from:cut])
        last = pos + (k - 1) * width
        removed_bytes += last - cut
        removed_lines += k - RUN_HEAD - 1
        skips.append((cut - removed_bytes + (last - cut), removed_lines))
        kept_from = pos = last
    if not skips:
        return chunk, None
    pieces.append(chunk[kept_from:end])
    return b"".join(pieces), skips


class _ChunkState:
    """Per scan call: line numbering, and which (segment, group) pairs were handed over.
    `skips`: the chunk is a collapsed one (see _collapse_runs)."""

    def __init__(self, chunk, end, first_line_no, groups, on_hit, skips=None, newlines=None):
        self.chunk, self.end, self.groups, self.on_hit = chunk, end, groups, on_hit
        # `newlines` counts the chunk as given: a collapsed one (skips) numbers from its start only
        self.lines = _Lines(chunk, first_line_no, end, newlines if skips is None else None)
        self.seen = set()
        self.last = {}  # group -> (start, end) of the segment last handed over for it
        self.skips = skips
        self.skip_at = [at for at, _ in skips] if skips else None

    def hit(self, off, pid):
        """Hand the segment holding `off` to on_hit unless done; returns the segment's end."""
        chunk = self.chunk
        line_no, line_start = self.lines.at(off)
        if self.skips:
            i = bisect.bisect_right(self.skip_at, off) - 1
            if i >= 0:
                line_no += self.skips[i][1]
        group = self.groups[pid]
        last = self.last.get(group)
        if last is not None and last[0] <= off < last[1]:
            # inside the window just handed over (a line longer than MAX_SEGMENT): the
            # engine finds this signature there itself; a second window would be the
            # same line again, taking an evidence slot from another line
            return last[1]
        seg_start, seg_end = _segment(chunk, self.end, line_start, off)
        key = (seg_start, group)
        if key not in self.seen:
            self.seen.add(key)
            self.last[group] = (seg_start, seg_end)
            self.on_hit(LineHit(line_no, bytes(chunk[seg_start:seg_end]), _around(chunk, self.end, line_start, seg_end),
                                frozenset((pid,))))
        return seg_end
