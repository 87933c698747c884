"""Read a log as a stream of byte chunks that end on line boundaries.

The one input path of the CLI and the web service: compression sniffing
(gzip, bzip2, xz, also concatenated members), UTF-16 turned into UTF-8,
refusing what is really binary, a size limit, and damaged input read up to
the damage. Memory stays flat whatever the log's size: at most one chunk
(plus one partial line) is held.
"""
import codecs
import io
import os
import sys
import time

from .errors import LogInputError

CHUNK_SIZE = 4 * 1024 * 1024
SNIFF_SIZE = 8192
PIECE = 256 * 1024  # what one read of a decompressor asks for: damage loses at most this much



def _also_damage(error):
    """Reading a damaged log of this format can also raise `error` (its module is imported only when needed)."""
    global _DAMAGE
    if error not in _DAMAGE:
        _DAMAGE = _DAMAGE + (error,)


def _gzip(f):
    import gzip
    import zlib
    _also_damage(zlib.error)
    return gzip.GzipFile(fileobj=f)


def _bzip2(f):
    import bz2
    return bz2.BZ2File(f)


def _xz(f):
    import lzma
    _also_damage(lzma.LZMAError)
    return lzma.LZMAFile(f)


# the decompressors are imported only for a log that needs one: start-up time matters
_COMPRESSED = ((b"\x1f\x8b", _gzip, "gzip"), (b"BZh", _bzip2, "bzip2"), (b"\xfd7zXZ\x00", _xz, "xz"))
_DAMAGE = (OSError, EOFError, ValueError)  # what reading a damaged log raises (+ the decompressors' own errors)
_NOT_LOGS = (
    (b"\x7fELF", "an executable (ELF) file"), (b"PK\x03\x04", "a zip archive; unzip it and pass the log inside"),
    (b"%PDF", "a PDF document"), (b"\x89PNG", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"),
    (b"\x93NUMPY", "a NumPy array file"), (b"ustar", "a tar archive; extract the log first"),
)


class LogTooLarge(LogInputError):
    """The (decompressed) log is larger than the limit the caller set."""


# --- Decompression bombs (set by the web service; the CLI reads what it is given) -----------
# `max_ratio`: refuse a compressed log that expands more than this many times once
# RATIO_FROM bytes are out (small logs may compress very well); `cpu_seconds`: refuse a
# log whose reading, with whatever the caller does with each chunk in the same thread,
# has used more CPU time than this (counted from its second chunk on: a small log asks
# the clock nothing). Both raise LogTooLarge, checked once per chunk.
RATIO_FROM = 16 * 1024 * 1024


def _check_bomb(reader):
    packed = reader.packed_bytes()
    if reader.max_ratio and packed and reader.bytes_read > RATIO_FROM and reader.bytes_read > reader.max_ratio * packed:
        raise LogTooLarge(f"{reader.name}: refused: the log expands more than {reader.max_ratio:g} times when "
                          f"decompressed ({packed:,} bytes became more than {reader.bytes_read:,}), which logs do "
                          "not; send it uncompressed, or only its end (tail -c 50M)")
    if reader.cpu_seconds is None or reader.bytes_read <= reader.chunk_size:
        return
    if reader.cpu_start is None:
        reader.cpu_start = time.thread_time()
    elif time.thread_time() - reader.cpu_start > reader.cpu_seconds:
        raise LogTooLarge(f"{reader.name}: refused: reading the log took more than {reader.cpu_seconds:g} s of "
                          "processor time; send only its end (tail -c 50M)")
# ---------------------------------------------------------------------------------------------


class _KeepOpen(io.RawIOBase):
    """Standard input for one diagnosis: closing this does not close stdin."""

    def __init__(self, raw):
        super().__init__()
        self._raw = raw

    def readable(self):
        return True

    def readinto(self, buf):
        data = self._raw.read1(len(buf)) if hasattr(self._raw, "read1") else self._raw.read(len(buf))
        buf[:len(data)] = data
        return len(data)


def open_log(source):
    """A readable, decompressing binary stream for a path, '-' (stdin) or an open binary file."""
    if isinstance(source, (_Decompressed, _Utf16)):
        return source
    if hasattr(source, "read"):
        raw = source
    elif str(source) == "-":
        raw = io.BufferedReader(_KeepOpen(sys.stdin.buffer), CHUNK_SIZE)
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
    return _decompressing(raw if hasattr(raw, "peek") else io.BufferedReader(raw), str(source) if not hasattr(source, "read") else None)


class _Decompressed(io.RawIOBase):
    """A decompressor read in small pieces, so damage loses little; `kind` names the format."""

    def __init__(self, inner, outer, kind):
        super().__init__()
        self.inner, self.outer, self.kind = inner, outer, kind

    def readable(self):
        return True

    def readinto(self, buf):
        data = self.inner.read1(min(len(buf), PIECE)) if hasattr(self.inner, "read1") else self.inner.read(min(len(buf), PIECE))
        buf[:len(data)] = data
        return len(data)

    def close(self):
        try:
            self.inner.close()
        except _DAMAGE:
            pass
        self.outer.close()
        super().close()


def compression_of(head: bytes):
    """'gzip', 'bzip2', 'xz' or None from a log's first bytes."""
    return next((kind for magic, _, kind in _COMPRESSED if head.startswith(magic)), None)


def _decompressing(stream, name=None):
    try:
        head = stream.peek(SNIFF_SIZE)[:SNIFF_SIZE]
    except ValueError:  # a closed stream
        raise LogInputError(f"{name or 'input'}: cannot be read twice (was standard input '-' given more than once?)") from None
    for magic, opener, kind in _COMPRESSED:
        if head.startswith(magic):
            return _Decompressed(opener(stream), stream, kind)
    return stream


def _utf16_order(sample: bytes):
    """'utf-16-le'/'utf-16-be' when `sample` is UTF-16 text (with or without a BOM), else None."""
    if sample.startswith(b"\xff\xfe"):
        return "utf-16-le"
    if sample.startswith(b"\xfe\xff"):
        return "utf-16-be"
    even, odd = sample[0::2], sample[1::2]
    if len(sample) < 16:
        return None
    if odd.count(0) > len(odd) * 0.7 and even.count(0) < len(even) * 0.1:
        return "utf-16-le"
    if even.count(0) > len(even) * 0.7 and odd.count(0) < len(odd) * 0.1:
        return "utf-16-be"
    return None


class _Utf16(io.RawIOBase):
    """UTF-16 text in, UTF-8 out, incrementally."""

    def __init__(self, stream, encoding):
        super().__init__()
        self.stream, self.pending = stream, b""
        self.decoder = codecs.getincrementaldecoder("utf-16" if encoding is None else encoding)(errors="replace")
        self.eof = False

    def readable(self):
        return True

    def readinto(self, buf):
        while not self.pending and not self.eof:
            data = self.stream.read(PIECE)
            self.eof = not data
            text = self.decoder.decode(data, final=self.eof)
            self.pending = text.lstrip("\ufeff").encode("utf-8")
        n = min(len(buf), len(self.pending))
        buf[:n], self.pending = self.pending[:n], self.pending[n:]
        return n


def check_text(head: bytes, name: str):
    """Refuse empty and really binary input with one clear sentence. NUL bytes
    (what a node crash leaves in a job's output) do not count against text."""
    if not head:
        raise LogInputError(f"{name}: the log is empty, so there is nothing to diagnose (did the job write its output elsewhere? check `#SBATCH --output`)")
    for magic, what in _NOT_LOGS:
        if head.startswith(magic) or (magic == b"ustar" and head[257:262] == magic):
            raise LogInputError(f"{name}: this is {what}, not a text log")
    sample = head.replace(b"\x00", b"")[:SNIFF_SIZE]
    if not sample:
        raise LogInputError(f"{name}: this holds only NUL bytes, no log text")
    text = sample.decode("utf-8", errors="replace")
    odd = text.count("\ufffd") + sum(1 for ch in text if ch < " " and ch not in "\t\n\r\f\v\b\x1b")
    if odd > len(text) * 0.3:
        raise LogInputError(f"{name}: this looks like a binary file, not a text log")


class LogReader:
    """Chunks of one log, ending on line boundaries; damage after the first
    readable bytes ends the log early with a line in `warnings`.

    `max_bytes`: raise LogTooLarge past this many (decompressed) bytes.
    `buffers()` is the zero-copy form the engine uses: one buffer, reused."""

    def __init__(self, stream, name="log", max_bytes=None, chunk_size=None, max_ratio=None, cpu_seconds=None):
        self.stream, self.name, self.max_bytes = stream, name, max_bytes
        self.chunk_size = chunk_size or CHUNK_SIZE
        self.warnings = []
        self.bytes_read = 0
        self.ended = False  # whether the latest _fill() reached the end of the log
        self.kind = getattr(stream, "kind", None)
        self.max_ratio, self.cpu_seconds = max_ratio, cpu_seconds  # decompression bombs (see _check_bomb)
        self.cpu_start = None
        self._packed = stream.outer if isinstance(stream, _Decompressed) else None

    def packed_bytes(self):
        """Compressed bytes consumed so far (with the decompressor's read-ahead), or None."""
        try:
            return self._packed.tell() if self._packed is not None else None
        except (OSError, ValueError):  # a pipe, or closed
            return None

    def _fill(self, view):
        """Read into `view` until it is full or the log ends; the number of bytes read.
        `ended`: this read stopped short of a full view, so the log ended (or the rest was
        damaged); a later read of the same log, e.g. decoded from UTF-16, sets it afresh."""
        got = 0
        while got < len(view):
            try:
                n = self.stream.readinto(view[got:])
            except _DAMAGE as e:
                if not got and not self.bytes_read:
                    what = f"looks like a {self.kind} file but" if self.kind else "the log"
                    raise LogInputError(f"{self.name}: {what} cannot be read ({_reason(e)}); is it truncated or damaged?") from None
                self._damaged(e, self.bytes_read + got)
                break
            if not n:
                break
            got += n
        self.ended = got < len(view)
        return got

    def _damaged(self, error, at):
        self.warnings.append(f"{self.name}: damaged after {at:,} bytes ({_reason(error)}); diagnosed what could be read")
        self.stream = io.BytesIO()
        self.kind = None

    def buffers(self, spare=0):
        """Yield (buffer, end): buffer[:end] is the next chunk, ending at a
        newline (or at a carriage return when a progress bar writes megabytes
        without a newline). The buffer is reused: use it before the next one,
        or, with `spare` buffers more (taken in turn), before the next 1 +
        `spare` ones (a chunk can be scanned while the next ones are read).
        The first chunk is checked for empty and binary input, and for UTF-16."""
        size = self.chunk_size
        small = min(size, 1 << 16)  # a small log never pays for (and page-faults) a 2 x 4 MiB buffer
        buf = bytearray(2 * small)
        view = memoryview(buf)
        new = self._fill(view[:small])
        if new == small < size:
            buf = bytearray(2 * size)  # a carried partial line (< size) + one read
            buf[:new] = view[:new]
            view.release()
            view = memoryview(buf)
            new += self._fill(view[new:size])
        order = _utf16_order(bytes(view[:min(new, SNIFF_SIZE)]))
        if order:
            self.stream, self.kind = _Utf16(io.BufferedReader(_Replay(bytes(view[:new]), self.stream)), order), "utf-16"
            new = self._fill(view[:size])
        head = bytes(view[:min(new, 1 << 16)])
        if new > len(head) and not head.strip(b"\x00"):  # NULs first: judge by what follows them
            head = bytes(view[:new])
        check_text(head, self.name)
        carry = 0
        turn, ring = 0, [(buf, view)]
        while True:
            if not new:
                if carry:
                    yield buf, carry
                return
            self.bytes_read += new
            if self.max_bytes is not None and self.bytes_read > self.max_bytes:
                raise LogTooLarge(f"{self.name}: the log is larger than {self.max_bytes // (1 << 20)} MiB once decompressed")
            if self.max_ratio or self.cpu_seconds is not None:
                _check_bomb(self)
            total = carry + new
            # At the end of the log an unterminated last line (a paste, `tail -c`) stays in the
            # chunk of the lines before it: alone in a chunk of its own it would lose the line
            # before it, which values and hard-wrapped messages are read from
            cut = total - 1 if self.ended else buf.rfind(b"\n", 0, total)
            if cut < 0:
                cut = buf.rfind(b"\r", 0, total)
            if cut < 0:
                if total < size:
                    carry = total
                    new = self._fill(view[carry:carry + size])
                    continue
                cut = total - 1  # one line longer than a chunk: split it
            yield buf, cut + 1
            carry = total - cut - 1
            if spare:  # the next buffer in turn (allocated on first use)
                turn = (turn + 1) % (spare + 1)
                if turn == len(ring):
                    following = bytearray(len(buf))
                    ring.append((following, memoryview(following)))
                following, following_view = ring[turn]
                if carry:
                    following_view[:carry] = view[cut + 1:total]
                buf, view = following, following_view
            elif carry:
                buf[:carry] = buf[cut + 1:total]
            new = self._fill(view[carry:carry + size])

    def chunks(self):
        """The chunks of buffers() as bytes of their own."""
        for buf, end in self.buffers():
            yield bytes(memoryview(buf)[:end])


class _Replay(io.RawIOBase):
    """`head` (already read) followed by the rest of `stream`."""

    def __init__(self, head, stream):
        super().__init__()
        self.head, self.stream = head, stream

    def readable(self):
        return True

    def readinto(self, buf):
        if self.head:
            n = min(len(buf), len(self.head))
            buf[:n], self.head = self.head[:n], self.head[n:]
            return n
        data = self.stream.read(len(buf))
        buf[:len(data)] = data
        return len(data)


def _reason(error):
    text = str(error) or error.__class__.__name__
    return text[:120]


def iter_chunks(stream, name="log", chunk_size=None):
    """Chunks of `stream` (see LogReader.chunks)."""
    return LogReader(stream, name, chunk_size=chunk_size).chunks()
