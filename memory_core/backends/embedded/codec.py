"""How values are stored in SQLite: timestamps, JSON metadata and embedding vectors.

Timestamps are integer microseconds since the Unix epoch (UTC): exact for every
``datetime``, sortable, and cheap to compare in SQL. Embeddings are little-endian float64
BLOBs, so they round-trip exactly and load without JSON parsing during vector search.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, SafeUUID

from memory_core.store import ConfigurationError, metadata_json

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
FLOAT_EXACT_MICROS = 2**52
_from_seconds = datetime.fromtimestamp


SQL_INT_MAX = 2**63 - 1

_new = object.__new__
_set = object.__setattr__
UNKNOWN_SAFETY = SafeUUID.unknown  # an enum member read once (each lookup costs a call)


def sql_int(value: int) -> int:
    """A count for ``LIMIT``/``OFFSET``: the contract allows any positive int, SQLite
    integers stop at 2**63 - 1 (binding a larger one would raise OverflowError)."""
    return min(value, SQL_INT_MAX)


def to_micros(moment: datetime) -> int:
    """An aware ``datetime`` → microseconds since the epoch."""
    return (moment - EPOCH) // MICROSECOND


def from_micros(value: int) -> datetime:
    """Microseconds since the epoch → an aware UTC ``datetime``.

    From 1970 to 2112 (below 2**52 µs) the float ``value / 1e6`` is within a quarter of a
    microsecond of the true instant, so ``fromtimestamp`` (which rounds to the nearest
    microsecond) gives it exactly, at half the cost of adding a ``timedelta``; other
    instants take the exact integer path."""
    if 0 <= value < FLOAT_EXACT_MICROS:
        return _from_seconds(value / 1_000_000, UTC)
    return EPOCH + timedelta(microseconds=value)


def now_micros() -> int:
    """The wall clock in microseconds (callers keep stored times from going backwards)."""
    return to_micros(datetime.now(UTC))


def dump_json(value: Mapping[str, Any]) -> str:
    """Metadata as JSON text (caller key order kept)."""
    return metadata_json(value)


def load_json(text: str | None) -> dict[str, Any]:
    """Stored metadata JSON → dict (``None`` → ``{}``)."""
    if not text or text == "{}":
        return {}
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


def stored_uuid(text: str) -> UUID:
    """A UUID the store wrote (canonical ``8-4-4-4-12`` hex) → ``UUID``, without the
    general parser's checks (which cost as much as building the whole message)."""
    value = _new(UUID)
    _set(value, "int", int(text.replace("-", ""), 16))
    _set(value, "is_safe", UNKNOWN_SAFETY)
    return value


def pack_vector(vector: Sequence[float] | None) -> bytes | None:
    """An embedding → a float64 BLOB."""
    if vector is None:
        return None
    try:
        return struct.pack(f"<{len(vector)}d", *vector)
    except (struct.error, TypeError):
        raise ConfigurationError("the embedder returned a vector that is not numbers") from None


def unpack_vector(blob: bytes | None) -> list[float] | None:
    """A float64 BLOB → the embedding list."""
    if blob is None:
        return None
    return list(struct.unpack(f"<{len(blob) // 8}d", blob))
