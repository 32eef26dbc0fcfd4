"""One transaction's cursor, with the store's schema filled into SQL text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from psycopg import AsyncCursor, DataError

from memory_core.store import round_trip

from . import times

Params = Sequence[Any] | Mapping[str, Any]
"""Positional (``%s``) or named (``%(name)s``) parameters."""


class Tx:
    """A cursor inside a transaction. SQL names tables as ``{s}.table``; the schema (a
    checked identifier, see :func:`~.config.check_schema`) replaces ``{s}``.
    ``vector_schema``: where pgvector's type lives when the store uses it (see
    :mod:`.vector`), else None."""

    def __init__(
        self, cursor: AsyncCursor[Any], schema: str, vector_schema: str | None = None
    ) -> None:
        self.cursor = cursor
        self.schema = schema
        self.vector_schema = vector_schema
        self._tolerant = False  # see .times: once a read met a time out of range

    def sql(self, text: str) -> str:
        """``text`` with the schema filled in."""
        return text.replace("{s}.", self.schema + ".")

    async def _execute(self, text: str, params: Sequence[Any] | Mapping[str, Any]) -> None:
        """Every statement passes here: one database client span when telemetry is on."""
        statement, info = self.sql(text), self.cursor.connection.info
        server = (info.host, info.port)
        with round_trip("postgresql", namespace=info.dbname, server=server, query=statement):
            await self.cursor.execute(statement, params)

    async def rows(self, text: str, params: Params = ()) -> list[tuple[Any, ...]]:
        """Every row of a query (see :mod:`.times` for a time out of Python's range)."""
        return await self._fetch(text, params, None)

    async def row(self, text: str, params: Params = ()) -> tuple[Any, ...] | None:
        """The first row of a query, or None."""
        found = await self._fetch(text, params, 1)
        return found[0] if found else None

    async def _fetch(self, text: str, params: Params, size: int | None) -> list[tuple[Any, ...]]:
        await self._execute(text, params)
        try:
            return await self._take(size)
        except DataError as exc:
            if not (times.outside(exc) and _reads_only(text)):
                raise
        times.tolerate(self.cursor)
        self._tolerant = True
        await self._execute(text, params)
        return await self._take(size)

    async def _take(self, size: int | None) -> list[tuple[Any, ...]]:
        found = await (self.cursor.fetchall() if size is None else self.cursor.fetchmany(size))
        if not self._tolerant:
            return found
        names = [column.name for column in self.cursor.description or ()]
        return times.settled(found, names)

    async def run(self, text: str, params: Params = ()) -> int:
        """A statement; the number of rows it touched."""
        await self._execute(text, params)
        return self.cursor.rowcount


def _reads_only(text: str) -> bool:
    """A statement that can run twice: a SELECT (a write's RETURNING cannot)."""
    return text.lstrip().upper().startswith("SELECT")
