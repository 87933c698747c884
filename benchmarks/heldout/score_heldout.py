#!/usr/bin/env python3
"""Score `troubleshoot` on the held-out set of real job logs (benchmarks/heldout).

Every case in manifest.yaml is a log that a user pasted in a public thread,
labelled by what the THREAD concluded (never by what the tool says). For each
log this script runs `troubleshoot --json FILE` and compares the first finding
with the label:

  failures  right   the top finding's id, or a broader id it `refines`, is the
                    label (a label that is an alias of an entry counts as that
                    entry's id)
            wrong   the top finding names another class
            absent  no finding
            label not in KB: the label is no entry id or alias in the knowledge
                    base used; for those "absent" is the honest answer
  clean     flagged any finding at all on a log that shows no failure

Usage (from the project root, with the tool installed in .venv or on PATH):
    python3 benchmarks/heldout/score_heldout.py            # table
    python3 benchmarks/heldout/score_heldout.py --json     # one JSON summary
    python3 benchmarks/heldout/score_heldout.py -v         # one line per log
    python3 benchmarks/heldout/score_heldout.py --batch 2  # one collection batch (the README's table of
                                                           # batches says when and how each was collected)
    python3 benchmarks/heldout/score_heldout.py --kb ../other/knowledge
        (--kb is passed to troubleshoot: it adds or overrides entries, e.g.
        to measure a branch's new entries on top of the installed base)

There are no pass/fail thresholds here: the figures are reported, not gated.
Needs only the standard library and the installed troubleshoot (whose PyYAML
dependency reads the manifest and the entries' aliases).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml  # a dependency of troubleshoot itself

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent


def troubleshoot_cmd(explicit: str | None) -> list[str]:
    if explicit:
        return explicit.split()
    venv = PROJECT / ".venv" / "bin" / "troubleshoot"
    if venv.exists():
        return [str(venv)]
    found = shutil.which("troubleshoot")
    if found:
        return [found]
    return [sys.executable, "-m", "gpu_troubleshooter"]


def load_manifest(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise SystemExit(f"{path}: no 'cases' list")
    return doc


def load_kb(cmd: list[str], kb_dirs: list[str]) -> dict[str, dict]:
    """id -> {"aliases": set, "refines": set} for every entry the tool loads."""
    extra = [a for d in kb_dirs for a in ("--kb", d)]
    p = subprocess.run(cmd + ["kb", "list", "--json", *extra], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"troubleshoot kb list failed: {p.stderr.strip()[-500:]}")
    entries: dict[str, dict] = {}
    for item in json.loads(p.stdout):
        aliases: set[str] = set()
        refines: set[str] = set()
        src = item.get("path")
        if src and Path(src).is_file():
            try:
                data = yaml.safe_load(Path(src).read_text(encoding="utf-8")) or {}
            except yaml.YAMLError:
                data = {}
            if isinstance(data, dict):
                aliases = {str(a) for a in (data.get("aliases") or [])}
                r = data.get("refines")
                refines = {str(x) for x in (r if isinstance(r, list) else [r] if r else [])}
        entries[item["id"]] = {"aliases": aliases, "refines": refines}
    return entries


def canonical(label: str, kb: dict[str, dict]) -> str | None:
    """The entry id a label names (itself, or the entry that lists it as an alias)."""
    if label in kb:
        return label
    for eid, e in kb.items():
        if label in e["aliases"]:
            return eid
    return None


def broader(eid: str, kb: dict[str, dict]) -> set[str]:
    """eid plus every class it refines, transitively."""
    seen, todo = set(), [eid]
    while todo:
        x = todo.pop()
        if x in seen:
            continue
        seen.add(x)
        todo.extend(kb.get(x, {}).get("refines", ()))
    return seen


def classify(cmd: list[str], kb_dirs: list[str], log: Path) -> tuple[list[dict], int, str | None]:
    """The findings, and how many key lines ("these lines ended the job") were shown."""
    extra = [a for d in kb_dirs for a in ("--kb", d)]
    p = subprocess.run(cmd + ["--json", *extra, str(log)], capture_output=True, text=True, timeout=300)
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        return [], 0, f"exit {p.returncode}, no JSON: {(p.stderr or p.stdout).strip()[-300:]}"
    return doc.get("findings") or [], len(doc.get("key_lines") or []), None


def case_batch(case: dict) -> int:
    """The collection batch of a case (cases without the field belong to batch 1)."""
    return int(case.get("batch", 1))


def summarize(rows: list[dict]) -> dict:
    """The failure and clean figures of a list of scored rows."""
    fails = [r for r in rows if r["kind"] == "failure"]
    cleans = [r for r in rows if r["kind"] == "clean"]
    c = Counter(r["outcome"] for r in fails)
    n = len(fails)
    in_kb = [r for r in fails if r["in_kb"]]
    not_kb = [r for r in fails if not r["in_kb"]]
    thread = [r for r in fails if r.get("basis", "thread") == "thread"]
    ct = Counter(r["outcome"] for r in thread)

    def share(k, d):
        return round(k / d, 3) if d else None

    return {
        "failures": {
            "n": n,
            "right_first": c["right"], "wrong_class": c["wrong"], "absent": c["absent"],
            "right_share": share(c["right"], n), "wrong_share": share(c["wrong"], n),
            "absent_share": share(c["absent"], n),
            "label_in_kb": len(in_kb),
            "label_not_in_kb": len(not_kb),
            "right_share_of_labels_in_kb": share(sum(r["outcome"] == "right" for r in in_kb), len(in_kb)),
            "label_not_in_kb_absent": sum(r["outcome"] == "absent" for r in not_kb),
            "label_not_in_kb_wrong": sum(r["outcome"] == "wrong" for r in not_kb),
            # with no finding, the key lines are all the user gets: were any shown?
            "absent_with_key_lines": sum(r["outcome"] == "absent" and r.get("key_lines", 0) > 0 for r in fails),
            "basis_thread": {"n": len(thread), "right_first": ct["right"],
                             "wrong_class": ct["wrong"], "absent": ct["absent"]},
        },
        "clean": {"n": len(cleans), "flagged": sum(r["outcome"] == "flagged" for r in cleans),
                  "key_lines_shown": sum(r.get("key_lines", 0) > 0 for r in cleans)},
    }


def score(manifest: Path, cmd: list[str], kb_dirs: list[str], batch: str = "all") -> dict:
    doc = load_manifest(manifest)
    known = {str(case_batch(c)) for c in doc["cases"]}
    if batch != "all" and batch not in known:
        # the manifest, not a list kept here, says which batches exist
        raise ValueError(f"no batch {batch!r} in {manifest} (batches: {', '.join(sorted(known, key=int))}, all)")
    kb = load_kb(cmd, kb_dirs)
    cases = [c for c in doc["cases"] if batch == "all" or str(case_batch(c)) == batch]
    rows, errors = [], []
    for case in cases:
        log = manifest.parent / case["file"]
        label = str(case["label"])
        findings, key_lines, err = classify(cmd, kb_dirs, log)
        if err:
            errors.append(f"{case['file']}: {err}")
        top = findings[0] if findings else None
        top_id = top.get("id") if top else None
        top_ids = set()
        if top_id:
            top_ids = broader(top_id, kb) | set(top.get("refines") or [])
        if label == "none":
            kind, outcome, in_kb = "clean", ("flagged" if findings else "ok"), None
        else:
            kind = "failure"
            want = canonical(label, kb)
            in_kb = want is not None
            if top_id is None:
                outcome = "absent"
            elif want is not None and want in top_ids:
                outcome = "right"
            else:
                outcome = "wrong"
        rows.append({"file": case["file"], "batch": case_batch(case), "label": label, "kind": kind,
                     "in_kb": in_kb, "basis": case.get("basis", "thread"), "top": top_id, "outcome": outcome,
                     "key_lines": key_lines})

    batches = sorted({r["batch"] for r in rows})
    return {
        "manifest": str(manifest),
        "kb_entries": len(kb),
        "kb_extra": kb_dirs,
        "batch": batch,
        **summarize(rows),
        "by_batch": {str(b): summarize([r for r in rows if r["batch"] == b]) for b in batches},
        "errors": errors,
        "cases": rows,
    }


def _pct(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def print_table(s: dict, verbose: bool) -> None:
    if verbose:
        for r in s["cases"]:
            mark = {"right": "RIGHT", "wrong": "WRONG", "absent": "absent", "ok": "ok", "flagged": "FLAGGED"}[r["outcome"]]
            kbm = "" if r["in_kb"] is None else ("" if r["in_kb"] else "  (label not in KB)")
            print(f"{mark:8} b{r['batch']} {r['file']:60} label={r['label']:36} top={r['top'] or '-'}{kbm}")
        print()
    extra = ", extra " + ", ".join(s["kb_extra"]) if s["kb_extra"] else ""
    print(f"held-out set: {s['manifest']}  (KB: {s['kb_entries']} entries{extra}; batch {s['batch']})")
    cols = [(f"batch {b}", v) for b, v in s["by_batch"].items()]
    if len(cols) > 1 or s["batch"] == "all":
        cols.append(("all", {"failures": s["failures"], "clean": s["clean"]}))

    def cell(count: int, share: float | None) -> str:
        return f"{count:>4} ({_pct(share)})"

    lines = [
        ("failures", lambda v: f"{v['failures']['n']:>4}        "),
        ("  right first", lambda v: cell(v["failures"]["right_first"], v["failures"]["right_share"])),
        ("  wrong class", lambda v: cell(v["failures"]["wrong_class"], v["failures"]["wrong_share"])),
        ("  absent (no finding)", lambda v: cell(v["failures"]["absent"], v["failures"]["absent_share"])),
        ("  label not in KB", lambda v: f"{v['failures']['label_not_in_kb']:>4}        "),
        ("    of which absent", lambda v: f"{v['failures']['label_not_in_kb_absent']:>4}        "),
        ("    of which wrong", lambda v: f"{v['failures']['label_not_in_kb_wrong']:>4}        "),
        ("  right, labels in KB", lambda v: cell(v["failures"]["label_in_kb"], v["failures"]["right_share_of_labels_in_kb"])),
        ("  absent, key lines shown", lambda v: f"{v['failures']['absent_with_key_lines']:>4}        "),
        ("  basis: thread only", lambda v: "{right_first:>3}/{wrong_class}/{absent} of {n}".format(**v["failures"]["basis_thread"]).rjust(12)),
        ("clean logs", lambda v: f"{v['clean']['n']:>4}        "),
        ("  flagged", lambda v: f"{v['clean']['flagged']:>4}        "),
        ("  key lines shown", lambda v: f"{v['clean']['key_lines_shown']:>4}        "),
    ]
    print(f"{'':26}" + "".join(f"{name:>16}" for name, _ in cols))
    for label, fmt in lines:
        print(f"{label:26}" + "".join(f"{fmt(v):>16}" for _, v in cols))
    print("(basis: thread only = right/wrong/absent on the failures a person in the thread diagnosed)")
    for e in s["errors"]:
        print(f"error: {e}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manifest", default=str(HERE / "manifest.yaml"))
    ap.add_argument("--troubleshoot", help="command to run (default: .venv/bin/troubleshoot, then PATH)")
    ap.add_argument("--kb", action="append", default=[], metavar="DIR", help="extra knowledge folder passed to troubleshoot")
    ap.add_argument("--json", action="store_true", help="print the summary (and per-case rows) as JSON")
    ap.add_argument("-v", action="store_true", help="one line per log")
    ap.add_argument("--batch", default="all",
                    help="score one collection batch of the manifest, or all (default: all, with a column per batch)")
    a = ap.parse_args(argv)
    try:
        s = score(Path(a.manifest).resolve(), troubleshoot_cmd(a.troubleshoot), a.kb, a.batch)
    except ValueError as e:
        ap.error(str(e))
    if a.json:
        print(json.dumps(s, indent=1))
    else:
        print_table(s, a.v)
    return 1 if s["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
