"""Localised text and placeholders in knowledge-base fields."""
import re

_PLACEHOLDER = re.compile(r"\{(site|value)\.([A-Za-z0-9_]+)\}")


def localised(text, lang="en"):
    """A text field is a string (English) or a {lang: string} map with `en`."""
    if isinstance(text, dict):
        return text.get(lang) or text.get("en") or ""
    return text or ""


def fill_placeholders(text, site, values):
    """Replace {site.X} and {value.X}; leave a readable <X> where nothing is known."""
    def repl(m):
        source = site if m.group(1) == "site" else values
        value = source.get(m.group(2))
        return str(value) if value not in (None, "") else f"<{m.group(2)}>"
    return _PLACEHOLDER.sub(repl, text)
