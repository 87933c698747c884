import pytest


@pytest.fixture(scope="session")
def kb():
    from gpu_troubleshooter.knowledge import load_knowledge_base
    return load_knowledge_base(strict=True)


def pytest_collection_modifyitems(session, config, items):
    """The test that waits for the slow Slurm TIMEOUT job runs last, so the job ends while the others run."""
    last = [i for i in items if i.nodeid.endswith("test_scheduler_slurm.py::test_zz_timeout_job_last")]
    items[:] = [i for i in items if i not in last] + last


def pytest_collection_finish(session):
    """Submit the slow Slurm job (a ~70 s TIMEOUT) before the first test, so it ends while others run."""
    if any(item.nodeid.startswith("tests/test_scheduler_slurm.py") for item in session.items):
        from slurm_support import submit_background_jobs
        submit_background_jobs()
