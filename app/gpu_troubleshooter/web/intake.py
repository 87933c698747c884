"""From an uploaded or pasted log to a stored, redacted diagnosis, in one read.

The web service reads a log through the same reader as the command line
(gpu_troubleshooter.reader: compression sniffing, UTF-16, binary refusal,
damaged input, the size limit), once: each chunk is redacted, written to a
temporary file (for the evidence context shown later) and handed to the
engine in the same pass. Order matters for safety: the raw bytes are only
ever read from the request's anonymous (unlinked) spool file; what reaches a
named file, the engine and the database is the redacted text.
"""
import hashlib
import os
import re
import secrets
import tempfile
from collections import deque

from gpu_troubleshooter import reader
from gpu_troubleshooter.reader import LogTooLarge  # noqa: F401 - the service catches it from here

from gpu_troubleshooter.redact import StreamRedactor

from .redaction import redact_str

CONTEXT = 3            # lines shown before and after each evidence line
MAX_EVIDENCE = 20      # evidence lines with context kept per finding
MAX_LINE = 2000        # characters kept of one displayed line
TAIL_LINES = 150       # last lines kept for the helpdesk
CHUNK_LINE = 1 << 20   # a "line" longer than 1 MiB is redacted in pieces
SPOOL_IN_MEMORY = 8 << 20  # a redacted copy up to this size stays in memory (no temp file)

_CLUSTER = re.compile(r"SLURM_CLUSTER_NAME=([\w.-]{1,60})")
_PARTITION = re.compile(r"SLURM_JOB_PARTITION=([\w.,-]{1,60})")


class RedactedLog:
    """One pass over an upload: redacted chunks for the engine, the redacted
    copy (in memory up to SPOOL_IN_MEMORY, then an unlinked temp file) with an
    index of where each chunk starts, the last lines and the cluster/partition
    the log names."""

    def __init__(self, raw, upload_dir, max_bytes, source="upload", progress=None, limits=None):
        os.makedirs(upload_dir, exist_ok=True)
        self.raw, self.progress = raw, progress
        # limits: {"max_ratio": ..., "cpu_seconds": ...}, the reader's decompression-bomb limits
        self.log = reader.LogReader(reader.open_log(raw), source, max_bytes=max_bytes, **(limits or {}))
        # One redactor for the whole log: a private key block cut by a chunk boundary stays redacted.
        self.redactor = StreamRedactor()
        # The redacted copy: in memory for a small log, else an unlinked temp file in upload_dir.
        self.out = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY, dir=upload_dir)
        self.index = []        # (number of the chunk's first line, file offset)
        self.tail = deque(maxlen=TAIL_LINES)
        self.hints = {}
        self.bytes = 0

    def chunks(self):
        line_no, offset, next_report = 1, 0, 4 << 20
        for chunk in self.log.chunks():
            text = chunk.decode("utf-8", errors="replace")
            redacted = self.redactor.redact_chunk(text, _lines)
            data = redacted.encode("utf-8") if redacted is not text else chunk
            if data is chunk and "\ufffd" in text:  # invalid UTF-8 in the upload: store what the user sees
                data = text.encode("utf-8")
            self.out.write(data)
            self.index.append((line_no, offset))
            line_no += data.count(b"\n")
            offset += len(data)
            self.bytes += len(chunk)
            self._note(redacted)
            if self.progress and self.bytes >= next_report:
                next_report = self.bytes + (4 << 20)
                self.progress(self.raw.tell() if self.raw.seekable() else self.bytes)
            yield data
        self.out.flush()

    def _note(self, text):
        if len(self.hints) < 2 and "SLURM_" in text:
            for key, rx in (("cluster", _CLUSTER), ("partition", _PARTITION)):
                m = rx.search(text)
                if m and key not in self.hints:
                    self.hints[key] = m.group(1)
        cut = len(text)  # only the last TAIL_LINES lines are split out
        for _ in range(TAIL_LINES + 1):
            cut = text.rfind("\n", 0, cut)
            if cut < 0:
                break
        lines = text[cut + 1:].split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for line in lines[-TAIL_LINES:]:
            self.tail.append(line.rstrip("\r")[:MAX_LINE])

    def close(self):
        self.out.close()


def _lines(text):
    """Lines of `text` with their endings; a line over CHUNK_LINE in pieces."""
    start, n = 0, len(text)
    while start < n:
        nl = text.find("\n", start, start + CHUNK_LINE)
        end = nl + 1 if nl >= 0 else min(n, start + CHUNK_LINE)
        yield text[start:end]
        start = end


def diagnose_upload(raw, kb, upload_dir, max_bytes, source="upload", facts=None, progress=None, limits=None):
    """Read `raw` (plain or compressed) once: redact, diagnose, collect the
    evidence context. Returns (result dict, context, tail, hints, bytes).
    `limits`: the reader's decompression-bomb limits (max_ratio, cpu_seconds).
    Raises LogInputError (LogTooLarge included) with a message for the user."""
    from gpu_troubleshooter.engine import diagnose_chunks
    upload = RedactedLog(raw, upload_dir, max_bytes, source, progress, limits)
    try:
        diagnosis = diagnose_chunks(upload.chunks(), kb, source=source, facts=facts)
        if upload.log.warnings:
            diagnosis.context["warnings"] = list(upload.log.warnings)
        result = diagnosis.to_dict()
        result["source"] = source
        context = evidence_context(upload.out, result, upload.index)
        return result, context, "\n".join(upload.tail), upload.hints, upload.bytes
    finally:
        upload.close()


def evidence_context(copy, diagnosis_dict, index=None):
    """Per finding, the evidence lines with CONTEXT neighbours, read from the
    redacted copy (a path or an open binary file): only the chunks that hold
    them when `index` is given."""
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
    if keep and isinstance(copy, (str, os.PathLike)):
        with open(copy, "rb") as fh:
            _read_lines(fh, keep, index or [(1, 0)])
    elif keep:
        _read_lines(copy, keep, index or [(1, 0)])
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
    return blocks_per_finding


def _read_lines(fh, keep, index):
    """Fill keep[line number] with the text of those lines, reading only the
    indexed chunks that hold them (each at most one reader chunk, split once)."""
    import bisect
    starts = [n for n, _ in index]
    fh.seek(0, os.SEEK_END)
    size = fh.tell()
    held, lines = None, []
    for want in sorted(keep):
        i = max(0, bisect.bisect_right(starts, want) - 1)
        if i != held:
            first, pos = index[i]
            end = index[i + 1][1] if i + 1 < len(index) else size
            fh.seek(pos)
            held, lines = i, fh.read(end - pos).split(b"\n")
        k = want - index[i][0]
        if k < len(lines) - 1 or (k == len(lines) - 1 and lines[k]):  # the last piece: a line without its newline
            keep[want] = lines[k].decode("utf-8", errors="replace").rstrip("\r")[:MAX_LINE]


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
