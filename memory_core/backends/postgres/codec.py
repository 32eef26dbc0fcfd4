"""How values are stored: exact content and metadata text, and the words for search."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from memory_core.store import InvalidRequestError, metadata_json, query_terms

SQL_INT_MAX = 2**63 - 1
# A tsvector lexeme holds at most 2047 bytes and a tsvector about 1 MB: longer words are
# left out of the index (and the tail of a message with a huge vocabulary).
_MAX_WORD_BYTES = 2000
_MAX_WORDS_BYTES = 900_000
_SHORT = (_MAX_WORD_BYTES - 8) // 4  # characters: at most 4 UTF-8 bytes each


def sql_int(value: int) -> int:
    """A count for ``LIMIT``/``OFFSET``, capped at PostgreSQL's bigint."""
    return min(value, SQL_INT_MAX)


def store_content(content: str) -> tuple[str, bytes | None]:
    """(searchable text, exact bytes or None): PostgreSQL text cannot hold NUL."""
    if "\x00" not in content:
        return content, None
    return content.replace("\x00", ""), content.encode("utf-8", "surrogatepass")


def check_key(key: str | None) -> None:
    """An idempotency key PostgreSQL text can hold: not one with a NUL character (it is
    matched by the unique index, so it cannot be stored apart as content is)."""
    if key is not None and "\x00" in key:
        raise InvalidRequestError(
            "PostgreSQL cannot store an idempotency key with a NUL character",
            argument="idempotency_key",
        )


def load_content(text: str, exact: bytes | None) -> str:
    """The content as written."""
    return text if exact is None else bytes(exact).decode("utf-8", "surrogatepass")


def store_metadata(metadata: dict[str, Any]) -> tuple[str, str | None]:
    """(exact JSON text, the same for the JSONB column or None when JSONB cannot hold it)."""
    if not metadata:
        return "{}", "{}"
    text = metadata_json(metadata)
    return text, (None if "\\u0000" in text else text)


def load_metadata(text: str | None) -> dict[str, Any]:
    """Stored metadata JSON → dict (key order kept); ``ValueError`` for text that is not
    a JSON object (only another program writes that: see :func:`.rows.metadata_of`)."""
    if not text or text == "{}":
        return {}
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("metadata is not a JSON object")
    return value


def words(content: str) -> list[str]:
    """The distinct words of ``content`` as the shared scorer splits them."""
    if len(content) <= _SHORT:  # no word, nor all of them, can reach a limit
        return query_terms(content)
    kept: list[str] = []
    total = 0
    for word in query_terms(content):
        size = _word_bytes(word)
        if size > _MAX_WORD_BYTES:
            continue
        total += size
        if total > _MAX_WORDS_BYTES:
            break
        kept.append(word)
    return kept


def _word_bytes(word: str) -> int:
    return len(word.encode("utf-8", "surrogatepass")) + 8


def tsquery(terms: list[str]) -> str:
    """A tsquery matching any of ``terms`` (each quoted: never an operator). A term too
    long for the index is left out: no stored word can match it (and PostgreSQL refuses
    a lexeme of 2 KiB or more); none left is the empty query, which matches nothing."""
    kept = (t for t in terms if _word_bytes(t) <= _MAX_WORD_BYTES)
    quoted = ("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in kept)
    return " | ".join(quoted)


def utc(moment: datetime) -> datetime:
    """A timestamptz as the library returns times: aware, UTC."""
    return moment.astimezone(UTC)
