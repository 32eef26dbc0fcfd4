"""Log text that cannot forge a log line or drive a terminal.

Request paths, workspaces and error texts can carry anything a client sent (``%0D%0A``
decodes to a line break, ``\\x1b[`` starts a terminal escape). :func:`escape` writes
control characters, Unicode line separators and bidirectional overrides as visible
escapes (``\\x0a``, ``\\u2028``), and a backslash as ``\\\\``, so an escaped text
cannot be mistaken for another one. :class:`EscapingFormatter` applies it to every
record's message.
"""

from __future__ import annotations

import logging
import re

_UNSAFE = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\\":
        return "\\\\"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: object) -> str:
    """``str(text)`` with every unsafe character written as an escape."""
    return _UNSAFE.sub(_visible, str(text))


class EscapingFormatter(logging.Formatter):
    """A formatter whose message part is :func:`escape`-d (tracebacks keep their lines)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        saved = record.message
        record.message = escape(saved)
        try:
            return super().formatMessage(record)
        finally:
            record.message = saved
