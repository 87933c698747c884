"""Errors that reach a user as one clear line, never as a traceback."""
from collections.abc import Iterable
from typing import Any


class TroubleshootError(Exception):
    """Base class: the message is written for the person who ran the tool."""


class LogInputError(TroubleshootError):
    """The log cannot be read as text (missing, empty, binary, unreadable)."""


class KnowledgeBaseError(TroubleshootError):
    """The knowledge base cannot be loaded; `problems` holds every Problem found."""

    def __init__(self, problems: Iterable[Any]) -> None:
        self.problems = list(problems)
        first = self.problems[0] if self.problems else "unknown problem"
        more = f" (and {len(self.problems) - 1} more; run `troubleshoot kb validate`)" if len(self.problems) > 1 else ""
        super().__init__(f"broken knowledge base entry: {first}{more}")
