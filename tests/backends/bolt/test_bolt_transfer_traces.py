"""Traces imported into Bolt are the reference's graph: neo4j-agent-memory 0.8.0 reads an
imported trace with its steps and tool calls, lists it, counts its calls in the Tool
node's totals and appends after its steps. The source is a fresh PostgreSQL store; on
Neo4j the test only writes and reads its own uniquely named records (it may run on a
shared server)."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Callable
from uuid import UUID

import pytest

from memory_core import MemoryBackend, open_backend
from memory_core.transfer import copy_memory
from memory_core_dev.foreign_data import reference_client
from memory_core_dev.neo4j_fixtures import Neo4jHandle
from memory_core_dev.postgres_schemas import schema_url
from memory_core_dev.postgres_server import PostgresHandle

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the reference warns about neo4j preview features
    from neo4j_agent_memory.memory.reasoning import ReasoningMemory, ToolCallStatus

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.neo4j,
    pytest.mark.filterwarnings("ignore::memory_core.CapabilityWarning"),
]


@pytest.fixture
async def reference(neo4j_server: Neo4jHandle) -> AsyncIterator[ReasoningMemory]:
    """The reference library's reasoning memory on the test server."""
    async with reference_client(neo4j_server.uri, neo4j_server.auth) as client:
        yield ReasoningMemory(client)


async def test_the_reference_reads_a_trace_imported_into_bolt(
    reference: ReasoningMemory,
    open_bolt: Callable[..., MemoryBackend],
    postgres_server: PostgresHandle,
    unique: Callable[[str], str],
) -> None:
    user, session, tool = unique("user"), unique("s"), unique("tool")
    async with (
        open_backend(schema_url(postgres_server.url, "traces")) as pg,
        open_bolt() as bolt,
    ):
        trace = await pg.start_trace(
            session, "plan a trip", metadata={"n": 1}, user_identifier=user
        )
        first = await pg.add_step(trace.id, thought="think", action="act", user_identifier=user)
        second = await pg.add_step(trace.id, observation="saw", user_identifier=user)
        await pg.record_tool_call(
            first.id,
            tool,
            {"q": "Paris"},
            result={"hits": [1]},
            status="error",
            duration_ms=30,
            error="boom",
            user_identifier=user,
        )
        await pg.record_tool_call(first.id, tool, result="ok", duration_ms=10, user_identifier=user)
        await pg.complete_trace(trace.id, outcome="done", success=True, user_identifier=user)
        ours = await pg.get_trace(trace.id, user_identifier=user)
        report = await copy_memory(pg, bolt)
        assert (report.copied["trace"], report.copied["step"], report.copied["tool_call"]) == (
            1,
            2,
            2,
        )
        assert await bolt.get_trace(trace.id, user_identifier=user) == ours
    assert ours is not None
    theirs = await reference.get_trace_with_steps(UUID(trace.id))
    assert theirs is not None
    assert (theirs.session_id, theirs.task, theirs.outcome, theirs.success) == (
        session,
        "plan a trip",
        "done",
        True,
    )
    assert (theirs.started_at, theirs.completed_at) == (ours.started_at, ours.completed_at)
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
    # The reference appends after the imported steps.
    third = await reference.add_step(UUID(trace.id), thought="more", generate_embedding=False)
    assert third.step_number == 3
