#!/usr/bin/env python3
"""Do Hyperscan (the scan) and RE2 (its fallback) match the same signatures on real logs?

    .venv/bin/python benchmarks/backend_agreement.py DIR_OR_FILE... [--kb DIR]

tests/test_signature_backends.py checks the knowledge base's own example
logs. This runs the same comparison over any other logs (the held-out set,
../shared/samples, a sweep's fresh logs), because the two backends have
disagreed on inputs no example held: Vectorscan 5.4.12 (python-hyperscan
0.9.1) misses "sbatch: error: Specifying job run time is now required." with
`error: [^\\n]*\\b(?:is|are) now required` (caseless), which RE2 matches.
Each line is scanned alone by the project's own Scanner with each backend
(its flags and opened gaps). Prints a disagreement as FILE:LINE, the side
that matched, the entry and its signature (never the line's text, so the
output of held-out logs can be shared), and a count. Exit status 1 if any.
"""
import argparse
import sys
from pathlib import Path

from gpu_troubleshooter.knowledge import load_knowledge_base
from gpu_troubleshooter.scanner import Scanner

SKIP_SUFFIXES = {".yaml", ".yml", ".py", ".md", ".json", ".gz", ".bz2", ".xz", ".zst"}
MAX_LINE = 4000  # the scanner matches a window of a longer line, not the whole of it


def log_files(paths):
    for root in map(Path, paths):
        candidates = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        yield from (p for p in candidates if p.suffix not in SKIP_SUFFIXES)


class BackendPair:
    """The project's Scanner over every signature of `kb`, once with Hyperscan and once with RE2.

    tests/test_signature_backends.py runs it over the example logs; main() over any logs."""

    def __init__(self, kb):
        self.signatures = [(e.id, s) for e in kb.entries for s in e.signatures]
        patterns = [(s.pattern, s.case_sensitive) for _, s in self.signatures]
        self.hyperscan, self.re2 = Scanner(patterns), Scanner(patterns, use_hyperscan=False)
        self.lines = 0  # lines compared so far

    def disagreements(self, data: bytes):
        """(line number, "RE2 only" or "Hyperscan only", entry id, pattern) for each signature
        that one backend matches on a line of `data` and the other does not. Each line is
        scanned alone: a Hyperscan scan reports each signature once per chunk."""
        for no, line in enumerate(data.split(b"\n"), 1):
            if not line.strip() or len(line) > MAX_LINE:
                continue
            self.lines += 1
            by_hyperscan, by_re2 = self._matched(self.hyperscan, line), self._matched(self.re2, line)
            for pid in sorted(by_hyperscan ^ by_re2):
                entry, signature = self.signatures[pid]
                yield no, "RE2 only" if pid in by_re2 else "Hyperscan only", entry, signature.pattern

    @staticmethod
    def _matched(scanner, line):
        return {pid for hit in scanner.scan(line, 1) for pid in hit.pattern_ids}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="log files or folders of logs")
    parser.add_argument("--kb", action="append", default=[], help="site knowledge folder(s) to add")
    args = parser.parse_args(argv)
    kb = load_knowledge_base([Path(d) for d in args.kb], strict=False)
    for problem in kb.problems:  # a skipped site entry is not compared: say so
        print(f"skipped: {problem}", file=sys.stderr)
    pair = BackendPair(kb)
    if pair.hyperscan.backend != "hyperscan":
        sys.exit("Hyperscan is not installed here: nothing to compare")
    files = disagreements = 0
    for path in log_files(args.paths):
        files += 1
        for no, side, entry, pattern in pair.disagreements(path.read_bytes()):
            disagreements += 1
            print(f"{path}:{no}: {side}: {entry} {pattern!r}")
    print(f"{files} files, {pair.lines} lines, {len(pair.signatures)} signatures: {disagreements} disagreement(s)")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
