"""The review's corrections to python-module-missing and container-no-gpu (issue 9): the ways
HPC users actually run an environment or a GPU container today, and the one unsafe workaround
(opening the Docker socket) named and refused. Checked on what a user is shown."""
import pytest

from gpu_troubleshooter.knowledge import load_knowledge_base
from gpu_troubleshooter.render import explain


@pytest.fixture(scope="module")
def kb():
    return load_knowledge_base()


def test_python_module_missing_starts_with_the_env_and_covers_uv_pixi_conda_run(kb):
    entry = kb.get("python-module-missing")
    assert "not installed in the environment the job uses" in entry.causes[0].get()
    out = explain(entry, kb.site)
    for needed in ("conda run -p /path/to/env python", "uv run --project", "pixi run --manifest-path",
                   "PYTHONNOUSERSITE=1"):
        assert needed in out, needed


def test_container_no_gpu_names_every_runtime_and_refuses_the_docker_socket(kb):
    out = explain(kb.get("container-no-gpu"), kb.site)
    for needed in ("apptainer exec --nvccli", "--device nvidia.com/gpu=all", "srun --container-image=",
                   "apptainer exec --nv ", "/var/run/docker.sock", "never `chmod 666`"):
        assert needed in out, needed


@pytest.mark.parametrize("lang,word", [("hr", "docker grupu"), ("sr", "docker grupu"), ("ko", "docker 그룹")])
def test_the_corrected_fixes_are_translated_whole(kb, lang, word):
    from gpu_troubleshooter.view import entry_view
    view = entry_view(kb.get("container-no-gpu"), lang, kb.site)
    assert word in view.fixes[0].text and "`chmod 666`" in view.fixes[0].text and not view.fallback_fields
    view = entry_view(kb.get("python-module-missing"), lang, kb.site)
    assert "`pixi run`" in " ".join(f.text for f in view.fixes) and not view.fallback_fields
