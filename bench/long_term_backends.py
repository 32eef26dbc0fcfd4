"""The long-term workloads (:mod:`bench.long_term`) set up on each backend: memory-core,
its floor (:mod:`bench.long_term_floors`) and, on Bolt, the reference library."""

from __future__ import annotations

import sqlite3
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import uuid4

from memory_core import MemoryBackend, open_backend
from memory_core.backends.embedded.schema import create_schema

from . import long_term
from .core import FLOOR, OURS, PEER
from .long_term import Ops
from .long_term_floors import BoltFloor, PostgresFloor, SqliteFloor
from .sizes import Sizes

_NOTES = {
    "search": "floor: the word-index query for the user's current preferences, the 10 "
    "sharing most words, no scoring",
    "walk": "floor: a hand-written recursive CTE, both directions, depth <= 2, "
    "distinct entities, LIMIT 100, unordered",
}


def _floor_ops(floor: SqliteFloor) -> Ops:
    async def add_preference(user: str, kind: str, text: str) -> None:
        floor.add_preference(user, kind, text)

    async def add_fact(user: str, s: str, p: str, o: str) -> None:
        floor.add_fact(user, s, p, o)

    async def search(user: str, words: list[str]) -> list[Any]:
        return floor.search(user, words)

    async def walk(start: str) -> list[Any]:
        return floor.walk(start)

    return Ops(add_preference, add_fact, search, walk)


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


async def embedded(root: Path, sizes: Sizes, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """The embedded store's long-term workloads, on a store file of their own."""
    store = root / "long-term.db"
    writer = _connect(root / "long-term-floor.db")
    writer.execute("BEGIN IMMEDIATE")
    create_schema(writer)
    writer.execute("COMMIT")
    async with open_backend(f"sqlite:///{store}") as backend:
        await backend.list_preferences(limit=1)  # the store's file and schema exist
        reader = _connect(store)
        floor = SqliteFloor(writer, reader)
        notes = dict(_NOTES, add="floor: BEGIN IMMEDIATE; one INSERT; COMMIT in the calling thread")
        subjects = {OURS: long_term.ours(backend), FLOOR: _floor_ops(floor)}
        try:
            return await long_term.run("embedded", backend, subjects, sizes, log, "lt-", notes)
        finally:
            reader.close()
            writer.close()


async def postgres(
    backend: MemoryBackend, sizes: Sizes, log: Callable[[str], None]
) -> list[dict[str, Any]]:
    """PostgreSQL's long-term workloads on the bench's database (``backend``'s)."""
    floor = PostgresFloor(backend.store._pool)  # type: ignore[attr-defined]
    notes = dict(_NOTES, add="floor: one INSERT on the pool, autocommit")
    floor_ops = Ops(floor.add_preference, floor.add_fact, floor.search, floor.walk)
    subjects = {OURS: long_term.ours(backend), FLOOR: floor_ops}
    return await long_term.run(
        "postgres", backend, subjects, sizes, log, "lt-", notes, settle=floor.analyze
    )


class _Reference:
    """neo4j-agent-memory 0.8.0's ``LongTermMemory`` with no embedder and no extractor,
    on the schema :class:`bench.bolt.Peer` sets up (and removes)."""

    def __init__(self, uri: str) -> None:
        from .bolt import Peer

        self.peer = Peer(uri)

    async def open(self) -> Ops:
        await self.peer.open()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from neo4j_agent_memory.memory.long_term import LongTermMemory
        memory = LongTermMemory(self.peer.client)
        if memory._embedder is not None or memory._extractor is not None:
            raise RuntimeError("the peer must run with no embedder and no extractor")

        async def add_preference(user: str, kind: str, text: str) -> Any:
            return await memory.add_preference(kind, text, user_identifier=user)

        async def add_fact(user: str, s: str, p: str, o: str) -> Any:
            return await memory.add_fact(s, p, o)

        return Ops(add_preference, add_fact)

    async def close(self) -> None:
        await self.peer.close()


async def bolt(uri: str, sizes: Sizes, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Bolt's long-term workloads: everything they wrote is deleted at the end."""
    from memory_core.backends.bolt.schema import PREFERENCE_SEARCH

    from .bolt import auth

    prefix = f"bench-lt-{uuid4().hex[:8]}-"
    floor = BoltFloor(uri, auth(), PREFERENCE_SEARCH)
    reference = _Reference(uri)
    notes = dict(
        _NOTES,
        add="floor: one CREATE of the node with the properties a read needs (execute_query)",
        peer_add="peer: LongTermMemory.add_preference (user linked) / add_fact, no embedder",
        search="floor: the full-text index query for the user's current preferences, "
        "the 10 of best Lucene score, no scoring",
        walk="floor: MATCH (s)-[:RELATED_TO*1..2]-(o) RETURN DISTINCT o LIMIT 100",
    )
    try:
        peer = await reference.open()
        async with open_backend(uri) as backend:
            floor_ops = Ops(floor.add_preference, floor.add_fact, floor.search, floor.walk)
            subjects = {OURS: long_term.ours(backend), PEER: peer, FLOOR: floor_ops}
            return await long_term.run("bolt", backend, subjects, sizes, log, prefix, notes)
    finally:
        await floor.purge(prefix)
        await floor.close()
        await reference.close()
