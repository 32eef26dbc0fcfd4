"""Opaque listing cursors: what a store hands out as ``ConversationPage.next_cursor``.

A cursor is ``<kind>.<payload>``: ``kind`` names the kind of store that made it, so a
cursor of one store kind given to another is refused, and ``payload`` is URL-safe base64
(no padding) of a compact JSON value that only that store reads. A store builds its
cursors with :func:`encode_cursor` and reads them back with :func:`decode_cursor`, which
raises :class:`~memory_core.errors.InvalidRequestError` naming ``cursor`` for anything
that is not a cursor of that kind; the store then checks the decoded value's shape and
raises :func:`cursor_error` when it is wrong.

Decoding is bounded: a cursor longer than ``max_chars`` (default
:data:`MAX_CURSOR_CHARS`) is refused before anything is decoded, and its JSON is parsed
only once a linear scan found it no deeper than :data:`MAX_CURSOR_DEPTH` (the parser
recurses per level: deeply nested JSON would raise ``RecursionError``). A cursor is never
interpreted beyond the shape its store checks: every value is validated, and a page read
after any position costs what page 1 costs (a keyset seek).

A cursor holds a position in the listing order (the sort key of the last conversation
of a page), never data the caller has not seen, and grants nothing: it is not bound to a
user or a scope, and a position outside the caller's scope simply lists the caller's
conversations after that position.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from .errors import InvalidRequestError

MAX_CURSOR_CHARS = 4096
"""The longest cursor the contract accepts (the ones stores make are far shorter)."""

MAX_CURSOR_DEPTH = 4
"""The deepest JSON a cursor may hold (stores put a flat list or a string in one)."""

_KIND = re.compile(r"[a-z][a-z0-9-]{0,31}")
_PAYLOAD = re.compile(r"[A-Za-z0-9_-]*")


def cursor_error(message: str = "is not a cursor this backend made") -> InvalidRequestError:
    """The error for a malformed or foreign cursor (nothing was read or written)."""
    return InvalidRequestError(message, argument="cursor")


def encode_cursor(kind: str, value: Any) -> str:
    """``value`` (JSON-serialisable) as a cursor of ``kind`` (lower case letters, digits
    and ``-``)."""
    if not _KIND.fullmatch(kind):
        raise ValueError(f"cursor kind {kind!r} must match {_KIND.pattern}")
    raw = json.dumps(value, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    return f"{kind}.{base64.urlsafe_b64encode(raw).decode('ascii').rstrip('=')}"


def decode_cursor(kind: str, cursor: str, *, max_chars: int = MAX_CURSOR_CHARS) -> Any:
    """The value a cursor of ``kind`` holds; :func:`cursor_error` for anything else,
    including a cursor over ``max_chars`` characters (refused before decoding) or JSON
    nested deeper than :data:`MAX_CURSOR_DEPTH`."""
    if not isinstance(cursor, str) or len(cursor) > max_chars:
        raise cursor_error(
            f"is not a cursor of the {kind} backend (at most {max_chars} characters)"
        )
    prefix, dot, payload = cursor.partition(".")
    if not dot or prefix != kind:
        raise cursor_error(f"is not a cursor of the {kind} backend")
    if not _PAYLOAD.fullmatch(payload):  # URL-safe base64 without padding, as made
        raise cursor_error()
    try:
        padded = payload + "=" * (-len(payload) % 4)
        text = base64.b64decode(padded, altchars=b"-_", validate=True).decode("ascii")
    except (ValueError, binascii.Error):  # bad base64, or bytes that are not ASCII
        raise cursor_error() from None
    if _depth(text) > MAX_CURSOR_DEPTH:
        raise cursor_error()
    try:
        return json.loads(text)
    except ValueError:  # not JSON, or an integer too long to convert
        raise cursor_error() from None


def _depth(text: str) -> int:
    """How deep the arrays and objects of JSON ``text`` nest (brackets inside strings do
    not count), in one pass without recursion; stops once past :data:`MAX_CURSOR_DEPTH`."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_CURSOR_DEPTH:
                    break
        elif char in "]}":
            depth -= 1
    return deepest


__all__ = ["MAX_CURSOR_CHARS", "MAX_CURSOR_DEPTH", "cursor_error", "decode_cursor", "encode_cursor"]
