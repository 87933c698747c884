"""The README's two commands stay true: the files they name exist, and
.ci/run runs the test command verbatim."""
import re

from support import ROOT

README = (ROOT / "README.md").read_text()


def fenced_after(heading):
    block = README.split(heading, 1)[1]
    return re.search(r"```bash\n(.*?)\n```", block, re.S).group(1).strip()


def test_setup_command_names_an_example_log_that_exists():
    setup = fenced_after("## Set up and run")
    logs = re.findall(r"(knowledge/\S+\.log)", setup)
    assert logs and all((ROOT / p).is_file() for p in logs), logs


def test_ci_runs_the_readme_test_command_verbatim():
    assert fenced_after("## Run the tests") in (ROOT / ".ci" / "run").read_text()
