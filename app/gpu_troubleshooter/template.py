"""The template of a key line: what stays the same when the same error recurs.

Two submissions of one unknown error differ in numbers, paths, addresses,
hostnames and ids; masking those leaves a template that groups them with a
plain equality in the database (no per-process clustering state). The rules
follow drain3's masking instructions (IP, hex, numbers, ...), extended with
what HPC logs add: file paths, node names, job ids, rank prefixes. Order
matters: the specific shapes are masked before the generic number.
"""
from __future__ import annotations

import hashlib
import re
from typing import Tuple

_RULES: Tuple[Tuple["re.Pattern[str]", str], ...] = tuple((re.compile(rx), mask) for rx, mask in (
    (r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b", "<EMAIL>"),
    (r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", "<UUID>"),
    (r"(?:[a-zA-Z][\w+.-]*://)\S+", "<URL>"),
    (r"(?:(?<=\s)|^|(?<=[\"'(=:]))(?:~|\.{1,2})?(?:/[\w.@%+~-]+)+/?", "<PATH>"),
    (r"\b[A-Za-z]:\\(?:[\w .-]+\\)*[\w .-]*", "<PATH>"),
    (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", "<IP>"),
    (r"\b0x[0-9a-fA-F]+\b", "<HEX>"),
    (r"\b[0-9a-fA-F]{12,}\b", "<HEX>"),
    # node names: letters, a dash or none, digits (gpu-a017, node042, c12-3, nid001234)
    # (but not rank12, task3, cuda0, sm_80: those are counters, masked as numbers below)
    (r"\b(?!(?:rank|task|worker|step|epoch|cuda|device|gpu|sm|compute|port|line|errno)\d)"
     r"[a-z]{1,10}(?:-[a-z]?\d{1,6}|\d{3,6})(?:-\d{1,4})?(?:\.[\w-]+)*\b", "<NODE>"),
    (r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?\b", "<TIME>"),
    (r"\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b", "<TIME>"),
    (r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?(?:\s?[KMGT]i?B|[kMG]?Hz|ms|us|ns|s|%)?(?![\w.])", "<NUM>"),
    (r"(?<=\w)\d+\b", "<NUM>"),   # digits glued to a word: rank3, task12, worker7
))
_SPACE = re.compile(r"\s+")
MAX_TEMPLATE = 400


def template_of(line: str) -> str:
    """The masked form of one (cleaned) key line, e.g.
    'srun: error: gpu-a017: task 3: Exited with exit code 1' ->
    'srun: error: <NODE>: task <NUM>: Exited with exit code <NUM>'."""
    text = line.strip()
    for rx, mask in _RULES:
        text = rx.sub(mask, text)
    return _SPACE.sub(" ", text)[:MAX_TEMPLATE]


def template_key(template: str) -> str:
    """A short, fixed-length key for grouping in the database."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest()[:16]
