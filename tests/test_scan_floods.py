"""A flood of one repeated line is scanned as a few copies of it
(scanner._collapse_runs): what the engine reports must be exactly what the
full scan reports, line numbers included. Small inputs only."""
import random

import pytest

from gpu_troubleshooter import engine, scanner
from gpu_troubleshooter.engine import diagnose_chunks
from gpu_troubleshooter.knowledge import load_knowledge_base

LINES = [
    b"0: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
    b"NCCL WARN Call to ibv_reg_mr failed\n",
    b"step 1 loss 0.3\n",
    b"srun: error: gpu1: task 0: Exited with exit code 1\n",
    b"Traceback (most recent call last):\n",
    b'  File "train.py", line 3, in <module>\n',
    b"torch.OutOfMemoryError: CUDA out of memory.\n",
    b"Killed\n",
    b"slurmstepd: error: Detected 1 oom_kill event in StepId=1.batch\n",
    b"Epoch 1: 50%|#####| 5/10 [00:01<00:01]\r" * 3 + b"\n",
    b"\x1b[31mERROR: NCCL error\x1b[0m\n",
]


@pytest.fixture(scope="module")
def bundled():
    return load_knowledge_base(strict=False)


def _chunks(text, size):
    out, pos = [], 0
    while pos < len(text):
        cut = text.rfind(b"\n", pos, pos + size)
        cut = len(text) - 1 if cut < 0 or pos + size >= len(text) else cut
        out.append(text[pos:cut + 1])
        pos = cut + 1
    return out


def _summary(chunks, kb, monkeypatch, collapse):
    monkeypatch.setattr(scanner, "_repetitive", lambda chunk, end: collapse)
    engine._COMPILED.clear()
    d = diagnose_chunks(chunks, kb)
    return [(f.id, round(f.confidence, 4), f.evidence, f.values) for f in d.findings], d.lines, d.scheduler, d.key_lines


@pytest.mark.parametrize("seed", range(8))
def test_collapsed_floods_report_exactly_what_the_full_scan_does(bundled, monkeypatch, seed):
    rnd = random.Random(seed)
    text = b"".join(rnd.choice(LINES) * rnd.choice([1, 2, 5, 7, 8, 9, 50, 3000]) for _ in range(rnd.randint(5, 30)))
    chunks = _chunks(text, rnd.choice([4096, 65536, 1 << 20]))
    full = _summary(chunks, bundled, monkeypatch, False)
    collapsed = _summary(chunks, bundled, monkeypatch, True)
    assert collapsed == full
    engine._COMPILED.clear()


def test_an_oom_after_a_flood_keeps_its_line_number(bundled):
    text = b"NCCL WARN Call to ibv_reg_mr failed\n" * 100_000 + b"torch.OutOfMemoryError: CUDA out of memory.\n"
    d = diagnose_chunks(_chunks(text, 1 << 20), bundled)
    oom = next(f for f in d.findings if f.id == "cuda-oom")
    assert [e.line for e in oom.evidence] == [100_001]
    assert d.lines == 100_001


def test_collapse_keeps_the_head_and_last_copy_and_maps_lines():
    a, b = b"aaaa\n", b"bb\n"
    text = bytearray(b + a * 20 + b + a * 3 + b)
    out, skips = scanner._collapse_runs(text, len(text))
    assert out == b + a * (scanner.RUN_HEAD + 1) + b + a * 3 + b
    # the last copy of the run (line 21 of the original) sits at the skip point
    at, removed = skips[0]
    assert out[at:at + len(a)] == a and removed == 20 - scanner.RUN_HEAD - 1
    assert out[:at].count(b"\n") + 1 + removed == 21


def test_lines_that_do_not_repeat_are_not_collapsed():
    text = bytearray(b"".join(b"step %d\n" % i for i in range(5000)))
    assert not scanner._repetitive(text, len(text))
    assert scanner._collapse_runs(text, len(text)) == (text, None)


def _pipelined_summary(text, kb, chunk_size, ahead):
    """diagnose a log read with LogReader: ahead=0 one thread; else the first
    passes of the next `ahead` chunks run in scan threads (engine._pipelined)."""
    import io
    from gpu_troubleshooter import reader
    log = reader.LogReader(io.BytesIO(text), "log", chunk_size=chunk_size)
    d = engine._diagnose(log.buffers(spare=ahead), kb, "log", None, ahead=ahead)
    return [(f.id, round(f.confidence, 4), f.evidence, f.values) for f in d.findings], d.lines, d.scheduler, d.key_lines


@pytest.mark.parametrize("seed", range(6))
def test_scanning_ahead_in_threads_reports_exactly_what_one_thread_does(bundled, monkeypatch, seed):
    # the first pass of later chunks runs while earlier ones are handled: same findings, evidence,
    # line numbers, scheduler and key lines, floods and lines that all differ alike
    monkeypatch.setattr(engine, "PIPELINE_FROM", 0)  # threads even for these small chunks
    rnd = random.Random(100 + seed)
    parts = []
    for i in range(rnd.randint(20, 60)):
        line = rnd.choice(LINES)
        if rnd.random() < 0.3:  # a line unlike the others: sizes and steps change
            line = line.replace(b"2.00", b"%d.%02d" % (i, rnd.randint(0, 99)))
        parts.append(line * rnd.choice([1, 2, 9, 40, 500]))
    text = b"".join(parts)
    size = rnd.choice([4096, 16384, 65536])
    one_thread = _pipelined_summary(text, bundled, size, 0)
    for ahead in (1, 2, 3):
        assert _pipelined_summary(text, bundled, size, ahead) == one_thread
    assert one_thread[1] == text.count(b"\n")


def test_spare_buffers_keep_each_chunk_intact_until_spare_more_are_read():
    import io
    from gpu_troubleshooter import reader
    text = b"".join(b"line %d %s\n" % (i, b"x" * (i % 97)) for i in range(20000))
    for spare in (0, 1, 2):
        held, out = [], []
        for buf, end in reader.LogReader(io.BytesIO(text), chunk_size=4096).buffers(spare=spare):
            held.append((buf, end, bytes(buf[:end])))
            held = held[-(spare + 1):]
            assert all(bytes(b[:e]) == copy for b, e, copy in held)  # none overwritten yet
            out.append(held[-1][2])
        assert b"".join(out) == text
        assert len({id(b) for b, _, _ in held}) == len(held)


def test_an_error_in_a_scan_thread_is_raised_to_the_caller_and_the_threads_end(bundled, monkeypatch):
    import threading
    monkeypatch.setattr(engine, "PIPELINE_FROM", 0)
    compiled = engine.compile_kb(bundled)

    def broken(chunk, end, first=True):
        raise MemoryError("scratch")
    monkeypatch.setattr(compiled.scanner, "prepare", broken)
    with pytest.raises(MemoryError):
        _pipelined_summary(b"step 1 loss 0.3\n" * 5000, bundled, 4096, 2)
    assert not [t for t in threading.enumerate() if t.name == "troubleshoot-scan"]
    engine._COMPILED.clear()


@pytest.mark.parametrize("seed", range(6))
def test_key_line_tails_grown_from_a_short_window_equal_the_long_tail(seed):
    # keep_last scanners told which shapes a chunk holds look at a short tail first
    # (scanner.TAIL_FIRST): the lines handed over are exactly those of the whole tail
    from gpu_troubleshooter.keylines import KEEP_PER_KIND, PATTERNS
    rnd = random.Random(200 + seed)
    shapes = [(rx, True) for _, rx in PATTERNS]
    keys = scanner.Scanner(shapes, all_matches=True, keep_last=2 * KEEP_PER_KIND)
    text = bytearray(b"".join(rnd.choice(LINES) * rnd.choice([1, 3, 30, 400]) for _ in range(rnd.randint(20, 80))))
    present = {pid for pid in range(len(shapes))
               if scanner.Scanner([shapes[pid]]).scan(text, 1)}

    def handed(given):
        return [(h.line_no, h.raw, h.context, h.pattern_ids) for h in keys.scan(text, 1, present=given)]
    assert handed(present) == handed(None)
    assert handed(present)  # the lines above always hold some shape
