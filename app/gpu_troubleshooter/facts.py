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

import json
import re
from dataclasses import dataclass

__all__ = ["FactOutcome", "apply_fact_rules", "validate_fact_rule", "lookup", "evaluate", "EFFECTS", "OPERATORS"]

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
            raise _Unread(path, "not reported")
    if _is_unknown(node):
        raise _Unread(path, node["unknown"])
    return node


def _version(value):
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(value if value is not None else ""))
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def _empty(value) -> bool:
    return value is None or value == "" or (isinstance(value, (list, dict, tuple)) and len(value) == 0)


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
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def evaluate(cond, facts, used=None):
    """True / False / None (unknown). ``used`` collects "path = value" strings of the facts read."""
    used = [] if used is None else used
    if "all" in cond:
        results = [evaluate(c, facts, used) for c in cond["all"]]
        if any(r is False for r in results):
            return False
        return None if any(r is None for r in results) else True
    if "any" in cond:
        results = [evaluate(c, facts, used) for c in cond["any"]]
        if any(r is True for r in results):
            return True
        return None if any(r is None for r in results) else False
    if "not" in cond:
        r = evaluate(cond["not"], facts, used)
        return None if r is None else not r
    path = cond["fact"]
    op = next(k for k in cond if k != "fact")
    try:
        actual = lookup(facts, path)
    except _Unread:
        return None
    result = _compare(op, actual, cond[op])
    shown = "%s = %s" % (path, _show(actual))
    if shown not in used:
        used.append(shown)
    return result


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


def _validate_condition(cond, where) -> list:
    if not isinstance(cond, dict) or not cond:
        return ["%s: a condition must be a mapping like {fact: torch.cuda_build, equals: null}" % where]
    for key in ("all", "any"):
        if key in cond:
            problems = [] if len(cond) == 1 else ["%s: '%s' must stand alone in its mapping" % (where, key)]
            items = cond[key]
            if not isinstance(items, list) or not items:
                return problems + ["%s.%s must be a non-empty list of conditions" % (where, key)]
            for i, sub in enumerate(items):
                problems += _validate_condition(sub, "%s.%s[%d]" % (where, key, i))
            return problems
    if "not" in cond:
        problems = [] if len(cond) == 1 else ["%s: 'not' must stand alone in its mapping" % where]
        return problems + _validate_condition(cond["not"], where + ".not")
    if "fact" not in cond:
        return ["%s: needs 'fact' (a dotted path) or all/any/not" % where]
    path = cond["fact"]
    problems = []
    if not isinstance(path, str) or not _PATH.match(path):
        problems.append("%s: fact must be a dotted path like torch.cuda_build, not %r" % (where, path))
    ops = [k for k in cond if k != "fact"]
    if len(ops) != 1:
        return problems + ["%s: exactly one operator (%s) per condition, got %s" % (
            where, ", ".join(OPERATORS), ", ".join(ops) or "none")]
    op, value = ops[0], cond[ops[0]]
    if op not in OPERATORS:
        return problems + ["%s: unknown operator %r (one of %s)" % (where, op, ", ".join(OPERATORS))]
    if op in ("exists", "empty") and not isinstance(value, bool):
        problems.append("%s: %s takes true or false" % (where, op))
    if op == "in" and not isinstance(value, list):
        problems.append("%s: in takes a list" % where)
    if op in ("lt", "le", "gt", "ge") and (isinstance(value, bool) or not isinstance(value, (int, float))):
        problems.append("%s: %s takes a number" % (where, op))
    if op in ("version_lt", "version_ge") and _version(value) is None:
        problems.append("%s: %s takes a version like \"12.1\"" % (where, op))
    return problems


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
