"""Reasoning memory: traces, their numbered steps and tool calls, completion, listings,
links, tool statistics, similar traces and step search.

Every scenario writes for fresh users
(:meth:`~memory_core.conformance.harness.Harness.start_trace`), erased at clean-up where
the backend has ``user_erasure``.
"""

from __future__ import annotations

from typing import Any
from uuid import uuid4

import anyio
import pytest

from memory_core import (
    InvalidArgumentTypeError,
    InvalidRequestError,
    NotFoundError,
    ReasoningTrace,
    ToolCallStatus,
)

from ..checks import invalid, same_json, word
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase

ODD = "naïve 🦊 \u4e16\u754c \x00 'quote\" \\ %_"
RESULT: Any = {"rows": [1, 2.5, None, True, ODD], "empty": {}, "n": -(2**53)}
STATUSES = [s.value for s in ToolCallStatus]


def _ids(records: list[Any]) -> list[str]:
    return [r.id for r in records]


class TracesSuite(SuiteBase):
    """Scenarios of area ``traces``."""

    @scenario(
        "traces.round_trip",
        "a trace, its steps and their tool calls read back exactly (texts, metadata, "
        "arguments, results of every JSON type, statuses, durations, errors, user), with "
        "odd characters",
        requires="traces",
    )
    async def test_traces_round_trip(self, harness: Harness) -> None:
        user, session = harness.new_user(), harness.unique()
        meta = {"source": ODD, "n": 3, "ok": True, "nested": {"x": [1.5, None]}}
        trace = await harness.start_trace(session, f"plan {ODD}", user=user, metadata=meta)
        assert (trace.session_id, trace.task, trace.user_identifier) == (
            session,
            f"plan {ODD}",
            user,
        )
        assert trace.steps == [] and trace.completed_at is None and trace.success is None
        same_json(trace.metadata, meta)
        step = await harness.backend.add_step(
            trace.id, thought=ODD, action=f"do {ODD}", metadata=meta, user_identifier=user
        )
        assert (step.trace_id, step.step_number, step.observation) == (trace.id, 1, None)
        calls = []
        for i, status in enumerate(STATUSES):
            calls.append(
                await harness.backend.record_tool_call(
                    step.id,
                    f"tool_{i}",
                    {"q": ODD, "deep": [{"k": i}]},
                    result=[RESULT, i, "x", None][i % 4],
                    status=ToolCallStatus(status) if i % 2 else status,
                    duration_ms=None if i == 0 else i * 10,
                    error=None if status == "success" else f"failed {ODD}",
                    user_identifier=user,
                )
            )
        read = await harness.backend.get_trace(trace.id, user_identifier=user)
        assert read is not None and read.id == trace.id and read.task == trace.task
        [got] = read.steps
        assert (got.id, got.thought, got.action, got.observation) == (
            step.id,
            ODD,
            f"do {ODD}",
            None,
        )
        same_json(got.metadata, meta)
        assert len(got.tool_calls) == len(calls)
        for made, back in zip(calls, got.tool_calls, strict=True):
            assert (back.id, back.tool_name, back.status, back.duration_ms, back.error) == (
                made.id,
                made.tool_name,
                made.status,
                made.duration_ms,
                made.error,
            )
            same_json(back.arguments, made.arguments, "arguments")
            same_json(back.result, made.result, "result")
        assert [c.status.value for c in got.tool_calls] == STATUSES

    @scenario(
        "traces.step_numbers",
        "20 steps added at once to one trace are numbered 1 to 20, each once, and read "
        "back in that order",
        requires="traces",
    )
    async def test_traces_step_numbers(self, harness: Harness) -> None:
        user = harness.new_user()
        trace = await harness.start_trace(harness.unique(), "many steps", user=user)
        numbers: dict[str, int] = {}

        async def add(i: int) -> None:
            step = await harness.backend.add_step(
                trace.id, thought=f"thought {i}", user_identifier=user
            )
            numbers[step.thought or ""] = step.step_number

        async with anyio.create_task_group() as group:
            for i in range(20):
                group.start_soon(add, i)
        assert sorted(numbers.values()) == list(range(1, 21)), sorted(numbers.values())
        read = await harness.backend.get_trace(trace.id, user_identifier=user)
        assert read is not None
        assert [s.step_number for s in read.steps] == list(range(1, 21))
        assert {s.thought: s.step_number for s in read.steps} == numbers

    @scenario(
        "traces.tool_call_order",
        "a step's tool calls read back oldest first, each step with its own",
        requires="traces",
    )
    async def test_traces_tool_call_order(self, harness: Harness) -> None:
        user = harness.new_user()
        trace = await harness.start_trace(harness.unique(), "order", user=user)
        first = await harness.backend.add_step(trace.id, action="a", user_identifier=user)
        second = await harness.backend.add_step(trace.id, observation="b", user_identifier=user)
        made = {first.id: [], second.id: []}  # type: dict[str, list[str]]
        for i in range(6):
            step = first if i % 3 else second
            call = await harness.backend.record_tool_call(
                step.id, f"t{5 - i}", {"i": i}, user_identifier=user
            )
            made[step.id].append(call.id)
        read = await harness.backend.get_trace(trace.id, user_identifier=user)
        assert read is not None
        assert {s.id: _ids(s.tool_calls) for s in read.steps} == made

    @scenario(
        "traces.complete_once",
        "complete_trace sets outcome, success and completed_at once: completing again "
        "changes nothing and returns the trace as first completed",
        requires="traces",
    )
    async def test_traces_complete_once(self, harness: Harness) -> None:
        user = harness.new_user()
        trace = await harness.start_trace(harness.unique(), "finish", user=user)
        await harness.backend.add_step(trace.id, thought="t", user_identifier=user)
        done = await harness.backend.complete_trace(
            trace.id, outcome=f"done {ODD}", success=True, user_identifier=user
        )
        assert (done.outcome, done.success) == (f"done {ODD}", True)
        assert done.completed_at is not None and done.completed_at >= done.started_at
        again = await harness.backend.complete_trace(
            trace.id, outcome="other", success=False, user_identifier=user
        )
        read = await harness.backend.get_trace(trace.id, user_identifier=user)
        assert read is not None
        for got in (again, read):
            assert (got.outcome, got.success, got.completed_at) == (
                done.outcome,
                True,
                done.completed_at,
            )
        assert [s.step_number for s in read.steps] == [1]

    @scenario(
        "traces.list",
        "list_traces returns headers newest first, of one session when asked, only "
        "completed ones of the given success, at most limit; pages follow cursors without "
        "repeats or gaps, a trace started meanwhile shifting nothing; a foreign cursor is "
        "refused naming cursor",
        requires="traces",
    )
    async def test_traces_list(self, harness: Harness) -> None:
        user, one, two = harness.new_user(), harness.unique(), harness.unique()
        made: list[ReasoningTrace] = []
        for i in range(5):
            made.append(await harness.start_trace(one if i % 2 else two, f"t{i}", user=user))
            await anyio.sleep(0.002)  # distinct start times, whatever the clock's grain
        await harness.backend.complete_trace(made[0].id, success=True, user_identifier=user)
        await harness.backend.complete_trace(made[1].id, success=False, user_identifier=user)
        await harness.backend.complete_trace(made[3].id, success=True, user_identifier=user)
        newest = list(reversed(_ids(made)))
        listed = await harness.backend.list_traces(user_identifier=user)
        assert _ids(listed) == newest and all(t.steps == [] for t in listed)
        assert _ids(await harness.backend.list_traces(one, user_identifier=user)) == [
            made[3].id,
            made[1].id,
        ]
        good = await harness.backend.list_traces(success=True, user_identifier=user)
        assert _ids(good) == [made[3].id, made[0].id]
        bad = await harness.backend.list_traces(success=False, user_identifier=user)
        assert _ids(bad) == [made[1].id]
        assert _ids(await harness.backend.list_traces(limit=2, user_identifier=user)) == newest[:2]
        seen: list[str] = []
        cursor = None
        for _ in range(5):
            page = await harness.backend.list_traces_page(
                limit=2, cursor=cursor, user_identifier=user
            )
            seen += _ids(page.traces)
            if cursor is None:  # a trace started while paging leaves the next pages as they were
                await harness.start_trace(one, "late", user=user)
            cursor = page.next_cursor
            if cursor is None:
                break
        assert seen == newest
        with invalid("cursor"):
            await harness.backend.list_traces_page(cursor="nope", user_identifier=user)

    @scenario(
        "traces.unknown_ids",
        "an unknown trace or step raises NotFoundError naming trace_id or step_id and "
        "writes nothing; get_trace of an unknown id is None",
        requires="traces",
    )
    async def test_traces_unknown_ids(self, harness: Harness) -> None:
        user = harness.new_user()
        backend = harness.backend
        with pytest.raises(NotFoundError) as info:
            await backend.add_step(word(), thought="t", user_identifier=user)
        assert info.value.argument == "trace_id"
        with pytest.raises(NotFoundError) as info:
            await backend.record_tool_call(word(), "tool", user_identifier=user)
        assert info.value.argument == "step_id"
        with pytest.raises(NotFoundError) as info:
            await backend.complete_trace(word(), success=True, user_identifier=user)
        assert info.value.argument == "trace_id"
        assert await backend.get_trace(word(), user_identifier=user) is None
        assert await backend.list_traces(user_identifier=user) == []

    @scenario(
        "traces.bad_input",
        "bad reasoning arguments raise errors naming them and write nothing",
        requires="traces",
    )
    async def test_traces_bad_input(self, harness: Harness) -> None:
        user = harness.new_user()
        backend = harness.backend
        with invalid("task"):
            await backend.start_trace("s", " ", user_identifier=user)
        with invalid("metadata"):
            await backend.start_trace("s", "t", metadata={"x": float("nan")}, user_identifier=user)
        assert await backend.list_traces(user_identifier=user) == []
        trace = await harness.start_trace(harness.unique(), "t", user=user)
        with invalid("thought"):
            await backend.add_step(trace.id, user_identifier=user)
        with invalid("action", InvalidArgumentTypeError):
            await backend.add_step(trace.id, action=3, user_identifier=user)  # type: ignore[arg-type]
        step = await backend.add_step(trace.id, thought="ok", user_identifier=user)
        bad: list[tuple[str, dict[str, Any]]] = [
            ("status", {"status": "finished"}),
            ("duration_ms", {"duration_ms": -1}),
            ("duration_ms", {"duration_ms": 1.5}),
            ("result", {"result": object()}),
            ("arguments", {"arguments": ["x"]}),
            ("tool_name", {"tool_name": ""}),
        ]
        for argument, options in bad:
            call = {"step_id": step.id, "tool_name": "tool", **options}
            with pytest.raises((InvalidRequestError, InvalidArgumentTypeError)) as info:
                await backend.record_tool_call(**call, user_identifier=user)
            assert info.value.argument == argument, (argument, info.value.argument)
        with invalid("success", InvalidArgumentTypeError):
            await backend.complete_trace(trace.id, success="yes", user_identifier=user)  # type: ignore[arg-type]
        read = await backend.get_trace(trace.id, user_identifier=user)
        assert read is not None and read.completed_at is None
        assert [len(s.tool_calls) for s in read.steps] == [0]

    @scenario(
        "traces.links",
        "link_trace links messages and entities once each; an unknown id raises "
        "NotFoundError naming message_ids or entity_ids and links nothing",
        requires=("traces", "trace_links", "entities"),
    )
    async def test_traces_links(self, harness: Harness) -> None:
        user = harness.new_user()
        owner = user if harness.backend.multi_tenant else None
        handle = await harness.new_session(user=user)
        said = await harness.backend.add_message(handle, "user", "ask", user_identifier=user)
        entity = await harness.add_entity(word().capitalize(), "PERSON", user_identifier=owner)
        trace = await harness.start_trace(harness.unique(), "linked", user=user)
        link = harness.backend.link_trace
        with pytest.raises(NotFoundError) as info:
            await link(trace.id, message_ids=[said.id], entity_ids=[word()], user_identifier=user)
        assert info.value.argument == "entity_ids"
        with pytest.raises(NotFoundError) as info:
            await link(trace.id, message_ids=[word()], entity_ids=[entity.id], user_identifier=user)
        assert info.value.argument == "message_ids"
        read = await harness.backend.get_trace(trace.id, user_identifier=user)
        assert read is not None and (read.message_ids, read.entity_ids) == ([], [])
        for _ in range(2):
            got = await link(
                trace.id, message_ids=[said.id], entity_ids=[entity.id], user_identifier=user
            )
            assert (got.message_ids, got.entity_ids) == ([str(said.id)], [entity.id])
        read = await harness.backend.get_trace(trace.id, user_identifier=user)
        assert read is not None
        assert (read.message_ids, read.entity_ids) == ([str(said.id)], [entity.id])

    @scenario(
        "traces.user_scoped",
        "one user's traces, steps and tool calls are never read, listed, extended, "
        "completed or counted for another",
        requires="traces",
    )
    async def test_traces_user_scoped(self, harness: Harness) -> None:
        await _isolated(harness, harness.backend)

    @scenario(
        "traces.multi_tenant",
        "on a multi-tenant backend no reasoning call crosses tenants",
        requires=("traces", "multi_tenant"),
    )
    async def test_traces_multi_tenant(self, harness: Harness) -> None:
        await _isolated(harness, await harness.tenant_backend())

    @scenario(
        "traces.clear_session",
        "clear_session deletes the session's traces with their steps and tool calls, and "
        "only those: another session's trace stays (and, on a multi-tenant backend, another "
        "user's trace of the same session name); tool_stats drop the deleted calls; a session "
        "with traces and no conversation returns True, then False",
        requires="traces",
    )
    async def test_traces_clear_session(self, harness: Harness) -> None:
        user, session, other = harness.new_user(), harness.unique(), harness.unique()
        tool = f"tool_{word()}"
        if harness.caps.auto_create_conversation:
            await harness.backend.add_message(session, "user", "hello", user_identifier=user)
        gone = [await _traced(harness, harness.backend, session, user, tool) for _ in range(2)]
        kept = await _traced(harness, harness.backend, other, user, tool)
        assert await harness.backend.clear_session(session, user_identifier=user) is True
        for trace in gone:
            assert await harness.backend.get_trace(trace, user_identifier=user) is None
        assert await harness.backend.list_traces(session, user_identifier=user) == []
        left = await harness.backend.get_trace(kept, user_identifier=user)
        assert left is not None and [len(s.tool_calls) for s in left.steps] == [1]
        if harness.caps.tool_stats:
            [stats] = await harness.backend.tool_stats(tool, user_identifier=user)
            assert stats.total_calls == 1, stats
        assert await harness.backend.clear_session(other, user_identifier=user) is True
        assert await harness.backend.get_trace(kept, user_identifier=user) is None
        assert await harness.backend.clear_session(other, user_identifier=user) is False
        if harness.caps.multi_tenant:
            await _tenants_apart(harness, tool)

    @scenario(
        "traces.clear_session_by_id",
        "clear_session(conversation_id=...) deletes the traces of that conversation's "
        "session; an unknown conversation_id returns False and deletes no trace",
        requires=("traces", "auto_create_conversation"),
    )
    async def test_traces_clear_session_by_id(self, harness: Harness) -> None:
        user, session = harness.new_user(), harness.unique()
        await harness.backend.add_message(session, "user", "hello", user_identifier=user)
        made = await harness.backend.get_conversation(session, user_identifier=user)
        trace = await _traced(harness, harness.backend, session, user, f"tool_{word()}")
        unknown = uuid4()
        assert (
            await harness.backend.clear_session(conversation_id=unknown, user_identifier=user)
            is False
        )
        assert await harness.backend.get_trace(trace, user_identifier=user) is not None
        assert (
            await harness.backend.clear_session(conversation_id=made.id, user_identifier=user)
            is True
        )
        assert await harness.backend.get_trace(trace, user_identifier=user) is None
        assert await harness.backend.list_traces(session, user_identifier=user) == []


async def _traced(harness: Harness, backend: Any, session: str, user: str, tool: str) -> str:
    """A trace of ``user`` in ``session`` with one step and one call of ``tool``; its id."""
    trace = await harness.start_trace(session, f"task {word()}", backend=backend, user=user)
    step = await backend.add_step(trace.id, thought="look", user_identifier=user)
    await backend.record_tool_call(step.id, tool, status="success", user_identifier=user)
    return trace.id


async def _tenants_apart(harness: Harness, tool: str) -> None:
    """On a multi-tenant backend: clearing one tenant's session leaves another tenant's
    traces of the same session name."""
    backend = await harness.tenant_backend()
    alice, bob, session = harness.new_user(), harness.new_user(), harness.unique()
    await _traced(harness, backend, session, alice, tool)
    theirs = await _traced(harness, backend, session, bob, tool)
    assert await backend.clear_session(session, user_identifier=alice) is True
    assert await backend.list_traces(session, user_identifier=alice) == []
    assert await backend.get_trace(theirs, user_identifier=bob) is not None
    if backend.capabilities.tool_stats:
        [stats] = await backend.tool_stats(tool, user_identifier=bob)
        assert stats.total_calls == 1, stats


async def _isolated(harness: Harness, backend: Any) -> None:
    alice, bob = harness.new_user(), harness.new_user()
    session, task = harness.unique(), f"task {word()}"
    mine = await harness.start_trace(session, task, backend=backend, user=alice)
    step = await backend.add_step(mine.id, thought=task, user_identifier=alice)
    await backend.record_tool_call(step.id, "shared_tool", user_identifier=alice)
    await backend.complete_trace(mine.id, success=True, user_identifier=alice)
    await harness.start_trace(session, "bob's own", backend=backend, user=bob)
    assert await backend.get_trace(mine.id, user_identifier=bob) is None
    assert [t.task for t in await backend.list_traces(user_identifier=bob)] == ["bob's own"]
    assert await backend.list_traces(session, success=True, user_identifier=bob) == []
    for call in (
        backend.add_step(mine.id, thought="x", user_identifier=bob),
        backend.record_tool_call(step.id, "shared_tool", user_identifier=bob),
        backend.complete_trace(mine.id, success=False, user_identifier=bob),
    ):
        with pytest.raises(NotFoundError):
            await call
    if backend.capabilities.tool_stats:
        assert await backend.tool_stats(user_identifier=bob) == []
    if backend.capabilities.similar_traces:
        assert await backend.similar_traces(task, user_identifier=bob) == []
        assert await backend.search_steps(task, user_identifier=bob) == []
    read = await backend.get_trace(mine.id, user_identifier=alice)
    assert read is not None and read.success is True
    assert [len(s.tool_calls) for s in read.steps] == [1]


class ToolStatsSuite(SuiteBase):
    """Scenarios of area ``tool_stats``."""

    @scenario(
        "tool_stats.exact",
        "tool_stats counts every call, successes, failures (failure, error, timeout; not "
        "pending or cancelled), the success rate, the mean of the durations given and the "
        "last use, per tool by name; one tool's alone when asked; none for a tool never "
        "called",
        requires=("traces", "tool_stats"),
    )
    async def test_tool_stats_exact(self, harness: Harness) -> None:
        user = harness.new_user()
        trace = await harness.start_trace(harness.unique(), "stats", user=user)
        step = await harness.backend.add_step(trace.id, thought="t", user_identifier=user)
        plan = [
            ("success", 10),
            ("success", 30),
            ("failure", None),
            ("error", 20),
            ("timeout", None),
            ("cancelled", None),
            ("pending", None),
        ]
        last = None
        for status, took in plan:
            last = await harness.backend.record_tool_call(
                step.id, "zeta", status=status, duration_ms=took, user_identifier=user
            )
        alpha = await harness.backend.record_tool_call(
            step.id, "alpha", status="timeout", user_identifier=user
        )
        stats = await harness.backend.tool_stats(user_identifier=user)
        assert [s.name for s in stats] == ["alpha", "zeta"]
        first, zeta = stats
        assert (first.total_calls, first.successful_calls, first.failed_calls) == (1, 0, 1)
        assert first.success_rate == 0.0 and first.avg_duration_ms is None
        assert first.last_used_at == alpha.created_at
        assert (zeta.total_calls, zeta.successful_calls, zeta.failed_calls) == (7, 2, 3)
        assert zeta.success_rate == pytest.approx(2 / 7)
        assert zeta.avg_duration_ms == pytest.approx(20.0)
        assert last is not None and zeta.last_used_at == last.created_at
        assert await harness.backend.tool_stats("zeta", user_identifier=user) == [zeta]
        assert await harness.backend.tool_stats(word(), user_identifier=user) == []


class SimilarTracesSuite(SuiteBase):
    """Scenarios of area ``similar_traces``."""

    @scenario(
        "similar_traces.ranking",
        "similar_traces finds past tasks sharing words, best first with scores in 0..1, "
        "successful ones only by default, honours limit and threshold, and finds nothing "
        "for words no task holds",
        requires=("traces", "similar_traces"),
    )
    async def test_similar_traces_ranking(self, harness: Harness) -> None:
        user, session = harness.new_user(), harness.unique()
        key, other = word(), word()
        both = await harness.start_trace(session, f"{key} {other} now", user=user)
        one = await harness.start_trace(session, f"{key} later", user=user)
        failed = await harness.start_trace(session, f"{key} {other}", user=user)
        still_open = await harness.start_trace(session, f"{key} {other} open", user=user)
        await harness.start_trace(session, f"unrelated {word()}", user=user)
        for trace, worked in ((both, True), (one, True), (failed, False)):
            await harness.backend.complete_trace(trace.id, success=worked, user_identifier=user)
        similar = harness.backend.similar_traces
        hits = await similar(f"{key} {other}", user_identifier=user)
        assert _ids(hits) == [both.id, one.id], "successful ones, the one with both words first"
        scores = [h.score for h in hits]
        assert all(s is not None and 0 < s <= 1 for s in scores), scores
        assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
        every = await similar(f"{key} {other}", success_only=False, user_identifier=user)
        assert set(_ids(every)) == {both.id, one.id, failed.id, still_open.id}
        assert _ids(await similar(key, limit=1, user_identifier=user)) in ([both.id], [one.id])
        floor = hits[0].score
        assert floor is not None and hits[1].score is not None and hits[1].score < floor
        above = await similar(f"{key} {other}", threshold=floor, user_identifier=user)
        assert _ids(above) == [both.id]
        assert await similar(word(), user_identifier=user) == []

    @scenario(
        "similar_traces.search_steps",
        "search_steps finds a word of a step's thought, action or observation, best first "
        "with scores and the step's tool calls",
        requires=("traces", "similar_traces"),
    )
    async def test_similar_traces_search_steps(self, harness: Harness) -> None:
        user = harness.new_user()
        key = word()
        trace = await harness.start_trace(harness.unique(), "steps", user=user)
        thought = await harness.backend.add_step(
            trace.id, thought=f"{key} idea", user_identifier=user
        )
        action = await harness.backend.add_step(trace.id, action=f"run {key}", user_identifier=user)
        seen = await harness.backend.add_step(trace.id, observation=key, user_identifier=user)
        await harness.backend.add_step(trace.id, thought=word(), user_identifier=user)
        call = await harness.backend.record_tool_call(action.id, "tool", user_identifier=user)
        hits = await harness.backend.search_steps(key, user_identifier=user)
        assert set(_ids(hits)) == {thought.id, action.id, seen.id}
        assert all(h.score is not None and 0 < h.score <= 1 for h in hits)
        [found] = [h for h in hits if h.id == action.id]
        assert _ids(found.tool_calls) == [call.id]
        assert len(await harness.backend.search_steps(key, limit=1, user_identifier=user)) == 1
        assert await harness.backend.search_steps(word(), user_identifier=user) == []
