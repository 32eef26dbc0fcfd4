"""clear_session on Bolt deletes the session's reasoning traces with the conversation:
ours, the reference's (no user, no tenant) and those a conversation of the session links
by ``HAS_TRACE``, with their steps and tool calls; then the (:User) and (:Tool) nodes
they leave with nothing attached. A Tool that keeps other calls gets its running totals
recomputed from them.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_core import MemoryBackend

from .helpers import Graph

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]
Unique = Callable[[str], str]


async def _traced(bolt: MemoryBackend, session: str, user: str, *tools: str) -> str:
    """A trace of ``user`` in ``session`` with one step calling each of ``tools``."""
    trace = await bolt.start_trace(session, "plan", user_identifier=user)
    step = await bolt.add_step(trace.id, thought="look", user_identifier=user)
    for tool in tools:
        await bolt.record_tool_call(step.id, tool, status="success", user_identifier=user)
    return trace.id


def _left(graph: Graph, label: str, key: str, values: list[str]) -> list[str]:
    rows = graph(
        f"MATCH (n:{label}) WHERE n.{key} IN $values RETURN n.{key} AS v ORDER BY v",
        values=values,
    )
    return [row["v"] for row in rows]


async def test_the_sessions_traces_go_theirs_and_linked_ones_too(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session, other, user = unique("s"), unique("s"), unique("user")
    lone, shared = unique("tool"), unique("tool")
    await bolt.add_message(session, "user", "hello", user_identifier=user)
    ours = await _traced(bolt, session, user, lone, shared)
    kept = await _traced(bolt, other, user, shared)
    linked = await _traced(bolt, unique("s"), user)
    theirs, their_step = unique("trace"), unique("step")
    graph(
        "CREATE (:ReasoningTrace {id: $id, session_id: $s, task: 'the reference', "
        "started_at: datetime()})-[:HAS_STEP {order: 1}]->"
        "(:ReasoningStep {id: $step, step_number: 1, thought: 'theirs'})",
        id=theirs,
        s=session,
        step=their_step,
    )
    graph(
        "MATCH (c:Conversation {session_id: $s}), (t:ReasoningTrace {id: $t}) "
        "CREATE (c)-[:HAS_TRACE]->(t)",
        s=session,
        t=linked,
    )
    all_traces = sorted([ours, kept, linked, theirs])
    assert await bolt.clear_session(session, user_identifier=user) is True
    assert _left(graph, "ReasoningTrace", "id", all_traces) == [kept]
    assert _left(graph, "ReasoningStep", "id", [their_step]) == []
    assert _left(graph, "Tool", "name", sorted([lone, shared])) == [shared]
    [tool] = graph("MATCH (t:Tool {name: $n}) RETURN t.total_calls AS total", n=shared)
    assert tool["total"] == 1  # the reference's running total, recomputed from the calls left
    assert _left(graph, "User", "identifier", [user]) == [user]  # the kept trace links it
    [stats] = await bolt.tool_stats(shared, user_identifier=user)
    assert stats.total_calls == 1
    assert await bolt.clear_session(other, user_identifier=user) is True
    assert _left(graph, "ReasoningTrace", "id", all_traces) == []
    assert _left(graph, "Tool", "name", [shared]) == []
    assert _left(graph, "User", "identifier", [user]) == []


async def test_a_tenant_clears_only_its_own_traces(
    tenant_bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session, ada, bob = unique("s"), unique("user"), unique("user")
    mine = await _traced(tenant_bolt, session, ada)
    hers = await _traced(tenant_bolt, session, bob)
    foreign = unique("trace")
    graph(
        "CREATE (:ReasoningTrace {id: $id, session_id: $s, task: 'no tenant'})",
        id=foreign,
        s=session,
    )
    try:
        assert await tenant_bolt.clear_session(session, user_identifier=ada) is True
        assert _left(graph, "ReasoningTrace", "id", sorted([mine, hers, foreign])) == sorted(
            [hers, foreign]
        )
        assert await tenant_bolt.clear_session(session, user_identifier=ada) is False
    finally:
        graph("MATCH (t:ReasoningTrace {id: $id}) DETACH DELETE t", id=foreign)
        await tenant_bolt.clear_session(session, user_identifier=bob)
