"""Durations are shown with their units: PBS Pro gives walltime in bare seconds, and the
reader gets HH:MM:SS as the other schedulers print it; the JSON keeps the log's own text."""
import pytest

from gpu_troubleshooter.engine import diagnose_text
from gpu_troubleshooter.facts import duration_paths, format_duration
from gpu_troubleshooter.knowledge import load_knowledge_base
from gpu_troubleshooter.render import Style, human

PBS_PRO = "=>> PBS: job killed: walltime 172812 exceeded limit 172800\n"
TORQUE = "=>> PBS: job killed: walltime 48:00:12 exceeded limit 48:00:00\n"


@pytest.fixture(scope="module")
def kb():
    return load_knowledge_base()


@pytest.mark.parametrize("text,unit,want", [
    ("172812", None, "48:00:12"), ("3615", None, "01:00:15"), ("59", None, "00:00:59"), ("0", None, "00:00:00"),
    ("90", "min", "01:30:00"), ("12.6", None, "00:00:13"),
    ("48:00:00", None, "48:00:00"), ("1-00:00:00", None, "1-00:00:00"), ("soon", None, "soon"), (True, None, True),
])
def test_format_duration(text, unit, want):
    assert format_duration(text, unit) == want


def test_duration_paths_reads_both_sides_and_nested_conditions():
    cond = {"all": [{"fact": "value.used_s", "as": "duration", "ge": {"fact": "value.limit_s", "plus": "value.grace"}},
                    {"first": [{"fact": "value.cput", "as": "duration", "unit": "min", "gt": "1h"}]},
                    {"fact": "value.size", "as": "size", "gt": "1 GiB"}]}
    assert duration_paths(cond) == {"value.used_s": "s", "value.limit_s": "s", "value.grace": "s", "value.cput": "min"}


@pytest.mark.parametrize("log", [PBS_PRO, TORQUE])
def test_pbs_walltime_is_shown_as_hh_mm_ss(kb, log):
    d = diagnose_text(log, kb)
    view = d.views()[0]
    assert view.id == "slurm-time-limit" and d.scheduler == "pbs"
    assert view.fixes[0].title == "Checkpoint on SIGTERM and resubmit (PBS)" and view.fixes[0].held is True
    assert view.fixes[0].text.startswith("(The job ran 48:00:12 of its 48:00:00 limit.)")
    short = human(d, Style(False), width=100)
    assert "used_s = 48:00:12, limit_s = 48:00:00" in short
    assert "172812" not in short.split("Evidence:")[0]        # only the evidence quotes the log as it is
    assert "The job ran 48:00:12 of its 48:00:00 limit." in human(d, Style(False), full=True)


def test_json_keeps_the_logs_own_values(kb):
    doc = diagnose_text(PBS_PRO, kb).to_dict()["findings"][0]
    assert doc["values"] == {"used_s": "172812", "limit_s": "172800"}
    assert doc["fixes"][0]["text"].startswith("(The job ran 48:00:12 of its 48:00:00 limit.)")


def test_translated_texts_get_the_same_units(kb):
    view = diagnose_text(PBS_PRO, kb).views("hr")[0]
    assert "48:00:12" in view.fixes[0].text and "172812" not in view.fixes[0].text


@pytest.mark.parametrize("lang,note", [("en", "(PBS jobs)"), ("hr", "(za PBS poslove)"), ("sr", "(za PBS jobove)"),
                                       ("ko", "(PBS 작업용)")])
def test_fix_notes_are_in_the_readers_language(kb, lang, note):
    d = diagnose_text(PBS_PRO, kb)
    short = human(d, Style(False), lang=lang, width=100)
    assert note in short and "48:00:12" in short
    full = human(d, Style(False), lang=lang, full=True)
    if lang != "en":
        assert "probably not for this job" not in full
