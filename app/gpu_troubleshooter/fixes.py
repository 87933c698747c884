"""Which of an entry's fixes and causes apply to this job, and in which order.

The one place that decides it, for the command line, the JSON output and the
web pages alike. A fix may be tagged with a scheduler (`scheduler: slurm`) and
carry a condition (`when:`), and so may a cause (`when:` only); conditions are
evaluated by facts.evaluate over one namespace:
the probe's facts as they are, plus `value.NAME` (values found in the log) and
`log.scheduler` (the scheduler the engine saw in the log), and `site.NAME`
(the site's settings in _site.yaml). Conditions are
three-valued: a fact nobody could read makes `held` None, not False; a fix
for a case the log does not name (`equals`/`in`/`contains` on a value it
did not give) is False (facts.evaluate).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Optional, cast

from .model import Entry, Fix, Text

__all__ = ["choose_causes", "choose_fixes", "condition_holds", "condition_namespace", "fix_holds",
           "job_scheduler"]


def job_scheduler(scheduler: Optional[str], facts: Optional[Mapping[str, Any]],
                  site: Optional[Mapping[str, Any]] = None) -> Optional[str]:
    """The scheduler whose tagged fixes apply: the one seen in the log, else the
    probe's `scheduler.kind`, else the site's `scheduler` setting (a site with one
    batch system says so in its _site.yaml). None: nobody knows."""
    from .facts import SCHEDULER_NAMES
    sched = (facts or {}).get("scheduler")
    for name in (scheduler, sched.get("kind") if isinstance(sched, Mapping) else None,
                 (site or {}).get("scheduler")):
        if isinstance(name, str) and name.strip().lower() in SCHEDULER_NAMES:
            return name.strip().lower()
    return None


def condition_namespace(values: Mapping[str, Any], facts: Optional[Mapping[str, Any]],
                        scheduler: Optional[str], site: Optional[Mapping[str, Any]] = None) -> dict[str, Any]:
    """What a fix's or a cause's `when` can name: facts + value.* + log.* + site.* (the
    site's settings, so that a site can say which advice wins, e.g. its own wheel index)."""
    return {**(facts or {}), "value": dict(values), "log": {"scheduler": scheduler},
            "site": {k: v for k, v in (site or {}).items() if v not in (None, "")}}


def condition_holds(when: Optional[Mapping[str, Any]], namespace: Mapping[str, Any]) -> Optional[bool]:
    """True / False / None (unknown, or no condition) for one `when` of a fix or a cause."""
    if when is None:
        return None
    from . import facts
    evaluate = cast(Callable[[Mapping[str, Any], Mapping[str, Any]], Optional[bool]], facts.evaluate)
    try:
        return evaluate(when, namespace)
    except (KeyError, TypeError, ValueError, StopIteration):  # a condition `kb validate` would reject
        return None


def fix_holds(fix: Fix, namespace: Mapping[str, Any], scheduler: Optional[str]) -> Optional[bool]:
    """True / False / None (unknown, or nothing to check) for one fix."""
    held: Optional[bool] = None
    if fix.scheduler is not None and scheduler is not None:
        if fix.scheduler != scheduler:
            return False
        held = True
    if fix.when is not None:
        result = condition_holds(fix.when, namespace)
        if result is False:
            return False
        held = None if result is None else (held is not False)
    return held


_RANK = {True: 0, None: 1, False: 2}


def choose_fixes(entry: Entry, values: Mapping[str, Any], facts: Optional[Mapping[str, Any]],
                 scheduler: Optional[str], site: Optional[Mapping[str, Any]] = None
                 ) -> tuple[tuple[Fix, Optional[bool]], ...]:
    """(fix, held) pairs: fixes whose condition holds first, then those with
    nothing to check (or unknown), then those that do not apply; file order
    inside each group."""
    namespace = condition_namespace(values, facts, scheduler, site)
    judged = [(fix, fix_holds(fix, namespace, job_scheduler(scheduler, facts, site))) for fix in entry.fixes]
    return tuple(sorted(judged, key=lambda pair: _RANK[pair[1]]))


def choose_causes(entry: Entry, values: Mapping[str, Any], facts: Optional[Mapping[str, Any]],
                  scheduler: Optional[str], site: Optional[Mapping[str, Any]] = None
                  ) -> tuple[tuple[Text, Optional[bool]], ...]:
    """(cause, held) pairs in the same order as choose_fixes: causes whose `when`
    holds first, unconditional (or unknown) next, false last; file order inside each."""
    namespace = condition_namespace(values, facts, scheduler, site)
    conditions = entry.cause_when or (None,) * len(entry.causes)
    judged = [(cause, condition_holds(when, namespace)) for cause, when in zip(entry.causes, conditions)]
    return tuple(sorted(judged, key=lambda pair: _RANK[pair[1]]))
