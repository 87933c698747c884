#!/usr/bin/env python3
"""Scan speed and memory against GNU grep, and CLI start-up time.

    .venv/bin/python benchmarks/scan_benchmark.py [--size-mb 1024] [--runs 3]

Generates a noisy training log (progress bars, warnings, several ranks,
ANSI colour) with a CUDA OOM and NCCL abort at the end, then times
`troubleshoot --json` and `grep -E -i -c -f anchors.txt` over the same file,
with the knowledge base's signatures translated to POSIX ERE as the anchors.
Peak memory is the child's max RSS. Not a test: figures go in the README.
"""
import argparse
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".bench"
NOISE = [
    "Epoch {e}:  {p}%|{bar}| {i}/100000 [01:23<01:41,  5.41it/s, loss={x:.3f}]\r",
    "{r}: INFO:trainer:epoch {e} iter {i} data_time 0.0123 batch_time 0.3456 mem 40213MiB\n",
    "step {i} loss {x:.4f} lr 3.0e-04 grad_norm 1.234 tokens/s 10432\n",
    "\x1b[33m/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py:557: UserWarning: "
    "This DataLoader will create 16 worker processes in total.\x1b[0m\n",
    "{r}: [2024-05-01 12:00:{s:02d}] wandb: logging step {i} to run abc123 (sync ok)\n",
]
TAIL = (
    "0: Traceback (most recent call last):\n"
    "0:   File \"train.py\", line 212, in <module>\n"
    "0: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "79.15 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.9 GiB memory in use.\n"
    "1: [rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=91, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600391 milliseconds before timing out.\n"
    "srun: error: gpu042: task 0: Exited with exit code 1\n"
)


def generate(path, size_mb):
    if path.exists() and path.stat().st_size >= size_mb * 2**20:
        return
    rnd = random.Random(1)
    target = size_mb * 2**20
    with open(path, "w") as f:
        written, i = 0, 0
        while written < target:
            block = []
            for _ in range(2000):
                i += 1
                p = i % 100
                block.append(rnd.choice(NOISE).format(e=i // 100000, p=p, bar="#" * (p // 10) + " " * (10 - p // 10),
                                                      i=i, x=rnd.random(), r=i % 8, s=i % 60))
            chunk = "".join(block)
            f.write(chunk)
            written += len(chunk)
        f.write("\n" + TAIL)


def to_ere(pattern):
    """Python regex -> POSIX ERE for grep -E (None when it has no equivalent)."""
    ere = pattern.replace("(?:", "(").replace(r"\d", "[0-9]").replace(r"\s", "[[:space:]]").replace(r"\S", "[^[:space:]]")
    ere = ere.replace(r"[^\n]", ".").replace(r"\w", "[[:alnum:]_]")
    return None if re.search(r"\(\?|\\[bBAZ]", ere) else ere


def anchors_file():
    from gpu_troubleshooter.knowledge import load_knowledge_base
    kb = load_knowledge_base()
    pats = [to_ere(s.pattern) for e in kb.entries for s in e.signatures]
    good = []
    for p in filter(None, pats):
        if subprocess.run(["grep", "-E", "-q", "-e", p], input=b"", capture_output=True).returncode != 2:
            good.append(p)
    path = WORK / "anchors.txt"
    path.write_text("\n".join(good) + "\n")
    return path, len(good), len(pats)


def timed(cmd, runs):
    """(median wall seconds, max RSS MiB of the child) over `runs` runs."""
    walls, rss = [], 0
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t)
        rss = max(rss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)
    return statistics.median(walls), rss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    WORK.mkdir(exist_ok=True)
    exe = shutil.which("troubleshoot", path=str(Path(sys.executable).parent)) or "troubleshoot"
    log = WORK / f"train-{a.size_mb}mb.log"
    generate(log, a.size_mb)
    anchors, n_ere, n_all = anchors_file()
    subprocess.run([exe, "--json", str(log)], capture_output=True)  # warm the page cache and the pattern cache
    subprocess.run(["grep", "-E", "-i", "-c", "-f", str(anchors), str(log)], capture_output=True)
    ours, ours_rss = timed([exe, "--json", str(log)], a.runs)
    grep, _ = timed(["grep", "-E", "-i", "-c", "-f", str(anchors), str(log)], a.runs)
    small = WORK / "small-10kb.log"
    small.write_text(open(log).read(10_000 - len(TAIL)) + "\n" + TAIL)
    start, start_rss = timed([exe, str(small)], max(a.runs, 10))
    import json
    doc = json.loads(subprocess.run([exe, "--json", str(log)], capture_output=True, text=True).stdout)
    top = doc["findings"][0]["id"] if doc["findings"] else "no known failure"
    print(f"log: {log.stat().st_size / 2**20:.0f} MiB, anchors: {n_ere} of {n_all} signatures expressible in ERE")
    print(f"troubleshoot --json : {ours:6.2f} s  peak RSS {ours_rss:5.0f} MiB")
    print(f"grep -E -i -c -f    : {grep:6.2f} s")
    print(f"ratio ours/grep     : {ours / grep:6.2f}")
    print(f"troubleshoot 10 KB  : {start * 1000:6.0f} ms  (median of {max(a.runs, 10)}), peak RSS {start_rss:.0f} MiB")
    print(f"top finding         : {top}")


if __name__ == "__main__":
    main()
