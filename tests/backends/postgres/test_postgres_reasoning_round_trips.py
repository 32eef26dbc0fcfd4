"""Round trips of PostgreSQL's reasoning writes, counted on the wire (see
:mod:`.test_postgres_round_trips`): a step and a tool call are one statement each, as
the floor's two INSERTs are, and a replay of either finds what the first attempt wrote."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest

from memory_core import MemoryBackend
from memory_core import requests as rq
from memory_core.backends.postgres import traces

from .test_postgres_round_trips import _PREPARED, Wire, wired

pytestmark = pytest.mark.anyio

__all__ = ["wired"]  # the fixture, shared with the message round trips
_ONCE: dict[str, Any] = {"write": True, "autocommit": True}  # as the store runs a step


async def test_a_step_and_its_tool_call_are_one_round_trip_each(
    wired: tuple[MemoryBackend, Wire],
) -> None:
    backend, wire = wired
    trace = await backend.start_trace("s", "book a flight", user_identifier="u")
    for i in range(_PREPARED):
        warm = await backend.add_step(trace.id, thought=f"warm {i}", user_identifier="u")
        await backend.record_tool_call(warm.id, "search", {}, user_identifier="u")
    found: list[Any] = []

    async def step() -> None:
        found.append(await backend.add_step(trace.id, action="pay", user_identifier="u"))

    async def call() -> None:
        found.append(
            await backend.record_tool_call(
                found[0].id, "pay", {"eur": 80}, status="success", user_identifier="u"
            )
        )

    assert await wire.trips(step()) == 1
    assert await wire.trips(call()) == 1
    read = await backend.get_trace(trace.id, user_identifier="u")
    assert read is not None
    assert [s.step_number for s in read.steps] == list(range(1, _PREPARED + 2))
    assert read.steps[-1] == found[0].model_copy(update={"tool_calls": [found[1]]})


async def test_a_replayed_step_is_written_once(wired: tuple[MemoryBackend, Wire]) -> None:
    # the store's hook run twice with one id, as a replay after a lost connection is
    backend, _ = wired
    trace = await backend.start_trace("s", "book a flight", user_identifier="u")
    scope = rq.Scope(user_identifier="u")
    req = rq.AddStep(
        trace_id=trace.id,
        thought="compare fares",
        action=None,
        observation=None,
        metadata={},
        embedding=None,
        scope=scope,
    )
    ident, now = str(uuid4()), datetime.now(UTC)
    store: Any = backend.store
    first = await store._run(lambda tx: traces.add_step(tx, req, ident, now), **_ONCE)
    again = await store._run(lambda tx: traces.add_step(tx, req, ident, now), **_ONCE)
    assert again == first
    later = await backend.add_step(trace.id, thought="book", user_identifier="u")
    read = await backend.get_trace(trace.id, user_identifier="u")
    assert read is not None
    assert [(s.id, s.step_number) for s in read.steps] == [(ident, 1), (later.id, 2)]
