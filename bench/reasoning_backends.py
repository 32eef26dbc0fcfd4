"""The reasoning workloads (:mod:`bench.reasoning`) set up on each backend: memory-core,
its floor (:mod:`bench.reasoning_floors`) and, on Bolt, the reference library."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import uuid4

from memory_core import MemoryBackend, open_backend
from memory_core.backends.embedded.schema import create_schema

from . import reasoning
from .core import FLOOR, OURS, PEER
from .long_term_backends import _connect
from .reasoning import Ops
from .reasoning_floors import BoltReasoningFloor, PostgresReasoningFloor, SqliteFloor
from .sizes import Sizes

_NOTES = {
    "step": "floor: two statements, each autocommitted: INSERT the step (numbered by the "
    "caller), INSERT the tool call",
    "stats": "floor: one hand-written aggregate query over the user's calls (of the tool, "
    "or grouped by tool)",
    "similar": "floor: the word-index query for the user's successful traces, the 5 "
    "sharing most words, no scoring",
}


def _floor_ops(floor: Any, user: str, tool: str, sync: bool) -> Ops:
    """The floor's :class:`Ops`; ``sync``: its methods are plain functions (sqlite3)."""

    async def call(method: Callable[..., Any], *args: Any) -> Any:
        result = method(*args)
        return result if sync else await result

    async def start(session: str, task: str) -> str:
        return str(await call(floor.start, user, session, task))

    async def step(trace: str, i: int) -> None:
        await call(floor.step, user, trace, i, tool)

    async def stats(who: str, name: str | None) -> list[Any]:
        return list(await call(floor.stats, who, name))

    async def similar(who: str, text: str) -> list[Any]:
        return list(await call(floor.similar, who, text.split()))

    return Ops(start, step, stats, similar)


async def embedded(root: Path, sizes: Sizes, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """The embedded store's reasoning workloads, on a store file of their own."""
    store = root / "reasoning.db"
    writer = _connect(root / "reasoning-floor.db")
    writer.execute("BEGIN IMMEDIATE")
    create_schema(writer)
    writer.execute("COMMIT")
    prefix = "rs-"
    async with open_backend(f"sqlite:///{store}") as backend:
        await backend.list_traces(limit=1)  # the store's file and schema exist
        reader = _connect(store)
        floor = SqliteFloor(writer, reader)
        notes = dict(_NOTES, step=_NOTES["step"] + " (BEGIN IMMEDIATE ... COMMIT each)")
        subjects = _subjects(backend, floor, prefix, sync=True)
        try:
            return await reasoning.run("embedded", backend, subjects, sizes, log, prefix, notes)
        finally:
            reader.close()
            writer.close()


def _subjects(backend: MemoryBackend, floor: Any, prefix: str, sync: bool) -> dict[str, Ops]:
    user, tool = f"{prefix}stepper", f"{prefix}tool-step"
    return {
        OURS: reasoning.ours(backend, user, tool),
        FLOOR: _floor_ops(floor, user, tool, sync),
    }


async def postgres(
    backend: MemoryBackend, sizes: Sizes, log: Callable[[str], None]
) -> list[dict[str, Any]]:
    """PostgreSQL's reasoning workloads on the bench's database (``backend``'s)."""
    floor = PostgresReasoningFloor(backend.store._pool)  # type: ignore[attr-defined]
    subjects = _subjects(backend, floor, "rs-", sync=False)
    return await reasoning.run(
        "postgres", backend, subjects, sizes, log, "rs-", dict(_NOTES), settle=floor.analyze
    )


class _Reference:
    """neo4j-agent-memory 0.8.0's ``ReasoningMemory`` with no embedder, on the schema
    :class:`bench.bolt.Peer` sets up (and removes)."""

    def __init__(self, uri: str) -> None:
        from .bolt import Peer

        self.peer = Peer(uri)

    async def open(self, user: str, tool: str) -> Ops:
        await self.peer.open()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from neo4j_agent_memory.memory.reasoning import ReasoningMemory
        memory = ReasoningMemory(self.peer.client)
        if memory._embedder is not None:
            raise RuntimeError("the peer must run with no embedder")

        async def start(session: str, task: str) -> str:
            trace = await memory.start_trace(
                session, task, generate_embedding=False, user_identifier=user
            )
            return str(trace.id)

        async def step(trace: str, i: int) -> None:
            added = await memory.add_step(
                trace, thought=f"think {i}", action=f"call {tool}", generate_embedding=False
            )
            await memory.record_tool_call(
                added.id, tool, {"q": i}, result={"hits": i % 7}, duration_ms=i % 500
            )

        async def stats(who: str, name: str | None) -> list[Any]:
            return list(await memory.get_tool_stats(name))

        return Ops(start, step, stats)

    async def close(self) -> None:
        await self.peer.close()


async def bolt(uri: str, sizes: Sizes, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Bolt's reasoning workloads: everything they wrote is deleted at the end."""
    from memory_core.backends.bolt.schema import TRACE_SEARCH

    from .bolt import auth

    prefix = f"bench-rs-{uuid4().hex[:8]}-"
    floor = BoltReasoningFloor(uri, auth(), TRACE_SEARCH)
    reference = _Reference(uri)
    notes = dict(
        _NOTES,
        step="floor: two CREATEs (execute_query): the step linked to its trace, the call "
        "linked to its step",
        peer_step="peer: ReasoningMemory.add_step (counts the trace's steps first) and "
        "record_tool_call (updates the Tool node's totals), no embedder",
        peer_stats="peer: ReasoningMemory.get_tool_stats, the Tool nodes' running totals "
        "(every user's calls together; no failures, no last use)",
        similar="floor: the full-text index query for the user's successful traces, the 5 "
        "of best Lucene score, no scoring",
    )
    try:
        user, tool = f"{prefix}stepper", f"{prefix}tool-step"
        peer = await reference.open(user, tool)
        async with open_backend(uri) as backend:
            subjects = _subjects(backend, floor, prefix, sync=False)
            subjects = {OURS: subjects[OURS], PEER: peer, FLOOR: subjects[FLOOR]}
            return await reasoning.run("bolt", backend, subjects, sizes, log, prefix, notes)
    finally:
        await floor.purge_reasoning(prefix)
        await floor.close()
        await reference.close()
