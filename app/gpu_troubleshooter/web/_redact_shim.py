"""TEMPORARY SHIM -- delete once gpu_troubleshooter.redact (branch `redact`) is merged into main.

Same contract as the real module: redact_text(text) -> RedactionResult(text, counts),
redact_lines(iterable) -> iterator. Covers only a few obvious secret shapes.
"""
import re
from collections import Counter, namedtuple

RedactionResult = namedtuple("RedactionResult", "text counts")

_RULES = [
    ("aws_key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b")),
    ("bearer", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{12,}")),
    ("password", re.compile(r"(?i)((?:password|passwd|secret|token|api[_-]?key)\s*[=:]\s*)\S+")),
]


def redact_text(text):
    counts = Counter()
    for name, rx in _RULES:
        def sub(m, name=name):
            counts[name] += 1
            return (m.group(1) if m.groups() else "") + f"[REDACTED:{name}]"
        text = rx.sub(sub, text)
    return RedactionResult(text, dict(counts))


def redact_lines(lines):
    for line in lines:
        yield redact_text(line).text
