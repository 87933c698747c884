"""scanner._Lines: line numbers and line starts of offsets, counted from the nearest known point
(the chunk's start, earlier look-ups, and, when the engine passes its newline count, the chunk's end)."""
import random

import pytest

from gpu_troubleshooter.scanner import _Lines


def _truth(chunk, first, off):
    return first + chunk.count(b"\n", 0, off), chunk.rfind(b"\n", 0, off) + 1


def _chunk(rnd):
    pieces = []
    for _ in range(rnd.randrange(0, 60)):
        kind = rnd.random()
        if kind < 0.6:
            pieces.append(b"x" * rnd.randrange(0, 40) + b"\n")
        elif kind < 0.8:
            pieces.append(b"\n" * rnd.randrange(1, 4))
        elif kind < 0.9:
            pieces.append(b"bar\r" * rnd.randrange(1, 50))  # a progress bar: no newline for a while
        else:
            pieces.append(b"y" * rnd.randrange(200, 2000))  # a long line
    tail = rnd.choice([b"\n", b"\r", b"no newline at the end"])
    return b"".join(pieces) + tail


@pytest.mark.parametrize("seed", range(40))
def test_line_numbers_the_same_from_either_end(seed):
    rnd = random.Random(seed)
    chunk = _chunk(rnd)
    spare = bytearray(chunk + b"\nafter the chunk\n" * rnd.randrange(0, 2))  # a reused buffer longer than the chunk
    end = len(chunk)
    first = rnd.randrange(1, 10**6)
    offsets = [rnd.randrange(0, end) for _ in range(rnd.randrange(1, 30))]
    if rnd.random() < 0.5:
        offsets.sort()  # the engine's usual order; otherwise any order
    newlines = chunk.count(b"\n")
    for known in (None, newlines, lambda: newlines):
        lines = _Lines(spare, first, end, known)
        for off in offsets:
            assert lines.at(off) == _truth(chunk, first, off), (seed, known, off)


def test_a_hit_near_the_end_counts_back_from_it():
    """The point of passing the count: the last line of a 4 MiB chunk costs a short count, not a full one."""
    chunk = b"line\n" * 800_000 + b"Traceback (most recent call last):\n"
    counted = []

    class Watched(bytes):
        def count(self, sub, start=0, stop=None):
            counted.append((stop if stop is not None else len(self)) - start)
            return bytes.count(self, sub, start, stop)
    data = Watched(chunk)
    lines = _Lines(data, 1, len(chunk), chunk.count(b"\n"))
    assert lines.at(len(chunk) - 5) == (800_001, len(chunk) - len(b"Traceback (most recent call last):\n"))
    assert max(counted) < 100
    assert _Lines(data, 1).at(len(chunk) - 5) == (800_001, 4_000_000)  # without the count: the whole chunk
    assert max(counted) >= 4_000_000
