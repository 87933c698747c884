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


def fill_placeholders(text: str, site: Mapping[str, Any], values: Mapping[str, Any]) -> str:
    """Replace {site.X} and {value.X}; leave a readable <X> where nothing is known."""
    def repl(m: re.Match[str]) -> str:
        source = site if m.group(1) == "site" else values
        value = source.get(m.group(2))
        return str(value) if value not in (None, "") else f"<{m.group(2)}>"
    return _PLACEHOLDER.sub(repl, text)


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
