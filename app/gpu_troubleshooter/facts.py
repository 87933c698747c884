"""Fact rules: conditions on the node probe's facts (docs/knowledge-schema.md, "fact rule").

A KB entry's ``facts:`` list holds rules like::

    - when: {fact: torch.cuda_build, equals: null}
      effect: confirms          # confirms | rules_out | alone
      note: PyTorch reports no CUDA build

``apply_fact_rules(rules, facts)`` evaluates them against a probe document
(docs/probe-facts.md) with three-valued logic: a condition on a fact the probe
could not read (``{"unknown": reason}``, or a path that is absent) is neither
true nor false, and a rule whose condition is not *true* does not apply.

Standard library only; imports nothing heavy.
"""
from __future__ import annotations

import re

from .record import dataclass

__all__ = ["FactOutcome", "apply_fact_rules", "validate_fact_rule", "validate_condition", "condition_problems",
           "lookup", "evaluate", "parse_size", "parse_duration", "parse_number", "known_path", "format_duration",
           "duration_paths",
           "EFFECTS", "OPERATORS", "QUANTITIES", "SITE_SETTINGS"]

EFFECTS = ("confirms", "rules_out", "alone")
OPERATORS = ("equals", "not_equals", "in", "lt", "le", "gt", "ge", "version_lt", "version_ge",
             "exists", "empty", "contains")
_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$")


@dataclass(frozen=True)
class FactOutcome:
    """Which rules applied, each as a short human string naming the facts and values."""
    confirmed_by: tuple = ()
    ruled_out_by: tuple = ()
    alone_by: tuple = ()

    @property
    def applied(self) -> bool:
        return bool(self.confirmed_by or self.ruled_out_by or self.alone_by)

    def to_dict(self) -> dict:
        return {"confirmed_by": list(self.confirmed_by), "ruled_out_by": list(self.ruled_out_by),
                "alone_by": list(self.alone_by)}


class _Unread(Exception):
    """The fact has no value: the probe gave a reason instead, or did not report it."""

    def __init__(self, path, reason):
        super().__init__(reason)
        self.path, self.reason = path, reason


class _Absent(_Unread):
    """Nothing at the path at all (for a log value: the log did not give it)."""


def _is_unknown(value) -> bool:
    return isinstance(value, dict) and len(value) == 1 and "unknown" in value


def lookup(facts, path):
    """The value at a dotted path; raises _Unread when it could not be read.

    List elements are addressed by index (``gpu.devices.0.name``).
    """
    node = facts
    for part in path.split("."):
        if _is_unknown(node):
            raise _Unread(path, node["unknown"])
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise _Absent(path, "not reported")
    if _is_unknown(node):
        raise _Unread(path, node["unknown"])
    return node


def _version(value):
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(value if value is not None else ""))
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def _empty(value) -> bool:
    return value is None or value == "" or (isinstance(value, (list, dict, tuple)) and len(value) == 0)


QUANTITIES = ("size", "duration", "number", "version")
_SIZE_UNITS = {"": 1, "b": 1, "byte": 1, "bytes": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4,
               "p": 1024 ** 5}
_SIZE = re.compile(r"^\s*(\d[\d,]*(?:\.\d+)?|\.\d+)\s*([kmgtp]?)(i?)(b|bytes?)?\s*$", re.I)
_NUMBER = re.compile(r"^\s*[-+]?(\d[\d,]*(?:\.\d+)?|\.\d+)\s*$")
_CLOCK = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d{1,2}))?(?::(\d{1,2}))?$")
_SPANS = re.compile(r"^(?:(\d+(?:\.\d+)?)\s*d)?\s*(?:(\d+(?:\.\d+)?)\s*h)?\s*(?:(\d+(?:\.\d+)?)\s*m(?:in)?)?\s*"
                    r"(?:(\d+(?:\.\d+)?)\s*s(?:ec)?)?$", re.I)


def parse_size(text, unit=None):
    """Bytes in a size such as ``2.00 GiB``, ``820.00 MiB``, ``7406166528 bytes``, ``1,024 KB``, ``59756048kb``.

    K/M/G/T count in 1024s with or without the ``i``, as schedulers do (PBS ``kb``,
    Slurm ``--mem=20G``). A bare number is in ``unit`` (default bytes). None when
    the text is not a size.
    """
    if isinstance(text, bool) or text is None:
        return None
    if isinstance(text, (int, float)):
        text = repr(text)
    m = _SIZE.match(str(text))
    if not m:
        return None
    number = float(m.group(1).replace(",", ""))
    if not m.group(2) and not m.group(4) and unit:
        scale = parse_size("1 " + unit)
        return None if scale is None else number * scale
    return number * _SIZE_UNITS[m.group(2).lower()]


def parse_duration(text, unit=None):
    """Seconds in a duration: ``01:00:00``, ``1-00:00:00`` (Slurm days), ``45:00`` (MM:SS),
    ``walltime 48:00:00``, ``2d 4h``, ``90m``, or a bare number in ``unit`` (default s)."""
    if isinstance(text, bool) or text is None:
        return None
    if isinstance(text, (int, float)):
        return float(text) * (_DURATION_UNITS.get((unit or "s").lower()) or 1)
    s = re.sub(r"^\s*[A-Za-z_ ]*?(?=\d)", "", str(text)).strip()  # "walltime 48:00:00" -> "48:00:00"
    if _NUMBER.match(s):
        return float(s.replace(",", "")) * (_DURATION_UNITS.get((unit or "s").lower()) or 1)
    m = _CLOCK.match(s)
    if m and (m.group(1) or m.group(3)):
        days, a, b, c = (int(g) if g else None for g in m.groups())
        if c is not None:
            h, mi, sec = a, b, c
        elif days is not None and b is None:
            h, mi, sec = a, 0, 0            # Slurm "D-HH"
        elif days is not None:
            h, mi, sec = a, b, 0            # Slurm "D-HH:MM"
        else:
            h, mi, sec = 0, a, b            # "MM:SS"
        return float((days or 0) * 86400 + h * 3600 + mi * 60 + sec)
    m = _SPANS.match(s)
    if m and any(m.groups()):
        d, h, mi, sec = (float(g) if g else 0.0 for g in m.groups())
        return d * 86400 + h * 3600 + mi * 60 + sec
    return None


_DURATION_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def format_duration(text: object, unit: object = None) -> object:
    """A bare number of seconds (or of ``unit``) as HH:MM:SS, hours not wrapped into days, as
    PBS and LSF write walltime: ``172812`` -> ``48:00:12``. Anything else (``01:00:00``,
    ``1-00:00:00``, text) is returned as it was."""
    if isinstance(text, bool) or not _NUMBER.match(str(text)):
        return text
    seconds = parse_duration(str(text), unit)
    if seconds is None:
        return text
    whole = int(round(seconds))
    return "%02d:%02d:%02d" % (whole // 3600, whole % 3600 // 60, whole % 60)


def duration_paths(cond: object, out: "dict[str, str] | None" = None) -> "dict[str, str]":
    """{path: unit} of every path a condition compares ``as: duration`` (both sides of it)."""
    out = {} if out is None else out
    if isinstance(cond, dict):
        for key in ("all", "any", "first"):
            for sub in cond.get(key) or () if isinstance(cond.get(key), list) else ():
                duration_paths(sub, out)
        if "not" in cond:
            duration_paths(cond["not"], out)
        if cond.get("as") == "duration" and isinstance(cond.get("fact"), str):
            unit = str(cond.get("unit") or "s")
            sides = [cond] + [v for k, v in cond.items() if k in _ORDER and isinstance(v, dict)]
            for side in sides:
                for path in [side.get("fact")] + _paths(side.get("plus")) + _paths(side.get("minus")):
                    if isinstance(path, str):
                        out.setdefault(path, unit)
    return out


def parse_number(text):
    """A plain number (``7.5``, ``12,000``); None otherwise."""
    if isinstance(text, bool) or text is None:
        return None
    if isinstance(text, (int, float)):
        return text
    m = _NUMBER.match(str(text))
    return float(str(text).strip().replace(",", "")) if m else None


def _quantity(value, kind, unit=None):
    """``value`` as a comparable quantity of ``kind``; None when it is not one."""
    if kind == "size":
        return parse_size(value, unit)
    if kind == "duration":
        return parse_duration(value, unit)
    if kind == "version":
        return _version(value) if not isinstance(value, bool) else None
    if kind == "number" or kind is None:
        return parse_number(value)
    return None


def _compare(op, actual, expected):
    """True / False, or None when the comparison makes no sense for these values."""
    if op == "equals":
        return actual == expected
    if op == "not_equals":
        return actual != expected
    if op == "in":
        return actual in expected
    if op == "exists":
        return (actual is not None) == bool(expected)
    if op == "empty":
        return _empty(actual) == bool(expected)
    if op == "contains":
        if isinstance(actual, str):
            return str(expected).lower() in actual.lower()
        if isinstance(actual, (list, tuple)):
            return expected in actual
        if isinstance(actual, dict):
            return expected in actual
        return None
    if op in ("version_lt", "version_ge"):
        a, b = _version(actual), _version(expected)
        if a is None or b is None:
            return None
        n = max(len(a), len(b))
        a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
        return a < b if op == "version_lt" else a >= b
    if op in ("lt", "le", "gt", "ge"):
        if isinstance(actual, bool) or not isinstance(actual, (int, float)):
            return None
        return {"lt": actual < expected, "le": actual <= expected,
                "gt": actual > expected, "ge": actual >= expected}[op]
    raise ValueError("unknown operator %r" % op)


def _show(value) -> str:
    """A fact's value as JSON would write it, cut to 80 characters. Plain values
    are written here: importing json costs a terminal run a few milliseconds."""
    if value is None or isinstance(value, bool):
        text = {None: "null", True: "true", False: "false"}[value]
    elif isinstance(value, int):
        text = int.__repr__(value)
    elif isinstance(value, float) and value == value and abs(value) != float("inf"):
        text = float.__repr__(value)
    elif isinstance(value, str) and value.isprintable() and value.isascii():
        text = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    else:
        import json
        text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


_ORDER = ("lt", "le", "gt", "ge")
_ARITH = ("plus", "minus")


def _paths(spec):
    return [spec] if isinstance(spec, str) else list(spec or ())


def _side(ns, head, spec, kind, unit, used):
    """The number a side of a comparison stands for: ``head`` (a path) plus/minus other paths,
    times a factor. Raises _Unread when a value is missing or not a quantity of ``kind``."""
    def read(path):
        raw = lookup(ns, path)
        q = _quantity(raw, kind, unit)
        if q is None or isinstance(q, tuple):
            raise _Unread(path, "not a %s: %r" % (kind or "number", raw))
        _note(used, path, raw)
        return q
    total = read(head)
    for path in _paths(spec.get("plus")):
        total += read(path)
    for path in _paths(spec.get("minus")):
        total -= read(path)
    return total * float(spec.get("times", 1))


def _note(used, path, value):
    shown = "%s = %s" % (path, _show(value))
    if shown not in used:
        used.append(shown)


def _version_order(op, a, b):
    a, b = _version(a), _version(b)
    if a is None or b is None:
        return None
    n = max(len(a), len(b))
    a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]


def _is_value_path(path):
    """Paths whose absence is a fact (the log did not say it, the site did not set it), not unknown."""
    return isinstance(path, str) and path.startswith(("value.", "log.", "site."))


# Claims that a log value names one case ("the NCCL error is ncclInvalidUsage", "the library
# contains .so.11"). A log that gives no such value does not show that case: the claim is
# false, so a fix for that case does not come first on a log that never named it. A
# comparison of figures stays unknown instead: many messages carry no figures (a plain "CUDA
# out of memory"), and the case the figures would show may still be this one.
_NAMES_A_CASE = ("equals", "in", "contains")


def _leaf(cond, ns, used, absent_unknown=False):
    """One comparison; True / False / None. Never raises for missing or odd values."""
    op = next(k for k in cond if k in OPERATORS)
    try:
        return _compare_leaf(cond, op, ns, used)
    except _Absent as absent:
        if not absent_unknown and op in _NAMES_A_CASE and absent.path.startswith(("value.", "site.")):
            return False
        return None
    except _Unread:
        return None   # the probe gave a reason, or the value is not the quantity asked for


def _compare_leaf(cond, op, ns, used):
    """One comparison; raises _Unread (or _Absent) for a path without a value."""
    path = cond["fact"]
    kind, unit = cond.get("as"), cond.get("unit")
    expected = cond[op]
    arithmetic = any(k in cond for k in _ARITH + ("times",)) or isinstance(expected, dict)
    if op in _ORDER and kind == "version":
        raw = lookup(ns, path)
        other = lookup(ns, expected["fact"]) if isinstance(expected, dict) else expected
        _note(used, path, raw)
        return _version_order(op, raw, other)
    if op in _ORDER and (kind or arithmetic or isinstance(expected, str)):
        left = _side(ns, path, cond, kind, unit, used)
        if isinstance(expected, dict):
            right = _side(ns, expected["fact"], expected, kind, unit, used)
        else:
            right = _quantity(expected, kind, unit)
        if right is None:
            return None
        return {"lt": left < right, "le": left <= right, "gt": left > right, "ge": left >= right}[op]
    try:
        actual = lookup(ns, path)
    except _Unread:
        if op == "exists" and _is_value_path(path):
            return not bool(expected)   # the log did not say it: it does not exist
        raise
    _note(used, path, actual)
    if op in _ORDER and isinstance(actual, str):
        actual = parse_number(actual)   # a value from the log is text
    try:
        return _compare(op, actual, expected)
    except (TypeError, ValueError):
        return None


def evaluate(cond, facts, used=None, absent_unknown=False):
    """True / False / None (unknown). ``used`` collects "path = value" strings of the facts read.

    ``facts`` is the whole namespace: probe/scheduler facts, ``value.NAME`` (values
    extracted from the log), ``log.scheduler`` and ``site.NAME`` (the site's settings). Never raises for missing values.
    ``equals``/``in``/``contains`` on a value the log (or the site) did not give is false:
    the log does not name that case; under ``not`` and inside ``first`` (``absent_unknown``)
    it is unknown, so a negation claims nothing and the next part of ``first`` decides.
    """
    used = [] if used is None else used
    if not isinstance(cond, dict):
        return None
    if "all" in cond:
        results = [evaluate(c, facts, used, absent_unknown) for c in cond["all"]]
        if any(r is False for r in results):
            return False
        return None if any(r is None for r in results) else True
    if "any" in cond:
        results = [evaluate(c, facts, used, absent_unknown) for c in cond["any"]]
        if any(r is True for r in results):
            return True
        return None if any(r is None for r in results) else False
    if "first" in cond:  # the first part that is known decides: the log's value, else the probe's
        for c in cond["first"]:
            r = evaluate(c, facts, used, True)
            if r is not None:
                return r
        return None
    if "not" in cond:
        r = evaluate(cond["not"], facts, used, True)
        return None if r is None else not r
    if "fact" not in cond or not any(k in OPERATORS for k in cond):
        return None
    try:
        return _leaf(cond, facts if isinstance(facts, dict) else {}, used, absent_unknown)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # a malformed condition (kb validate reports it) is unknown, never a crash


def apply_fact_rules(rules, facts) -> FactOutcome:
    """Evaluate a KB entry's fact rules against a probe document (dict)."""
    buckets = {e: [] for e in EFFECTS}
    if not isinstance(facts, dict):
        return FactOutcome()
    for rule in rules or ():
        if validate_fact_rule(rule):
            continue  # an invalid rule never applies (`kb validate` reports it)
        used = []
        try:
            result = evaluate(rule["when"], facts, used)
        except Exception:
            continue
        if result is not True:
            continue
        text = ", ".join(used)
        if rule.get("note"):
            text = "%s (%s)" % (text, rule["note"] if isinstance(rule["note"], str) else rule["note"].get("en"))
        if text not in buckets[rule["effect"]]:
            buckets[rule["effect"]].append(text)
    return FactOutcome(confirmed_by=tuple(buckets["confirms"]), ruled_out_by=tuple(buckets["rules_out"]),
                       alone_by=tuple(buckets["alone"]))


# Fact paths documented in docs/probe-facts.md ("N" stands for a list index). `scheduler.*`
# is open (the scheduler modules document their own), `log.scheduler` comes from the
# engine's log markers, `value.NAME` from the entry's own `values:`.
FACT_PATHS = frozenset("""
schema version probe probe.version probe.started probe.python probe.argv probe.timeout_s probe.duration_s probe.error
host host.hostname host.os host.kernel host.machine host.user
gpu gpu.device_nodes gpu.driver_loaded gpu.kernel_driver_version gpu.nvidia_smi gpu.source gpu.nvml_error
gpu.driver_version gpu.cuda_driver_version gpu.count gpu.devices gpu.devices.N gpu.devices.N.index gpu.devices.N.name
gpu.devices.N.uuid gpu.devices.N.pci_bus_id gpu.devices.N.memory_total_mib gpu.devices.N.memory_used_mib
gpu.devices.N.utilization_pct gpu.devices.N.memory_utilization_pct gpu.devices.N.compute_capability
gpu.devices.N.temperature_c gpu.devices.N.ecc_uncorrected_volatile gpu.devices.N.processes gpu.xid_errors
torch torch.installed torch.version torch.cuda_build torch.hip_build torch.path torch.import_s torch.cuda_available
torch.device_count torch.arch_list torch.cudnn_version torch.devices torch.warnings torch.missing_archs
torch.arch_supported torch.driver_too_old
tensorflow tensorflow.installed tensorflow.version tensorflow.built_with_cuda tensorflow.cuda_build tensorflow.gpus
cupy cupy.installed cupy.version cupy.cuda_runtime cupy.device_count
env env.container env.container.runtime env.container.gpus_passed env.container.nvidia_visible_devices
env.module_system env.modules env.conda env.conda.env env.conda.prefix env.venv env.python env.python.executable
env.python.version env.cuda_home env.nvcc env.ld_library_path env.ld_library_path_missing
resources resources.shm resources.shm.total_mib resources.shm.free_mib resources.workdir resources.home
resources.workdir.free_gib resources.home.free_gib resources.cpu resources.cpu.model resources.cpu.logical_cpus
resources.cpu.allowed_cpus resources.cpu.flags resources.cpu.flags.avx resources.cpu.flags.avx2
resources.cpu.flags.avx512f resources.memory resources.memory.total_gib resources.memory.available_gib
resources.memory.cgroup_limit_gib
sample sample.seconds sample.interval_s sample.samples sample.source sample.pid sample.idle_threshold_pct sample.gpus
sample.gpus.N sample.gpus.N.index sample.gpus.N.util_mean_pct sample.gpus.N.util_max_pct sample.gpus.N.idle_fraction
sample.gpus.N.memory_used_max_mib sample.gpus.N.memory_total_mib sample.max_idle_fraction sample.summary sample.error
ladder log.scheduler
""".split())
OPEN_PREFIXES = ("scheduler.", "resources.cpu.flags.")
# `site.NAME` in a condition: the site settings of _site.yaml that conditions may read
# (documented in knowledge/_site.yaml and docs/knowledge-schema.md).
SITE_SETTINGS = frozenset("""
gpu_partition gpu_request gpu_gres scheduler cuda_module python_module scratch_dir docs_url helpdesk helpdesk_url
container_image torch_wheel_index torch_wheel_index_override default_lang lang_fallbacks
""".split())
# the batch systems a fix may be tagged for and `log.scheduler` may name: the one list
# (schema.py reads it; engine.SCHEDULER_MARKERS and render.SCHEDULER_NAMES must cover it).
# It lives here, not in schema.py, because choosing fixes reads it on the warm path, and
# schema.py loads dataclasses, which that path never does (tests/test_record.py)
SCHEDULER_NAMES = ("slurm", "pbs", "lsf", "sge", "flux", "condor", "kubernetes")


def known_path(path, values=None):
    """Whether a condition may read ``path``: a documented fact, ``log.scheduler``,
    ``site.NAME`` (a documented site setting), or ``value.NAME`` with NAME among
    ``values`` (None: any value name is accepted)."""
    if not isinstance(path, str):
        return False
    if path.startswith("site."):
        return path[len("site."):] in SITE_SETTINGS
    if path.startswith("value."):
        name = path[len("value."):]
        return bool(name) and "." not in name and (values is None or name in values)
    if path == "scheduler" or path.startswith(OPEN_PREFIXES):
        return True
    return re.sub(r"\.\d+(?=\.|$)", ".N", path) in FACT_PATHS


def _operand_problems(spec, where, values, check_paths):
    """Problems of the arithmetic keys (plus, minus, times) of one side."""
    problems = []
    for key in _ARITH:
        if key in spec:
            paths = _paths(spec[key])
            if not paths or not all(isinstance(p, str) for p in paths):
                problems.append("%s: %s takes a path or a list of paths" % (where, key))
                continue
            for p in paths:
                problems += _path_problems(p, "%s.%s" % (where, key), values, check_paths)
    if "times" in spec and (isinstance(spec["times"], bool) or not isinstance(spec["times"], (int, float))):
        problems.append("%s: times takes a number (e.g. 0.8 for 80%%)" % where)
    return problems


def _path_problems(path, where, values, check_paths):
    if not isinstance(path, str) or not _PATH.match(path):
        return ["%s: fact must be a dotted path like torch.cuda_build, not %r" % (where, path)]
    if check_paths and not known_path(path, values):
        if path.startswith("value."):
            return ["%s: unknown value %r: declare it under the entry's values: (declared: %s)" % (
                where, path, ", ".join(sorted(values or ())) or "none")]
        if path.startswith("site."):
            return ["%s: unknown site setting %r (one of: %s)" % (where, path, ", ".join(sorted(SITE_SETTINGS)))]
        return ["%s: unknown fact %r (see docs/probe-facts.md; also log.scheduler, scheduler.*, site.NAME, "
                "value.NAME)" % (where, path)]
    return []


_LEAF_KEYS = {"fact", "as", "unit"} | set(_ARITH) | {"times"}


def _validate_condition(cond, where, values=None, check_paths=False) -> list:
    if not isinstance(cond, dict) or not cond:
        return ["%s: a condition must be a mapping like {fact: torch.cuda_build, equals: null}" % where]
    for key in ("all", "any", "first"):
        if key in cond:
            problems = [] if len(cond) == 1 else ["%s: '%s' must stand alone in its mapping" % (where, key)]
            items = cond[key]
            if not isinstance(items, list) or not items:
                return problems + ["%s.%s must be a non-empty list of conditions" % (where, key)]
            for i, sub in enumerate(items):
                problems += _validate_condition(sub, "%s.%s[%d]" % (where, key, i), values, check_paths)
            return problems
    if "not" in cond:
        problems = [] if len(cond) == 1 else ["%s: 'not' must stand alone in its mapping" % where]
        return problems + _validate_condition(cond["not"], where + ".not", values, check_paths)
    if "fact" not in cond:
        return ["%s: needs 'fact' (a dotted path) or all/any/first/not" % where]
    problems = _path_problems(cond["fact"], where, values, check_paths)
    ops = [k for k in cond if k not in _LEAF_KEYS]
    if len(ops) != 1:
        return problems + ["%s: exactly one operator (%s) per condition, got %s" % (
            where, ", ".join(OPERATORS), ", ".join(map(str, ops)) or "none")]
    op, value = ops[0], cond[ops[0]]
    if op not in OPERATORS:
        return problems + ["%s: unknown operator %r (one of %s)" % (where, op, ", ".join(OPERATORS))]
    kind = cond.get("as")
    if "as" in cond and kind not in QUANTITIES:
        problems.append("%s: as must be one of %s" % (where, ", ".join(QUANTITIES)))
    if "unit" in cond:
        probe = parse_size("1 " + str(cond["unit"])) if kind == "size" else (
            _DURATION_UNITS.get(str(cond["unit"]).lower()) if kind == "duration" else None)
        if probe is None:
            problems.append("%s: unit needs as: size (B, KiB, MB, ...) or as: duration (s, min, h, d)" % where)
    arithmetic = [k for k in _ARITH + ("times",) if k in cond]
    if arithmetic and op not in _ORDER:
        problems.append("%s: %s only works with lt, le, gt, ge" % (where, "/".join(arithmetic)))
    if arithmetic and kind == "version":
        problems.append("%s: versions cannot be added or scaled" % where)
    problems += _operand_problems(cond, where, values, check_paths)
    if op in ("exists", "empty") and not isinstance(value, bool):
        problems.append("%s: %s takes true or false" % (where, op))
    if op == "in" and not isinstance(value, list):
        problems.append("%s: in takes a list" % where)
    if op in _ORDER:
        if isinstance(value, dict):
            extra = set(value) - ({"fact", "times"} | set(_ARITH))
            if "fact" not in value or extra:
                problems.append("%s: %s takes a number, a quantity, or {fact: PATH, times: N, plus/minus: PATH}"
                                % (where, op))
            else:
                problems += _path_problems(value["fact"], "%s.%s" % (where, op), values, check_paths)
                problems += _operand_problems(value, "%s.%s" % (where, op), values, check_paths)
                if kind == "version" and set(value) - {"fact"}:
                    problems.append("%s: versions cannot be added or scaled" % where)
        elif isinstance(value, bool) or not isinstance(value, (int, float, str)):
            problems.append("%s: %s takes a number" % (where, op))
        elif isinstance(value, str) and kind is None:
            problems.append("%s: %s takes a number; for %r say what it is with as: size, duration or version"
                            % (where, op, value))
        elif isinstance(value, str) and _quantity(value, kind) is None:
            problems.append("%s: %s %r is not a %s" % (where, op, value, kind))
    if op in ("version_lt", "version_ge") and _version(value) is None:
        problems.append("%s: %s takes a version like \"12.1\"" % (where, op))
    if cond.get("fact") == "log.scheduler":
        names = value if isinstance(value, list) else [value]
        if op in ("equals", "not_equals", "in") and not all(n in SCHEDULER_NAMES for n in names):
            problems.append("%s: log.scheduler is one of %s" % (where, ", ".join(SCHEDULER_NAMES)))
    return problems


def validate_condition(cond, values=None, where="when") -> list:
    """Problems of one condition (a fix's or a fact rule's ``when``), paths included:
    a fact must be documented, ``value.NAME`` must be in ``values`` (the entry's
    ``values:`` names). [] when it is valid."""
    return _validate_condition(cond, where, values, check_paths=True)


def condition_problems(data) -> list:
    """(key path, message) for every condition of a parsed entry: fixes', causes' and
    fact rules' ``when``, unknown fact paths and undeclared values included. The key
    path finds the line (schema.NodeLines.line(*key))."""
    if not isinstance(data, dict):
        return []
    values = data.get("values") if isinstance(data.get("values"), dict) else {}
    out = []
    for i, fix in enumerate(data.get("fixes") or ()):
        if isinstance(fix, dict) and isinstance(fix.get("when"), dict):
            for msg in validate_condition(fix["when"], values, "when"):
                out.append((("fixes", i, "when"), "fixes[%d]: %s" % (i + 1, msg)))
    for i, cause in enumerate(data.get("causes") or () if isinstance(data.get("causes"), list) else ()):
        if isinstance(cause, dict) and isinstance(cause.get("when"), dict):
            for msg in validate_condition(cause["when"], values, "when"):
                out.append((("causes", i, "when"), "causes[%d]: %s" % (i + 1, msg)))
    for i, rule in enumerate(data.get("facts") or () if isinstance(data.get("facts"), list) else ()):
        if isinstance(rule, dict) and isinstance(rule.get("when"), dict):
            # structure problems are reported by validate_fact_rule; here only the paths
            for msg in validate_condition(rule["when"], values, "when"):
                if "unknown fact" in msg or "unknown value" in msg:
                    out.append((("facts", i, "when"), "fact rule %d: %s" % (i + 1, msg)))
    return out


def validate_fact_rule(rule) -> list:
    """Problems with one fact rule, as human messages; [] when it is valid."""
    if not isinstance(rule, dict):
        return ["a fact rule must be a mapping with when, effect and note"]
    problems = []
    extra = set(rule) - {"when", "effect", "note"}
    if extra:
        problems.append("unknown key(s) in fact rule: %s" % ", ".join(sorted(map(str, extra))))
    if rule.get("effect") not in EFFECTS:
        problems.append("effect must be one of %s, not %r" % (", ".join(EFFECTS), rule.get("effect")))
    note = rule.get("note")
    if note is not None and not isinstance(note, str) and not (isinstance(note, dict) and "en" in note):
        problems.append("note must be text (a string or {en: ...})")
    if "when" not in rule:
        problems.append("a fact rule needs 'when' (the condition)")
    else:
        problems += _validate_condition(rule["when"], "when")
    return problems
