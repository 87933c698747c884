"""The one place the web layer gets redaction from."""
from gpu_troubleshooter.redact import redact_lines, redact_text


def redact_str(text):
    return redact_text(text).text if text else text


def redact_json(value):
    """Redact every string inside a JSON document (the probe's facts may hold env vars)."""
    if isinstance(value, str):
        return redact_str(value)
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    if isinstance(value, dict):
        return {redact_str(str(k)): redact_json(v) for k, v in value.items()}
    return value


__all__ = ["redact_lines", "redact_text", "redact_str", "redact_json"]
