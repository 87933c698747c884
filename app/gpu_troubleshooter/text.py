"""Placeholders in knowledge-base texts: {site.NAME} from _site.yaml, {value.NAME} from the log.

Languages are model.Text's job."""
from __future__ import annotations

import re
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
