"""Traces, steps and tool calls in the archive (format version 3): exact round trips
through each bulk path, ``memory-core copy``, version 2 archives, bad records, the public
path (ids and timestamps issued by the target, said in the report), a target without the
``traces`` flag, and tenancy."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_core import HashingEmbedder, open_backend
from memory_core.archive import records
from memory_core.archive.hooks import (
    FOREIGN_MESSAGE,
    RENAMED,
    STEP_LOST,
    STEP_NUMBER_TAKEN,
    carried_kinds,
)
from memory_core.backends.embedded import EmbeddedStore
from memory_core.cli import main
from memory_core.transfer import ArchiveError, copy_memory, export_memory, import_memory
from memory_core.transfer.public_long_term import NO_IDS
from memory_core.transfer.public_traces import IMPORT_TIME, NEW_MESSAGE_IDS, UNREADABLE_VECTORS
from memory_core_dev.postgres_schemas import schema_url
from memory_core_dev.postgres_server import PostgresHandle
from tests.transfer.sample import PublicStore, backend_of, export_lines, of_kind
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
REASONING = ('{"record":"trace"', '{"record":"step"', '{"record":"tool_call"')


def _reasoning(lines: list[str]) -> list[str]:
    """The trace, step and tool call lines of an archive, in order."""
    found = [line for line in lines if line.startswith(REASONING)]
    assert found, "control: the archive holds reasoning records"
    return found


def _copied(report: Any) -> list[int]:
    return [report.copied[kind] for kind in KINDS]


class _NoTracesStore(EmbeddedStore):
    capabilities = replace(
        EmbeddedStore.capabilities,
        traces=False,
        tool_stats=False,
        similar_traces=False,
        trace_links=False,
    )


class _NoTracesPublicStore(_NoTracesStore):
    def bulk_transfer(self) -> None:
        return None


# ---------------------------------------------------------------------------- bulk paths


@pytest.fixture(
    params=["embedded", "postgres", pytest.param("bolt", marks=pytest.mark.neo4j_private)]
)
def target_url(request: pytest.FixtureRequest) -> str:
    """A fresh, empty store of each kind with a bulk path."""
    if request.param == "embedded":
        return "memory://"
    if request.param == "postgres":
        server: PostgresHandle = request.getfixturevalue("postgres_server")
        return schema_url(server.url, "traces")
    url: str = request.getfixturevalue("bolt_url")
    return url


async def test_a_copy_through_each_bulk_path_keeps_every_trace_exactly(target_url: str) -> None:
    """Into the target through its bulk import, back out through its bulk export: the
    same reasoning records, and the same reads (every trace, listing, statistics, step
    search, similar traces). The embedder's default size: a Neo4j's vector indexes
    outlive the data a test wipes."""
    async with (
        open_backend("memory://", embedder=HashingEmbedder()) as source,
        open_backend(target_url, embedder=HashingEmbedder()) as target,
        open_backend("memory://", embedder=HashingEmbedder()) as back,
    ):
        hook = target.store.bulk_transfer()
        lacks = hook is None or "trace" not in carried_kinds(hook)
        if lacks and target_url != "memory://":  # the embedded path must carry them
            pytest.skip("bulk path lacks traces")
        ids = await populate_traces(source, None)
        first = await export_lines(source)
        assert [len(of_kind(first, kind)) for kind in KINDS] == [TRACES, STEPS, CALLS]
        report = await copy_memory(source, target)
        assert _copied(report) == [TRACES, STEPS, CALLS]
        assert not report.not_carried, report.summary()
        assert _reasoning(await export_lines(target)) == _reasoning(first)
        await copy_memory(target, back)
        assert _reasoning(await export_lines(back)) == _reasoning(first)
        for copy in (target, back):
            assert await reasoning_view(copy, None, ids) == await reasoning_view(source, None, ids)


async def test_an_embedded_round_trip_is_equal_record_for_record() -> None:
    async with (
        open_backend("memory://", embedder=HashingEmbedder(8)) as source,
        open_backend("memory://", embedder=HashingEmbedder(8)) as target,
    ):
        ids = await populate_traces(source, None)
        lines = await archive_lines(source)
        report = await import_memory(target, [line + "\n" for line in lines])
        assert _copied(report) == [TRACES, STEPS, CALLS]
        assert await export_lines(target) == await export_lines(source)
        assert await reasoning_view(target, None, ids) == await reasoning_view(source, None, ids)
        # Every field as written (the control for the comparisons above).
        trip = of_kind(lines, "trace")[0]
        assert trip["task"] == "plan a trip to Lisbon ✓" and trip["success"] is True
        assert len(trip["message_ids"]) == 2 and len(trip["entity_ids"]) == 1
        assert trip["embedding"] is not None and trip["completed_at"] is not None
        statuses = [c["status"] for c in of_kind(lines, "tool_call")]
        assert statuses == ["success", "timeout", "failure", "error", "cancelled"]
        # The copy is a normal store: a step added later follows the imported ones.
        step = await target.add_step(ids[0], thought="one more")
        assert step.step_number == 3
        # A second import of the same archive writes nothing twice.
        again = await import_memory(target, [line + "\n" for line in lines])
        assert _copied(again) == [0, 0, 0]
        assert again.skipped[("trace", "already in the target")] == TRACES


async def test_export_order_is_by_start_then_step_number_then_call_time() -> None:
    async with open_backend("memory://") as source:
        await populate_traces(source, None)
        found = [json.loads(line) for line in _reasoning(await export_lines(source))]
    started = [r["started_at"] for r in found if r["record"] == "trace"]
    assert started == sorted(started)
    trace = step = None
    number = 0
    for record in found:
        if record["record"] == "trace":
            trace, step, number = record["id"], None, 0
        elif record["record"] == "step":
            assert record["trace_id"] == trace and record["step_number"] > number
            step, number = record["id"], record["step_number"]
        else:
            assert record["step_id"] == step


async def test_a_session_prefix_exports_the_traces_of_those_sessions() -> None:
    async with open_backend("memory://") as source:
        await populate_traces(source, None)
        narrowed = await export_lines(source, session_prefix="chat-2")
    assert [t["task"] for t in of_kind(narrowed, "trace")] == ["book a hotel"]
    assert len(of_kind(narrowed, "step")) == 1 and len(of_kind(narrowed, "tool_call")) == 2


def test_memory_core_copy_of_a_file_with_traces(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"

    async def fill() -> None:
        async with open_backend(source, embedder=HashingEmbedder(8)) as backend:
            await populate_traces(backend, None)

    async def exported(url: str) -> list[str]:
        async with open_backend(url) as backend:
            return await export_lines(backend)

    anyio.run(fill)
    assert main(["copy", source, target, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"{TRACES} traces, {STEPS} steps, {CALLS} tool calls" in out, out
    first = anyio.run(exported, source)
    assert len(_reasoning(first)) == TRACES + STEPS + CALLS
    assert anyio.run(exported, target) == first


# ---------------------------------------------------------------------------- versions

TRACE: dict[str, Any] = {
    "record": "trace",
    "id": "trace-1",
    "session_id": "chat",
    "task": "plan",
    "outcome": "done",
    "success": True,
    "metadata": {},
    "user_identifier": None,
    "started_at": "2026-05-20T09:30:00.000000Z",
    "completed_at": "2026-05-20T09:31:00.000000Z",
    "message_ids": [],
    "entity_ids": [],
    "embedding": None,
}
STEP: dict[str, Any] = {
    "record": "step",
    "id": "step-1",
    "trace_id": "trace-1",
    "step_number": 1,
    "thought": "think",
    "action": None,
    "observation": None,
    "metadata": {},
    "created_at": "2026-05-20T09:30:01.000000Z",
    "embedding": None,
}
CALL: dict[str, Any] = {
    "record": "tool_call",
    "id": "call-1",
    "step_id": "step-1",
    "tool_name": "search",
    "arguments": {"q": 1},
    "result": [1, "two"],
    "status": "timeout",
    "duration_ms": 5,
    "error": "slow",
    "created_at": "2026-05-20T09:30:02.000000Z",
}


def _archive(version: int, *body: dict[str, Any]) -> list[str]:
    header = records.header("test", "memory://", EmbeddedStore.capabilities, False, None, None)
    lines = [{**header, "version": version}, *body, records.end({}, [], [])]
    return [json.dumps(line) + "\n" for line in lines]


async def test_a_version_3_archive_of_the_reasoning_kinds_imports() -> None:
    async with open_backend("memory://") as target:
        report = await import_memory(target, _archive(3, TRACE, STEP, CALL))
        assert _copied(report) == [1, 1, 1]
        trace = await target.get_trace("trace-1")
        assert trace is not None and trace.steps[0].tool_calls[0].status == "timeout"
        assert trace.steps[0].tool_calls[0].result == [1, "two"]


async def test_a_trace_in_a_version_2_archive_is_a_bad_line() -> None:
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError, match="not part of format version 2") as refused:
            await import_memory(target, _archive(2, TRACE))
        assert refused.value.line == 2
        assert await target.list_traces() == []


# ---------------------------------------------------------------------------- bad records


@pytest.mark.parametrize(
    ("record", "field", "value"),
    [
        (TRACE, "completed_at", "2026-05-20T09:29:59.000000Z"),
        (TRACE, "task", ""),
        (TRACE, "message_ids", ["m", "m"]),
        (TRACE, "success", "yes"),
        (STEP, "step_number", 0),
        (STEP, "thought", None),
        (STEP, "metadata", []),
        (CALL, "status", "done"),
        (CALL, "duration_ms", -1),
        (CALL, "tool_name", ""),
    ],
)
async def test_a_bad_reasoning_record_names_its_line_and_field(
    record: dict[str, Any], field: str, value: Any
) -> None:
    bad = {**record, field: value}
    body = [r if r["record"] != record["record"] else bad for r in (TRACE, STEP, CALL)]
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError) as refused:
            await import_memory(target, _archive(3, *body))
        at = 2 + [r["record"] for r in body].index(record["record"])
        assert refused.value.line == at
        assert f"{record['record']}.{field}" in refused.value.message
        # What came before the bad line is written, nothing of it or after it.
        trace = await target.get_trace("trace-1")
        if record is TRACE:
            assert trace is None
        else:
            assert trace is not None
            calls = [c for s in trace.steps for c in s.tool_calls]
            assert (len(trace.steps), len(calls)) == ((0, 0) if record is STEP else (1, 0))


async def test_a_step_that_does_not_follow_its_trace_is_a_bad_line() -> None:
    other = {**TRACE, "id": "trace-2"}
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError, match="does not follow its trace") as refused:
            await import_memory(target, _archive(3, TRACE, other, STEP))
        assert refused.value.line == 4


# ---------------------------------------------------------------------------- public path


async def test_the_public_path_reissues_ids_and_says_so(tmp_path: Path) -> None:
    async with (
        open_backend("memory://") as source,
        backend_of(PublicStore) as target,
    ):
        ids = await populate_traces(source, None)
        checkpoint = tmp_path / "copy.ckpt"
        before = datetime.now(UTC)
        report = await copy_memory(source, target, checkpoint=checkpoint)
        assert _copied(report) == [TRACES, STEPS, CALLS]
        for kind in KINDS:
            assert report.not_carried[(f"{kind}.id", NO_IDS)] == report.copied[kind]
        assert report.not_carried[("trace.started_at", IMPORT_TIME)] == TRACES
        assert report.not_carried[("trace.completed_at", IMPORT_TIME)] == 2
        assert report.not_carried[("step.created_at", IMPORT_TIME)] == STEPS
        assert report.not_carried[("trace.message_ids", NEW_MESSAGE_IDS)] == 2
        copied = await target.list_traces(limit=10)
        assert {t.task for t in copied} == {
            t.task for t in [await source.get_trace(i) for i in ids] if t is not None
        }
        assert not {t.id for t in copied} & set(ids)
        assert all(t.started_at >= before for t in copied)
        assert all(s.last_used_at and s.last_used_at >= before for s in await target.tool_stats())
        # What the statistics count travels: every call with its status and duration.
        mine = [(s.name, s.total_calls, s.failed_calls) for s in await target.tool_stats()]
        theirs = [(s.name, s.total_calls, s.failed_calls) for s in await source.tool_stats()]
        assert mine == theirs
        # A re-run with the checkpoint writes nothing twice.
        again = await copy_memory(source, target, checkpoint=checkpoint)
        assert _copied(again) == [0, 0, 0]
        assert again.skipped[("tool_call", "already copied (checkpoint)")] == CALLS
        assert len(await target.list_traces(limit=10)) == TRACES
        assert sum(s.total_calls for s in await target.tool_stats()) == CALLS


async def test_a_public_export_reads_traces_without_their_embeddings() -> None:
    async with (
        backend_of(PublicStore, embedder=HashingEmbedder(8)) as source,
        open_backend("memory://") as target,
    ):
        await populate_traces(source, None)
        found = await archive_lines(source)
        assert [len(of_kind(found, kind)) for kind in KINDS] == [TRACES, STEPS, CALLS]
        assert all(r["embedding"] is None for r in of_kind(found, "trace"))
        exported = await export_memory(source, io.StringIO())
        assert exported.not_carried[("trace.embedding", UNREADABLE_VECTORS)] == TRACES
        assert exported.not_carried[("step.embedding", UNREADABLE_VECTORS)] == STEPS
        report = await import_memory(target, [line + "\n" for line in found])
        assert _copied(report) == [TRACES, STEPS, CALLS]
        assert _reasoning(await export_lines(target)) == _reasoning(found)


@pytest.mark.parametrize("store", [_NoTracesStore, _NoTracesPublicStore], ids=["hook", "public"])
async def test_a_target_without_the_traces_flag_names_what_it_skipped(
    store: type[EmbeddedStore],
) -> None:
    async with open_backend("memory://") as source, backend_of(store) as target:
        await populate_traces(source, None)
        report = await copy_memory(source, target)
        summary = report.summary()
        for kind, count, said in (
            ("trace", TRACES, "traces"),
            ("step", STEPS, "steps"),
            ("tool_call", CALLS, "tool calls"),
        ):
            assert report.copied[kind] == 0
            reason = f"embedded stores no {said} (capability 'traces' is False)"
            assert report.skipped[(kind, reason)] == count, summary
        assert report.copied["message"] == 2
        hook = EmbeddedStore.bulk_transfer(target.store)  # type: ignore[arg-type]
        held = [r["record"] async for r in hook.export_records(None, None, report)]
        assert not set(held) & set(KINDS)


# ---------------------------------------------------------------------------- tenancy


async def test_a_trace_id_of_another_tenant_gets_its_own_and_never_overwrites() -> None:
    async with (
        open_backend("memory://", multi_tenant=True) as source,
        open_backend("memory://", multi_tenant=True) as target,
    ):
        ids = await populate_traces(source, "ada")
        lines = [line + "\n" for line in await archive_lines(source)]
        # The same archive goes to bob in the target first: bob holds every id.
        as_bob = [line.replace('"ada"', '"bob"') for line in lines]
        await import_memory(target, as_bob)
        bob_before = await reasoning_view(target, "bob", ids)
        bob_trip = await target.get_trace(ids[0], user_identifier="bob")
        assert bob_trip is not None
        bob_messages = bob_trip.message_ids
        report = await import_memory(target, lines, on_conflict="overwrite")
        assert _copied(report) == [TRACES, STEPS, CALLS]
        assert report.not_carried[("trace.id", RENAMED)] == TRACES
        assert report.not_carried[("step.id", RENAMED)] == STEPS
        assert report.not_carried[("tool_call.id", RENAMED)] == CALLS
        # ada's messages got ids of their own (bob holds the archive's): the links follow.
        assert report.not_carried[("message.id", RENAMED)] == 2
        assert await reasoning_view(target, "bob", ids) == bob_before
        mine = await target.list_traces(limit=10, user_identifier="ada")
        assert len(mine) == TRACES and not {t.id for t in mine} & set(ids)
        trip = await target.get_trace(
            next(t.id for t in mine if t.task.startswith("plan")), user_identifier="ada"
        )
        assert trip is not None and [s.step_number for s in trip.steps] == [1, 2]
        assert len(trip.message_ids) == 2 and not set(trip.message_ids) & set(bob_messages)
        chat = await target.get_conversation("chat-1", user_identifier="ada")
        assert set(trip.message_ids) == {str(m.id) for m in chat.messages}
        assert len(trip.entity_ids) == 1 and trip.entity_ids != bob_trip.entity_ids
        stats = await target.tool_stats(user_identifier="ada")
        assert sum(s.total_calls for s in stats) == CALLS


async def test_a_tool_call_whose_step_was_not_carried_is_counted() -> None:
    orphan = {**CALL, "step_id": "step-9"}
    other = {**STEP, "id": "step-9", "step_number": 2, "trace_id": "trace-1"}
    async with open_backend("memory://", multi_tenant=True) as target:
        skipped = {**TRACE, "user_identifier": None}
        report = await import_memory(target, _archive(3, skipped, STEP, other, orphan))
        assert _copied(report) == [0, 0, 0]
        assert report.skipped[("tool_call", STEP_LOST)] == 1
        assert sum(n for (kind, _), n in report.skipped.items() if kind == "step") == 2


async def test_a_link_to_another_tenants_message_is_dropped_and_counted() -> None:
    async with open_backend("memory://", multi_tenant=True) as target:
        theirs = await target.add_message("chat", "user", "hi", user_identifier="bob")
        trace = {**TRACE, "user_identifier": "ada", "message_ids": [str(theirs.id)]}
        report = await import_memory(target, _archive(3, trace))
        assert report.copied["trace"] == 1
        assert report.not_carried[("trace.message_ids", FOREIGN_MESSAGE)] == 1
        mine = await target.get_trace("trace-1", user_identifier="ada")
        assert mine is not None and mine.message_ids == []


# ---------------------------------------------------------------------------- conflicts

STEP_2: dict[str, Any] = {**STEP, "id": "step-2", "step_number": 2, "thought": "again"}


async def test_skip_keeps_a_trace_and_adds_the_steps_it_lacks() -> None:
    """An import cut after the trace's first step, then run whole: it resumes."""
    async with open_backend("memory://") as target:
        await import_memory(target, _archive(3, TRACE, STEP))
        report = await import_memory(target, _archive(3, TRACE, STEP, CALL, STEP_2))
        assert _copied(report) == [0, 1, 1]
        assert report.skipped[("trace", "already in the target")] == 1
        assert report.skipped[("step", "already in the target")] == 1
        trace = await target.get_trace("trace-1")
        assert trace is not None and [s.id for s in trace.steps] == ["step-1", "step-2"]
        assert [c.id for c in trace.steps[0].tool_calls] == ["call-1"]
        assert (await target.add_step("trace-1", action="next")).step_number == 3


async def test_a_step_whose_number_is_taken_is_skipped_with_its_tool_calls() -> None:
    other = {**STEP, "id": "step-x"}
    orphan = {**CALL, "step_id": "step-x"}
    async with open_backend("memory://") as target:
        await import_memory(target, _archive(3, TRACE, STEP))
        report = await import_memory(target, _archive(3, TRACE, other, orphan))
        assert report.skipped[("step", STEP_NUMBER_TAKEN)] == 1
        assert report.skipped[("tool_call", STEP_LOST)] == 1
        trace = await target.get_trace("trace-1")
        assert trace is not None and [s.id for s in trace.steps] == ["step-1"]


async def test_overwrite_replaces_a_trace_and_counts_each_call_once() -> None:
    changed = {**TRACE, "outcome": "done again"}
    async with open_backend("memory://") as target:
        await import_memory(target, _archive(3, TRACE, STEP, CALL))
        report = await import_memory(
            target, _archive(3, changed, STEP, CALL), on_conflict="overwrite"
        )
        assert _copied(report) == [1, 1, 1]
        trace = await target.get_trace("trace-1")
        assert trace is not None and trace.outcome == "done again"
        assert [s.total_calls for s in await target.tool_stats()] == [1]


async def test_users_narrow_a_single_tenant_export_to_their_traces() -> None:
    async with open_backend("memory://") as source:
        await populate_traces(source, "ada")
        await populate_traces(source, "bob", "b-")
        narrowed = await export_lines(source, users=["ada"])
    assert {t["user_identifier"] for t in of_kind(narrowed, "trace")} == {"ada"}
    assert [len(of_kind(narrowed, kind)) for kind in KINDS] == [TRACES, STEPS, CALLS]


class _BeforeTraces:
    """A bulk transfer written before format version 3: no ``kinds``."""

    def __init__(self, inner: Any) -> None:
        self.export_records = inner.export_records
        self.import_records = inner.import_records


class _OldHookStore(EmbeddedStore):
    def bulk_transfer(self) -> Any:
        return _BeforeTraces(super().bulk_transfer())


async def test_a_hook_without_the_reasoning_kinds_says_what_it_leaves_out() -> None:
    async with backend_of(_OldHookStore) as old, open_backend("memory://") as source:
        await populate_traces(old, None)
        header = json.loads((await archive_lines(old))[0])
        kinds = {item["kind"] for item in header["not_exported"]}
        assert kinds == set(KINDS)
        await populate_traces(source, None)
        report = await copy_memory(source, old)
        reason = "the embedded bulk transfer does not read them yet"
        assert [report.skipped[(kind, reason)] for kind in KINDS] == [TRACES, STEPS, CALLS]
