"""`troubleshoot check job.sh`: problems with line and fix; a corpus of correct scripts gives none."""
import json
from pathlib import Path

import pytest

from gpu_troubleshooter.scheduler import check
from support import required, run_cli

FIX = Path(__file__).parent / "fixtures" / "check"
SITE = FIX / "site.yaml"
GOOD = sorted((FIX / "good").glob("*.sh"))


def ids(problems):
    return [p.id for p in problems]


def site():
    return check.site_scheduler(site_file=str(SITE))


@pytest.mark.parametrize("script", GOOD, ids=[p.name for p in GOOD])
def test_correct_scripts_give_no_finding(script):
    assert [p.to_dict() for p in check.check_script(str(script), site())] == []


def test_correct_corpus_is_large_enough():
    assert len(GOOD) >= 10


def write(tmp_path, script, **py):
    for name, text in py.items():
        (tmp_path / f"{name}.py").write_text(text)
    path = tmp_path / "job.sh"
    path.write_bytes(script.encode())
    return str(path)


CASES = [
    # (script, python files, expected ids, line of the first)
    ("#!/bin/bash\n#SBATCH --partition=gpu\n#SBATCH --time=1:00:00\npython train.py\n",
     {"train": "import torch\nm = torch.nn.Linear(2, 2)\nm.cuda()\n"}, ["gpu-code-without-gpu-request"], 3),
    ("#!/bin/bash\n#SBATCH --time=1:00:00\npython train.py\n",
     {"train": "import torch\nx = torch.zeros(1).to('cuda')\n"}, ["gpu-code-without-gpu-request"], 2),
    ("#!/bin/bash\n#SBATCH -p cpu\n#SBATCH --gres=gpu:1\npython3 - <<'PY'\nimport cupy\nPY\n",
     {}, ["gpu-code-on-cpu-partition"], 2),
    ("#!/bin/bash\n#SBATCH -p gpu\n#SBATCH --gres=gpu:h100:1\nnvidia-smi\n", {}, ["unknown-gres-type"], 3),
    ("#!/bin/bash\n#SBATCH -p gpux\n#SBATCH --gres=gpu:1\nnvidia-smi\n", {}, ["unknown-partition"], 2),
    ("#!/bin/bash\n#SBATCH -p gpu-debug\n#SBATCH -G 1\n#SBATCH -t 4:00:00\nnvidia-smi\n", {}, ["time-above-partition-max"], 4),
    ("#!/bin/bash\n#SBATCH -p gpu --gres=gpu:1\npython tfjob.py\n",
     {"tfjob": "import tensorflow as tf\nprint(tf.ones(1))\n"}, ["tf-without-memory-growth"], 1),
    ("#!/bin/bash\n#SBATCH -p gpu --gres=gpu:1\npython t.py\n",
     {"t": "import torch\ndev = torch.device('cuda:1')\n"}, ["hard-coded-cuda-device"], 2),
    ("#!/bin/bash\n#SBATCH -p gpu --gres=gpu:1\nexport CUDA_VISIBLE_DEVICES=1\nnvidia-smi\n", {}, ["cuda-visible-devices-set"], 3),
    ("#!/bin/bash\n#SBATCH -p gpu --gres=gpu:1\npython t.py\n",
     {"t": "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '2'\n"}, ["cuda-visible-devices-set"], 2),
    ("#!/bin/bash\n#SBATCH -p gpu --gres=gpu:4 -c 16\npython t.py\n",
     {"t": "import torch\nm = torch.nn.DataParallel(torch.nn.Linear(2, 2)).cuda()\n"}, ["dataparallel-multi-gpu"], 2),
    ("#!/bin/bash\n#SBATCH -p gpu --gres=gpu:1\n#SBATCH --cpus-per-task=4\npython t.py\n",
     {"t": "from torch.utils.data import DataLoader\nl = DataLoader([], num_workers=16)\n"}, ["num-workers-above-cpus"], 2),
    ("#!/bin/bash\n#SBATCH -p gpu --gres=gpu:1\ndocker run --rm img nvidia-smi\n", {}, ["docker-without-gpus"], 3),
    ("#!/bin/bash\n#SBATCH -p gpu --gres=gpu:1\nnvidia-smi\n#SBATCH --mem=8G\n", {}, ["directive-after-command"], 4),
    ("#!/bin/bash\r\n#SBATCH -p cpu\r\necho hi\r\n", {}, ["crlf-line-endings"], 1),
    ("#!/bin/bash\n#SBATCH -p cpu\nmodule load anaconda\nconda activate env\npython -c 1\n", {}, ["conda-activate-without-init"], 4),
    ("#!/bin/bash\n#PBS -q gpu\n#PBS -l select=1:ncpus=4\n#PBS -l walltime=01:00:00\npython t.py\n",
     {"t": "import torch\ntorch.ones(1).cuda()\n"}, ["gpu-code-without-gpu-request"], 2),
]


@pytest.mark.parametrize("script,py,expected,line", CASES, ids=[c[2][0] + str(i) for i, c in enumerate(CASES)])
def test_each_problem_is_found_with_its_line(tmp_path, script, py, expected, line):
    problems = check.check_script(write(tmp_path, script, **py), site())
    assert ids(problems) == expected
    assert problems[0].line == line and problems[0].fix


def test_ast_not_regex_comments_and_strings_do_not_count(tmp_path):
    py = "# model.cuda() is commented out\ntext = 'call .cuda() later'\nimport torch\nprint(torch.cuda.is_available())\n"
    script = "#!/bin/bash\n#SBATCH -p cpu\npython t.py\n"
    assert check.check_script(write(tmp_path, script, t=py), site()) == []


def test_command_json_and_exit_status(tmp_path):
    path = write(tmp_path, "#!/bin/bash\n#SBATCH -p gpu\npython t.py\n", t="import torch\ntorch.ones(1).cuda()\n")
    r = run_cli("check", "--site", SITE, "--json", path)
    assert r.returncode == 1, r.stderr.decode()
    doc = json.loads(r.stdout)
    assert doc["findings"][0]["id"] == "gpu-code-without-gpu-request"
    assert doc["findings"][0]["file"].endswith("t.py") and doc["findings"][0]["kb"] == "no-gpu-allocated"
    ok = run_cli("check", "--site", SITE, FIX / "good" / "cpu_only.sh", "--color", "never")
    assert ok.returncode == 0 and "no problem found" in ok.stdout.decode()
    missing = run_cli("check", tmp_path / "nope.sh")
    assert missing.returncode == 2 and "cannot read" in missing.stderr.decode() and "Traceback" not in missing.stderr.decode()


def test_python_syntax_error_is_reported(tmp_path):
    path = write(tmp_path, "#!/bin/bash\n#SBATCH -p cpu\npython t.py\n", t="def f(:\n  pass\n")
    problems = check.check_script(path, site())
    assert ids(problems) == ["python-syntax-error"] and problems[0].line == 1


LMOD = check.LMOD_DEFAULT


@pytest.mark.skipif(not Path(LMOD).exists() and not required("lmod"),
                    reason="Debian's lmod is not installed (CI installs it and sets REQUIRE_LMOD=1)")
def test_module_load_of_a_missing_module(tmp_path, monkeypatch):
    monkeypatch.setenv("MODULEPATH", str(FIX / "modulefiles"))
    monkeypatch.delenv("LMOD_CMD", raising=False)
    script = ("#!/bin/bash\n#SBATCH -p gpu --gres=gpu:1\nmodule load cuda/12.2 anaconda3\n"
              "module load cudnn/9.0   # not at this site\nnvidia-smi\n")
    problems = check.check_script(write(tmp_path, script), site())
    assert [(p.id, p.line) for p in problems] == [("module-missing", 4)]
    assert "cudnn/9.0" in problems[0].message and problems[0].fix.startswith("module spider cudnn")
