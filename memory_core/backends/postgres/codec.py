"""How values are stored: exact content, text and metadata, and the words for search.

PostgreSQL text and JSONB cannot hold a NUL character. Content keeps its exact bytes
beside the text (:func:`store_content`). Every other string that may hold one (a title,
an entity's name, its name key and description, an idempotency key) is stored escaped
(:func:`store_text`): U+0001 as U+0001 ``1`` and NUL as U+0001 ``0``, so a string with
neither is stored as it is, and the escaped one still matches exactly in an index.
Metadata keeps its exact JSON text; its JSONB copy for filters escapes the strings of a
document that holds a NUL the same way, wrapped in a one-element array (a document is
always an object otherwise: see :func:`store_metadata` and :mod:`.search`).
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_core.store import metadata_json, query_terms

SQL_INT_MAX = 2**63 - 1
# A tsvector lexeme holds at most 2047 bytes (a tsquery word a little less) and a tsvector
# 1,048,575 bytes of lexemes: array_to_tsvector checks neither, and past them a tsvector
# silently loses words. A longer word is indexed by a digest; a message with more words
# than one tsvector holds spreads them over rows of message_words (see .schema).
_MAX_WORD_BYTES = 2000
_MAX_PART_BYTES = 1_048_575
_SHORT = _MAX_WORD_BYTES // 4  # characters: no word this short reaches a limit
SAFE_CHARS = _MAX_PART_BYTES // 4
"""Content of at most this many characters has words for one tsvector (4 bytes each at
most), so its message needs no row of ``message_words``."""

_ESCAPE = "\x01"
_ESCAPED = re.compile("\x01([01])")


def sql_int(value: int) -> int:
    """A count for ``LIMIT``/``OFFSET``, capped at PostgreSQL's bigint."""
    return min(value, SQL_INT_MAX)


def store_content(content: str) -> tuple[str, bytes | None]:
    """(searchable text, exact bytes or None): PostgreSQL text cannot hold NUL."""
    if "\x00" not in content:
        return content, None
    return content.replace("\x00", ""), content.encode("utf-8", "surrogatepass")


def store_text(value: str) -> str:
    """``value`` as a text column holds it (see the module docstring)."""
    if "\x00" not in value and _ESCAPE not in value:
        return value
    return value.replace(_ESCAPE, _ESCAPE + "1").replace("\x00", _ESCAPE + "0")


def load_text(value: str) -> str:
    """A value :func:`store_text` stored, as it was given."""
    if _ESCAPE not in value:
        return value
    return _ESCAPED.sub(_unescape, value)


def store_optional(value: str | None) -> str | None:
    """:func:`store_text` of a value that may be None."""
    return None if value is None else store_text(value)


def load_optional(value: str | None) -> str | None:
    """:func:`load_text` of a value that may be None."""
    return None if value is None else load_text(value)


def _unescape(found: re.Match[str]) -> str:
    return _ESCAPE if found[1] == "1" else "\x00"


def store_json(value: Any) -> Any:
    """A JSON value with every string (keys too) as :func:`store_text` stores it."""
    if isinstance(value, str):
        return store_text(value)
    if isinstance(value, dict):
        return {store_text(k): store_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [store_json(item) for item in value]
    return value


def holds_nul(value: Any) -> bool:
    """Whether a JSON value has a NUL in one of its strings (keys too)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(holds_nul(k) or holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(holds_nul(item) for item in value)
    return False


def load_content(text: str, exact: bytes | None) -> str:
    """The content as written."""
    return text if exact is None else bytes(exact).decode("utf-8", "surrogatepass")


def store_metadata(metadata: dict[str, Any]) -> tuple[str, str]:
    """(exact JSON text, the JSONB document for filters). A document with a NUL (which
    JSONB cannot hold) has its strings escaped as :func:`store_json` does and is wrapped
    in a one-element array, so filters can tell it from an object."""
    if not metadata:
        return "{}", "{}"
    text = metadata_json(metadata)
    if "\\u0000" not in text:
        return text, text
    return text, "[" + escaped_json(text) + "]"


def escaped_json(text: str) -> str:
    """JSON ``text`` with its strings escaped as :func:`store_text` escapes them, done on
    the text: outside an escaped backslash (``\\\\``), ``\\u0001`` and ``\\u0000`` are the
    characters themselves (what the migration to version 2 does in SQL)."""
    parts = text.split("\\\\")
    return "\\\\".join(
        p.replace("\\u0001", "\\u00011").replace("\\u0000", "\\u00010") for p in parts
    )


def load_metadata(text: str | None) -> dict[str, Any]:
    """Stored metadata JSON → dict (key order kept); ``ValueError`` for text that is not
    a JSON object (only another program writes that: see :func:`.rows.metadata_of`)."""
    if not text or text == "{}":
        return {}
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("metadata is not a JSON object")
    return value


def word_parts(content: str) -> list[list[str]]:
    """The distinct words of ``content`` as the shared scorer splits them, as lexemes
    (:func:`lexeme`), in parts that each fit one tsvector: one part unless the content
    is longer than :data:`SAFE_CHARS`."""
    if len(content) <= _SHORT:
        return [query_terms(content)]
    parts: list[list[str]] = [[]]
    total = 0
    for word in query_terms(content):
        item = lexeme(word)
        size = len(item.encode("utf-8"))
        if total + size > _MAX_PART_BYTES:
            parts.append([])
            total = 0
        parts[-1].append(item)
        total += size
    return parts


def lexeme(word: str) -> str:
    """How ``word`` is indexed: as it is, or when it is too long for a lexeme, ``#`` and
    its SHA-256 (``#`` is no word character, so it never equals a word)."""
    if len(word) <= _SHORT or len(word.encode("utf-8")) <= _MAX_WORD_BYTES:
        return word
    return "#" + hashlib.sha256(word.encode("utf-8")).hexdigest()


def tsquery(terms: list[str]) -> str:
    """A tsquery matching any of ``terms`` as :func:`lexeme` indexes them (each quoted:
    never an operator)."""
    quoted = ("'" + lexeme(t).replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)
    return " | ".join(quoted)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def micros(moment: datetime) -> int:
    """An aware time as whole microseconds since 1970 (what cursors and ties compare)."""
    return (moment - _EPOCH) // _MICROSECOND


def utc(moment: datetime) -> datetime:
    """A timestamptz as the library returns times: aware, UTC (the store's sessions are
    in UTC, so psycopg's times mostly are already: then they are returned as they are)."""
    return moment if moment.tzinfo is UTC else moment.astimezone(UTC)
