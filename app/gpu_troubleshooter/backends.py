"""Do Hyperscan (the scan) and RE2 (its fallback) match the same signatures on a line?

They read patterns differently in corners the schema cannot rule out: `.` is one
byte for Hyperscan and one UTF-8 character for RE2, and Vectorscan 5.4.12
(python-hyperscan 0.9.1) misses "sbatch: error: Specifying job run time is now
required." with `error: [^\\n]*\\b(?:is|are) now required` (caseless), which RE2
matches. A disagreement is a log that one backend diagnoses and the other does not.

Used by `kb validate` on a site's entries, by tests/test_signature_backends.py on
the bundled examples and by benchmarks/backend_agreement.py on any logs.
"""
from .scanner import Scanner

MAX_LINE = 4000  # the scanner matches a window of a longer line, not the whole of it


class BackendPair:
    """The project's Scanner over every signature of `entries`, once with Hyperscan and once with RE2."""

    def __init__(self, entries):
        self.signatures = [(e.id, s) for e in entries for s in e.signatures]
        patterns = [(s.pattern, s.case_sensitive) for _, s in self.signatures]
        self.hyperscan, self.re2 = Scanner(patterns), Scanner(patterns, use_hyperscan=False)
        self.lines = 0  # lines compared so far

    @property
    def comparable(self):
        """False where Hyperscan is not installed (both sides would be RE2) or there is nothing to scan."""
        return bool(self.signatures) and self.hyperscan.backend == "hyperscan"

    def disagreements(self, data: bytes):
        """(line number, "RE2 only" or "Hyperscan only", entry id, signature) for each signature
        that one backend matches on a line of `data` and the other does not. Each line is
        scanned alone: a Hyperscan scan reports each signature once per chunk."""
        for no, line in enumerate(data.split(b"\n"), 1):
            if not line.strip() or len(line) > MAX_LINE:
                continue
            self.lines += 1
            by_hyperscan, by_re2 = self._matched(self.hyperscan, line), self._matched(self.re2, line)
            for pid in sorted(by_hyperscan ^ by_re2):
                entry, signature = self.signatures[pid]
                yield no, "RE2 only" if pid in by_re2 else "Hyperscan only", entry, signature

    @staticmethod
    def _matched(scanner, line):
        return {pid for hit in scanner.scan(line, 1) for pid in hit.pattern_ids}
