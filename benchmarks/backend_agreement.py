#!/usr/bin/env python3
"""Do Hyperscan (the scan) and RE2 (its fallback) match the same signatures on real logs?

    .venv/bin/python benchmarks/backend_agreement.py DIR_OR_FILE... [--kb DIR]

tests/test_signature_backends.py checks the knowledge base's own example
logs and `kb validate` a site's. This runs the same comparison over any other logs (the held-out set,
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

from gpu_troubleshooter.backends import BackendPair
from gpu_troubleshooter.knowledge import load_knowledge_base

SKIP_SUFFIXES = {".yaml", ".yml", ".py", ".md", ".json", ".gz", ".bz2", ".xz", ".zst"}


def log_files(paths):
    for root in map(Path, paths):
        candidates = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        yield from (p for p in candidates if p.suffix not in SKIP_SUFFIXES)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="log files or folders of logs")
    parser.add_argument("--kb", action="append", default=[], help="site knowledge folder(s) to add")
    args = parser.parse_args(argv)
    kb = load_knowledge_base([Path(d) for d in args.kb], strict=False)
    for problem in kb.problems:  # a skipped site entry is not compared: say so
        print(f"skipped: {problem}", file=sys.stderr)
    pair = BackendPair(kb.entries)
    if not pair.comparable:
        sys.exit("Hyperscan is not installed here: nothing to compare")
    files = disagreements = 0
    for path in log_files(args.paths):
        files += 1
        for no, side, entry, signature in pair.disagreements(path.read_bytes()):
            disagreements += 1
            print(f"{path}:{no}: {side}: {entry} {signature.pattern!r}")
    print(f"{files} files, {pair.lines} lines, {len(pair.signatures)} signatures: {disagreements} disagreement(s)")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
