"""One user's statistics of one tool on Neo4j: the statement names the tool in its
pattern, so the planner can start from the ``ToolCall(tool_name)`` index and read that
tool's calls only, not every call of the user (the bench's rare-tool statistics grew
with the user's traces before).

The planner weighs the two indexes by their sampled statistics, which on a shared
database describe every other test's users and tools (a CI run once started from the
user's traces there: 380 hits). So the test starts from an empty database and resamples
every index of both labels, waiting until the statistics count every update (a run that
did not wait read 239): they then describe this user and these tools, and the plan is
the one a store shaped like this one gets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import neo4j
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memory_core import MemoryBackend, open_backend
from memory_core.telemetry import Telemetry
from memory_core_dev.neo4j_fixtures import Neo4jHandle

from .helpers import fresh_statistics

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j, pytest.mark.neo4j_private]

TRACES, TOOLS = 40, 5  # the user's calls: one step of TOOLS calls per trace
OTHER_TRACES, OTHER_TOOLS = 20, 10  # another user's, each call a tool of its own


def _db_hits(plan: Any) -> int:
    return int(plan.get("dbHits", 0)) + sum(_db_hits(child) for child in plan.get("children", []))


async def _fill(backend: MemoryBackend, user: str, unique: Callable[[str], str]) -> str:
    """The user's traces with their common calls, and two calls of a rare tool; then
    another user's traces calling tools of their own, as a store holds many tools.

    Without them the two indexes tie: the user's traces and a tool's calls are each about
    TRACES entries on average (TRACES * TOOLS calls over TOOLS + 1 names), and the planner
    started from the user's traces in some runs (380 hits)."""
    rare = unique("rare")
    common = [unique(f"tool{k}") for k in range(TOOLS)]
    for i in range(TRACES):
        trace = await backend.start_trace(unique("s"), f"task {i}", user_identifier=user)
        step = await backend.add_step(trace.id, action="work", user_identifier=user)
        for name in common + ([rare] if i < 2 else []):
            await backend.record_tool_call(
                step.id, name, {}, status="success", duration_ms=i, user_identifier=user
            )
    other = unique("other")
    for i in range(OTHER_TRACES):
        trace = await backend.start_trace(unique("s"), f"task {i}", user_identifier=other)
        step = await backend.add_step(trace.id, action="work", user_identifier=other)
        for _ in range(OTHER_TOOLS):
            await backend.record_tool_call(
                step.id, unique("own"), {}, status="success", duration_ms=i, user_identifier=other
            )
    return rare


async def _profiled(uri: str, auth: Any, statement: str, params: dict[str, Any]) -> int:
    # resampling is scheduled, not done, when the procedure returns: wait for it
    with neo4j.GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF") as sync:
        for label in ("ReasoningTrace", "ToolCall"):
            fresh_statistics(sync, label)
    driver = neo4j.AsyncGraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF")
    try:
        result = await driver.execute_query("PROFILE " + statement, params)
    finally:
        await driver.close()
    return _db_hits(result.summary.profile)


async def test_one_tools_statistics_read_that_tools_calls_not_the_users_others(
    neo4j_clean: Neo4jHandle, unique: Callable[[str], str]
) -> None:
    neo4j_server = neo4j_clean
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = Telemetry(tracer_provider=provider, capture_content=True)
    options: dict[str, Any] = {"telemetry": telemetry}
    if neo4j_server.auth is not None:
        options["auth"] = neo4j_server.auth
    user = unique("u")
    async with open_backend(neo4j_server.uri, **options) as backend:
        rare = await _fill(backend, user, unique)
        exporter.clear()
        [stats] = await backend.tool_stats(rare, user_identifier=user)
    assert (stats.name, stats.total_calls, stats.successful_calls) == (rare, 2, 2)
    [statement] = [
        str(span.attributes["db.query.text"])
        for span in exporter.get_finished_spans()
        if span.attributes and "db.query.text" in span.attributes
    ]
    provider.shutdown()
    params = {"user": user, "tool": rare, "tenant": None}
    hits = await _profiled(neo4j_server.uri, neo4j_server.auth, statement, params)
    assert hits < TRACES * TOOLS, f"{hits} database hits for 2 calls of the tool"
