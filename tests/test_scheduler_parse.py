"""Slurm records -> scheduler facts -> fact rules, from sacct/scontrol output recorded on the
test cluster (tests/fixtures/slurm/README.md). No Slurm needed."""
import json
import os
import stat
from pathlib import Path

import pytest

from gpu_troubleshooter.engine import diagnose_text
from gpu_troubleshooter.scheduler import slurm
from gpu_troubleshooter.scheduler.job import last_error_line, read_log
from support import run_cli

FIX = Path(__file__).parent / "fixtures" / "slurm"


def recorded(name, only=None):
    lines = (FIX / name).read_text().splitlines()
    fields = lines[0].split("|")
    text = "\n".join(line.replace("|", slurm.DELIM) for line in lines[1:])
    rows = slurm.parse_sacct(text, fields)
    if only:
        rows = [r for r in rows if r["JobID"] == only or r["JobID"].startswith(only + ".")]
    return rows


@pytest.mark.parametrize("text,seconds", [("00:01:03", 63), ("1-02:03:04", 93784), ("05:06", 306),
                                          ("UNLIMITED", None), ("", None), ("Partition_Limit", None), ("90", 5400)])
def test_durations(text, seconds):
    assert slurm.parse_duration(text) == seconds


@pytest.mark.parametrize("text,mib", [("200M", 200), ("4000Mc", 4000), ("1.50G", 1536), ("396K", 0.4), ("2T", 2097152), ("x", None)])
def test_memory_sizes(text, mib):
    assert slurm.parse_mem_mib(text) == mib


def test_tres_and_gpu_counts():
    t = slurm.parse_tres("billing=1,cpu=1,gres/gpu:testgpu=1,gres/gpu=1,mem=200M,node=1")
    assert t["gres/gpu:testgpu"] == "1" and slurm.gpu_count(t) == 1
    assert slurm.gpu_count(slurm.parse_tres("cpu=4,gres/gpu:a100=2,gres/gpu:v100=1")) == 3
    assert slurm.gpu_count(slurm.parse_tres("cpu=1,mem=100M,node=1")) == 0


@pytest.mark.parametrize("jobid,ok", [("123", True), ("123_4", True), ("123_[1-3]", True), ("123+1", True),
                                      ("123.0", True), ("123.batch", True), ("-a", False), ("123;rm", False),
                                      ("", False), ("123 456", False), ("--format=all", False)])
def test_job_ids_are_validated_before_any_command(jobid, ok):
    assert slurm.valid_jobid(jobid) is ok


def test_output_patterns():
    job = {"job_id": "13_2", "job_id_raw": "13", "job_name": "arr", "user": "alice", "first_node": "gpu01"}
    assert slurm.expand_pattern("arr-%A_%a.out", job) == "arr-13_2.out"
    assert slurm.expand_pattern("%x-%j-%u-%N.log", job) == "arr-13-alice-gpu01.log"
    assert slurm.expand_pattern("run_%4a_%%.txt", job) == "run_0002_%.txt"
    plain = {"job_id": "77", "job_name": "train", "work_dir": "/home/a/run", "stdout": None}
    assert slurm.output_files(plain) == [("stdout", "/home/a/run/slurm-77.out")]
    arr = {"job_id": "13_2", "job_id_raw": "13", "work_dir": "/w", "stdout": "out/%x.%j.txt", "stderr": "/abs/%j.err", "job_name": "n"}
    assert slurm.output_files(arr) == [("stdout", "/w/out/n.13.txt"), ("stderr", "/abs/13.err")]
    assert slurm.output_files({"job_id": "13_2", "work_dir": "/w"}) == [("stdout", "/w/slurm-13_2.out")]


def test_timeout_record():
    f = slurm.facts_from_records(recorded("sacct-4.txt"), partition_gpus=2)
    assert f["state"] == "TIMEOUT" and f["failed"] is True and f["user_fault"] is True
    assert f["elapsed_s"] == 63 and f["timelimit_s"] == 60 and f["time_used_pct"] == 105.0
    assert f["gpus_requested"] == 1 and f["gpus_allocated"] == 1
    assert f["max_rss_mib"] == 0.4 and f["req_mem_mib"] == 200
    assert f["work_dir"].startswith("/tmp/ts-slurm-") and f["nodelist"] == "vm"
    assert f["gpu_mem_max_mib"] == {"unknown": "the site does not record gres/gpumem (AccountingStorageTRES)"}


def test_out_of_memory_record_and_rules(kb):
    f = slurm.facts_from_records(recorded("sacct-8.txt"), partition_gpus=0)
    assert f["state"] == "OUT_OF_MEMORY" and f["req_mem_mib"] == 100
    assert f["exit_code"] == 0 and f["exit_signal"] == 125
    assert "unknown" in f["max_rss_mib"]   # MaxRSS 0: the step died before the first sample
    d = diagnose_text("Killed\n", kb, facts={"scheduler": f})
    assert d.findings[0].id == "host-oom-killed"
    assert 'scheduler.state = "OUT_OF_MEMORY" (Slurm ended the job as OUT_OF_MEMORY)' in d.findings[0].confirmed_by
    # no log line at all: the state alone gives the finding
    alone = diagnose_text("done\n", kb, facts={"scheduler": f})
    assert [x.id for x in alone.findings][:1] == ["host-oom-killed"]


def test_timeout_alone_and_oom_ruled_out_by_state(kb):
    f = slurm.facts_from_records(recorded("sacct-4.txt"))
    d = diagnose_text("training epoch 1\n", kb, facts={"scheduler": f})
    assert d.findings[0].id == "slurm-time-limit"
    # a bare "Killed" would suggest the OOM killer; the TIMEOUT state speaks against it
    d = diagnose_text("Killed\n", kb, facts={"scheduler": f})
    ids = [x.id for x in d.findings]
    assert ids[0] == "slurm-time-limit" and "host-oom-killed" not in ids


def test_no_gpu_allocated_confirmed_by_alloc_tres(kb):
    f = slurm.facts_from_records(recorded("sacct-13.txt", only="13_2"), partition_gpus=2)
    assert f["job_id"] == "13_2" and f["job_id_raw"] == "13" and f["gpus_allocated"] == 0
    assert [s["id"] for s in f["steps"]] == ["13_2.batch", "13_2.0"] and f["steps"][1]["exit_code"] == 1
    d = diagnose_text("RuntimeError: No CUDA GPUs are available\n", kb, facts={"scheduler": f})
    top = d.findings[0]
    assert top.id == "no-gpu-allocated"
    assert any(c.startswith("scheduler.gpus_allocated = 0") for c in top.confirmed_by)


def test_node_fail_is_not_the_users_fault():
    rows = recorded("sacct-5.txt")
    rows[0] = {**rows[0], "State": "NODE_FAIL", "ExitCode": "0:0"}
    f = slurm.facts_from_records(rows)
    assert f["state"] == "NODE_FAIL" and f["user_fault"] is False and f["failed"] is True


def test_scontrol_record_of_an_array_task():
    ctl = slurm.parse_scontrol((FIX / "scontrol-13_2.txt").read_text())
    assert ctl["JobState"] == "FAILED" and ctl["StdOut"] == "/tmp/sj/arr-13_2.out" and ctl["WorkDir"] == "/tmp/sj"
    f = slurm.facts_from_records([], ctl)
    assert f["job_id"] == "13_2" and f["state"] == "FAILED" and f["exit_code"] == 1
    assert f["stdout"] == "/tmp/sj/arr-13_2.out" and f["source"] == "scontrol"
    assert "unknown" in f["req_tres"]


def test_gpu_usage_recorded_by_sites_that_track_gpumem():
    """TRESUsageInMax with gres/gpumem and gres/gpuutil (sites with AccountingStorageTRES=gres/gpumem,gres/gpuutil;
    constructed from the sacct documentation's format: the test cluster has no NVML)."""
    rows = recorded("sacct-5.txt")
    rows[1] = {**rows[1], "TRESUsageInMax": "cpu=00:10:00,gres/gpumem=3.50G,gres/gpuutil=97,mem=1.2G"}
    f = slurm.facts_from_records(rows)
    assert f["gpu_mem_max_mib"] == 3584 and f["gpu_util_max_pct"] == 97


def test_last_error_line_prefers_the_python_exception():
    text = "start\nTraceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad lr\nsrun: error: vm: task 0: Exited with exit code 1\n"
    assert last_error_line(text) == "ValueError: bad lr"
    assert last_error_line("all good\n") is None


def test_read_log_refuses_symlinks_and_reads_the_tail_of_huge_files(tmp_path):
    real = tmp_path / "real.out"
    real.write_text("x" * 100 + "\nRuntimeError: tail\n")
    link = tmp_path / "slurm-1.out"
    link.symlink_to(real)
    with pytest.raises(Exception, match="symbolic link"):
        read_log(str(link))
    text, truncated = read_log(str(real), limit=30)
    assert truncated and text == "RuntimeError: tail\n"
    os.chmod(real, 0)
    if os.geteuid() != 0:
        with pytest.raises(Exception, match="not readable by you"):
            read_log(str(real))
    os.chmod(real, stat.S_IRUSR | stat.S_IWUSR)


def test_job_without_scheduler_commands_is_one_line(tmp_path):
    r = run_cli("job", "123", env={"PATH": str(tmp_path)})
    err = r.stderr.decode().strip()
    assert r.returncode == 2 and "\n" not in err and "Traceback" not in err
    assert "no scheduler commands here" in err


def test_job_id_that_is_an_option_is_refused(tmp_path):
    fake = tmp_path / "sacct"
    fake.write_text("#!/bin/sh\necho should-not-run >&2\nexit 1\n")
    fake.chmod(0o755)
    r = run_cli("job", "--scheduler", "slurm", "--", "-a", env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert r.returncode == 2 and "is not a Slurm job id" in r.stderr.decode()


def test_json_job_document_from_a_fake_sacct(tmp_path):
    """The whole command over a recorded record: sacct is a script printing it."""
    rec = (FIX / "sacct-4.txt").read_text().splitlines()
    body = "\n".join(rec[1:]).replace("/tmp/ts-slurm-0jma1tm5", str(tmp_path))
    (tmp_path / "slurm-4.out").write_text(
        "training epoch 1\nslurmstepd: error: *** JOB 4 ON vm CANCELLED AT 2026-11-23T19:29:04 DUE TO TIME LIMIT ***\n")
    data = tmp_path / "record.txt"
    data.write_text(body.replace("|", slurm.DELIM) + "\n")
    fake = tmp_path / "sacct"
    fake.write_text("#!/bin/sh\nif [ \"$1\" = --helpformat ]; then echo '%s'; exit 0; fi\ncat '%s'\n"
                    % (" ".join(rec[0].split("|")), data))
    fake.chmod(0o755)
    gone = tmp_path / "scontrol"   # the controller has forgotten the job (MinJobAge)
    gone.write_text("#!/bin/sh\necho 'slurm_load_jobs error: Invalid job id specified' >&2\nexit 1\n")
    gone.chmod(0o755)
    r = run_cli("job", "4", "--json", env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert r.returncode == 1, r.stderr.decode()
    doc = json.loads(r.stdout)
    assert doc["facts"]["scheduler"]["state"] == "TIMEOUT"
    assert doc["files"][0]["path"] == str(tmp_path / "slurm-4.out")
    top = doc["files"][0]["diagnosis"]["findings"][0]
    assert top["id"] == "slurm-time-limit" and top["values"]["job_id"] == "4"
