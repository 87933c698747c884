"""`troubleshoot job` against a real Slurm (tests/slurm/start-cluster.sh; .ci/run starts it).

Skips when no Slurm controller answers, unless REQUIRE_SLURM=1 (CI).
The TIMEOUT job was submitted when the session started (conftest.py) and is
checked by the last test of the session (conftest.py moves it there).
"""
import json
import os

import pytest

import slurm_support as cluster
from support import required, run_cli

pytestmark = pytest.mark.skipif(not cluster.slurm_up() and not required("slurm"),
                                reason="no Slurm controller here (tests/slurm/start-cluster.sh starts one; CI sets REQUIRE_SLURM=1)")

TRACEBACK_JOB = """#!/bin/bash
#SBATCH --job-name=ts-traceback
#SBATCH --time=2
#SBATCH --gres=gpu:1
#SBATCH --output=%x-%j.log
echo "loading config"
python3 - <<'PY'
def load(path):
    raise ValueError("learning_rate must be positive, got -0.1")
load("config.yaml")
PY
"""

OOM_JOB = """#!/bin/bash
#SBATCH --job-name=ts-oom
#SBATCH --time=2
#SBATCH --mem=100M
#SBATCH --partition=cpu
python3 -c "x = bytearray(600 * 1024 * 1024); import time; time.sleep(3)"
"""

NO_GPU_JOB = """#!/bin/bash
#SBATCH --job-name=ts-nogpu
#SBATCH --time=2
#SBATCH --partition=gpu
python3 train.py
"""

TRAIN_PY = """import torch

model = torch.nn.Linear(10, 2).cuda()
print(model(torch.zeros(1, 10).cuda()))
"""


def job_json(jobid):
    r = run_cli("job", jobid, "--json")
    assert r.returncode in (0, 1), r.stderr.decode()
    return json.loads(r.stdout), r


def test_cluster_is_up():
    assert cluster.slurm_up(), "REQUIRE_SLURM=1 but `scontrol ping` finds no controller"


def test_traceback_job_exit_1():
    rc, jid, err = cluster.submit(TRACEBACK_JOB, name="traceback.sh")
    assert rc == 0, err
    assert cluster.wait(jid) == "FAILED"
    doc, r = job_json(jid)
    assert r.returncode == 1
    s = doc["facts"]["scheduler"]
    assert s["kind"] == "slurm" and s["job_id"] == jid and s["state"] == "FAILED"
    assert s["exit_code"] == 1 and s["exit_signal"] == 0
    assert s["gpus_requested"] == 1 and s["gpus_allocated"] == 1
    assert s["job_name"] == "ts-traceback" and s["partition"] == "gpu"
    # --output=%x-%j.log expanded to the file the job really wrote
    out = doc["files"][0]
    assert out["path"] == os.path.join(cluster.job_dir(), f"ts-traceback-{jid}.log")
    assert out["error"] is None
    assert out["last_error"] == "ValueError: learning_rate must be positive, got -0.1"
    human = run_cli("job", jid, "--color", "never")
    text = human.stdout.decode()
    assert human.returncode == 1
    assert f"Job {jid} (ts-traceback)" in text and "State:   FAILED, exit code 1" in text
    assert "1 requested, 1 allocated (gres/gpu:testgpu=1)" in text
    assert "The last error in this log: ValueError: learning_rate must be positive" in text


def test_out_of_memory_job_confirms_host_oom():
    rc, jid, err = cluster.submit(OOM_JOB, name="oom.sh")
    assert rc == 0, err
    final = cluster.wait(jid)
    doc, r = job_json(jid)
    s = doc["facts"]["scheduler"]
    assert r.returncode == 1 and s["state"] == final
    assert s["req_mem_mib"] == 100
    if final != "OUT_OF_MEMORY":
        pytest.skip(f"this machine's Slurm ended the job as {final} (OUT_OF_MEMORY needs task/cgroup)")
    top = doc["files"][0]["diagnosis"]["findings"][0]
    assert top["id"] == "host-oom-killed"
    assert any("scheduler.state = \"OUT_OF_MEMORY\"" in c for c in top["facts"]["confirmed_by"])


def test_nonexistent_gres_type_is_refused_and_diagnosed(tmp_path):
    rc, jid, err = cluster.submit(TRACEBACK_JOB, "--gres=gpu:a100:1", name="badgres.sh")
    assert rc != 0 and not jid.isdigit(), "sbatch accepted a gres type the node does not have"
    log = tmp_path / "sbatch.err"
    log.write_text(err)
    r = run_cli("--json", log)
    assert r.returncode == 1
    # Slurm names an unknown gres name "Invalid generic resource (gres) specification", but a
    # known name with a type no node has only "Requested node configuration is not available"
    top = json.loads(r.stdout)["findings"][0]
    assert top["id"] in ("slurm-invalid-gres", "slurm-node-config-unavailable"), err
    if top["id"] == "slurm-node-config-unavailable":
        assert any("GPU type" in cause for cause in top["causes"]), top["causes"]


def test_gpu_code_without_gpu_request_is_caught_before_and_after(tmp_path):
    d = cluster.job_dir()
    with open(os.path.join(d, "train.py"), "w") as f:
        f.write(TRAIN_PY)
    script = os.path.join(d, "nogpu.sh")
    with open(script, "w") as f:
        f.write(NO_GPU_JOB)
    before = run_cli("check", script, "--json")
    assert before.returncode == 1, before.stderr.decode()
    ids = [f["id"] for f in json.loads(before.stdout)["findings"]]
    assert "gpu-code-without-gpu-request" in ids
    # submitted anyway: the scheduler's record shows why
    rc, jid, err = cluster.submit(NO_GPU_JOB, name="nogpu.sh")
    assert rc == 0, err
    cluster.wait(jid)
    doc, r = job_json(jid)
    s = doc["facts"]["scheduler"]
    assert r.returncode == 1 and s["state"] == "FAILED"
    assert s["gpus_requested"] == 0 and s["gpus_allocated"] == 0 and s["partition_gpus"] == 2
    human = run_cli("job", jid, "--color", "never").stdout.decode()
    assert "GPUs:    0 requested, 0 allocated  <- no GPU" in human


def test_unknown_job_is_one_line():
    r = run_cli("job", "987654321")
    assert r.returncode == 2
    err = r.stderr.decode().strip()
    assert err.startswith("troubleshoot job: job 987654321: not known to Slurm") and "\n" not in err
    assert "Traceback" not in err


def test_failed_listing_finds_a_failed_job():
    rc, jid, err = cluster.submit("#!/bin/bash\n#SBATCH --time=1\nexit 3\n", name="exit3.sh")
    assert rc == 0, err
    assert cluster.wait(jid) == "FAILED"
    r = run_cli("job", "--failed", "--since", "1h", "--json")
    assert r.returncode == 1, r.stderr.decode()
    docs = [json.loads(line) for line in r.stdout.decode().splitlines()]
    mine = [d for d in docs if d["job"] == jid]
    assert mine and mine[0]["facts"]["scheduler"]["exit_code"] == 3


def test_zz_timeout_job_last():
    """Run last (conftest.py): the job submitted at the start has hit its 1-minute limit by now."""
    jid = cluster.timeout_job()
    assert jid.isdigit(), f"the TIMEOUT job was not submitted: {jid!r}"
    assert cluster.wait(jid, timeout=180) == "TIMEOUT"
    doc, r = job_json(jid)
    s = doc["facts"]["scheduler"]
    assert r.returncode == 1 and s["state"] == "TIMEOUT"
    assert s["timelimit_s"] == 60 and s["elapsed_s"] >= 60 and s["time_used_pct"] >= 100
    top = doc["files"][0]["diagnosis"]["findings"][0]
    assert top["id"] == "slurm-time-limit"
    assert any("scheduler.state = \"TIMEOUT\"" in c for c in top["facts"]["confirmed_by"])
