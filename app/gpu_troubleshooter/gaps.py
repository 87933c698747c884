"""How the scanner compiles a signature's long bounded repeats (kept out of
scanner.py, which uses no Python `re` at match time; this runs once per compile)."""

import re
from functools import lru_cache

# A repeat of something that cannot match a newline, with an upper bound of 20
# or more -- a gap such as [^\n]{0,120} or .{0,80}, or a run such as \w{1,60},
# [^\s]{1,300}, [A-Za-z0-9_.-]{2,80} -- is compiled without its upper bound
# ([^\n]*, \w+, [A-Za-z0-9_.-]{2,}): to the scanner it means "further on the
# same line" or "a word of any length". Hyperscan compiles a long bounded repeat
# up to 100x slower than an open one (ten such gaps were once a third of the
# bundled database's compile time, paid at every cold start), and the line
# already bounds the match. Short bounds (under 20) are kept: they say "a word
# or two". A repeat that can cross lines ([\s\S]{0,600}, \s{0,40}, [^']{1,60})
# keeps its bound: there the bound is what keeps the match near.
_REPEAT = re.compile(r"((?<!\\)\[(?:[^\]\\]|\\.)*\]|\\[A-Za-z]|(?<!\\)\.)\{(\d+),(\d+)\}")
_OPEN_FROM = 20


@lru_cache(maxsize=None)
def _stays_on_line(atom: str) -> bool:
    """Whether one character of `atom` (a class, an escape such as \\w, or `.`) can never be a newline."""
    try:
        return re.fullmatch(atom, "\n") is None and re.fullmatch(atom, "\n", re.IGNORECASE) is None
    except re.error:  # an escape Python's re does not know: keep the bound
        return False


def _opened(m: re.Match) -> str:
    atom, least, most = m.group(1), int(m.group(2)), int(m.group(3))
    if most < _OPEN_FROM or not _stays_on_line(atom):
        return m.group(0)
    return atom + {0: "*", 1: "+"}.get(least, "{%d,}" % least)


def open_gaps(pattern: str) -> str:
    """The pattern as the scanner compiles it (see _REPEAT)."""
    if "," not in pattern:  # most signatures: no regex run at every start-up
        return pattern
    return _REPEAT.sub(_opened, pattern)
