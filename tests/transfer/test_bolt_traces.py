"""Traces, steps and tool calls through the Bolt bulk hook (real Neo4j and PostgreSQL):
Bolt → PostgreSQL → Bolt → embedded exports the same records at every hop, the Bolt store
reads the same after the import as before it (every trace, the listing, tool
statistics, step search, similar traces, and the Tool nodes' running totals the
reference reads); a re-run writes nothing twice; tenancy holds in a multi-tenant
store. Each test exports the whole database, so it runs on the run's own Neo4j only
(``bolt_url`` empties it first). Embedders have the default size: a Neo4j's vector
indexes outlive the data a test wipes, and other tests open it with that size."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest
from neo4j import GraphDatabase

from memory_core import HashingEmbedder, open_backend
from memory_core.archive.hooks import FOREIGN_MESSAGE, RENAMED
from memory_core.backends.bolt import transfer as bolt_transfer
from memory_core.transfer import copy_memory, import_memory, importer
from memory_core_dev.foreign_data import reference_client
from memory_core_dev.neo4j_fixtures import Neo4jHandle, neo4j_wipe
from tests.transfer.sample import export_lines, of_kind
from tests.transfer.trace_sample import (
    CALLS,
    STEPS,
    TRACES,
    archive_lines,
    populate_traces,
    reasoning_view,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the reference warns about neo4j preview features
    from neo4j_agent_memory.memory.reasoning import ReasoningMemory, ToolCallStatus

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::memory_core.CapabilityWarning"),
]

KINDS = ("trace", "step", "tool_call")
TOOLS = """
MATCH (t:Tool)
RETURN t.name AS name, t.total_calls AS total, t.successful_calls AS successes,
       t.failed_calls AS failures, t.total_duration_ms AS duration, t.last_used_at AS last,
       COUNT { (t)<-[:INSTANCE_OF]-(:ToolCall) } AS calls
ORDER BY name
"""


def _reasoning(lines: list[str]) -> list[str]:
    """The trace, step and tool call lines of an archive, in order (a Bolt entity written
    by the backend has no ``updated_at``: it takes one on its way through another store)."""
    return [line for line in lines if any(f'"record":"{k}"' in line for k in KINDS)]


def _tools(server: Neo4jHandle) -> list[dict[str, Any]]:
    with GraphDatabase.driver(server.uri, auth=server.auth) as driver:
        found, _, _ = driver.execute_query(TOOLS)
    return [record.data() for record in found]


async def test_bolt_to_postgres_to_bolt_to_embedded_keeps_every_trace_record(
    bolt_url: str, pg_url: str, neo4j_server: Neo4jHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of 2 and batches of 3 records: every stream page and every batch boundary
    (between a trace and its steps, a step and its calls) is crossed."""
    monkeypatch.setattr(bolt_transfer, "PAGE", 2)
    monkeypatch.setattr(importer, "HOOK_BATCH", 3)
    async with (
        open_backend(bolt_url, embedder=HashingEmbedder()) as bolt,
        open_backend(pg_url, embedder=HashingEmbedder()) as pg,
    ):
        ids = await populate_traces(bolt, "ada") + await populate_traces(bolt, "bob", "b-")
        first = await export_lines(bolt)
        assert [len(of_kind(first, k)) for k in KINDS] == [2 * TRACES, 2 * STEPS, 2 * CALLS]
        assert all(r["embedding"] for r in of_kind(first, "trace") + of_kind(first, "step"))
        views = [
            await reasoning_view(bolt, "ada", ids[:TRACES]),
            await reasoning_view(bolt, "bob", ids[TRACES:], "b-"),
        ]
        tools = _tools(neo4j_server)
        there = await copy_memory(bolt, pg)
        assert [there.copied[k] for k in KINDS] == [2 * TRACES, 2 * STEPS, 2 * CALLS]
        assert _reasoning(await export_lines(pg)) == _reasoning(first)
        neo4j_wipe(neo4j_server.uri, neo4j_server.auth)
        back = await copy_memory(pg, bolt)
        assert [back.copied[k] for k in KINDS] == [2 * TRACES, 2 * STEPS, 2 * CALLS]
        assert not back.not_carried, back.summary()
        assert _reasoning(await export_lines(bolt)) == _reasoning(first)
        assert [
            await reasoning_view(bolt, "ada", ids[:TRACES]),
            await reasoning_view(bolt, "bob", ids[TRACES:], "b-"),
        ] == views
        assert _tools(neo4j_server) == tools
        again = await copy_memory(pg, bolt)
        assert [again.copied[k] for k in KINDS] == [0, 0, 0]
        assert again.skipped[("tool_call", "already in the target")] == 2 * CALLS
        assert _tools(neo4j_server) == tools
        async with open_backend("memory://") as embedded:
            home = await copy_memory(bolt, embedded)
            assert [home.copied[k] for k in KINDS] == [2 * TRACES, 2 * STEPS, 2 * CALLS]
            assert _reasoning(await export_lines(embedded)) == _reasoning(first)
        # The copy is a normal store: a step added later follows the imported ones.
        added = await bolt.add_step(ids[2], action="book the train", user_identifier="ada")
        assert added.step_number == 2


async def test_overwrite_replaces_a_trace_and_keeps_the_tool_totals_exact(
    bolt_url: str, neo4j_server: Neo4jHandle
) -> None:
    """Importing a store's own archive again with ``overwrite`` replaces every trace,
    step and call: the Tool nodes' running totals count each call once."""
    async with open_backend(bolt_url) as bolt:
        await populate_traces(bolt, None)
        lines = await archive_lines(bolt)
        tools = _tools(neo4j_server)
        report = await import_memory(bolt, lines, on_conflict="overwrite")
        assert [report.copied[k] for k in KINDS] == [TRACES, STEPS, CALLS]
        assert _tools(neo4j_server) == tools
        assert _reasoning(await export_lines(bolt)) == _reasoning(lines)


async def test_no_trace_reaches_another_tenant_on_bolt(bolt_url: str) -> None:
    """Bob's archive carries the ids of Alice's traces, steps and calls, and links to her
    message and entity: his records get ids of his own tenant, hers stay as they were,
    and no link crosses."""
    async with open_backend(bolt_url, multi_tenant=True) as target:
        ids = await populate_traces(target, "alice")
        lines = await archive_lines(target)
        before = await reasoning_view(target, "alice", ids)
        as_bob = [
            line.replace('"user_identifier":"alice"', '"user_identifier":"bob"')
            for line in lines
            if '"record":"conversation"' not in line
            and '"record":"message"' not in line
            and '"record":"mention"' not in line
        ]
        report = await import_memory(target, as_bob)
        assert [report.copied[k] for k in KINDS] == [TRACES, STEPS, CALLS]
        lost = report.not_carried
        assert [lost[(f"{k}.id", RENAMED)] for k in KINDS] == [TRACES, STEPS, CALLS]
        assert lost[("trace.message_ids", FOREIGN_MESSAGE)] == 2
        assert await reasoning_view(target, "alice", ids) == before
        bobs = await target.list_traces(user_identifier="bob")
        assert len(bobs) == TRACES and not {t.id for t in bobs} & set(ids)
        trip = await target.get_trace(bobs[-1].id, user_identifier="bob")
        assert trip is not None and trip.message_ids == []
        assert len(trip.entity_ids) == 1 and trip.entity_ids != before["traces"][0]["entity_ids"]
        stats = await target.tool_stats(user_identifier="bob")
        assert sum(s.total_calls for s in stats) == CALLS
        again = await import_memory(target, as_bob)
        assert [again.copied[k] for k in KINDS] == [0, 0, 0]


async def test_a_narrowed_bolt_export_holds_the_traces_the_embedded_one_holds(
    bolt_url: str,
) -> None:
    """Narrowed to a session prefix (the traces of those sessions) or to users (their
    traces): Bolt exports the trace records the embedded store exports, line by line."""
    async with (
        open_backend("memory://", embedder=HashingEmbedder()) as source,
        open_backend(bolt_url) as bolt,
    ):
        await populate_traces(source, "ada")
        await populate_traces(source, "bob", "b-")
        await copy_memory(source, bolt)
        for scope in ({"session_prefix": "b-chat-1"}, {"users": ["bob"]}):
            expected = _reasoning(await export_lines(source, **scope))
            assert expected
            assert _reasoning(await export_lines(bolt, **scope)) == expected


@pytest.fixture
async def reference(bolt_url: str, neo4j_server: Neo4jHandle) -> AsyncIterator[ReasoningMemory]:
    """The reference library's reasoning memory on the (emptied) test server."""
    async with reference_client(bolt_url, neo4j_server.auth) as client:
        yield ReasoningMemory(client)


async def test_a_trace_the_reference_wrote_exports_as_memory_core_reads_it(
    reference: ReasoningMemory, bolt_url: str
) -> None:
    """Its steps (no ``trace_id`` of ours), tool calls and user come out as ``get_trace``
    reads them, and arrive whole in the embedded store."""
    async with open_backend(bolt_url) as bolt, open_backend("memory://") as embedded:
        trace = await reference.start_trace(
            "trip", "plan a journey", generate_embedding=False, user_identifier="ada"
        )
        step = await reference.add_step(trace.id, thought="consider", generate_embedding=False)
        await reference.add_step(trace.id, action="book", generate_embedding=False)
        await reference.record_tool_call(
            step.id,
            "rail",
            {"to": "Rome"},
            result=[1, 2],
            status=ToolCallStatus.FAILURE,
            duration_ms=8,
            error="no seats",
        )
        await reference.complete_trace(trace.id, outcome="booked", success=True)
        ours = await bolt.get_trace(str(trace.id), user_identifier="ada")
        assert ours is not None
        lines = await export_lines(bolt)
        [record] = of_kind(lines, "trace")
        assert (record["id"], record["task"], record["user_identifier"]) == (
            ours.id,
            "plan a journey",
            "ada",
        )
        steps = of_kind(lines, "step")
        assert [(r["id"], r["step_number"], r["trace_id"]) for r in steps] == [
            (s.id, s.step_number, ours.id) for s in ours.steps
        ]
        [call] = of_kind(lines, "tool_call")
        assert (call["status"], call["result"], call["error"]) == ("failure", [1, 2], "no seats")
        report = await copy_memory(bolt, embedded)
        assert [report.copied[k] for k in KINDS] == [1, 2, 1]
        assert await embedded.get_trace(ours.id, user_identifier="ada") == ours
