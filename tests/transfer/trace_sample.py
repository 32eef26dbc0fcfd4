"""Reasoning memory for the bulk-transfer tests of PostgreSQL and Bolt: traces with steps,
tool calls of every status, links, embeddings; and what the reads of reasoning memory
return, to compare a store with its copy."""

from __future__ import annotations

import io
from typing import Any

from memory_core import MemoryBackend, ReasoningTrace
from memory_core.transfer import export_memory

# Per user, what populate_traces() writes.
TRACES, STEPS, CALLS = 3, 4, 5


async def populate_traces(backend: MemoryBackend, user: str | None, tag: str = "") -> list[str]:
    """Three traces of ``user`` (a completed success linked to a message and an entity,
    a failure, an open one) with four steps and five tool calls of five statuses, with
    metadata, results and errors; their ids, in start order."""
    scoped = user if backend.multi_tenant else None
    session = f"{tag}chat-1"
    asked = await backend.add_message(session, "user", "Plan Lisbon", user_identifier=scoped)
    seen = await backend.add_message(session, "assistant", "On it", user_identifier=scoped)
    place = await backend.add_entity(f"{tag}Lisbon", "LOCATION", user_identifier=scoped)
    trip = await backend.start_trace(
        session,
        "plan a trip to Lisbon ✓",
        metadata={"z": 1, "a": [1.0, None, {"k": "v"}]},
        triggered_by_message_id=str(asked.id),
        user_identifier=user,
    )
    look = await backend.add_step(
        trip.id, thought="look for flights", action="search flights", user_identifier=user
    )
    saw = await backend.add_step(
        trip.id, observation="found three flights", metadata={"n": 2}, user_identifier=user
    )
    await backend.record_tool_call(
        look.id,
        f"{tag}flight_search",
        {"to": "LIS", "when": [2026, 5]},
        result={"flights": [1, 2.5, None]},
        duration_ms=420,
        user_identifier=user,
    )
    await backend.record_tool_call(
        look.id,
        f"{tag}flight_search",
        {"to": "OPO"},
        status="timeout",
        duration_ms=3000,
        error="too slow",
        user_identifier=user,
    )
    await backend.record_tool_call(
        saw.id, f"{tag}hotel_search", result="none left", status="failure", user_identifier=user
    )
    await backend.link_trace(
        trip.id, message_ids=[str(seen.id)], entity_ids=[place.id], user_identifier=user
    )
    await backend.complete_trace(
        trip.id, outcome="booked TP123", success=True, user_identifier=user
    )
    hotel = await backend.start_trace(f"{tag}chat-2", "book a hotel", user_identifier=user)
    tried = await backend.add_step(hotel.id, action="call the hotel", user_identifier=user)
    await backend.record_tool_call(
        tried.id, f"{tag}hotel_search", status="error", duration_ms=7, user_identifier=user
    )
    await backend.record_tool_call(
        tried.id, f"{tag}phone", result=[1, "two"], status="cancelled", user_identifier=user
    )
    await backend.complete_trace(hotel.id, outcome="no rooms", success=False, user_identifier=user)
    open_one = await backend.start_trace(session, "compare trains", user_identifier=user)
    await backend.add_step(open_one.id, thought="trains may be faster", user_identifier=user)
    return [trip.id, hotel.id, open_one.id]


def _plain(trace: ReasoningTrace | None) -> dict[str, Any]:
    assert trace is not None
    return trace.model_dump(mode="json")


async def reasoning_view(
    backend: MemoryBackend, user: str | None, ids: list[str], tag: str = ""
) -> dict[str, Any]:
    """What the reasoning reads return for ``user``: each trace whole, the listing, tool
    statistics, step search and similar traces (with their scores)."""
    traces = [_plain(await backend.get_trace(i, user_identifier=user)) for i in ids]
    listed = [t.id for t in await backend.list_traces(user_identifier=user)]
    stats = [s.model_dump(mode="json") for s in await backend.tool_stats(user_identifier=user)]
    one = await backend.tool_stats(f"{tag}hotel_search", user_identifier=user)
    steps = await backend.search_steps("flights hotel trains", user_identifier=user)
    similar = await backend.similar_traces(
        "trip to Lisbon hotel", success_only=False, user_identifier=user
    )
    return {
        "traces": traces,
        "listed": listed,
        "stats": stats,
        "one": [s.model_dump(mode="json") for s in one],
        "steps": [(s.id, s.step_number, round(s.score or 0, 9)) for s in steps],
        "similar": [(t.id, round(t.score or 0, 9)) for t in similar],
    }


async def archive_lines(backend: MemoryBackend) -> list[str]:
    """The whole archive of ``backend``, header and end record included."""
    out = io.StringIO()
    await export_memory(backend, out)
    return out.getvalue().splitlines()
