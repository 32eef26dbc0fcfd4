"""Reasoning memory shared with neo4j-agent-memory 0.8.0 (the reference) on one Neo4j,
both ways: the reference reads our traces, steps and tool calls (``get_trace_with_steps``,
``list_traces``) and the Tool node's running totals (``get_tool_stats``); we read the
traces it wrote, with their user, steps, tool calls and links.

The reference is used through its own ReasoningMemory API with no embedder; its schema
set-up runs first, so the two libraries' constraints and indexes also have to coexist.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Callable
from uuid import UUID

import pytest

from memory_core import MemoryBackend
from memory_core_dev.foreign_data import reference_client
from memory_core_dev.neo4j_fixtures import Neo4jHandle

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the reference warns about neo4j preview features
    from neo4j_agent_memory.memory.reasoning import ReasoningMemory, ToolCallStatus
    from neo4j_agent_memory.schema.models import EntityRef as ReferenceRef

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

METADATA = {"source": "chat ✓", "n": 3}


@pytest.fixture
async def reference(neo4j_server: Neo4jHandle) -> AsyncIterator[ReasoningMemory]:
    """The reference library's reasoning memory on the test server."""
    async with reference_client(neo4j_server.uri, neo4j_server.auth) as client:
        yield ReasoningMemory(client)


async def test_the_reference_reads_our_traces_and_tool_totals(
    reference: ReasoningMemory, bolt: MemoryBackend, unique: Callable[[str], str]
) -> None:
    user, session, tool = unique("user"), unique("s"), unique("tool")
    trace = await bolt.start_trace(session, "plan a trip", metadata=METADATA, user_identifier=user)
    first = await bolt.add_step(trace.id, thought="think", action="act", user_identifier=user)
    second = await bolt.add_step(trace.id, observation="saw", user_identifier=user)
    await bolt.record_tool_call(
        first.id,
        tool,
        {"q": "Paris"},
        result={"hits": [1]},
        status="error",
        duration_ms=30,
        error="boom",
        user_identifier=user,
    )
    await bolt.record_tool_call(first.id, tool, result="ok", duration_ms=10, user_identifier=user)
    await bolt.complete_trace(trace.id, outcome="done", success=True, user_identifier=user)
    ours = await bolt.get_trace(trace.id, user_identifier=user)
    assert ours is not None
    theirs = await reference.get_trace_with_steps(UUID(trace.id))
    assert theirs is not None
    assert (theirs.session_id, theirs.task, theirs.outcome, theirs.success) == (
        session,
        "plan a trip",
        "done",
        True,
    )
    assert theirs.completed_at == ours.completed_at and theirs.started_at == ours.started_at
    assert [(str(s.id), s.step_number) for s in theirs.steps] == [(first.id, 1), (second.id, 2)]
    assert (theirs.steps[0].thought, theirs.steps[0].action) == ("think", "act")
    calls = sorted(theirs.steps[0].tool_calls, key=lambda c: c.status.value)
    assert [(c.status, c.arguments, c.result, c.duration_ms, c.error) for c in calls] == [
        (ToolCallStatus.ERROR, {"q": "Paris"}, {"hits": [1]}, 30, "boom"),
        (ToolCallStatus.SUCCESS, {}, "ok", 10, None),
    ]
    listed = await reference.list_traces(session_id=session)
    assert [str(t.id) for t in listed] == [trace.id]
    [stats] = await reference.get_tool_stats(tool)
    assert (stats.total_calls, stats.successful_calls, stats.avg_duration_ms) == (2, 1, 20.0)
    # The reference appends after our steps.
    third = await reference.add_step(UUID(trace.id), thought="more", generate_embedding=False)
    assert third.step_number == 3


async def test_we_read_the_references_traces(
    reference: ReasoningMemory, bolt: MemoryBackend, unique: Callable[[str], str]
) -> None:
    user, session, tool = unique("user"), unique("s"), unique("tool")
    message = await bolt.add_message(session, "user", "plan it", user_identifier=user)
    ada = await bolt.add_entity(unique("Ada"), "PERSON")
    trace = await reference.start_trace(
        session,
        "plan a journey",
        generate_embedding=False,
        metadata=METADATA,
        triggered_by_message_id=str(message.id),
        user_identifier=user,
    )
    step = await reference.add_step(trace.id, thought="consider", generate_embedding=False)
    await reference.add_step(trace.id, action="book", generate_embedding=False)
    await reference.record_tool_call(
        step.id,
        tool,
        {"to": "Rome"},
        result=[1, 2],
        status=ToolCallStatus.FAILURE,
        duration_ms=8,
        error="no seats",
        touched_entities=[ReferenceRef(id=ada.id)],
    )
    await reference.record_tool_call(step.id, tool, {}, status=ToolCallStatus.SUCCESS)
    await reference.complete_trace(trace.id, outcome="booked", success=True)
    got = await bolt.get_trace(str(trace.id), user_identifier=user)
    assert got is not None
    assert (got.session_id, got.task, got.outcome, got.success) == (
        session,
        "plan a journey",
        "booked",
        True,
    )
    assert got.metadata == METADATA and got.completed_at is not None
    assert [(s.step_number, s.thought, s.action) for s in got.steps] == [
        (1, "consider", None),
        (2, None, "book"),
    ]
    statuses = sorted(
        (c.status.value, c.arguments, c.result, c.error) for c in got.steps[0].tool_calls
    )
    assert statuses == [
        ("failure", {"to": "Rome"}, [1, 2], "no seats"),
        ("success", {}, None, None),
    ]
    assert got.message_ids == [str(message.id)] and got.entity_ids == [ada.id]
    assert [t.id for t in await bolt.list_traces(session, user_identifier=user)] == [got.id]
    [stats] = await bolt.tool_stats(tool, user_identifier=user)
    assert (stats.total_calls, stats.successful_calls, stats.failed_calls) == (2, 1, 1)
    assert stats.avg_duration_ms == 8.0
    [similar] = await bolt.similar_traces("journey", user_identifier=user)
    assert similar.id == got.id
    [found] = await bolt.search_steps("consider", user_identifier=user)
    assert found.id == str(step.id) and found.trace_id == got.id
    assert await bolt.get_trace(str(trace.id), user_identifier=unique("other")) is None
    # Our steps continue the reference's numbering.
    more = await bolt.add_step(got.id, thought="next", user_identifier=user)
    assert more.step_number == 3


async def test_a_multi_tenant_store_sees_none_of_the_references_traces(
    reference: ReasoningMemory, tenant_bolt: MemoryBackend, unique: Callable[[str], str]
) -> None:
    user, session = unique("user"), unique("s")
    trace = await reference.start_trace(
        session, "a task", generate_embedding=False, user_identifier=user
    )
    assert await tenant_bolt.get_trace(str(trace.id), user_identifier=user) is None
    assert await tenant_bolt.list_traces(session, user_identifier=user) == []
