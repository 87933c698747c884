"""Scan-path guarantees: scoring by the schema's rule, no finding lost to a
cap, linear-time regexes at match time, damaged and odd input read as far as
it is readable, thread safety, scheduler markers. Small inputs only."""
import bz2
import gzip
import io
import json
import lzma
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpu_troubleshooter import engine, reader, scanner
from gpu_troubleshooter.engine import diagnose_path, diagnose_stream, diagnose_text
from gpu_troubleshooter.errors import LogInputError
from gpu_troubleshooter.knowledge import load_knowledge_base
from gpu_troubleshooter.model import Entry, Signature

DEMO = Path(__file__).parent / "fixtures" / "kb" / "demo"
OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB "
       "of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.08 GiB memory in use.")
NOISE = "".join(f"step {i} loss 0.{i % 97:02d} lr 3e-4\n" for i in range(200))


@pytest.fixture(scope="module")
def demo():
    return load_knowledge_base([DEMO], strict=True, bundled=False)


@pytest.fixture(scope="module")
def bundled():
    return load_knowledge_base(strict=False)


def ids(d):
    return [f.id for f in d.findings]


def _entry(id, signatures, exclude=(), values=(), phrases=()):
    """An entry built directly, past the loader's checks: the engine must stay
    safe even with what a loader lets through."""
    return Entry(id=id, path=f"/site/{id}.yaml", signatures=tuple(signatures), exclude=tuple(exclude),
                 phrases=tuple(phrases), values=tuple(values))


def _kb(*entries):
    return SimpleNamespace(entries=tuple(entries), site={}, folders=(), problems=())


# -- scoring (docs/knowledge-schema.md) ---------------------------------------

def test_two_supporting_signatures_on_one_line_are_not_a_failure(demo):
    # demo-weak: 'Killed' 0.3 and 'Terminated' 0.3, "supporting only"
    assert ids(diagnose_text(NOISE + "worker Killed and Terminated\n", demo)) == []
    assert ids(diagnose_text(NOISE + "Killed Terminated\nKilled Terminated\n", demo)) == []


def test_distinct_signatures_on_distinct_lines_combine(demo):
    d = diagnose_text(NOISE + "worker Killed\n" + NOISE + "worker Terminated\n", demo)
    assert ids(d) == ["demo-weak"]
    assert d.findings[0].confidence == pytest.approx(1 - 0.7 * 0.7)


def test_a_line_is_worth_its_best_signature_not_the_sum(demo):
    # one line with both demo-oom signatures (1.0 and 0.4) is worth 1.0 -> 0.99 cap
    d = diagnose_text("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n", demo)
    assert ids(d) == ["demo-oom"] and d.findings[0].confidence == pytest.approx(0.99)
    # the weak one alone, lifted by the phrase, still stands on its own line
    d = diagnose_text("Tried to allocate 2 bytes\n", demo)
    assert ids(d) == []


# -- never lose a finding --------------------------------------------------------

def test_thousands_of_nccl_warnings_before_an_oom_in_one_chunk(bundled):
    warn = "gpu042:1:2 [3] NCCL WARN NET/IB : Got async event : GID table change\n"
    d = diagnose_text(warn * 6000 + OOM + "\n", bundled)
    assert "cuda-oom" in ids(d) and ids(d)[0] == "cuda-oom"
    assert d.lines == 6001


def test_oom_between_excluded_look_alikes(bundled):
    look_alike = "    except torch.cuda.OutOfMemoryError as e:  # retry with a smaller batch\n"
    d = diagnose_text(look_alike * 50 + OOM + "\n" + look_alike * 50, bundled)
    assert ids(d)[:1] == ["cuda-oom"] and d.findings[0].evidence[0].line == 51


def test_excluded_lines_never_take_the_slot_of_real_evidence(demo):
    # demo-oom excludes 'max memory allocated'; 500 excluded look-alikes, then the real line
    fake = "CUDA out of memory stats: max memory allocated 10 GiB\n"
    d = diagnose_text(fake * 500 + "RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB\n" + fake * 500, demo)
    assert ids(d) == ["demo-oom"]
    assert [e.line for e in d.findings[0].evidence] == [501]
    assert dict(d.findings[0].values)["requested"] == "1.00 GiB"


def test_an_exclude_on_the_next_line_drops_a_wait_that_ended():
    # exclude `next_line: true`: "srun: Step created" right after the retry line means the wait
    # is over; the same line followed by anything else, or at the end of the log, still counts
    wait = _entry("wait", [Signature("step creation temporarily disabled", 1.0, False)],
                  exclude=[Signature("Step created for job", 1.0, False, next_line=True)])
    kb = _kb(wait)
    line = "srun: Job 7 step creation temporarily disabled, retrying (Requested nodes are busy)\n"
    assert ids(diagnose_text(line + "srun: Step created for job 7\nepoch 1\n", kb)) == []
    assert ids(diagnose_text(line + "epoch 1\n", kb)) == ["wait"]
    assert ids(diagnose_text("epoch 1\n" + line, kb)) == ["wait"]
    # a next-line exclude is never tested on the hit line itself
    assert ids(diagnose_text(line.rstrip("\n") + " Step created for job 7\n", kb)) == ["wait"]


def test_one_long_line_is_one_evidence_row_not_every_slot(bundled):
    # Each signature's match in a line longer than the segment window gave its own
    # window around it: the same line four times as evidence, the later OOM line left out
    long_line = "y" * 5000 + " " + OOM + " " + "y" * 5000
    d = diagnose_text("epoch 1\n" + long_line + "\nother\n" + OOM + "\n", bundled)
    assert ids(d)[:1] == ["cuda-oom"] and [e.line for e in d.findings[0].evidence] == [2, 4]
    assert dict(d.findings[0].values)["requested"] == "2.00 GiB"


def test_the_strongest_evidence_is_kept(demo):
    # 200 lines of the weak signature first, then the one line that proves it
    weak = "Tried to allocate 3 MiB for the cache\n"
    d = diagnose_text(weak * 200 + "CUDA out of memory\n" + weak * 200, demo)
    assert ids(d) == ["demo-oom"] and 201 in [e.line for e in d.findings[0].evidence]


# -- linear time at match time -----------------------------------------------------

def _runs_within(seconds, fn):
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("result", fn()), daemon=True)
    start = time.monotonic()
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s: a backtracking regex at match time?"
    return box["result"], time.monotonic() - start


@pytest.mark.parametrize("field,pattern,line", [
    ("exclude", r"(x|x)+y", "MYSITE_QUIRK " + "x" * 60),
    ("exclude", r"(.*a){12}$", "MYSITE_QUIRK " + "a" * 3000 + "b"),
    ("values", r"(?P<v>(.*a){12})$", "MYSITE_QUIRK " + "a" * 3000 + "b"),
])
def test_hostile_site_regex_cannot_hang_a_diagnosis(field, pattern, line):
    hostile = _entry("site-quirk", [Signature("MYSITE_QUIRK", 1.0, False)],
                     exclude=[Signature(pattern, 1.0, False)] if field == "exclude" else (),
                     values=[("v", pattern)] if field == "values" else ())
    oom = _entry("oom", [Signature("CUDA out of memory", 1.0, False)])
    d, took = _runs_within(20, lambda: diagnose_text(line + "\n" + OOM + "\n", _kb(hostile, oom)))
    assert "oom" in ids(d) and took < 20


def test_nothing_at_match_time_uses_python_re():
    import re
    source = "".join(Path(engine.__file__).with_name(n).read_text() for n in ("engine.py", "scanner.py"))
    assert "import re\n" not in source and "re.compile" not in source.replace("re2.compile", "")
    assert re  # the normaliser's fixed ANSI/rank regexes are ours, bounded and linear


def test_a_site_entry_with_thousands_of_signatures_is_not_fatal():
    # the engine's per-entry RE2 set of signatures (which of them are on a line) did not
    # compile in RE2's default 8 MiB budget: every diagnosis crashed on the entry's first line
    huge = _entry("site-huge", [Signature(f"MYSITE_HUGE_{i:05d} failure code {i}", 0.9, False) for i in range(8000)])
    oom = _entry("oom", [Signature("CUDA out of memory", 1.0, False)])
    d, _ = _runs_within(60, lambda: diagnose_text("MYSITE_HUGE_07345 failure code 7345\n" + OOM + "\n", _kb(huge, oom)))
    assert sorted(ids(d)) == ["oom", "site-huge"]
    with pytest.MonkeyPatch.context() as mp:  # a set RE2 cannot take at all: the scanner's report still counts
        mp.setattr(scanner, "RE2_MAX_MEM", 1 << 20)  # Hyperscan scans; only the engine's RE2 set feels it
        d = diagnose_text("MYSITE_HUGE_07345 failure code 7345\n" + OOM + "\n", _kb(huge, oom))
    assert sorted(ids(d)) == ["oom", "site-huge"]


def test_re2_fallback_keeps_its_dfa_budget_messages_off_stderr(monkeypatch, capfd):
    # a KB too big for RE2's DFA budget (a huge site KB, no Hyperscan) is still scanned,
    # by the NFA, without RE2 logging "DFA out of memory" at every search

    monkeypatch.setattr(scanner, "hyperscan", None)
    # compiles (with the key-line shapes beside the signatures); its DFA runs out while searching
    monkeypatch.setattr(scanner, "RE2_MAX_MEM", 4 << 20)
    sigs = [Signature(f"MYSITE_QUIRK_{i:04d} failure code {i} on node [a-z]+[0-9]{{1,4}}", 0.9, False) for i in range(400)]
    log = NOISE + "MYSITE_QUIRK_0123 failure code 123 on node gpu42\n" + NOISE * 20

    def scan():
        kb = _kb(_entry("site-quirk", sigs))   # a new KB: compiled afresh with the options of now
        d = diagnose_text(log, kb)
        assert engine.compile_kb(kb).scanner.backend == "re2" and ids(d) == ["site-quirk"]
        return capfd.readouterr().err

    monkeypatch.setattr(scanner, "RE2_LOG_ERRORS", True)
    assert "DFA out of memory" in scan()       # the budget does run out: what follows tests something
    monkeypatch.setattr(scanner, "RE2_LOG_ERRORS", False)
    assert "DFA out of memory" not in scan()


def test_re2_set_that_finds_nothing_where_the_alternation_matched_is_checked_one_by_one(monkeypatch):
    # RE2's set answers "no match" when its DFA runs out of budget: the line is not lost

    monkeypatch.setattr(scanner, "hyperscan", None)
    s = scanner.Scanner([("alpha", False), ("CUDA out of memory", False)])
    monkeypatch.setattr(s, "_set", SimpleNamespace(Match=lambda line: []))
    hits = []
    s.scan(b"step 1\n" + OOM.encode() + b"\n", 1, need=[True, True], on_hit=hits.append)
    assert [(h.line_no, sorted(h.pattern_ids)) for h in hits] == [(2, [1])]


def test_an_entry_re2_cannot_compile_is_skipped_not_fatal():
    bad = _entry("site-bad", [Signature("MARKER", 1.0, False)], exclude=[Signature(r"(?<=x)y", 1.0, False)])
    oom = _entry("oom", [Signature("CUDA out of memory", 1.0, False)])
    kb = _kb(bad, oom)
    d = diagnose_text("MARKER\n" + OOM + "\n", kb)
    assert ids(d) == ["oom"]
    assert any("site-bad" in p for p in engine.compile_kb(kb).problems)


def test_a_long_progress_bar_line_of_matches_is_not_quadratic(demo):
    # 2 MB, one line, 40,000 carriage-return updates that all match a signature
    bar = "\r".join(f"step {i} CUDA out of memory retry" for i in range(40_000)) + "\n"
    d, took = _runs_within(60, lambda: diagnose_text(bar, demo))
    assert ids(d) == ["demo-oom"] and d.lines == 1
    assert took < 10, took


# -- thread safety ------------------------------------------------------------------

def test_many_threads_scan_through_one_compiled_kb(demo):
    log = (NOISE * 20 + "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n") * 4
    expected = [(f.id, [e.line for e in f.evidence]) for f in diagnose_text(log, demo).findings]
    errors, results = [], []

    def work():
        try:
            for _ in range(15):
                results.append([(f.id, [e.line for e in f.evidence]) for f in diagnose_text(log, demo).findings])
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(repr(e))

    threads = [threading.Thread(target=work) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == 12 * 15 and all(r == expected for r in results)


# -- input: damaged, odd and misused ------------------------------------------------

@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_truncated_compressed_log_is_diagnosed_up_to_the_damage(demo, tmp_path, compress):
    body = ("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n" + NOISE * 800).encode()  # bz2: several blocks
    data = compress(body)
    path = tmp_path / "slurm-7.out.z"
    path.write_bytes(data[: len(data) * 3 // 4])
    d = diagnose_path(path, demo)
    assert ids(d) == ["demo-oom"]
    (warning,) = d.context["warnings"]
    assert str(path) in warning and "damaged" in warning and "\n" not in warning
    assert d.to_dict()["warnings"] == [warning]


def test_corrupt_gzip_is_one_clear_error_naming_the_file(demo, tmp_path):
    path = tmp_path / "bad.log.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage body, not deflate")
    with pytest.raises(LogInputError, match="bad.log.gz"):
        diagnose_path(path, demo)


def test_gzip_damaged_in_the_middle_keeps_what_was_before(demo, tmp_path):
    import random
    rnd = random.Random(5)
    body = "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n" + "".join(
        f"step {i} loss {rnd.random():.6f}\n" for i in range(150_000))
    data = bytearray(gzip.compress(body.encode()))
    mid = len(data) // 2
    data[mid:mid + 256] = bytes(rnd.randrange(256) for _ in range(256))
    path = tmp_path / "mid.log.gz"
    path.write_bytes(bytes(data))
    d = diagnose_path(path, demo)
    assert ids(d) == ["demo-oom"] and "damaged" in d.context["warnings"][0]


def test_cli_damaged_file_warns_and_later_files_still_run(tmp_path):
    bad = tmp_path / "corrupt.log.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage")
    trunc = tmp_path / "trunc.log.gz"
    data = gzip.compress((OOM + "\n" + NOISE * 200).encode())
    trunc.write_bytes(data[: len(data) // 2])
    run = subprocess.run([sys.executable, "-m", "gpu_troubleshooter", "--json", str(trunc)], capture_output=True, text=True)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.count("\n") == 1 and "trunc.log.gz" in run.stderr and "warning" in run.stderr
    assert json.loads(run.stdout)["findings"][0]["id"] == "cuda-oom"
    good = tmp_path / "oom.log"
    good.write_text("epoch 1\n" + OOM + "\n")
    run = subprocess.run([sys.executable, "-m", "gpu_troubleshooter", "--json", str(bad), str(good)], capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr and "corrupt.log.gz" in run.stderr
    docs = [json.loads(line) for line in run.stdout.splitlines()]
    assert docs[-1]["findings"][0]["id"] == "cuda-oom"


def test_stdin_twice_is_a_usage_error(tmp_path):
    run = subprocess.run([sys.executable, "-m", "gpu_troubleshooter", "-", "-"], input="epoch 1\n", capture_output=True, text=True)
    assert run.returncode == 2 and "Traceback" not in run.stderr and "only once" in run.stderr


@pytest.mark.parametrize("where", ["start", "after the oom"])
def test_a_block_of_nul_bytes_is_not_binary(demo, where):
    oom = b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    nul = b"\x00" * 4096
    raw = (b"epoch 1\n" + nul + b"\n" + oom) if where == "start" else (oom + b"\x00" * 200 + b"\nsrun: error: x\n")
    d = diagnose_stream(io.BytesIO(raw), demo)
    assert ids(d) == ["demo-oom"]
    assert "\x00" not in d.findings[0].evidence[0].text


def test_only_nul_bytes_is_refused(demo):
    with pytest.raises(LogInputError, match="NUL"):
        diagnose_stream(io.BytesIO(b"\x00" * 100_000), demo)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_logs_are_read(demo, encoding):
    text = NOISE + "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    d = diagnose_stream(io.BytesIO(text.encode(encoding)), demo)
    assert ids(d) == ["demo-oom"] and d.findings[0].evidence[0].line == 201
    assert dict(d.findings[0].values)["requested"] == "2.00 GiB"


def test_random_bytes_are_still_binary(demo):
    import random
    rnd = random.Random(3)
    with pytest.raises(LogInputError, match="binary"):
        diagnose_stream(io.BytesIO(bytes(rnd.randrange(256) for _ in range(50_000))), demo)


def test_size_limit(demo):
    log = reader.LogReader(io.BytesIO(NOISE.encode() * 100), "big.log", max_bytes=1000, chunk_size=512)
    with pytest.raises(reader.LogTooLarge, match="big.log"):
        list(log.chunks())


# -- scheduler markers ----------------------------------------------------------------

@pytest.mark.parametrize("marker,expected", [
    ("slurmstepd: error: *** JOB 123 ON gpu042 CANCELLED AT 2024-05-01T02:00:00 DUE TO TIME LIMIT ***", "slurm"),
    ("srun: error: gpu042: task 0: Exited with exit code 1", "slurm"),
    ("SLURM_JOB_ID=4242", "slurm"),
    ("=>> PBS: job killed: walltime 3610 exceeded limit 3600", "pbs"),
    ("PBS_JOBID=99.pbs01", "pbs"),
    ("TERM_RUNLIMIT: job killed after reaching LSF run time limit.", "lsf"),
    ("Sender: LSF System <lsfadmin@host>", "lsf"),
    # refused submissions (real wordings from the knowledge base's LSF, PBS and Slurm examples)
    ("normal: No such queue. Job not submitted.", "lsf"),
    ("Request aborted by esub. Job not submitted.", "lsf"),
    ("qsub: Unknown queue", "pbs"),
    ("sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified", "slurm"),
    ("nothing about a scheduler here", None),
])
def test_scheduler_is_detected_from_the_log(demo, marker, expected):
    d = diagnose_text(NOISE + marker + "\n" + NOISE, demo)
    assert d.scheduler == expected
    assert d.to_dict()["scheduler"] == expected


def test_first_scheduler_marker_wins(demo):
    d = diagnose_text("=>> PBS: job killed: mem\n" + NOISE + "srun: error: x\n", demo)
    assert d.scheduler == "pbs"


def test_long_gaps_open_to_the_end_of_the_line_and_never_cross_it():
    # gaps.open_gaps: a [^\n]{0,120} gap compiles as [^\n]* (a third of
    # Hyperscan's compile time went to ten such gaps); the line still bounds it.
    from gpu_troubleshooter.gaps import open_gaps
    from gpu_troubleshooter.scanner import Scanner
    assert open_gaps(r"srun: error: [^\n]{0,120}without [^\n]{0,5}x") == r"srun: error: [^\n]*without [^\n]{0,5}x"
    assert open_gaps(r'File "[^"\n]{1,400}", line') == r'File "[^"\n]+", line'
    assert open_gaps(r"a\.{0,30}b [^a]{0,50}c") == r"a\.{0,30}b [^a]{0,50}c"  # a literal dot, a class that crosses lines
    # runs of a class that stays on one line open too; ones that can cross a line keep their bound
    assert open_gaps(r"name '\w{1,60}' to [^\s]{1,300}: [A-Za-z0-9_.-]{2,80} \d{1,19}") == \
        r"name '\w+' to [^\s]+: [A-Za-z0-9_.-]{2,} \d{1,19}"
    assert open_gaps(r"x[\s\S]{0,600}y\s{0,40}z\W{1,30}") == r"x[\s\S]{0,600}y\s{0,40}z\W{1,30}"
    scanner = Scanner([(r"destination [^\s]{1,30} doesn.t exist", False)])
    assert [h.line_no for h in scanner.scan(b"destination /" + b"d" * 100 + b" doesn't exist\n", 1)] == [1]
    assert scanner.scan(b"destination /a\nb doesn't exist\n", 1) == []
    for use_hyperscan in (True, False):
        scanner = Scanner([(r"srun: error: [^\n]{0,40}without specifying", False)], use_hyperscan=use_hyperscan)
        one_line = b"srun: error: " + b"x" * 200 + b" without specifying an account\n"
        two_lines = b"srun: error: xyz\nwithout specifying an account\n"
        assert [h.line_no for h in scanner.scan(one_line, 1)] == [1]
        assert scanner.scan(two_lines, 1) == []


def test_the_engine_counts_a_signature_on_a_line_exactly_when_the_scanner_would():
    # a gap of 20+ characters is opened by the scanner (gaps.py); the engine's own
    # per-entry check of "which signatures are on this line" must open it too, or a
    # line the scanner reports for one signature loses the entry's other signatures
    from gpu_troubleshooter.engine import _CompiledEntry
    entry = _entry("gap", [Signature(r"NCCL WARN[^\n]{0,20}unhandled system error", 0.9, False),
                           Signature(r"ncclSystemError", 0.5, False)])
    line = b"NCCL WARN Call to ibv_reg_mr failed with a very long reason: unhandled system error ncclSystemError"
    assert sorted(_CompiledEntry(entry, []).signatures_on(line)) == [0, 1]
    assert ids(diagnose_text(line.decode() + "\n", _kb(entry))) == ["gap"]
