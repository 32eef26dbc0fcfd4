"""Traces, steps and tool calls through the PostgreSQL bulk hook (real PostgreSQL): a
copy exports the same records as its source, and reads the same (every trace, the
listing, tool statistics, step search, similar traces); pages and batches that cut a
trace or a step apart are followed; a re-run writes nothing twice; tenancy holds in a
multi-tenant store."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core import HashingEmbedder, open_backend
from memory_core.archive.hooks import FOREIGN_MESSAGE, RENAMED
from memory_core.backends.postgres import transfer_traces
from memory_core.transfer import copy_memory, import_memory, importer
from memory_core_dev.postgres_schemas import schema_url
from memory_core_dev.postgres_server import PostgresHandle
from tests.transfer.sample import export_lines, of_kind
from tests.transfer.trace_sample import (
    CALLS,
    STEPS,
    TRACES,
    archive_lines,
    populate_traces,
    reasoning_view,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::memory_core.CapabilityWarning"),
]

KINDS = ("trace", "step", "tool_call")


async def test_a_postgres_copy_exports_and_reads_the_same_traces(
    postgres_server: PostgresHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of 2 and batches of 3 records: every stream page and every batch boundary
    (between a trace and its steps, a step and its calls) is crossed."""
    monkeypatch.setattr(transfer_traces, "PAGE", 2)
    monkeypatch.setattr(importer, "HOOK_BATCH", 3)
    urls = [schema_url(postgres_server.url, "traces") for _ in range(2)]
    async with (
        open_backend(urls[0], embedder=HashingEmbedder(8)) as source,
        open_backend(urls[1], embedder=HashingEmbedder(8)) as target,
    ):
        ids = await populate_traces(source, "ada") + await populate_traces(source, "bob", "b-")
        first = await export_lines(source)
        assert [len(of_kind(first, k)) for k in KINDS] == [2 * TRACES, 2 * STEPS, 2 * CALLS]
        assert all(r["embedding"] for r in of_kind(first, "trace") + of_kind(first, "step"))
        report = await copy_memory(source, target)
        assert [report.copied[k] for k in KINDS] == [2 * TRACES, 2 * STEPS, 2 * CALLS]
        assert not report.not_carried, report.summary()
        assert await export_lines(target) == first
        for user, tag in (("ada", ""), ("bob", "b-")):
            mine = [i for i in ids if (await source.get_trace(i, user_identifier=user))]
            assert await reasoning_view(target, user, mine, tag) == await reasoning_view(
                source, user, mine, tag
            )
        # The copy is a normal store: a step added later follows the imported ones.
        added = await target.add_step(ids[2], action="book the train", user_identifier="ada")
        assert added.step_number == 2
        again = await copy_memory(source, target)
        assert [again.copied[k] for k in KINDS] == [0, 0, 0]
        assert again.skipped[("tool_call", "already in the target")] == 2 * CALLS


async def test_an_interrupted_import_resumes_with_the_steps_and_calls_it_lacks(
    pg_url: str, postgres_server: PostgresHandle
) -> None:
    """The trace and its first step were written, then the import stopped: the re-run
    writes the rest under the trace it finds, each once."""
    async with (
        open_backend(schema_url(postgres_server.url, "traces")) as source,
        open_backend(pg_url) as target,
    ):
        await populate_traces(source, None)
        lines = await archive_lines(source)
        cut = next(i for i, line in enumerate(lines) if '"record":"step"' in line) + 1
        await import_memory(target, lines[:cut])
        report = await import_memory(target, lines)
        assert [report.copied[k] for k in KINDS] == [TRACES - 1, STEPS - 1, CALLS]
        assert report.skipped[("trace", "already in the target")] == 1
        assert await export_lines(target) == await export_lines(source)


async def test_no_trace_reaches_another_tenant(
    pg_url: str, postgres_server: PostgresHandle
) -> None:
    """Bob's archive carries the ids of Alice's traces, steps and calls, and links to her
    message and entity: his records get ids of his own tenant, hers stay as they were,
    and no link crosses."""
    async with (
        open_backend(schema_url(postgres_server.url, "traces"), multi_tenant=True) as source,
        open_backend(pg_url, multi_tenant=True) as target,
    ):
        ids = await populate_traces(source, "alice")
        lines = await archive_lines(source)
        await import_memory(target, lines)
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


@pytest.mark.parametrize(
    "scope", [{"session_prefix": "b-chat-1"}, {"users": ["bob"]}, {"users": ["ada", "nobody"]}]
)
async def test_a_narrowed_export_holds_the_traces_the_embedded_one_holds(
    pg_url: str, scope: dict[str, Any]
) -> None:
    """Narrowed to a session prefix (the traces of those sessions) or to users (their
    traces): PostgreSQL exports what the embedded store exports, line by line."""
    async with (
        open_backend("memory://", embedder=HashingEmbedder(8)) as source,
        open_backend(pg_url) as pg,
    ):
        await populate_traces(source, "ada")
        await populate_traces(source, "bob", "b-")
        await copy_memory(source, pg)
        expected = await export_lines(source, **scope)
        assert of_kind(expected, "trace")
        assert await export_lines(pg, **scope) == expected


async def test_nul_and_escapes_in_every_text_of_a_trace_survive_postgres(pg_url: str) -> None:
    """PostgreSQL text cannot hold NUL: tasks, outcomes, thoughts, tool names, errors,
    arguments, results and metadata with NUL (and the escape character) come back
    exactly."""
    odd = "nul\x00 and \x01one ✓"
    async with open_backend("memory://") as source, open_backend(pg_url) as pg:
        trace = await source.start_trace("chat", f"task {odd}", metadata={odd: [odd]})
        step = await source.add_step(trace.id, thought=odd, observation=f"saw {odd}")
        await source.record_tool_call(
            step.id, f"tool {odd}", {odd: {odd: 1}}, result=[odd, {odd: None}], error=odd
        )
        await source.complete_trace(trace.id, outcome=odd, success=True)
        first = await export_lines(source)
        report = await copy_memory(source, pg)
        assert [report.copied[k] for k in KINDS] == [1, 1, 1]
        assert await export_lines(pg) == first
        assert await pg.get_trace(trace.id) == await source.get_trace(trace.id)
        [found] = await pg.search_steps("saw")
        assert found.id == step.id and found.observation == f"saw {odd}"
