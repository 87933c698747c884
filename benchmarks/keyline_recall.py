"""How often the "lines that ended the job" name the failure's own line.

When no entry knows a failure, the key lines (keylines.py) are all the user
gets. Their recall is measured here on the knowledge base's own must-match
examples, as if the entry did not exist: the lines the entry's signatures
matched (the top finding's evidence) stand for "the line a person would
quote", and a log counts as named when a key line is one of them, or within
one line of one. Clean logs (the held-out set's `logs/clean/` and the
harmless entries' examples) measure the other side: how often the key
lines show anything when nothing failed.

    .venv/bin/python benchmarks/keyline_recall.py            # table
    .venv/bin/python benchmarks/keyline_recall.py --misses 20 # list some logs whose line was not named
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from gpu_troubleshooter.engine import diagnose_path
from gpu_troubleshooter.knowledge import bundled_dir, entry_files, load_knowledge_base

ROOT = Path(__file__).resolve().parents[1]


def examples(kind: str):
    for path in entry_files(bundled_dir()):
        folder = path.with_suffix("") / kind
        if folder.is_dir():
            yield path.stem, sorted(p for p in folder.iterdir() if p.is_file())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--misses", type=int, default=0, help="print this many logs whose line was not named")
    args = ap.parse_args(argv)
    kb = load_knowledge_base()
    harmless = {e.id for e in kb.entries if e.harmless}
    counts, misses, kinds = Counter(), [], Counter()
    for eid, logs in examples("must-match"):
        if eid in harmless:
            continue
        for log in logs:
            d = diagnose_path(log, kb)
            truth = {ev.line + o for f in d.findings[:1] for ev in f.evidence if ev.line for o in (-1, 0, 1)}
            if not truth:
                continue
            counts["failures"] += 1
            keys = d.key_lines
            counts["any key line"] += bool(keys)
            hit = next((k for k in keys if k.line in truth), None)
            if hit is not None:
                counts["named"] += 1
                kinds[hit.kind] += 1
            elif len(misses) < args.misses:
                misses.append(f"{log.relative_to(ROOT)}: evidence at {sorted(truth)[:3]}..., key lines "
                              f"{[(k.line, k.kind) for k in keys]}")
    clean = sorted((ROOT / "benchmarks/heldout/logs/clean").glob("*"))
    clean += [p for eid, logs in examples("must-match") if eid in harmless for p in logs]
    shown = sum(bool(diagnose_path(p, kb).key_lines) for p in clean)
    n = counts["failures"]
    print(f"failure examples with a finding: {n}")
    print(f"  any key line:                  {counts['any key line']} ({counts['any key line'] / n:.3f})")
    print(f"  a key line is the failure's:   {counts['named']} ({counts['named'] / n:.3f})")
    print(f"  by kind of the naming line:    {dict(kinds.most_common())}")
    print(f"clean logs with key lines shown: {shown} of {len(clean)}")
    for m in misses:
        print("  miss:", m)
    return 0


if __name__ == "__main__":
    sys.exit(main())
