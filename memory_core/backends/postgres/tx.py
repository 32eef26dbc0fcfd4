"""One transaction's cursor, with the store's schema filled into SQL text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from psycopg import AsyncCursor

from memory_core.telemetry import round_trip

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
        """Every row of a query."""
        await self._execute(text, params)
        return await self.cursor.fetchall()

    async def row(self, text: str, params: Params = ()) -> tuple[Any, ...] | None:
        """The first row of a query, or None."""
        await self._execute(text, params)
        found: tuple[Any, ...] | None = await self.cursor.fetchone()
        return found

    async def run(self, text: str, params: Params = ()) -> int:
        """A statement; the number of rows it touched."""
        await self._execute(text, params)
        return self.cursor.rowcount
