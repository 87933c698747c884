import pytest


@pytest.fixture(scope="session")
def kb():
    from gpu_troubleshooter.knowledge import load_knowledge_base
    return load_knowledge_base(strict=True)


def pytest_sessionstart(session):
    """Submit the slow Slurm job (a ~90 s TIMEOUT) first, so it ends while other tests run."""
    from slurm_support import submit_background_jobs
    submit_background_jobs()
