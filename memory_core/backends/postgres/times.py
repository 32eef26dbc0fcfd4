"""Times another program stored outside Python's ``datetime`` range (PostgreSQL has years
4713 BC to 294276 AD and ``±infinity``; Python 1 to 9999).

psycopg fails the whole fetch on one such value. The hot path keeps psycopg's own fast
loader; a read whose fetch fails that way is run again (it is a SELECT: nothing is written
twice) with :class:`_Tolerant` loading ``timestamptz``, and :func:`settled` turns each
value it could not load into the nearest time Python has, with a warning naming the
record (:func:`memory_core.foreign.out_of_range`). A write whose returned row holds such
a time fails with a StoreError that says so (:func:`.errors.translate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple
from uuid import UUID

from psycopg import AsyncCursor, DataError
from psycopg.abc import Buffer
from psycopg.types.datetime import TimestamptzLoader

from memory_core.store import foreign

BACKEND = "postgres"
_OUTSIDE = ("timestamp too small", "timestamp too large")


class _Outside(NamedTuple):
    """A stored time the loader could not load: its text, and whether it is after
    Python's range."""

    stored: str
    late: bool


class _Tolerant(TimestamptzLoader):
    def load(self, data: Buffer) -> Any:
        try:
            return super().load(data)
        except DataError:
            stored = bytes(data).decode("utf-8", "replace")
            return _Outside(stored, not (stored == "-infinity" or stored.endswith("BC")))


def outside(exc: BaseException) -> bool:
    """Whether ``exc`` is psycopg failing to load a time outside Python's range."""
    return isinstance(exc, DataError) and str(exc).startswith(_OUTSIDE)


def tolerate(cursor: AsyncCursor[Any]) -> None:
    """Load every later ``timestamptz`` of ``cursor`` with the tolerant loader."""
    cursor.adapters.register_loader("timestamptz", _Tolerant)


def settled(rows: list[tuple[Any, ...]], names: Sequence[str]) -> list[tuple[Any, ...]]:
    """``rows`` with each time :class:`_Tolerant` could not load replaced by the nearest
    one Python has; the warning names the column (``names``) and the record (the nearest
    UUID to the column's left: the id of the row's conversation or message)."""
    return [
        row if not any(isinstance(v, _Outside) for v in row) else _settle(row, names)
        for row in rows
    ]


def _settle(row: tuple[Any, ...], names: Sequence[str]) -> tuple[Any, ...]:
    values = list(row)
    for i, value in enumerate(row):
        if isinstance(value, _Outside):
            record = next((v for v in reversed(row[:i]) if isinstance(v, UUID)), None)
            values[i] = foreign.out_of_range(
                BACKEND, "record", record, names[i], value.stored, late=value.late
            )
    return tuple(values)
