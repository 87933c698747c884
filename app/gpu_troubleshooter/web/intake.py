"""From an uploaded or pasted log to a stored, redacted diagnosis.

Order matters for safety: the raw bytes are only ever read from the request's
anonymous (unlinked) spool file; what reaches a named file, the engine and
the database is the redacted text.
"""
import gzip
import io
import hashlib
import os
import re
import secrets
import tempfile
from collections import deque

from .redaction import redact_lines, redact_str

CONTEXT = 3            # lines shown before and after each evidence line
MAX_EVIDENCE = 20      # evidence lines with context kept per finding
MAX_LINE = 2000        # characters kept of one displayed line
TAIL_LINES = 150       # last lines kept for the helpdesk
CHUNK_LINE = 1 << 20   # a "line" longer than 1 MiB is cut into pieces

_CLUSTER = re.compile(r"SLURM_CLUSTER_NAME=([\w.-]{1,60})")
_PARTITION = re.compile(r"SLURM_JOB_PARTITION=([\w.,-]{1,60})")


class LogTooLarge(Exception):
    """The decompressed log exceeds MAX_LOG_BYTES (a gzip bomb, or just too big)."""


def _maybe_gunzip(raw):
    """Wrap `raw` in a gzip reader when it starts with the gzip magic."""
    head = raw.read(2)
    if raw.seekable():
        raw.seek(0)
        stream = raw
    else:  # put the two bytes back in front
        stream = io.BufferedReader(_Prepend(head, raw))
    return gzip.GzipFile(fileobj=stream, mode="rb") if head == b"\x1f\x8b" else stream


class _Prepend(io.RawIOBase):
    def __init__(self, head, raw):
        super().__init__()
        self.head, self.raw = head, raw

    def readable(self):
        return True

    def readinto(self, buf):
        if self.head:
            n = min(len(buf), len(self.head))
            buf[:n], self.head = self.head[:n], self.head[n:]
            return n
        data = self.raw.read(len(buf))
        buf[: len(data)] = data
        return len(data)


def redact_to_file(raw, upload_dir, max_bytes, progress=None):
    """Stream `raw` (plain or gzip) through redaction into a new file in upload_dir.

    Returns (path, decompressed_bytes, hints) where hints holds cluster/partition
    seen in the log. `progress(raw_bytes_read)` is called every few MiB.
    """
    os.makedirs(upload_dir, exist_ok=True)
    reader = _maybe_gunzip(raw)
    fd, path = tempfile.mkstemp(prefix="redacted-", suffix=".log", dir=upload_dir)
    total, hints, next_report = 0, {}, 4 << 20

    def decoded():
        nonlocal total, next_report
        while True:
            line = reader.readline(CHUNK_LINE)
            if not line:
                return
            total += len(line)
            if total > max_bytes:
                raise LogTooLarge(f"the log is larger than {max_bytes // (1 << 20)} MiB once decompressed")
            if progress and total >= next_report:
                next_report = total + (4 << 20)
                progress(raw.tell() if raw.seekable() else total)
            yield line.decode("utf-8", errors="replace")

    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            for line in redact_lines(decoded()):
                if len(hints) < 2 and "SLURM_" in line:
                    for key, rx in (("cluster", _CLUSTER), ("partition", _PARTITION)):
                        m = rx.search(line)
                        if m and key not in hints:
                            hints[key] = m.group(1)
                out.write(line)
    except BaseException:
        os.unlink(path)
        raise
    return path, total, hints


def evidence_context(path, diagnosis_dict):
    """Per finding, the evidence lines with CONTEXT neighbours, and the log's last lines."""
    findings = diagnosis_dict.get("findings") or []
    wanted = []  # per finding: sorted evidence line numbers (1-based)
    for f in findings:
        nums = sorted({int(e["line"]) for e in f.get("evidence", []) if e.get("line")})[:MAX_EVIDENCE]
        wanted.append(nums)
    keep = {}
    for nums in wanted:
        for n in nums:
            for k in range(max(1, n - CONTEXT), n + CONTEXT + 1):
                keep[k] = None
    tail = deque(maxlen=TAIL_LINES)
    with open(path, encoding="utf-8", errors="replace", newline="") as fh:
        for number, line in enumerate(fh, 1):
            text = line.rstrip("\r\n")[:MAX_LINE]
            if number in keep:
                keep[number] = text
            tail.append(text)
    blocks_per_finding = []
    for nums in wanted:
        blocks, current = [], None
        hits = set(nums)
        for n in nums:
            lo, hi = max(1, n - CONTEXT), n + CONTEXT
            if current and lo <= current["end"] + 1:
                current["end"] = max(current["end"], hi)
            else:
                current = {"start": lo, "end": hi}
                blocks.append(current)
        for b in blocks:
            b["lines"] = [{"n": k, "text": keep[k], "hit": k in hits}
                          for k in range(b["start"], b["end"] + 1) if keep.get(k) is not None]
            b["end"] = b["lines"][-1]["n"] if b["lines"] else b["start"]
        blocks_per_finding.append(blocks)
    return blocks_per_finding, "\n".join(tail)


def new_token():
    """The unguessable handle of a submission: 256 random bits."""
    return secrets.token_urlsafe(32)


def token_digest(token):
    """What the database keeps of a share token: its sha256, so a copy of the
    database (a backup, a leaked dump) opens no submission. The token is long
    and random, so a slow hash adds nothing."""
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def display_name(filename):
    """A safe, redacted label for an uploaded file's name."""
    name = os.path.basename((filename or "").replace("\\", "/"))[:200] or "upload"
    return redact_str(name)


def facts_location(facts):
    """cluster/partition from the probe's facts document, when it has them."""
    found = {}
    if not isinstance(facts, dict):
        return found
    root = facts.get("facts") if isinstance(facts.get("facts"), dict) else facts
    sched = root.get("scheduler") if isinstance(root.get("scheduler"), dict) else {}
    for key in ("cluster", "partition"):
        value = sched.get(key, root.get(key))
        if isinstance(value, dict):  # a fact may be {"value": ..., "reason": ...}
            value = value.get("value")
        if isinstance(value, str) and value:
            found[key] = value[:120]
    return found
