"""Embedded (SQLite file store) workloads, with raw ``sqlite3`` as the floor.

The floor runs in the calling thread on its own file with the same schema and pragmas
(WAL, ``synchronous=NORMAL``) and inserts into the same ``messages`` table (its FTS
trigger included); reads and searches of the floor use the rows memory-core wrote.
"""

from __future__ import annotations

import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import uuid4

from memory_core import MemoryBackend, open_backend
from memory_core.backends.embedded.database import _NOT_RUN as NOT_RUN
from memory_core.backends.embedded.database import Database
from memory_core.backends.embedded.schema import create_schema

from .common import (
    SEARCH_QUERY,
    agent_turns,
    cursor_before,
    ingest_metrics,
    keyset_workload,
    latency_metrics,
    rows,
)
from .core import EVERY, FLOOR, OURS, Selection, Workload, measure, median_ms, timed
from .sizes import Sizes

READ_COLUMNS = (
    "m.num, m.id, m.conversation_id, m.seq, m.role, m.content, m.metadata, m.created_at, "
    "m.embedding, m.idempotency_key, c.session_id"
)


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


class Floor:
    """Raw sqlite3 on a file of its own with the store's schema."""

    def __init__(self, path: Path) -> None:
        self.conn = _connect(path)
        self.conn.execute("BEGIN IMMEDIATE")
        create_schema(self.conn)
        self.conn.execute("COMMIT")
        self.seq = 0

    def conversation(self) -> str:
        cid = str(uuid4())
        self.conn.execute(
            "INSERT INTO conversations (id, tenant, session_id, created_at, updated_at) "
            "VALUES (?, '', ?, 0, 0)",
            (cid, cid),
        )
        return cid

    def insert_one(self, cid: str, content: str) -> None:
        self.seq += 1
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute(
            "INSERT INTO messages (id, conversation_id, seq, role, content, metadata, "
            "created_at) VALUES (?, ?, ?, 'user', ?, '{}', ?)",
            (str(uuid4()), cid, self.seq, content, time.time_ns() // 1000),
        )
        self.conn.execute("COMMIT")

    def insert_many(self, cid: str, batch: list[dict[str, Any]]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        start = self.seq
        self.seq += len(batch)
        now = time.time_ns() // 1000
        self.conn.executemany(
            "INSERT INTO messages (id, conversation_id, seq, role, content, metadata, "
            "created_at) VALUES (?, ?, ?, ?, ?, '{}', ?)",
            [
                (str(uuid4()), cid, start + i, row["role"], row["content"], now + i)
                for i, row in enumerate(batch)
            ],
        )
        self.conn.execute("COMMIT")


async def run(
    sizes: Sizes, log: Callable[[str], None], want: Selection = EVERY
) -> list[dict[str, Any]]:
    """Every embedded workload (those ``want`` selects); report entries."""
    entries: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memory-core-bench-") as folder:
        root = Path(folder)
        floor = Floor(root / "floor.db")
        # Writes, reads and listings each get a store of their own, so a search over
        # "a 10k-message store" really searches 10k messages.
        async with open_backend(f"sqlite:///{root / 'writes.db'}") as backend:
            if want("single"):
                entries.append(await _single_add(backend, floor, sizes, log))
            if want("batch"):
                for size in sizes.batch_sizes:
                    entries.append(await _batch(backend, floor, sizes, size, log))
        floor.conn.close()
        store = root / "reads.db"
        if want("reads") or want("search"):
            async with open_backend(f"sqlite:///{store}") as backend:
                reader = _connect(store)
                entries += await _reads_and_searches(backend, reader, sizes, log, want)
                reader.close()
        store = root / "lists.db"
        async with open_backend(f"sqlite:///{store}") as backend:
            reader = _connect(store)
            if want("list"):
                entries.append(await _list_conversations(backend, reader, sizes, log))
            if want("agent"):
                entries.append(await _agent(backend, sizes, log))
            reader.close()
        if want("keyset"):
            entries.append(await _keyset(root / "keyset.db", sizes, log))
        if want("long_term"):
            from .long_term_backends import embedded

            entries += await embedded(root, sizes, log)
        if want("reasoning"):
            from . import reasoning_backends

            entries += await reasoning_backends.embedded(root, sizes, log)
    return entries


async def _single_add(
    backend: MemoryBackend, floor: Floor, sizes: Sizes, log: Callable[[str], None]
) -> dict[str, Any]:
    async def ours(r: int) -> dict[str, float]:
        session = f"single-{r}-{uuid4().hex[:6]}"
        await backend.add_message(session, "user", "warm up")
        spent = []
        for i in range(sizes.singles):
            spent.append(await timed(backend.add_message, session, "user", f"single {i}"))
        return latency_metrics(spent)

    async def raw(r: int) -> dict[str, float]:
        cid = floor.conversation()
        spent = []
        for i in range(sizes.singles):
            start = time.perf_counter()
            floor.insert_one(cid, f"single {i}")
            spent.append((time.perf_counter() - start) * 1000)
        return latency_metrics(spent)

    workload = Workload(
        "embedded", "single add_message", f"x{sizes.singles}", {OURS: ours, FLOOR: raw}
    )
    workload.notes.append("floor: BEGIN IMMEDIATE; one INSERT; COMMIT in the calling thread")
    return await measure(workload, sizes, log)


async def _batch(
    backend: MemoryBackend, floor: Floor, sizes: Sizes, size: int, log: Callable[[str], None]
) -> dict[str, Any]:
    data = rows(sizes.batch_total)

    async def ours(r: int) -> dict[str, float]:
        session = f"batch-{size}-{r}-{uuid4().hex[:6]}"
        ms = await timed(lambda: backend.add_messages_batch(session, data, batch_size=size))
        return ingest_metrics(ms, sizes.batch_total)

    async def raw(r: int) -> dict[str, float]:
        cid = floor.conversation()
        start = time.perf_counter()
        for k in range(0, len(data), size):
            floor.insert_many(cid, data[k : k + size])
        ms = (time.perf_counter() - start) * 1000
        return ingest_metrics(ms, sizes.batch_total)

    name = f"batch ingest (batch {size})"
    workload = Workload("embedded", name, f"{sizes.batch_total}", {OURS: ours, FLOOR: raw})
    workload.notes.append("floor: executemany INSERT, one transaction per batch")
    return await measure(workload, sizes, log)


async def _reads_and_searches(
    backend: MemoryBackend,
    reader: sqlite3.Connection,
    sizes: Sizes,
    log: Callable[[str], None],
    want: Selection = EVERY,
) -> list[dict[str, Any]]:
    entries = []
    session = "long"
    written = 0
    for point in sorted(set(sizes.read_points) | set(sizes.search_points)):
        await backend.add_messages_batch(session, rows(point - written, written), batch_size=1000)
        written = point
        cid = str((await backend.get_conversation(session, limit=1)).id)
        if point in sizes.read_points and want("reads"):
            entries.append(await _newest(backend, reader, session, cid, point, sizes, log))
        if point in sizes.search_points and want("search"):
            entries.append(await _search(backend, reader, session, point, sizes, log))
    return entries


async def _newest(
    backend: MemoryBackend,
    reader: sqlite3.Connection,
    session: str,
    cid: str,
    point: int,
    sizes: Sizes,
    log: Callable[[str], None],
) -> dict[str, Any]:
    sql = (
        f"SELECT {READ_COLUMNS} FROM messages m JOIN conversations c ON c.id = m.conversation_id "
        "WHERE m.conversation_id = ? ORDER BY m.seq DESC LIMIT 100"
    )

    async def ours(r: int) -> dict[str, float]:
        return await median_ms(sizes.reads, lambda: backend.get_conversation(session, limit=100))

    async def raw(r: int) -> dict[str, float]:
        spent = []
        for _ in range(sizes.reads):
            start = time.perf_counter()
            found = reader.execute(sql, (cid,)).fetchall()
            spent.append((time.perf_counter() - start) * 1000)
        assert len(found) == min(100, point)
        return {"median_ms": statistics.median(spent)}

    workload = Workload("embedded", "newest-100 read", f"{point}", {OURS: ours, FLOOR: raw})
    workload.notes.append("floor: the same SELECT of the same rows, fetchall, no models")
    return await measure(workload, sizes, log)


async def _search(
    backend: MemoryBackend,
    reader: sqlite3.Connection,
    session: str,
    point: int,
    sizes: Sizes,
    log: Callable[[str], None],
) -> dict[str, Any]:
    sql = (
        "SELECT rowid, bm25(messages_fts) FROM messages_fts WHERE messages_fts MATCH ? "
        "ORDER BY bm25(messages_fts) LIMIT 10"
    )

    async def ours(r: int) -> dict[str, float]:
        return await median_ms(
            sizes.searches,
            lambda: backend.search_messages(SEARCH_QUERY, session_id=session, limit=10),
        )

    async def raw(r: int) -> dict[str, float]:
        spent = []
        for _ in range(sizes.searches):
            start = time.perf_counter()
            reader.execute(sql, (f'"{SEARCH_QUERY}"',)).fetchall()
            spent.append((time.perf_counter() - start) * 1000)
        return {"median_ms": statistics.median(spent)}

    workload = Workload(
        "embedded", "text search (matches all)", f"{point}", {OURS: ours, FLOOR: raw}
    )
    workload.notes.append("floor: the FTS5 MATCH ranked by bm25 with LIMIT 10, no scoring")
    return await measure(workload, sizes, log)


async def _list_conversations(
    backend: MemoryBackend, reader: sqlite3.Connection, sizes: Sizes, log: Callable[[str], None]
) -> dict[str, Any]:
    for i in range(sizes.conversations):
        await backend.create_conversation(f"conv-{i}", title=f"conversation {i}")
    sql = "SELECT * FROM conversations WHERE tenant = '' ORDER BY updated_at DESC, id LIMIT ?"

    async def ours(r: int) -> dict[str, float]:
        return await median_ms(sizes.lists, backend.list_conversations, limit=sizes.list_limit)

    async def fetch() -> None:
        reader.execute(sql, (sizes.list_limit,)).fetchall()

    async def raw(r: int) -> dict[str, float]:
        return await median_ms(sizes.lists, fetch)

    size = f"{sizes.list_limit} of {sizes.conversations}"
    workload = Workload("embedded", "list_conversations", size, {OURS: ours, FLOOR: raw})
    return await measure(workload, sizes, log)


async def _keyset(store: Path, sizes: Sizes, log: Callable[[str], None]) -> dict[str, Any]:
    """The first page and a deep page of ``list_conversations_page`` over a store of
    their own; the floor runs the same keyset SQL on a reader connection."""
    size, deep = sizes.keyset_page, sizes.keyset_deep
    async with open_backend(f"sqlite:///{store}") as backend:
        for i in range(sizes.keyset_conversations):
            await backend.create_conversation(f"keyset-{i}")

        async def page(cursor: str | None) -> str | None:
            return (await backend.list_conversations_page(limit=size, cursor=cursor)).next_cursor

        far = await cursor_before(page, deep)
        reader = _connect(store)
        reader.row_factory = sqlite3.Row
        first_sql = (
            "SELECT * FROM conversations WHERE tenant = '' "
            "ORDER BY updated_at DESC, id DESC LIMIT ?"
        )
        seek_sql = (
            "SELECT * FROM conversations WHERE tenant = '' AND (updated_at, id) < (?, ?) "
            "ORDER BY updated_at DESC, id DESC LIMIT ?"
        )

        async def raw_page(key: tuple[int, str] | None) -> tuple[int, str]:
            rows = (
                reader.execute(first_sql, (size,))
                if key is None
                else reader.execute(seek_sql, (*key, size))
            ).fetchall()
            return rows[-1]["updated_at"], rows[-1]["id"]

        raw_far = await cursor_before(raw_page, deep)
        note = "floor: the same seek, (updated_at, id) < (?, ?) on the listing index, in sqlite3"
        workload = keyset_workload("embedded", sizes, (page, far), (raw_page, raw_far), note)
        try:
            return await measure(workload, sizes, log)
        finally:
            reader.close()


async def _agent(
    backend: MemoryBackend, sizes: Sizes, log: Callable[[str], None]
) -> dict[str, Any]:
    counter = _Transactions(backend.store._store)

    async def ours(r: int) -> dict[str, float]:
        before = dict(counter.counts)
        spent = await agent_turns(backend, f"agent-{r}-{uuid4().hex[:6]}", sizes.turns)
        made = {where: (n - before[where]) / sizes.turns for where, n in counter.counts.items()}
        return {
            "ms_per_turn": statistics.median(spent),
            "round_trips_per_turn": sum(made.values()),
            "in_calling_thread_per_turn": made["calling thread"],
        }

    workload = Workload("embedded", "agent turns (turn protocol)", f"{sizes.turns}", {OURS: ours})
    workload.notes.append(
        "round trip = one store transaction, in a worker thread or in the calling thread"
    )
    return await measure(workload, sizes, log)


class _Transactions:
    """Counts the store's transactions: those run in a worker thread (``Database.run``) and
    those run in the calling thread (an inline attempt that was not handed on)."""

    def __init__(self, owner: Database) -> None:
        self.counts = {"worker thread": 0, "calling thread": 0}
        self._wrap(owner, "run", "worker thread")
        self._wrap(owner, "_read_inline", "calling thread")
        self._wrap(owner, "_write_inline", "calling thread")

    def _wrap(self, owner: Database, method: str, where: str) -> None:
        real = getattr(owner, method)

        def counted(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            if result is not NOT_RUN:
                self.counts[where] += 1
            return result

        setattr(owner, method, counted)
