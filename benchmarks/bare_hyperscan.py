#!/usr/bin/env python3
"""The floor: a bare Python+Hyperscan pass over the knowledge base's signatures.

    python benchmarks/bare_hyperscan.py PATTERNS.db LOG

Reads LOG in 4 MiB blocks and counts matches of a prebuilt Hyperscan
database (caseless unless case-sensitive, multiline, all matches) written
by scan_benchmark.py; nothing else: no line numbers, no evidence, no KB.
"""
import sys

import hyperscan


def main(db_path, log_path):
    db = hyperscan.loadb(open(db_path, "rb").read(), hyperscan.HS_MODE_BLOCK)
    scratch = hyperscan.Scratch(db)
    count = [0]

    def on_match(pid, start, end, flags, ctx):
        count[0] += 1
    with open(log_path, "rb") as f:
        while True:
            block = f.read(4 * 1024 * 1024)
            if not block:
                break
            db.scan(block, on_match, scratch=scratch)
    print(count[0])


if __name__ == "__main__":
    main(*sys.argv[1:3])
