"""Read a log as a stream of byte chunks that end on line boundaries.

Memory stays flat whatever the log's size: at most one chunk (plus one
partial line) is held. gzip, bzip2 and xz logs are decompressed on the fly.
"""
import bz2
import gzip
import io
import lzma
import os
import sys

from .errors import LogInputError

CHUNK_SIZE = 4 * 1024 * 1024
SNIFF_SIZE = 8192

_COMPRESSED = ((b"\x1f\x8b", lambda f: gzip.GzipFile(fileobj=f), "gzip"), (b"BZh", bz2.BZ2File, "bzip2"), (b"\xfd7zXZ\x00", lzma.LZMAFile, "xz"))
_NOT_LOGS = (
    (b"\x7fELF", "an executable (ELF) file"), (b"PK\x03\x04", "a zip archive; unzip it and pass the log inside"),
    (b"%PDF", "a PDF document"), (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
    (b"\x93NUMPY", "a NumPy array file"), (b"ustar", "a tar archive; extract the log first"),
)


def open_log(source):
    """A readable binary stream for a path, '-' (stdin) or an open binary file."""
    if hasattr(source, "read"):
        raw = source
    elif str(source) == "-":
        raw = sys.stdin.buffer
    else:
        path = os.fspath(source)
        if os.path.isdir(path):
            raise LogInputError(f"{path}: is a directory, not a log file")
        try:
            raw = open(path, "rb")
        except FileNotFoundError:
            raise LogInputError(f"{path}: no such file") from None
        except PermissionError:
            raise LogInputError(f"{path}: permission denied (can you read it? try `ls -l {path}`)") from None
        except OSError as e:
            raise LogInputError(f"{path}: cannot be read: {e.strerror or e}") from None
    return _decompressing(io.BufferedReader(raw) if not hasattr(raw, "peek") else raw)


def _decompressing(stream):
    head = stream.peek(SNIFF_SIZE)[:SNIFF_SIZE]
    for magic, opener, name in _COMPRESSED:
        if head.startswith(magic):
            inner = io.BufferedReader(opener(stream))
            try:
                inner.peek(1)
            except (OSError, EOFError, lzma.LZMAError) as e:
                raise LogInputError(f"looks like a {name} file but cannot be decompressed ({e}); is it truncated?") from None
            return inner
    return stream


def check_text(head: bytes, name: str):
    """Refuse empty and binary input with one clear sentence."""
    if not head:
        raise LogInputError(f"{name}: the log is empty, so there is nothing to diagnose (did the job write its output elsewhere? check `#SBATCH --output`)")
    for magic, what in _NOT_LOGS:
        if head.startswith(magic) or (magic == b"ustar" and head[257:262] == magic):
            raise LogInputError(f"{name}: this is {what}, not a text log")
    sample = head[:SNIFF_SIZE]
    if sample.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise LogInputError(f"{name}: this is UTF-16 text; convert it first: iconv -f UTF-16 -t UTF-8 {name} > log.txt")
    text = sample.decode("utf-8", errors="replace")
    odd = text.count("\ufffd") + sum(1 for ch in text if ch < " " and ch not in "\t\n\r\f\v\b\x1b")
    if sample.count(b"\x00") > len(sample) // 100 + 1 or odd > len(text) * 0.3:
        raise LogInputError(f"{name}: this looks like a binary file, not a text log")


def iter_chunks(stream, name="log", chunk_size=CHUNK_SIZE):
    """Yield byte chunks ending at a newline (or at a carriage return when a
    progress bar writes megabytes without a newline). The first chunk is checked
    for empty and binary input."""
    carry = b""
    first = True
    while True:
        try:
            block = stream.read(chunk_size)
        except (OSError, EOFError, lzma.LZMAError) as e:
            raise LogInputError(f"{name}: reading failed part-way: {e}") from None
        if first:
            check_text(block, name)
            first = False
        if not block:
            if carry:
                yield carry
            return
        data = carry + block
        cut = data.rfind(b"\n")
        if cut < 0:
            cut = data.rfind(b"\r")
        if cut < 0:
            if len(data) < chunk_size:
                carry = data
                continue
            cut = len(data) - 1  # one line longer than a chunk: split it
        carry = data[cut + 1:]
        yield data[: cut + 1]
