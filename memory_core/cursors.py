"""Opaque listing cursors: what a store hands out as ``ConversationPage.next_cursor``.

A cursor is ``<kind>.<payload>``: ``kind`` names the kind of store that made it, so a
cursor of one store kind given to another is refused, and ``payload`` is URL-safe base64
(no padding) of a compact JSON value that only that store reads. A store builds its
cursors with :func:`encode_cursor` and reads them back with :func:`decode_cursor`, which
raises :class:`~memory_core.errors.InvalidRequestError` naming ``cursor`` for anything
that is not a cursor of that kind; the store then checks the decoded value's shape and
raises :func:`cursor_error` when it is wrong.

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

_KIND = re.compile(r"[a-z][a-z0-9-]{0,31}")


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


def decode_cursor(kind: str, cursor: str) -> Any:
    """The value a cursor of ``kind`` holds; :func:`cursor_error` for anything else."""
    prefix, dot, payload = cursor.partition(".")
    if not dot or prefix != kind:
        raise cursor_error(f"is not a cursor of the {kind} backend")
    try:
        padded = payload + "=" * (-len(payload) % 4)
        raw = base64.b64decode(padded, altchars=b"-_", validate=True)
        return json.loads(raw.decode("ascii"))
    except (ValueError, binascii.Error):
        raise cursor_error() from None


__all__ = ["MAX_CURSOR_CHARS", "cursor_error", "decode_cursor", "encode_cursor"]
