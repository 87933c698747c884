"""Undo what real logs do to text before it is matched or shown."""
import re

ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# `srun -l` writes "3: ", torchrun "[default3]:", some launchers "3 | " or "[rank3]:".
RANK_PREFIX = re.compile(r"^\s{0,4}(?:\d{1,5}:\s|\d{1,5}\s\|\s|\[default\d{1,5}\]:|\[rank\d{1,5}\]:\s?)")
MAX_LINE = 4000


def segment_at(line: bytes, offset: int) -> bytes:
    """The carriage-return segment of `line` that holds `offset`: a tqdm line
    is many progress updates joined by \\r, and only one holds the match."""
    line = line.rstrip(b"\r")
    start = line.rfind(b"\r", 0, offset) + 1
    end = line.find(b"\r", offset)
    seg = line[start:] if end < 0 else line[start:end]
    if len(seg) > MAX_LINE:
        rel = max(0, offset - start - MAX_LINE // 2)
        seg = seg[rel:rel + MAX_LINE]
    return seg


def clean(text: str) -> str:
    """ANSI codes, rank prefixes and stray whitespace off one line of text."""
    text = ANSI.sub("", text).replace("\x00", "")
    if "\r" in text:  # keep the last progress update, which is what a terminal showed
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    return RANK_PREFIX.sub("", text, count=1).rstrip()


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")
