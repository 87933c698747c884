"""A cause or a fix's text that quotes a value the log did not give leaves that part out
(text.without_absent_values), so a reader never sees "PyTorch itself held <allocated> of
the card's <total>"; code keeps its placeholders for the reader to fill in."""
import re
from pathlib import Path

import pytest

from gpu_troubleshooter.engine import diagnose_text, diagnose_path
from gpu_troubleshooter.knowledge import load_knowledge_base
from gpu_troubleshooter.text import without_absent_values, without_unnamed_pages
from gpu_troubleshooter.view import entry_view

OOM_TEXT = """PyTorch itself held {value.allocated} of the card's {value.total}: this job
needs less memory. Halve the batch size until it fits; accumulate gradients
to keep the same effective batch. (`torch.cuda.empty_cache()` does not fix
an out-of-memory error inside one process.)
"""


def test_the_sentence_that_quotes_an_absent_value_goes():
    assert without_absent_values(OOM_TEXT, {}).startswith("Halve the batch size until it fits;")
    assert "empty_cache()" in without_absent_values(OOM_TEXT, {})


def test_nothing_changes_when_the_log_gave_the_values():
    assert without_absent_values(OOM_TEXT, {"allocated": "3 GiB", "total": "8 GiB"}) == OOM_TEXT
    assert without_absent_values("No placeholder here. At all.", {}) == "No placeholder here. At all."


@pytest.mark.parametrize("text, expected", [
    # a parenthesis that holds the value goes, with the space (or line break) before it
    ("prints the lines that make it loadable (`{value.module}` in this log).",
     "prints the lines that make it loadable."),
    ("the error then names the parameters\n(here: {value.unused}). Remove them.",
     "the error then names the parameters. Remove them."),
    ("The message names the two dtypes ({value.dtypes}); the last frame names the layer.",
     "The message names the two dtypes; the last frame names the layer."),
    # the sentence, not the abbreviation's dot nor a version's
    ("Use torch 2.4 or newer. The log shows {value.v}, e.g. an old wheel. Then rebuild.",
     "Use torch 2.4 or newer. Then rebuild."),
    # a list item of its own, without leaving an empty line
    ("Check:\n- the node {value.node} is drained.\n- the partition.", "Check:\n- the partition."),
])
def test_the_smallest_part_goes(text, expected):
    assert without_absent_values(text, {}) == expected


def test_a_quoted_message_keeps_its_placeholders():
    text = 'To the helpdesk: "Job {value.jobid} failed on node {value.node}. Could it be drained?"'
    assert without_absent_values(text, {}) == text


def test_a_text_that_is_all_placeholder_stays():
    assert without_absent_values("{value.library} is missing.", {}) == "{value.library} is missing."


@pytest.fixture(scope="module")
def kb():
    return load_knowledge_base()


def test_a_plain_oom_reads_without_placeholders(kb):
    view = diagnose_text("RuntimeError: CUDA out of memory.\n", kb).views()[0]
    assert view.id == "cuda-oom"
    first = view.fixes[0]
    assert first.title.startswith("Make the batch smaller") and first.text.startswith("Halve the batch size")
    assert "<allocated>" not in " ".join(f.text for f in view.fixes)
    full = diagnose_text(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.15 GiB of which 1.06 GiB is free. Of the allocated memory 75.90 GiB is allocated by PyTorch, and "
        "1.64 GiB is reserved by PyTorch but unallocated.\n", kb).views()[0]
    assert "75.90 GiB of the card's 79.15 GiB" in full.fixes[0].text


def test_no_example_shows_an_unfilled_value_in_its_prose(kb):
    """Every cause and fix text of the first finding, over every example log: a value
    placeholder that stays in prose (outside a quoted message) is a defect of the text,
    to be written so that a part can go (a parenthesis, a sentence of its own)."""
    leaks = []
    for path in sorted(Path(kb.folders[0]).glob("*/*/must*/*")):
        views = diagnose_path(path, kb).views()
        if not views:
            continue
        entry, values = kb.get(views[0].id), dict(views[0].shown_values)
        for text in [str(f.text) for f in entry.fixes] + [str(c) for c in entry.causes]:
            kept = re.sub(r'"[^"]*"', "", without_absent_values(text, values))
            leaks += ["%s: {value.%s} in %r" % (path.name, name, " ".join(text.split())[:90])
                      for name in re.findall(r"\{value\.(\w+)\}", kept) if not values.get(name)]
    assert not leaks, "\n".join(sorted(set(leaks)))


# --- a site page the site did not name ({site.docs_url} unset) -------------------------

@pytest.mark.parametrize("text, expected", [
    ("place the overlay on a filesystem the site recommends for overlays ({site.docs_url}).",
     "place the overlay on a filesystem the site recommends for overlays."),
    ("The site documentation ({site.docs_url}) lists the GPU queues; or ask {site.helpdesk}.",
     "The site documentation lists the GPU queues; or ask {site.helpdesk}."),
    # outside a parenthesis the placeholder carries the sentence: it stays, for the label
    ("Check {site.docs_url} or ask {site.helpdesk}.", "Check {site.docs_url} or ask {site.helpdesk}."),
])
def test_a_parenthesis_that_only_points_to_an_unnamed_page_goes(text, expected):
    assert without_unnamed_pages(text, ("docs_url",)) == expected
    assert without_unnamed_pages(text, ()) == text


def test_an_unnamed_user_guide_reads_as_a_label_in_the_readers_language(kb):
    """No bundled URL stands in for the site's guide (the Slurm gres page did, for PBS
    queues and JVM heaps alike); a site's own URL is shown wherever the text names it."""
    assert not kb.site.get("docs_url")

    def fixes(eid, lang, site):
        return " ".join(" ".join(f.text.split()) for f in entry_view(kb.get(eid), lang, site).fixes)
    assert "see your cluster's user guide for the names your site uses" in fixes("slurm-invalid-constraint", "en", kb.site)
    assert "pogledajte korisnički priručnik vašeg klastera" in fixes("slurm-invalid-constraint", "hr", kb.site)
    assert "pogledajte korisničko uputstvo vašeg klastera" in fixes("slurm-invalid-constraint", "sr", kb.site)
    assert "클러스터 사용자 안내서를" in fixes("slurm-invalid-constraint", "ko", kb.site)
    overlay = fixes("apptainer-overlay-image-in-use", "en", kb.site)
    assert "recommends for overlays." in overlay and "user guide" not in overlay and "<docs_url>" not in overlay
    site = {**kb.site, "docs_url": "https://hpc.uni.example/gpu"}
    assert "overlays (https://hpc.uni.example/gpu)." in fixes("apptainer-overlay-image-in-use", "en", site)
    assert "pogledajte https://hpc.uni.example/gpu" in fixes("slurm-invalid-constraint", "hr", site)
