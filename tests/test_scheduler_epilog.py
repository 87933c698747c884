"""The epilog hook: decides, writes as the job's user without following links, posts, mails, keeps its budget.

The last tests run it inside the real Slurm of tests/slurm/start-cluster.sh
(skipped without it unless REQUIRE_SLURM=1)."""
import json
import os
import pwd
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import slurm_support as cluster
from gpu_troubleshooter.scheduler import epilog
from support import required

ROOT = Path(__file__).resolve().parents[1]
SCONTROL_TIMEOUT = """JobId={job} JobName=train
   UserId={user}({uid}) GroupId={group}({gid}) MCS_label=N/A
   JobState=COMPLETING Reason=TimeLimit Dependency=(null)
   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15
   RunTime=00:01:03 TimeLimit=00:01:00 TimeMin=N/A
   Partition=gpu AllocNode:Sid=vm:1
   NodeList=vm
   TRES=cpu=1,mem=200M,node=1,billing=1,gres/gpu=1
   Command={dir}/job.sh
   WorkDir={dir}
   StdErr={dir}/slurm-{job}.out
   StdIn=/dev/null
   StdOut={dir}/slurm-{job}.out
"""
TIMEOUT_LOG = "epoch 1\nslurmstepd: error: *** JOB {job} ON vm CANCELLED AT 2026-11-23T19:29:04 DUE TO TIME LIMIT ***\n"


def job_user():
    """(name, uid, gid) the simulated job belongs to: 'nobody' when we are root, else ourselves."""
    if os.geteuid() == 0:
        pw = pwd.getpwnam("nobody")
    else:
        pw = pwd.getpwuid(os.getuid())
    return pw.pw_name, pw.pw_uid, pw.pw_gid


@pytest.fixture
def open_tmp():
    """A folder under /tmp that the job's user can enter (pytest's own tmp_path is 0700 for root)."""
    import shutil
    import tempfile
    path = Path(tempfile.mkdtemp(prefix="ts-epilog-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fake_job(open_tmp):
    """A job folder owned by the job's user, its log, and a fake scontrol that knows the job."""
    tmp_path = open_tmp
    name, uid, gid = job_user()
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    (jobdir / "slurm-4242.out").write_text(TIMEOUT_LOG.format(job=4242))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "record.txt"
    record.write_text(SCONTROL_TIMEOUT.format(job=4242, user=name, uid=uid, group=name, gid=gid, dir=jobdir))
    (bindir / "scontrol").write_text(f"#!/bin/sh\ncat '{record}'\n")
    (bindir / "scontrol").chmod(0o755)
    for p in (tmp_path, jobdir, jobdir / "slurm-4242.out"):
        os.chown(p, uid, gid) if os.geteuid() == 0 else None
    os.chmod(tmp_path, 0o755)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "SLURM_JOB_ID": "4242", "SLURM_JOB_UID": str(uid),
           "SLURM_JOB_GID": str(gid), "SLURM_JOB_USER": name, "SLURM_JOB_EXIT_CODE2": "0:15",
           "SLURM_SCRIPT_CONTEXT": "epilog_slurmd", "SLURM_JOB_WORK_DIR": str(jobdir)}
    return {"dir": jobdir, "env": env, "uid": uid, "user": name, "tmp": tmp_path}


def config(tmp_path, text):
    path = tmp_path / "epilog.conf"
    path.write_text(text)
    return str(path)


def run_hook(env, *args):
    full = {**env, "PYTHONPATH": str(ROOT / "app")}
    return subprocess.run([sys.executable, "-m", "gpu_troubleshooter", "epilog", *args], env=full,
                          capture_output=True, text=True, timeout=60)


# ---- configuration and decision ------------------------------------------------------------

def test_config_file_and_its_mistakes(tmp_path):
    cfg = epilog.load_config(config(tmp_path, "[epilog]\nstates = FAILED TIMEOUT\nbudget_s = 5\nnonzero_exit = no\n"
                                    "filename = ../escape.txt\n[post]\nurl = http://x/api/v1/submissions\n"))
    assert cfg.states == ("FAILED", "TIMEOUT") and cfg.budget_s == 5 and cfg.nonzero_exit is False
    assert cfg.filename == "troubleshoot-{job_id}.txt" and "plain name" in cfg.problems[0]
    assert cfg.post_url == "http://x/api/v1/submissions"
    broken = epilog.load_config(config(tmp_path, "[epilog\nstates=\n"))
    assert broken.states == epilog.DEFAULT_STATES and broken.problems
    assert epilog.load_config(str(tmp_path / "absent.conf")).source == "defaults"


def test_decision():
    cfg = epilog.Config()
    assert epilog.should_diagnose({"state": "TIMEOUT"}, cfg)[0]
    assert epilog.should_diagnose({"state": "COMPLETED", "exit_code": 0, "exit_signal": 0}, cfg) == (
        False, "state COMPLETED, exit code 0:0")
    assert epilog.should_diagnose({"state": "CANCELLED", "exit_code": 2, "exit_signal": 0}, cfg)[0]
    cfg.nonzero_exit = False
    assert not epilog.should_diagnose({"state": "CANCELLED", "exit_code": 2, "exit_signal": 0}, cfg)[0]


# ---- writing safely ---------------------------------------------------------------------------

def test_atomic_write_replaces_a_symlink_never_its_target(tmp_path):
    target = tmp_path / "precious"
    target.write_text("keep me")
    (tmp_path / "troubleshoot-1.txt").symlink_to(target)
    epilog.write_atomically(str(tmp_path), "troubleshoot-1.txt", "report\n")
    assert target.read_text() == "keep me"
    assert not (tmp_path / "troubleshoot-1.txt").is_symlink()
    assert (tmp_path / "troubleshoot-1.txt").read_text() == "report\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_symlinked_directory_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(OSError):
        epilog.write_atomically(str(tmp_path / "link"), "t.txt", "x")
    assert list(real.iterdir()) == []


def test_never_acts_for_root():
    if os.geteuid() != 0:
        pytest.skip("needs root to test the privilege drop")
    with pytest.raises(PermissionError):
        epilog.drop_privileges(0, 0)


# ---- the whole hook (fake scontrol) -----------------------------------------------------------

def test_node_epilog_writes_the_report_as_the_job_user(fake_job, tmp_path):
    conf = config(tmp_path, "[epilog]\nbudget_s = 20\n")
    r = run_hook(fake_job["env"], "--config", conf, "--json")
    assert r.returncode == 0, r.stderr
    done = json.loads(r.stdout)
    report = fake_job["dir"] / "troubleshoot-4242.txt"
    assert done["why"] == "state TIMEOUT" and done["written"] == str(report), r.stderr
    text = report.read_text()
    assert "State:   TIMEOUT" in text and "reached its time limit" in text
    assert report.stat().st_uid == fake_job["uid"]
    assert "wrote " + str(report) in r.stderr


def test_a_log_symlinked_to_a_secret_is_not_read(fake_job, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("RuntimeError: CUDA out of memory. SECRET\n")
    os.chmod(secret, 0o600)
    log = fake_job["dir"] / "slurm-4242.out"
    log.unlink()
    log.symlink_to(secret)
    r = run_hook(fake_job["env"], "--config", config(tmp_path, "[epilog]\n"), "--json")
    assert r.returncode == 0
    report = (fake_job["dir"] / "troubleshoot-4242.txt").read_text()
    assert "SECRET" not in report and "symbolic link" in report


def test_completed_job_is_left_alone(fake_job, tmp_path):
    env = {**fake_job["env"], "SLURM_JOB_EXIT_CODE2": "0:0"}
    record = Path(fake_job["env"]["PATH"].split(":")[0]).parent / "record.txt"
    record.write_text(record.read_text().replace("Reason=TimeLimit", "Reason=None").replace("ExitCode=0:15", "ExitCode=0:0"))
    r = run_hook(env, "--config", config(tmp_path, "[epilog]\n"), "--json")
    assert json.loads(r.stdout)["skipped"] is True
    assert not (fake_job["dir"] / "troubleshoot-4242.txt").exists()


def test_hard_time_budget(fake_job, tmp_path):
    slow = Path(fake_job["env"]["PATH"].split(":")[0]) / "scontrol"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    start = time.monotonic()
    r = run_hook(fake_job["env"], "--config", config(tmp_path, "[epilog]\nbudget_s = 1\n"))
    assert r.returncode == 0 and time.monotonic() - start < 10
    assert "time budget of 1 s spent" in r.stderr


def test_not_in_a_job_is_a_quiet_no_op(tmp_path):
    r = run_hook({"PATH": "/usr/bin:/bin"}, "--config", str(tmp_path / "none.conf"))
    assert r.returncode == 0 and "nothing to do" in r.stderr


# ---- telling someone: the web API, a mail command, SMTP ---------------------------------------

@pytest.fixture
def web_service(tmp_path):
    pytest.importorskip("flask")
    from werkzeug.serving import make_server
    from gpu_troubleshooter.web import create_app
    app = create_app({"TESTING": True, "SECRET_KEY": "t", "DATABASE_URL": f"sqlite:///{tmp_path}/web.sqlite3",
                      "UPLOAD_DIR": str(tmp_path / "uploads"), "RATELIMIT_ENABLED": False, "WTF_CSRF_ENABLED": False})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    pool = app.extensions.get("scan_pool")
    if pool:
        pool.shutdown(wait=True)


def test_post_to_the_web_service_and_read_it_back(web_service):
    import urllib.request
    facts = {"scheduler": {"kind": "slurm", "job_id": "4242", "state": "TIMEOUT"}}
    url = epilog.post_diagnosis(web_service + "/api/v1/submissions", "site-token",
                                TIMEOUT_LOG.format(job=4242), facts)
    assert url.startswith(web_service + "/")
    token = url.rstrip("/").rsplit("/", 1)[-1]
    with urllib.request.urlopen(f"{web_service}/api/v1/submissions/{token}") as resp:
        doc = json.loads(resp.read())
    assert doc["facts"]["scheduler"] == facts["scheduler"]
    assert doc["source"]


def test_controller_role_posts_and_mails_through_a_command(fake_job, tmp_path, web_service):
    sink = tmp_path / "mail.txt"
    mailer = tmp_path / "fake-mail"
    mailer.write_text(f"#!/bin/sh\nprintf '%s|' \"$@\" > '{sink}'\ncat >> '{sink}'\n")
    mailer.chmod(0o755)
    conf = config(tmp_path, f"[post]\nurl = {web_service}/api/v1/submissions\n"
                            f"[mail]\ncommand = {mailer} -s {{subject}} {{user}}\ndomain = example.org\n")
    env = {**fake_job["env"], "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld"}
    r = run_hook(env, "--config", conf, "--json")
    done = json.loads(r.stdout)
    assert done["role"] == "slurmctld" and "written" not in done, r.stderr
    assert done["posted"].startswith(web_service), r.stderr
    mail = sink.read_text()
    assert mail.startswith(f"-s|Job 4242 (train) ended TIMEOUT: The job was killed because it reached its time limit|"
                           f"{fake_job['user']}@example.org|")
    assert "The diagnosis online: " + done["posted"] in mail


def test_mail_through_smtp(tmp_path):
    aiosmtpd = pytest.importorskip("aiosmtpd.controller")
    got = []

    class Handler:
        async def handle_DATA(self, server, session, envelope):
            got.append(envelope)
            return "250 OK"
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ctl = aiosmtpd.Controller(Handler(), hostname="127.0.0.1", port=port)
    ctl.start()
    try:
        cfg = epilog.Config(smtp_host="127.0.0.1", smtp_port=port, mail_from="hpc@example.org", mail_domain="example.org")
        assert epilog.send_mail(cfg, "alice", "Job 1 ended TIMEOUT", "the report\n") == f"SMTP 127.0.0.1:{port}"
    finally:
        ctl.stop()
    assert got and got[0].rcpt_tos == ["alice@example.org"] and got[0].mail_from == "hpc@example.org"
    assert b"Subject: Job 1 ended TIMEOUT" in got[0].content and b"the report" in got[0].content


# ---- in the real Slurm ---------------------------------------------------------------------------

real_slurm = pytest.mark.skipif(not cluster.slurm_up() and not required("slurm"), reason="no Slurm controller here")


@real_slurm
def test_real_slurm_epilogs(open_tmp):
    """A real failed job as 'nobody': the node Epilog (root) writes the report as nobody; the
    EpilogSlurmctld (SlurmUser) gets the exit code and the state in its environment."""
    if os.geteuid() != 0:
        pytest.skip("installs the test cluster's hooks: needs root")
    tmp_path = open_tmp
    hooks = Path(cluster.STATE) / "hooks"
    conf = config(tmp_path, "[epilog]\nbudget_s = 20\n")
    os.chmod(tmp_path, 0o755)
    os.chmod(conf, 0o644)
    node = hooks / "node"
    node.write_text(f"#!/bin/sh\nexec {sys.executable} -m gpu_troubleshooter epilog --config {conf} "
                    f">>{tmp_path}/node-hook.log 2>&1\n")
    ctld_env = tmp_path / "ctld-env"
    ctld = hooks / "slurmctld"
    ctld.write_text(f"#!/bin/sh\nenv > {ctld_env}.$SLURM_JOB_ID\n")
    for h in (node, ctld):
        h.chmod(0o755)
    jobdir = tmp_path / "run"
    jobdir.mkdir()
    nobody = pwd.getpwnam("nobody")
    os.chown(jobdir, nobody.pw_uid, nobody.pw_gid)
    os.chmod(tmp_path, 0o777 | 0o1000)   # the controller's hook (SlurmUser) writes its env here
    script = jobdir / "oom.sh"
    script.write_text("#!/bin/bash\n#SBATCH --time=1\n#SBATCH --gres=gpu:1\n"
                      "echo 'RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity)'\n"
                      "exit 1\n")
    os.chown(script, nobody.pw_uid, nobody.pw_gid)
    try:
        proc = subprocess.run(["runuser", "-u", "nobody", "--", "sbatch", "--parsable", str(script)],
                              cwd=jobdir, capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        jid = proc.stdout.strip()
        assert cluster.wait(jid) == "FAILED"
        report = jobdir / f"troubleshoot-{jid}.txt"
        for _ in range(100):
            if report.exists():
                break
            time.sleep(0.2)
        hook_log = (tmp_path / "node-hook.log").read_text() if (tmp_path / "node-hook.log").exists() else ""
        assert report.exists(), hook_log
        assert report.stat().st_uid == nobody.pw_uid
        text = report.read_text()
        assert f"Job {jid}" in text and "State:   FAILED, exit code 1" in text and "GPU" in text
        env_file = Path(f"{ctld_env}.{jid}")
        for _ in range(50):
            if env_file.exists():
                break
            time.sleep(0.2)
        env = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)
        assert env["SLURM_SCRIPT_CONTEXT"] == "epilog_slurmctld" and env["SLURM_JOB_EXIT_CODE2"] == "1:0"
        assert env["SLURM_JOB_USER"] == "nobody"
    finally:
        node.unlink()
        ctld.unlink()
