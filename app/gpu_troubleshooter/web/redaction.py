"""The one place the web layer gets redaction from."""
from gpu_troubleshooter.redact import redact_lines, redact_text, redact_value_of


def redact_str(text):
    return redact_text(text).text if text else text


def redact_json(value, key=""):
    """Redact a JSON document (the probe's facts may hold env vars): a value
    under a secret-looking key (PASSWORD, *_TOKEN, *_KEY, ...) goes whatever it
    looks like; every other string is redacted on its own."""
    if isinstance(value, str):
        marked = redact_value_of(key, value) if key else None
        return marked if marked is not None else redact_str(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and key:
        marked = redact_value_of(key, str(value))
        return marked if marked is not None else value
    if isinstance(value, list):
        return [redact_json(v, key) for v in value]
    if isinstance(value, dict):
        return {redact_str(str(k)): redact_json(v, str(k)) for k, v in value.items()}
    return value


__all__ = ["redact_lines", "redact_text", "redact_str", "redact_json"]
