"""Issue 9 / review §5: LSF, Flux, HTCondor and Kubernetes logs get their own
scheduler's fixes; the scheduler comes from the log, else the probe, else the site."""
import pytest

from gpu_troubleshooter.engine import diagnose_text
from gpu_troubleshooter.fixes import job_scheduler
from gpu_troubleshooter.knowledge import bundled_dir, load_knowledge_base, load_site
from gpu_troubleshooter.view import site_settings


@pytest.fixture(scope="module")
def kb():
    return load_knowledge_base()


def first_fixes(kb, log, n=2, facts=None):
    d = diagnose_text(log, kb, facts=facts) if facts is not None else diagnose_text(log, kb)
    view = d.views()[0]
    return d, view, [f for f in view.fixes][:n]


@pytest.mark.parametrize("log, scheduler, entry", [
    ("1800.017s: job.exception type=timeout severity=0 resource allocation expired\n"
     "flux-job: task(s) exited with exit code 142\n", "flux", "slurm-time-limit"),
    ("15872426.5184 erees  5/25 14:51 Error from slot1_3@e327.chtc.wisc.edu: Docker job has gone over "
     "memory limit of 16384 Mb\n", "condor", "host-oom-killed"),
    ("    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n",
     "kubernetes", "host-oom-killed"),
    ("TERM_ADMIN: job killed by root or an administrator.\nExited with exit code 130.\n", "lsf",
     "lsf-killed-by-admin"),
    # Grid Engine's qsub refusal (bcbio-nextgen#805's wording), and Torque's abort mail
    ('Unable to run job: error: no suitable queues.\nExiting.\n', "sge", "pbs-queue-limits"),
    ("Aborted by PBS Server\nJob exceeded its walltime limit. Job was aborted\n", "pbs", "slurm-time-limit"),
])
def test_each_scheduler_gets_its_own_fix_first(kb, log, scheduler, entry):
    d, view, fixes = first_fixes(kb, log)
    assert d.scheduler == scheduler and d.findings[0].id == entry
    tagged = [f for f in view.fixes if f.scheduler]
    assert all(f.held is False for f in tagged if f.scheduler != scheduler)
    if any(f.scheduler == scheduler for f in tagged):
        assert fixes[0].scheduler == scheduler and fixes[0].held is True


@pytest.mark.parametrize("log", [
    "0/3 nodes are available: 3 insufficient nvidia.com/gpu.\n",
    "  Warning  FailedScheduling  3s (x5 over 9s)  default-scheduler  0/6 nodes are available: 3 node(s) didn't match "
    "node selector.\n",
    "  Warning  UnexpectedAdmissionError  10s   kubelet  Allocate failed due to rpc error: code = Unavailable\n",
    "I0123 16:54:07.204992       1 main.go:238] Starting FS watcher for /var/lib/kubelet/device-plugins\n",
])
def test_kubernetes_is_recognised_by_its_own_words_in_either_case(kb, log):
    assert diagnose_text(log, kb).scheduler == "kubernetes"


def test_owner_kill_is_a_warning_that_a_real_error_outranks(kb):
    log = ("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
           "    import timm\nModuleNotFoundError: No module named 'timm'\n"
           "TERM_OWNER: job killed by owner.\nExited with exit code 143.\n")
    d = diagnose_text(log, kb)
    ids = [f.id for f in d.findings]
    assert "lsf-killed-by-owner" in ids and ids[0] != "lsf-killed-by-owner"


def test_every_scheduler_is_detected_and_named():
    """One list of schedulers (facts.SCHEDULER_NAMES, which schema.SCHEDULERS is): the engine recognises each from its log and
    the renderer has a name for each, so adding one cannot forget a place."""
    from gpu_troubleshooter.engine import SCHEDULER_MARKERS
    from gpu_troubleshooter.render import SCHEDULER_NAMES
    from gpu_troubleshooter.schema import SCHEDULERS
    assert [name for name, _ in SCHEDULER_MARKERS] == list(SCHEDULERS)
    assert set(SCHEDULER_NAMES) == set(SCHEDULERS)


def test_scheduler_falls_back_to_the_probe_then_the_site():
    assert job_scheduler("pbs", {"scheduler": {"kind": "slurm"}}, {"scheduler": "lsf"}) == "pbs"
    assert job_scheduler(None, {"scheduler": {"kind": "flux"}}, {"scheduler": "lsf"}) == "flux"
    assert job_scheduler(None, {"scheduler": {"kind": None}}, {"scheduler": "LSF"}) == "lsf"
    assert job_scheduler(None, None, {"scheduler": "moab"}) is None      # not one we know: no choice
    assert job_scheduler(None, None, {"scheduler": "SGE"}) == "sge"
    assert job_scheduler(None, {}, {}) is None


def test_site_scheduler_hides_other_schedulers_fixes_on_a_bare_log(kb, tmp_path):
    log = "Killed\n"
    bare = diagnose_text(log, kb).views()[0]
    assert all(f.held is not False for f in bare.fixes if f.scheduler)     # nobody knows: none hidden
    d = diagnose_text(log, kb)
    site = dict(site_settings(d.site or {}), scheduler="pbs")
    view = d.findings[0].view(kb, site=site, scheduler=None)
    held = {f.title: f.held for f in view.fixes if f.scheduler}
    assert held and all(v is False for t, v in held.items() if "(PBS)" not in t)


def test_gpu_request_is_the_whole_option_and_documented():
    site, problems = load_site([bundled_dir()])
    assert not problems and site["gpu_request"] == "--gres=gpu:1"
    text = "\n".join(p.read_text(encoding="utf-8") for p in bundled_dir().rglob("*.yaml") if "i18n" not in p.parts)
    assert "--gres={site.gpu_gres}" not in text and "{site.gpu_request}" in text
