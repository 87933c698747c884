"""The condition language of fix `when` and fact rules: quantities with units, arithmetic
between values, the namespace (facts + value.NAME + log.scheduler) and its validator."""
import pytest

from gpu_troubleshooter.facts import (condition_problems, evaluate, known_path, parse_duration, parse_number,
                                      parse_size, validate_condition)

GiB, MiB = 1024 ** 3, 1024 ** 2


@pytest.mark.parametrize("text,want", [
    ("2.00 GiB", 2 * GiB), ("820.00 MiB", 820 * MiB), ("7406166528 bytes", 7406166528), ("1,024 KB", 1024 * 1024),
    ("59756048kb", 59756048 * 1024), ("57.0GB", 57.0 * GiB), ("20G", 20 * GiB), ("512", 512), (4096, 4096),
    ("1.5 TiB", 1.5 * 1024 * GiB), ("25,600,000 bytes", 25_600_000),
    ("lots", None), ("", None), (None, None), (True, None), ("2 GiB free", None), ("1.2.3 GiB", None),
])
def test_parse_size(text, want):
    assert parse_size(text) == want


def test_parse_size_bare_number_in_a_unit():
    assert parse_size("16891904", unit="KiB") == 16891904 * 1024
    assert parse_size("2 GiB", unit="KiB") == 2 * GiB   # an explicit unit wins


@pytest.mark.parametrize("text,want", [
    ("01:00:00", 3600), ("1-00:00:00", 86400), ("2-12", 2 * 86400 + 12 * 3600), ("1-02:30", 86400 + 2 * 3600 + 1800),
    ("45:00", 2700), ("walltime 48:00:00", 48 * 3600), ("3615", 3615), (3600, 3600), ("2d 4h", 2 * 86400 + 4 * 3600),
    ("90m", 5400), ("30s", 30), ("264:00:00", 264 * 3600),
    ("soon", None), ("", None), (None, None), ("1:2:3:4", None),
])
def test_parse_duration(text, want):
    assert parse_duration(text) == want


def test_parse_number():
    assert parse_number("12,000") == 12000 and parse_number("7.5") == 7.5 and parse_number(3) == 3
    assert parse_number("7.5 GiB") is None and parse_number(None) is None and parse_number(False) is None


# An own-memory OOM (PyTorch holds the card) and one where another process holds it.
OWN = {"value": {"requested": "2.00 GiB", "total": "79.15 GiB", "free": "1.06 GiB", "allocated": "75.90 GiB",
                 "reserved": "1.64 GiB", "in_use": "78.08 GiB"}}
OTHER = {"value": {"requested": "496.00 MiB", "total": "14.75 GiB", "free": "235.06 MiB", "allocated": "820.00 MiB",
                   "reserved": "330.42 MiB", "other_process": "20398"}}
FRAG = {"value": {"requested": "1.00 GiB", "total": "39.39 GiB", "free": "900.00 MiB", "allocated": "28.10 GiB",
                  "reserved": "9.80 GiB"}}

HOLDS_MOST = {"fact": "value.allocated", "as": "size", "ge": {"fact": "value.total", "times": 0.8}}
HOLDS_LITTLE = {"all": [{"fact": "value.allocated", "as": "size", "lt": {"fact": "value.total", "times": 0.5}},
                        {"fact": "value.free", "as": "size", "lt": {"fact": "value.total", "times": 0.05}}]}
FRAGMENTED = {"fact": "value.reserved", "as": "size", "ge": "2 GiB"}


def test_fraction_of_another_value():
    assert evaluate(HOLDS_MOST, OWN) is True
    assert evaluate(HOLDS_MOST, OTHER) is False
    assert evaluate(HOLDS_LITTLE, OTHER) is True
    assert evaluate(HOLDS_LITTLE, OWN) is False


def test_difference_of_two_values():
    cond = {"fact": "value.reserved", "minus": "value.allocated", "as": "size", "ge": "2 GiB"}
    assert evaluate(cond, {"value": {"reserved": "6.09 GiB", "allocated": "3.00 GiB"}}) is True
    assert evaluate(cond, {"value": {"reserved": "6.09 GiB", "allocated": "5.91 GiB"}}) is False
    plus = {"fact": "value.requested", "as": "size", "gt": {"fact": "value.free", "plus": "value.reserved"}}
    assert evaluate(plus, FRAG) is False and evaluate(plus, OWN) is False
    assert evaluate(FRAGMENTED, FRAG) is True and evaluate(FRAGMENTED, OWN) is False


@pytest.mark.parametrize("op,want", [("lt", False), ("le", True), ("gt", False), ("ge", True)])
def test_each_order_operator_on_sizes(op, want):
    assert evaluate({"fact": "value.a", "as": "size", op: "1 GiB"}, {"value": {"a": "1024 MiB"}}) is want


def test_durations():
    ns = {"value": {"used": "walltime 3615", "limit": "01:00:00"}}
    assert evaluate({"fact": "value.used", "as": "duration", "ge": {"fact": "value.limit"}}, ns) is True
    assert evaluate({"fact": "value.limit", "as": "duration", "ge": "1-00:00:00"}, ns) is False
    assert evaluate({"fact": "value.limit", "as": "duration", "lt": "2h"}, ns) is True


def test_versions_and_numbers():
    ns = {"value": {"found": "12020", "cc": "6.0", "driver": "535.104.05"}, "gpu": {"driver_version": "570.86.15"}}
    assert evaluate({"fact": "value.found", "as": "number", "lt": 12080}, ns) is True
    assert evaluate({"fact": "value.found", "ge": 13000}, ns) is False          # text read as a number
    assert evaluate({"fact": "value.cc", "as": "version", "lt": "7.5"}, ns) is True
    assert evaluate({"fact": "value.cc", "as": "version", "ge": "7.0"}, ns) is False
    assert evaluate({"fact": "value.driver", "as": "version", "lt": {"fact": "gpu.driver_version"}}, ns) is True
    assert evaluate({"fact": "value.driver", "version_ge": "525"}, ns) is True


def test_log_scheduler_and_exists_on_values():
    ns = {"log": {"scheduler": "pbs"}, "value": {"other_process": "20398"}}
    assert evaluate({"fact": "log.scheduler", "equals": "pbs"}, ns) is True
    assert evaluate({"fact": "log.scheduler", "in": ["slurm", "lsf"]}, ns) is False
    assert evaluate({"fact": "log.scheduler", "equals": "pbs"}, {}) is None     # not detected: unknown
    assert evaluate({"fact": "value.other_process", "exists": True}, ns) is True
    # the log did not say it: for a value that means it does not exist (facts stay unknown)
    assert evaluate({"fact": "value.missing", "exists": False}, ns) is True
    assert evaluate({"fact": "gpu.count", "exists": False}, ns) is None


@pytest.mark.parametrize("cond", [
    {"fact": "value.nope", "as": "size", "gt": "1 GiB"},                       # missing value
    {"fact": "value.requested", "as": "size", "gt": {"fact": "value.nope"}},    # missing operand
    {"fact": "value.requested", "as": "size", "gt": {"fact": "value.total", "minus": "value.nope"}},
    {"fact": "value.bad", "as": "size", "gt": "1 GiB"},                        # not a size
    {"fact": "value.bad", "as": "duration", "gt": "1h"},
    {"fact": "value.bad", "as": "version", "lt": "1.0"},
    {"fact": "value.bad", "gt": 3},
    {"fact": "value.requested", "gt": "1 GiB"},                               # no `as`: the constant is no number
    {"fact": "value.requested", "as": "size", "gt": "many"},
    {"fact": "value.requested", "as": "size", "gt": {"nofact": 1}},
    {"fact": "value.requested"}, "nonsense", None, {"all": [{"fact": "value.nope", "as": "number", "ge": 1}]},
    {"fact": "gpu.count", "equals": 1},                                         # a probe fact nobody read
])
def test_unknown_is_none_never_an_exception(cond):
    ns = {"value": {"requested": "2.00 GiB", "total": "8 GiB", "bad": "n/a"}}
    assert evaluate(cond, ns) is None


def test_known_paths():
    assert known_path("gpu.devices.0.compute_capability") and known_path("torch.driver_too_old")
    assert known_path("log.scheduler") and known_path("scheduler.state") and known_path("value.total")
    assert known_path("value.total", {"total": "x"}) and not known_path("value.tot", {"total": "x"})
    assert not known_path("gpu.cuda_version") and not known_path("log.other") and not known_path("value.a.b")


def test_validate_condition():
    values = {"allocated": "", "total": ""}
    assert validate_condition(HOLDS_MOST, values) == []
    assert validate_condition({"fact": "log.scheduler", "equals": "pbs"}) == []
    assert validate_condition({"fact": "value.reserved", "minus": "value.allocated", "as": "size", "ge": "2 GiB"},
                              {"reserved": "", "allocated": ""}) == []
    msgs = lambda c: " | ".join(validate_condition(c, values))  # noqa: E731
    assert "unknown value 'value.alocated'" in msgs({"fact": "value.alocated", "as": "size", "gt": "1 GiB"})
    assert "unknown value" in msgs({"fact": "value.total", "as": "size", "gt": {"fact": "value.free"}})
    assert "unknown value" in msgs({"fact": "value.total", "as": "size", "minus": "value.free", "gt": 0})
    assert "unknown fact 'gpu.cuda_version'" in msgs({"fact": "gpu.cuda_version", "version_lt": "12.0"})
    assert "as must be one of" in msgs({"fact": "value.total", "as": "bytes", "gt": 1})
    assert "is not a size" in msgs({"fact": "value.total", "as": "size", "gt": "big"})
    assert "as: size, duration or version" in msgs({"fact": "value.total", "gt": "2 GiB"})
    assert "only works with lt" in msgs({"fact": "value.total", "times": 2, "equals": 1})
    assert "times takes a number" in msgs({"fact": "value.total", "as": "size", "gt": {"fact": "value.allocated",
                                                                                        "times": "most"}})
    assert "log.scheduler is one of" in msgs({"fact": "log.scheduler", "equals": "moab"})
    assert "versions cannot" in msgs({"fact": "value.total", "as": "version", "minus": "value.allocated", "lt": "1"})
    assert "unit needs" in msgs({"fact": "value.total", "as": "size", "unit": "parsecs", "gt": 1})


def test_condition_problems_point_at_the_fix():
    entry = {"values": {"total": "x"},
             "fixes": [{"title": "a", "when": {"fact": "value.total", "as": "size", "gt": "1 GiB"}},
                       {"title": "b", "when": {"fact": "value.used", "as": "size", "gt": "1 GiB"}}],
             "facts": [{"when": {"fact": "gpu.cout", "gt": 0}, "effect": "confirms"}]}
    found = condition_problems(entry)
    assert [k for k, _ in found] == [("fixes", 1, "when"), ("facts", 0, "when")]
    assert "fixes[2]" in found[0][1] and "value.used" in found[0][1]


def test_a_log_that_does_not_name_a_case_is_not_that_case():
    ns = {"value": {"nccl_error": "ncclSystemError"}}
    # equals / in / contains on a value the log did not give: false, not unknown
    assert evaluate({"fact": "value.reason", "contains": "password file"}, ns) is False
    assert evaluate({"fact": "value.nope", "equals": "ncclInvalidUsage"}, ns) is False
    assert evaluate({"fact": "value.nope", "in": ["a", "b"]}, ns) is False
    assert evaluate({"any": [{"fact": "value.nope", "contains": ".so.11"}, {"fact": "value.nope", "contains": ".so.10"}]},
                    ns) is False
    # a negation claims nothing about an absent value, and `first` goes on to the next part
    assert evaluate({"not": {"fact": "value.nope", "in": ["a", "b"]}}, ns) is None
    assert evaluate({"first": [{"fact": "value.nope", "equals": "x"}, {"fact": "gpu.count", "equals": 1}]},
                    {"gpu": {"count": 1}}) is True
    # figures the log did not give stay unknown: the case they would show may still be this one
    assert evaluate({"fact": "value.allocated", "as": "size", "ge": {"fact": "value.total", "times": 0.75}}, ns) is None
    assert evaluate({"fact": "value.cuda", "version_lt": "12"}, ns) is None
    # a site setting the site did not set
    assert evaluate({"fact": "site.scheduler", "equals": "pbs"}, {"site": {}}) is False
