"""The engine on a small test knowledge base (tests/fixtures/kb/demo), so the
behaviour under test does not depend on the bundled entries' wording."""
import bz2
import gzip
import io
import lzma
from pathlib import Path

import pytest

from gpu_troubleshooter import reader
from gpu_troubleshooter.engine import diagnose_path, diagnose_stream, diagnose_text
from gpu_troubleshooter.errors import LogInputError
from gpu_troubleshooter.knowledge import load_knowledge_base

DEMO = Path(__file__).parent / "fixtures" / "kb" / "demo"
OOM = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; 1.20 GiB free)"
NOISE = "".join(f"step {i} loss 0.{i % 97:02d} lr 3e-4\n" for i in range(2000))


@pytest.fixture(scope="module")
def demo():
    return load_knowledge_base([DEMO], strict=True, bundled=False)


def ids(d):
    return [f.id for f in d.findings]


def test_finds_failure_with_line_number_and_values(demo):
    d = diagnose_text(NOISE + OOM + "\n", demo)
    assert ids(d) == ["demo-oom"]
    f = d.findings[0]
    assert f.evidence[0].line == 2001 and "CUDA out of memory" in f.evidence[0].text
    assert dict(f.values) == {"requested": "2.00 GiB", "free": "1.20 GiB"}
    assert d.lines == 2001


def test_clean_log_is_no_known_failure(demo):
    assert diagnose_text(NOISE, demo).findings == ()


def test_one_weak_signal_is_not_reported_but_two_independent_ones_are(demo):
    assert ids(diagnose_text(NOISE + "Killed\n", demo)) == []
    assert ids(diagnose_text("Killed\n" + NOISE + "Terminated\n", demo)) == ["demo-weak"]


def test_exclusion_discards_harmless_look_alike(demo):
    assert ids(diagnose_text("max memory allocated: CUDA out of memory guard 3.1 GiB\n", demo)) == []


def test_fix_placeholders_filled_from_site_and_values(demo):
    fix = diagnose_text(OOM + "\n", demo).to_dict()["findings"][0]["fixes"][0]
    assert fix["title"] == "Use a smaller batch on demo-gpu"
    assert fix["text"] == "You asked for 2.00 GiB."
    assert fix["code"]["text"] == "#SBATCH --partition=demo-gpu"


def test_root_cause_outranks_its_consequence_even_when_it_comes_later(demo):
    log = "[rank1] Watchdog caught collective operation timeout\n" + NOISE + OOM + "\n"
    assert ids(diagnose_text(log, demo)) == ["demo-oom", "demo-nccl"]


@pytest.mark.parametrize("damage", [
    lambda s: f"\x1b[31;1m{s}\x1b[0m",                       # colour
    lambda s: f"3: {s}",                                      # srun -l
    lambda s: s + "\r",                                       # CRLF
    lambda s: "Epoch 1: 10%|#  |\r" * 20000 + s,              # a progress bar in the same "line"
])
def test_damaged_text_still_matches_and_evidence_is_clean(demo, damage):
    d = diagnose_text(NOISE + damage(OOM) + "\n", demo)
    assert ids(d) == ["demo-oom"]
    text = d.findings[0].evidence[0].text
    assert text.startswith("RuntimeError: CUDA out of memory") and "\x1b" not in text and "\r" not in text


def test_hard_wrapped_message_still_matches(demo):
    wrapped = "\n".join(OOM[i:i + 80] for i in range(0, len(OOM), 80))
    assert ids(diagnose_text(NOISE + wrapped + "\n", demo)) == ["demo-oom"]


def test_retyped_message_matches_through_fuzzy_phrase(demo):
    # "memmory": the literal anchor misses; the weak anchor plus the phrase carry it.
    d = diagnose_text("RuntimeError: CUDA out of memmory. Tried to allocate 2.00 GiB\n", demo)
    assert ids(d) == ["demo-oom"] and d.findings[0].confidence >= 0.8


@pytest.mark.parametrize("chunk_size", [64, 1000, 4096])
def test_chunk_boundaries_do_not_lose_or_misnumber_lines(demo, monkeypatch, chunk_size):
    monkeypatch.setattr(reader, "CHUNK_SIZE", chunk_size)
    log = NOISE + OOM + "\n" + NOISE
    d = diagnose_text(log, demo)
    assert ids(d) == ["demo-oom"] and d.findings[0].evidence[0].line == 2001
    assert d.lines == 4001


def test_an_unterminated_last_line_stays_with_the_lines_before_it():
    # a pasted log rarely ends with a newline; alone in a chunk, its last line would lose
    # the line before it (values and hard-wrapped messages are read from it)
    assert list(reader.LogReader(io.BytesIO(b"first\nsecond\nlast"), "paste").chunks()) == [b"first\nsecond\nlast"]
    chunks = list(reader.LogReader(io.BytesIO(b"0123456789\n" * 20 + b"last"), "big", chunk_size=64).chunks())
    assert b"".join(chunks) == b"0123456789\n" * 20 + b"last" and chunks[-1].endswith(b"\nlast")
    # a short UTF-16 log that grows past a chunk once decoded (Hangul: 2 bytes -> 3) is still cut at newlines
    text = "가나다라\n" * 20
    chunks = list(reader.LogReader(io.BytesIO(text.encode("utf-16")), "ko", chunk_size=256).chunks())
    assert len(chunks) > 1 and b"".join(chunks) == text.encode() and all(c.endswith(b"\n") for c in chunks)


@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_compressed_logs_are_read_transparently(demo, tmp_path, compress):
    path = tmp_path / "slurm-1.out.gz"
    path.write_bytes(compress((NOISE + OOM + "\n").encode()))
    assert ids(diagnose_path(path, demo)) == ["demo-oom"]


def test_non_utf8_bytes_are_tolerated(demo):
    raw = b"caf\xe9 \xff\xfe broken bytes\n" + OOM.encode() + b"\n"
    assert ids(diagnose_stream(io.BytesIO(raw), demo)) == ["demo-oom"]


@pytest.mark.parametrize("content,words", [
    (b"", "empty"),
    (b"\x7fELF\x02\x01\x01" + b"\x00" * 100, "executable"),
    (b"PK\x03\x04" + b"\x00" * 100, "zip"),
    (bytes(range(256)) * 20, "binary"),
    (b"\x1f\x8b\x08\x00garbage", "gzip"),
])
def test_bad_input_is_one_clear_error(demo, tmp_path, content, words):
    path = tmp_path / "bad.log"
    path.write_bytes(content)
    with pytest.raises(LogInputError, match=words):
        diagnose_path(path, demo)


def test_missing_file_and_directory(demo, tmp_path):
    with pytest.raises(LogInputError, match="no such file"):
        diagnose_path(tmp_path / "nope.out", demo)
    with pytest.raises(LogInputError, match="directory"):
        diagnose_path(tmp_path, demo)


def test_re2_fallback_scanner_agrees_with_hyperscan(demo, monkeypatch):
    pytest.importorskip("hyperscan")  # without it there is nothing to compare the fallback with
    from gpu_troubleshooter import engine, scanner
    log = (NOISE + "3: " + OOM + "\n[rank1] Watchdog caught collective operation timeout\n"
           + "Killed\n" + NOISE + "epoch 3\rKilled Terminated\r" + OOM + "\n")
    monkeypatch.setattr(engine, "_COMPILED", {})
    assert engine.compile_kb(demo).scanner.backend == "hyperscan"
    expected = [(f.id, round(f.confidence, 3), [e.line for e in f.evidence], f.values) for f in diagnose_text(log, demo).findings]
    monkeypatch.setattr(scanner, "hyperscan", None)
    monkeypatch.setattr(engine, "_COMPILED", {})
    assert engine.compile_kb(demo).scanner.backend == "re2"
    got = [(f.id, round(f.confidence, 3), [e.line for e in f.evidence], f.values) for f in diagnose_text(log, demo).findings]
    assert got == expected and got


def test_re2_fallback_takes_the_whole_bundled_kb(kb, monkeypatch, capfd):
    """Where no Hyperscan wheel exists (aarch64, macOS) the RE2 set holds every bundled
    signature: RE2's default 8 MiB budget could not compile it (every diagnosis crashed),
    and a budget too small for its DFA falls back to the slow NFA, logging on stderr."""
    from gpu_troubleshooter import engine, scanner
    monkeypatch.setattr(scanner, "hyperscan", None)
    monkeypatch.setattr(scanner, "RE2_LOG_ERRORS", True)  # so that a budget too small shows
    monkeypatch.setattr(engine, "_COMPILED", {})
    log = NOISE + "gpu042:1:2 [3] NCCL WARN NET/IB : Got async event : GID table change\n" * 50 + OOM + "\n" + NOISE
    d = diagnose_text(log, kb)
    assert engine.compile_kb(kb).scanner.backend == "re2"
    assert [f.id for f in d.findings][:1] == ["cuda-oom"]
    assert "out of memory" not in capfd.readouterr().err  # RE2's "DFA out of memory" warning


# Real refusals, hard-wrapped the way a terminal or a Python exception message wraps them
# (the damage is applied here: example logs stay verbatim).
HARD_WRAPPED = {
    "slurm-invalid-constraint":    # 'Invalid\\s+feature' over the wrap
        "Error while submitting job: sbatch: error: Batch job submission failed: Invalid \nfeature specification\n",
    "slurm-mem-request-invalid":   # 'failed):\\s*\\n\\s*Memory' over the wrap
        "submitit.core.utils.FailedJobError: sbatch: error: Batch job submission failed:\n Memory required by task is not available\n",
}


@pytest.mark.parametrize("expected", sorted(HARD_WRAPPED))
def test_re2_fallback_finds_a_signature_that_runs_over_a_hard_wrap(kb, monkeypatch, expected):
    """Hyperscan finds a signature that continues on the next line even where another
    signature matched earlier on the first line; the RE2 fallback must find it too."""
    from gpu_troubleshooter import engine, scanner
    assert [f.id for f in diagnose_text(HARD_WRAPPED[expected], kb).findings][:1] == [expected]
    monkeypatch.setattr(scanner, "hyperscan", None)
    monkeypatch.setattr(engine, "_COMPILED", {})
    assert [f.id for f in diagnose_text(HARD_WRAPPED[expected], kb).findings][:1] == [expected]


class _Lines(io.RawIOBase):
    """A log of `n` repeated lines, produced as it is read: the test's own memory stays flat."""

    def __init__(self, line, n):
        super().__init__()
        self.line, self.left, self.pending = line, n, b""

    def readable(self):
        return True

    def readinto(self, buf):
        while len(self.pending) < len(buf) and self.left:
            k = min(self.left, 1000)
            self.pending += self.line * k
            self.left -= k
        n = min(len(buf), len(self.pending))
        buf[:n], self.pending = self.pending[:n], self.pending[n:]
        return n


@pytest.mark.parametrize("backend", ["hyperscan", "re2"])
def test_memory_is_flat_however_many_lines_match(demo, monkeypatch, backend):
    import tracemalloc
    from gpu_troubleshooter import engine, scanner
    if backend == "re2":
        monkeypatch.setattr(scanner, "hyperscan", None)
    elif scanner.hyperscan is None:
        pytest.skip("hyperscan is not installed")
    monkeypatch.setattr(engine, "_COMPILED", {})
    monkeypatch.setattr(reader, "CHUNK_SIZE", 64 * 1024)
    line = (OOM + " [Killed]\n").encode()
    diagnose_stream(io.BufferedReader(_Lines(line, 100)), demo)  # compile outside the measurement

    def peak(n):
        tracemalloc.start()
        d = diagnose_stream(io.BufferedReader(_Lines(line, n)), demo)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert ids(d) == ["demo-oom"] and d.lines == n and len(d.findings[0].evidence) <= 8
        return top

    small, large = peak(2_000), peak(40_000)  # 20x the matching lines, ~5 MB
    assert large < small * 1.5 + 256 * 1024, (small, large)


HARMLESS = "2025-01-13 23:58:38: E cuda_dnn.cc:8310] Unable to register demo factory: already registered\n"


def test_harmless_lines_are_listed_apart_and_never_a_finding(demo):
    d = diagnose_text(HARMLESS + NOISE + HARMLESS, demo)
    assert d.findings == () and [f.id for f in d.harmless] == ["demo-noise"]
    assert [e.line for e in d.harmless[0].evidence][:1] == [1]
    doc = d.to_dict()
    assert doc["findings"] == [] and doc["harmless"][0]["id"] == "demo-noise"
    assert doc["harmless"][0]["evidence"][0]["line"] == 1


def test_harmless_lines_beside_a_failure_do_not_change_it(demo):
    d = diagnose_text(HARMLESS + NOISE + OOM + "\n", demo)
    assert ids(d) == ["demo-oom"] and [f.id for f in d.harmless] == ["demo-noise"]


def test_a_harmless_line_is_never_named_as_the_line_that_ended_the_job(demo):
    noisy = "E0000 cuda_dnn.cc:8310] ERROR: Unable to register demo factory: already registered\n"
    d = diagnose_text(NOISE + noisy, demo)
    assert d.findings == () and d.harmless
    assert all("demo factory" not in k.text for k in d.key_lines)
    # the same shape of line, not known to be harmless, is named
    assert any("other factory" in k.text for k in diagnose_text(NOISE + noisy.replace("demo", "other"), demo).key_lines)


def test_harmless_lines_take_no_key_line_slot(demo):
    # the collector keeps the last few `error:` lines: harmless ones after the real one
    # must not push it out (they were once dropped only after the slots were filled)
    real = "srun: error: gpu-a017: task 0: Exited with exit code 3\n"
    noisy = "".join("E0000 cuda_dnn.cc:8310] ERROR: Unable to register demo factory: already registered %d\n" % i
                    for i in range(30))
    d = diagnose_text(NOISE + real + noisy, demo)
    assert any("Exited with exit code 3" in k.text for k in d.key_lines)
    assert all("demo factory" not in k.text for k in d.key_lines)


def test_a_line_a_harmless_entry_knows_is_never_evidence_of_a_failure(demo):
    # the same words as demo-oom's signature, on a line demo-noise says is harmless
    noisy = "E0000 cuda_dnn.cc:8310] Unable to register demo factory: CUDA out of memory\n"
    d = diagnose_text(NOISE + noisy, demo)
    assert ids(d) == [] and [f.id for f in d.harmless] == ["demo-noise"]
    assert ids(diagnose_text(NOISE + noisy + OOM + "\n", demo)) == ["demo-oom"]   # a real one still counts
