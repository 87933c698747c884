"""How the scanner compiles a signature's gaps (kept out of scanner.py, which
uses no Python `re` at match time; this runs once per compile)."""

import re

# A gap such as [^\n]{0,120} or .{0,80} (a class that cannot cross a newline)
# is compiled as [^\n]* / .*: to the scanner it means "further on the same
# line". Hyperscan compiles a long bounded gap up to 100x slower than an open
# one (in the bundled knowledge base, ten such signatures were a third of the
# database's compile time, paid at every cold start), and the line already
# bounds the match. Short bounds (under 20) are kept: they say "a word or two".
_GAP = re.compile(r"(\[\^(?:[^\]\\]|\\.)*\\n(?:[^\]\\]|\\.)*\]|(?<!\\)\.)\{([01]),(\d+)\}")


def open_gaps(pattern: str) -> str:
    """The pattern as the scanner compiles it (see _GAP)."""
    if "{0," not in pattern and "{1," not in pattern:  # most signatures: no regex run at every start-up
        return pattern
    return _GAP.sub(lambda m: m.group(0) if int(m.group(3)) < 20 else m.group(1) + ("*" if m.group(2) == "0" else "+"),
                    pattern)
