"""PBS: recorded `qstat -xf` / `qstat -f` records (tests/fixtures/pbs/README.md) -> scheduler facts."""
from pathlib import Path

from gpu_troubleshooter.engine import diagnose_text
from gpu_troubleshooter.scheduler import pbs

FIX = Path(__file__).parent / "fixtures" / "pbs"


def record(name):
    jobs = pbs.parse_qstat_f((FIX / name).read_text())
    assert len(jobs) == 1
    return jobs[0]


def test_pbspro_finished_job():
    job = record("pbspro-finished.txt")
    assert job["Job Id"] == "2493765.pbssrv2" and job["Exit_status"] == "0"
    f = pbs.facts_from_qstat(job)
    assert f["kind"] == "pbs" and f["state"] == "COMPLETED" and f["failed"] is False
    assert f["user"] == "kejacob1" and f["partition"] == "K3a-standard" and f["nodelist"] == "k3ar5n1"
    assert f["elapsed_s"] == 2 and f["timelimit_s"] == 72 * 3600
    assert f["req_mem_mib"] == 31 * 1024 and f["max_rss_mib"] == 1.5
    assert f["gpus_requested"] == 0
    assert f["stdout"].endswith("/sample0/sample0_pbs.log") and f["stdout"].startswith("/lustre3/")
    assert f["stderr"] is None   # Join_Path = oe: one file
    assert f["work_dir"].endswith("batch_with_job_limit/sample0")


def test_torque_completed_job_with_continuation_lines():
    f = pbs.facts_from_qstat(record("torque-completed.txt"))
    assert f["state"] == "COMPLETED" and f["exit_code"] == 0
    assert f["stdout"] == "/projects/trans_scratch/validations/workspace/creisle/temp/subtest.sh.o9"
    assert f["stderr"] == "/projects/trans_scratch/validations/workspace/creisle/temp/subtest.sh.e9"
    assert f["work_dir"] == "/projects/trans_scratch/validations/workspace/creisle/temp"
    assert f["elapsed_s"] == 60 and f["time_used_pct"] == 1.7


def test_walltime_kill_is_timeout_and_drives_the_rule(kb):
    job = record("torque-completed.txt")
    job.update({"exit_status": "271", "resources_used.walltime": "01:00:05"})
    f = pbs.facts_from_qstat(job)
    assert f["state"] == "TIMEOUT" and f["exit_signal"] == 15 and f["failed"] is True
    d = diagnose_text("step 812\n", kb, facts={"scheduler": f})
    assert d.findings and d.findings[0].id == "slurm-time-limit"


def test_memory_kill_from_the_comment(kb):
    job = record("pbspro-finished.txt")
    job.update({"Exit_status": "271", "comment": "job killed: vmem 192GB exceeded limit 190GB"})
    f = pbs.facts_from_qstat(job)
    assert f["state"] == "OUT_OF_MEMORY"
    d = diagnose_text("=>> PBS: job killed: vmem 201326592kb exceeded limit 199229440kb\n", kb, facts={"scheduler": f})
    assert d.findings[0].id == "host-oom-killed" and d.findings[0].confirmed_by


def test_gpu_requests_in_select_and_nodes():
    assert pbs._gpus({"Resource_List.select": "2:ncpus=8:ngpus=4"}) == 8
    assert pbs._gpus({"Resource_List.nodes": "1:ppn=4:gpus=2"}) == 2
    assert pbs._gpus({"Resource_List.ngpus": "1"}) == 1


def test_pending_job_and_ids():
    f = pbs.facts_from_qstat({"Job Id": "5.srv", "job_state": "Q", "Resource_List.walltime": "01:00:00"})
    assert f["state"] == "PENDING" and "unknown" in f["exit_code"] and "unknown" in f["gpus_allocated"]
    assert pbs.valid_jobid("123.pbs01") and pbs.valid_jobid("48[].torque01.bcgsc.ca")
    assert not pbs.valid_jobid("-f") and not pbs.valid_jobid("1;rm")


def test_epilogue_arguments(monkeypatch):
    import getpass
    import grp
    import os
    user = getpass.getuser()
    group = grp.getgrgid(os.getgid()).gr_name
    monkeypatch.setenv("PATH", "/nonexistent")   # no qstat: the arguments alone
    f = pbs.epilogue_job(["77.srv", user, group, "train", "4242", "ncpus=4,mem=8gb,walltime=01:00:00",
                          "cput=00:10:00,mem=8000000kb,walltime=00:20:00", "gpu", "acct", "1"], {})
    assert f["job_id"] == "77.srv" and f["state"] == "FAILED" and f["exit_code"] == 1
    assert f["uid"] == os.getuid() and f["timelimit_s"] == 3600 and f["elapsed_s"] == 1200
