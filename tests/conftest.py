import pytest


@pytest.fixture(scope="session")
def kb():
    from gpu_troubleshooter.knowledge import load_knowledge_base
    return load_knowledge_base(strict=True)
