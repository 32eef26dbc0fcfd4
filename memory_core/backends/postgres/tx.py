"""One transaction's cursor, with the store's schema filled into SQL text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import AsyncCursor


class Tx:
    """A cursor inside a transaction. SQL names tables as ``{s}.table``; the schema (a
    checked identifier, see :func:`~.config.check_schema`) replaces ``{s}``."""

    def __init__(self, cursor: AsyncCursor[Any], schema: str) -> None:
        self.cursor = cursor
        self.schema = schema

    def sql(self, text: str) -> str:
        """``text`` with the schema filled in."""
        return text.replace("{s}.", self.schema + ".")

    async def rows(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of a query."""
        await self.cursor.execute(self.sql(text), params)
        return await self.cursor.fetchall()

    async def row(self, text: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """The first row of a query, or None."""
        await self.cursor.execute(self.sql(text), params)
        found: tuple[Any, ...] | None = await self.cursor.fetchone()
        return found

    async def run(self, text: str, params: Sequence[Any] = ()) -> int:
        """A statement; the number of rows it touched."""
        await self.cursor.execute(self.sql(text), params)
        return self.cursor.rowcount
