"""Numbers from requests: ASCII digits in a range, or a clear 400.

str.isdigit() accepts "²" and int() accepts 10**30; neither may reach the
database (SQLite and PostgreSQL integers end at 2**63 and 2**31)."""
from typing import Optional

MAX_ID = 2**31 - 1


class BadParam(ValueError):
    """A request parameter that is not what the endpoint takes; the message is for the client."""


def parse_int(value, name: str, lo: int = 0, hi: int = MAX_ID, default: Optional[int] = None) -> Optional[int]:
    if value is None or value == "":
        return default
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise BadParam(f"{name} must be a whole number")
    text = str(value).strip()
    digits = text[1:] if text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 12:
        raise BadParam(f"{name} must be a whole number from {lo} to {hi}")
    number = int(text)
    if not lo <= number <= hi:
        raise BadParam(f"{name} must be a whole number from {lo} to {hi}")
    return number


def valid_id(value: int) -> bool:
    """An id from a URL converter that a database column can hold."""
    return 0 < value <= MAX_ID
