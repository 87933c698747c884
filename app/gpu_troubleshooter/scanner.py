"""One linear-time pass of every signature of every entry over a chunk.

Hyperscan compiles all patterns into a single automaton (Aho-Corasick-like
for literals, DFA/NFA hybrids for regexes) and reports (pattern, offset).
Where no Hyperscan wheel exists, one compiled Python alternation finds the
candidate lines and each line is then checked pattern by pattern.
"""
import hashlib
import re
from dataclasses import dataclass

from .cache import default_cache
from .normalize import segment_at

try:
    import hyperscan
except ImportError:  # no wheel for this platform: the portable fallback
    hyperscan = None

MAX_LINES_PER_CHUNK = 5000  # a pathological log cannot make us collect millions of lines


@dataclass(frozen=True)
class LineHit:
    line_no: int            # 1-based line number in the whole log
    raw: bytes              # the carriage-return segment that matched
    context: tuple          # (raw bytes of the line before, the next two lines)
    pattern_ids: frozenset


class Scanner:
    """Scan byte chunks for a list of (regex, case_sensitive) patterns."""

    def __init__(self, patterns):
        self.patterns = list(patterns)
        self._any = None
        self.backend = "hyperscan" if hyperscan is not None else "python-re"
        self._db = self._hyperscan_db() if hyperscan is not None and self.patterns else None
        if not self.patterns:
            self.backend, self._any = "none", None
        elif self._db is None:
            self.backend = "python-re"
            self._any = re.compile("|".join(f"(?:{p})" if cs else f"(?i:{p})" for p, cs in self.patterns).encode(), re.MULTILINE)
            self._each = [re.compile(p.encode(), re.MULTILINE | (0 if cs else re.IGNORECASE)) for p, cs in self.patterns]

    def _hyperscan_db(self):
        key = hashlib.sha256(repr((hyperscan.__version__, self.patterns)).encode()).hexdigest()[:24]
        cache = default_cache()
        try:
            db = hyperscan.loadb(cache.load_bytes("hs", key, "db"), hyperscan.HS_MODE_BLOCK)
            db.scratch = hyperscan.Scratch(db)  # a loaded database comes without one
            return db
        except (OSError, hyperscan.error, TypeError, ValueError):
            pass
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        flags = [(0 if cs else hyperscan.HS_FLAG_CASELESS) | hyperscan.HS_FLAG_MULTILINE for _, cs in self.patterns]
        db.compile(expressions=[p.encode() for p, _ in self.patterns], ids=list(range(len(self.patterns))), flags=flags)
        cache.store_bytes("hs", key, hyperscan.dumpb(db), "db")  # atomic; a failed write only costs start-up time
        return db

    def _matches(self, chunk):
        """(offset, pattern_id) pairs; offset is somewhere inside the matched text."""
        if self._any is None and self._db is None:
            return []
        if self._db is not None:
            found = []
            self._db.scan(chunk, match_event_handler=lambda pid, start, end, flags, ctx: found.append((max(end - 1, 0), pid)))
            return found
        found = []
        pos = 0
        while True:
            m = self._any.search(chunk, pos)
            if not m:
                return found
            start = chunk.rfind(b"\n", 0, m.start()) + 1
            end = chunk.find(b"\n", m.end())
            end = len(chunk) if end < 0 else end
            line = chunk[start:end]
            for pid, rx in enumerate(self._each):
                for lm in rx.finditer(line):
                    found.append((start + max(lm.end() - 1, lm.start()), pid))
            pos = end + 1

    def scan(self, chunk: bytes, first_line_no: int):
        """LineHits of one chunk; `first_line_no` is the number of its first line."""
        found = self._matches(chunk)
        if not found:
            return []
        found.sort()
        by_line = {}
        line_no, counted_to = first_line_no, 0
        for offset, pid in found:
            start = chunk.rfind(b"\n", 0, offset) + 1
            if start > counted_to:
                line_no += chunk.count(b"\n", counted_to, start)
                counted_to = start
            seg_start = chunk.rfind(b"\r", start, offset) + 1
            key = (line_no, seg_start)
            if key not in by_line:
                if len(by_line) >= MAX_LINES_PER_CHUNK:
                    continue
                by_line[key] = (start, offset, set())
            by_line[key][2].add(pid)
        return [self._hit(chunk, line_no, start, offset, pids) for (line_no, _), (start, offset, pids) in by_line.items()]

    @staticmethod
    def _hit(chunk, line_no, start, offset, pids):
        end = chunk.find(b"\n", offset)
        end = len(chunk) if end < 0 else end
        prev_start = chunk.rfind(b"\n", 0, max(start - 1, 0)) + 1 if start > 0 else start
        after, pos = [], end + 1
        for _ in range(2):
            if pos >= len(chunk):
                break
            nxt = chunk.find(b"\n", pos)
            nxt = len(chunk) if nxt < 0 else nxt
            after.append(chunk[pos:min(nxt, pos + 4000)])
            pos = nxt + 1
        before = chunk[max(prev_start, start - 4000):max(start - 1, 0)] if start > 0 else b""
        return LineHit(line_no, segment_at(chunk[start:end], offset - start), (before, *after), frozenset(pids))
