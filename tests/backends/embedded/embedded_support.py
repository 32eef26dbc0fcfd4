"""Fixtures and helpers for the embedded backend's tests (imported by each test module)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_core import MemoryBackend, open_backend

TABLES = ("conversations", "messages", "entities", "mentions", "schema_info")


@pytest.fixture(name="memory")
async def memory_fixture() -> AsyncIterator[MemoryBackend]:
    """A fresh private ``memory://`` backend, opened."""
    async with open_backend("memory://") as backend:
        yield backend


@pytest.fixture(name="tenants")
async def tenants_fixture() -> AsyncIterator[MemoryBackend]:
    """A fresh multi-tenant ``memory://`` backend, opened."""
    async with open_backend("memory://", multi_tenant=True) as backend:
        yield backend


@pytest.fixture(name="db_url")
def db_url_fixture(tmp_path: Path) -> str:
    """A ``sqlite:///`` URL of a file that does not exist yet, in a folder that does
    (absolute path)."""
    return f"sqlite:///{tmp_path / 'store.db'}"


async def snapshot(backend: MemoryBackend) -> dict[str, Any]:
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

    return await backend.store._store.call(read, write=False)


async def count_rows(backend: MemoryBackend, table: str) -> int:
    """How many rows ``table`` holds."""
    return await backend.store._store.call(
        lambda conn: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0], write=False
    )


async def fts_integrity(backend: MemoryBackend) -> None:
    """Raise if the FTS index disagrees with the messages table."""

    def check(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")

    await backend.store._store.call(check, write=True)


def record_threads(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Wrap ``owner.name`` (a ``work(conn, req)`` function) so that each call records the
    thread it ran in; the list of those threads, in order."""
    seen: list[int] = []
    real = getattr(owner, name)

    def spy(conn: sqlite3.Connection, req: Any) -> Any:
        seen.append(threading.get_ident())
        return real(conn, req)

    monkeypatch.setattr(owner, name, spy)
    return seen


async def loop_ticks(
    call: Callable[[], Awaitable[Any]], beside: Callable[[], None], settle: float = 0.0
) -> int:
    """Await ``call()`` while ``beside`` runs in a thread of its own (started ``settle``
    seconds before the call); how often a 10 ms ticker ran on the event loop meanwhile
    (a call that blocked the loop lets it tick hardly at all)."""
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        thread = threading.Thread(target=beside)
        thread.start()
        await anyio.sleep(settle)
        await call()
        thread.join()
        group.cancel_scope.cancel()
    return ticks


def busy() -> sqlite3.OperationalError:
    """The error ``sqlite3`` raises when another connection holds the lock."""
    exc = sqlite3.OperationalError("database is locked")
    exc.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
    return exc


async def optimize_fts(backend: MemoryBackend) -> None:
    """Merge the FTS5 index into one segment: each seek's reads grow with the segment
    count (its log); cost tests measure how the work grows with the matches."""

    def optimize(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")

    await backend.store._store.call(optimize, write=True)


async def vm_steps(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, call: Awaitable[Any]
) -> tuple[int, Any]:
    """SQLite VM steps spent in ``module.name`` (a ``work(conn, req)`` function) while
    ``call`` runs, and what ``call`` returned."""
    steps = 0
    original = getattr(module, name)

    def counting(conn: sqlite3.Connection, req: Any) -> Any:
        def tick() -> int:
            nonlocal steps
            steps += 1
            return 0

        conn.set_progress_handler(tick, 1)
        try:
            return original(conn, req)
        finally:
            conn.set_progress_handler(None, 1)

    monkeypatch.setattr(module, name, counting)
    try:
        found = await call
    finally:
        monkeypatch.setattr(module, name, original)
    return steps, found


async def search_steps(
    backend: MemoryBackend, monkeypatch: pytest.MonkeyPatch, query: str, **options: Any
) -> tuple[int, list[tuple[Any, Any]]]:
    """SQLite VM steps of one ``search_messages`` (after :func:`optimize_fts`), and what
    it found (ids and scores)."""
    from memory_core.backends.embedded import search as search_module

    await optimize_fts(backend)
    call = backend.search_messages(query, **options)
    steps, found = await vm_steps(monkeypatch, search_module, "search", call)
    return steps, [(m.id, m.score) for m in found]


def token_and_store_wide(monkeypatch: pytest.MonkeyPatch, token: Any) -> list[tuple[Any, Any]]:
    """Make each text search also rank its candidates without the FTS ``scope`` token
    (the same SQL scope): the list fills with (with the token, without it) per search.
    ``token(found)`` checks the token the search chose."""
    from memory_core.backends.embedded import search as search_module
    from memory_core.scoring import candidate_pool

    seen: list[tuple[Any, Any]] = []
    original = search_module.search

    def both(conn: sqlite3.Connection, req: Any) -> Any:
        scope = search_module._scope(conn, req)
        assert scope is not None and token(scope[2])
        query = search_module.fts_query(req.query)
        assert query is not None
        pool = candidate_pool(req.limit)
        scoped = search_module._text_hits(conn, query, req.query, scope, pool)
        store_wide = (scope[0], scope[1], None)
        seen.append((scoped, search_module._text_hits(conn, query, req.query, store_wide, pool)))
        return original(conn, req)

    monkeypatch.setattr(search_module, "search", both)
    return seen
