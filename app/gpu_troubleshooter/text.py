"""Placeholders in knowledge-base texts: {site.NAME} from _site.yaml, {value.NAME} from the log;
the terminal's width.

Languages are model.Text's job."""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Any

_PLACEHOLDER = re.compile(r"\{(site|value)\.([A-Za-z0-9_]+)\}")
_VALUE = re.compile(r"\{value\.([A-Za-z0-9_]+)\}")

# The end of a sentence, but not the dot of an abbreviation used mid-sentence
# ("e.g. a wheel ...", Croatian/Serbian "npr."), nor of a version or file name (no space).
SENTENCE_END = re.compile(r"(?<![\s(]e\.g\.)(?<![\s(]i\.e\.)(?<![\s(]vs\.)(?<![\s(]cf\.)"
                          r"(?<![\s(]npr\.)(?<![\s(]tj\.)(?<=[.!?。])\s")
# Where a block of prose ends: a blank line, or a new list item on the next line.
_BLOCK_END = re.compile(r"\n\s*\n|\n(?=\s*(?:[-*]|\d+[.)])\s)")


def fill_placeholders(text: str, site: Mapping[str, Any], values: Mapping[str, Any]) -> str:
    """Replace {site.X} and {value.X}; leave a readable <X> where nothing is known."""
    def repl(m: re.Match[str]) -> str:
        source = site if m.group(1) == "site" else values
        value = source.get(m.group(2))
        return str(value) if value not in (None, "") else f"<{m.group(2)}>"
    return _PLACEHOLDER.sub(repl, text)


def without_absent_values(text: str, values: Mapping[str, Any]) -> str:
    """Prose without the parts that quote a log value this log did not give.

    "PyTorch itself held {value.allocated} of the card's {value.total}: this job needs
    less memory. Halve the batch size ..." reads as "Halve the batch size ..." for a log
    that gave no figures, instead of showing "<allocated>" to the reader. The smallest
    part that holds the placeholder goes: its parenthesis "(`{value.node}` in this log)",
    else its sentence. Code is not prose: there "<module>" is for the reader to fill in.
    A "quoted message" (for the reader to send to the helpdesk) keeps its placeholders. When
    nothing would be left, the text stays as it is (its placeholders then read <NAME>).
    """
    if "{value." not in text:
        return text
    out = text
    for _ in range(20):  # each round removes one part; a text quotes few values
        m = next((m for m in _VALUE.finditer(out) if values.get(m.group(1)) in (None, "")
                  and not _quoted(out, m.start())), None)
        if m is None:
            break
        start, end = _enclosing(out, m.start(), m.end())
        head, tail = out[:start], out[end:]
        if head.endswith((" ", "\t")) and (not tail or tail[0] in " \t\n.,;:!?)"):
            head = head.rstrip(" \t")   # no stray space where the part was
        if head.endswith("\n") and tail.startswith("\n"):
            tail = tail[1:]               # nor an empty line where a list item was
        out = head + tail
    return out if out.strip() else text


def _block_start(text: str, at: int) -> int:
    """Where the block of prose holding text[at] begins."""
    return max((m.end() for m in _BLOCK_END.finditer(text, 0, at)), default=0)


def _quoted(text: str, at: int) -> bool:
    """Inside a "quoted message" of its block: a text for the reader to send, placeholders kept."""
    return text.count('"', _block_start(text, at), at) % 2 == 1


def without_unnamed_pages(text: str, unnamed: tuple[str, ...]) -> str:
    """Prose without the parentheses that only point to a site page the site did not name:
    "... a filesystem the site recommends for overlays ({site.docs_url})." reads as "... for
    overlays." for a site with no `docs_url`. `unnamed`: such {site.NAME} names. A placeholder
    outside a parenthesis stays: it carries the sentence, and a label names the page."""
    out = text
    for name in unnamed:
        token = re.compile(re.escape("{site.%s}" % name))
        for _ in range(20):  # each round removes one parenthesis
            span = next(filter(None, (_parenthesis(out, m.start(), m.end()) for m in token.finditer(out))), None)
            if span is None:
                break
            out = out[:span[0]] + out[span[1]:]
    return out


def _parenthesis(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The parenthesis around text[start:end] in its block (with the space before it), if any."""
    lo = _block_start(text, start)
    hi = next((m.start() for m in _BLOCK_END.finditer(text, end)), len(text))
    opened = text.rfind("(", lo, start)
    if opened >= 0 and text.find(")", opened, start) < 0:
        closed = text.find(")", end, hi)
        if closed >= 0 and text.find("(", end, closed) < 0:
            while opened > lo and text[opened - 1] in " \t\n":
                opened -= 1
            return opened, closed + 1
    return None


def _enclosing(text: str, start: int, end: int) -> tuple[int, int]:
    """The span to drop for the placeholder at text[start:end]: the parenthesis around it
    (with the space before it), else the sentence (with the space after it)."""
    around = _parenthesis(text, start, end)
    if around is not None:
        return around
    lo = _block_start(text, start)
    hi = next((m.start() for m in _BLOCK_END.finditer(text, end)), len(text))
    begin = max((m.end() for m in SENTENCE_END.finditer(text, lo, start)), default=lo)
    after = SENTENCE_END.search(text, end, hi)
    return begin, (after.end() if after else hi)


def terminal_columns(fallback: int = 80) -> int:
    """shutil.get_terminal_size((fallback, 24)).columns, without importing shutil
    (it loads bz2, lzma and fnmatch: start-up time): $COLUMNS, else the terminal's, else `fallback`."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        stdout = sys.__stdout__
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout is not None else fallback
        except (AttributeError, ValueError, OSError):
            columns = fallback
    return columns or fallback
