"""Fixtures and helpers for the embedded backend's tests (imported by each test module)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from backends.embedded import EmbeddedBackend

TABLES = ("conversations", "messages", "entities", "mentions", "schema_info")


@pytest.fixture(name="memory")
async def memory_fixture() -> AsyncIterator[EmbeddedBackend]:
    """A fresh private ``memory://`` backend, opened."""
    async with EmbeddedBackend("memory://") as backend:
        yield backend


@pytest.fixture(name="tenants")
async def tenants_fixture() -> AsyncIterator[EmbeddedBackend]:
    """A fresh multi-tenant ``memory://`` backend, opened."""
    async with EmbeddedBackend("memory://", multi_tenant=True) as backend:
        yield backend


@pytest.fixture(name="db_url")
def db_url_fixture(tmp_path: Path) -> str:
    """A ``sqlite:///`` URL of a file that does not exist yet (absolute path)."""
    return f"sqlite:///{tmp_path / 'nested' / 'store.db'}"


async def snapshot(backend: EmbeddedBackend) -> dict[str, Any]:
    """Every row of every table plus the FTS index content: equal snapshots mean nothing
    was written."""

    def read(conn: sqlite3.Connection) -> dict[str, Any]:
        data: dict[str, Any] = {
            table: sorted(tuple(row) for row in conn.execute(f"SELECT * FROM {table}"))
            for table in TABLES
        }
        data["fts"] = sorted(
            tuple(row) for row in conn.execute("SELECT rowid, content FROM messages_fts")
        )
        return data

    return await backend._store.call(read, write=False)


async def count_rows(backend: EmbeddedBackend, table: str) -> int:
    """How many rows ``table`` holds."""
    return await backend._store.call(
        lambda conn: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0], write=False
    )


async def fts_integrity(backend: EmbeddedBackend) -> None:
    """Raise if the FTS index disagrees with the messages table."""

    def check(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")

    await backend._store.call(check, write=True)
