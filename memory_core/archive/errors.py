"""Errors of the transfer package."""

from __future__ import annotations

from ..errors import InvalidRequestError


class ArchiveError(InvalidRequestError):
    """An archive line is not a valid record. ``line`` is its 1-based line number."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        self.line = line
        where = f"line {line}: " if line is not None else ""
        super().__init__(where + message, argument="source")
