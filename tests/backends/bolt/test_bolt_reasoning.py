"""Reasoning memory on Bolt: traces, numbered steps, tool calls, completion once, links,
listing pages, tool statistics (exact, per user), similar traces and step search, and
the graph they leave (the reference's shape, the Tool node's running totals)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from memory_core import EntityRef, HashingEmbedder, MemoryBackend, NotFoundError, open_backend
from memory_core_dev.neo4j_fixtures import Neo4jHandle

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

Unique = Callable[[str], str]
Graph = Callable[..., list[dict[str, Any]]]


async def test_a_trace_round_trips_with_steps_calls_and_links(
    bolt: MemoryBackend, unique: Unique
) -> None:
    user, session = unique("user"), unique("s")
    message = await bolt.add_message(session, "user", "find tea", user_identifier=user)
    ada = await bolt.add_entity(unique("Ada"), "PERSON")
    trace = await bolt.start_trace(
        session,
        "find a tea shop",
        metadata={"k": [1, None]},
        triggered_by_message_id=message.id,
        user_identifier=user,
    )
    assert trace.completed_at is None and trace.user_identifier == user
    assert trace.message_ids == [str(message.id)]
    first = await bolt.add_step(trace.id, thought="look it up", user_identifier=user)
    second = await bolt.add_step(
        trace.id, action="search", observation="two shops", metadata={"n": 2}, user_identifier=user
    )
    assert (first.step_number, second.step_number) == (1, 2)
    call = await bolt.record_tool_call(
        second.id,
        "search",
        {"q": "tea"},
        result={"hits": [1, 2]},
        status="timeout",
        duration_ms=12,
        error="slow",
        user_identifier=user,
    )
    plain = await bolt.record_tool_call(second.id, "lookup", result=0, user_identifier=user)
    linked = await bolt.link_trace(
        trace.id, message_ids=[message.id], entity_ids=[ada.id, ada.id], user_identifier=user
    )
    assert linked.entity_ids == [ada.id] and linked.message_ids == [str(message.id)]
    done = await bolt.complete_trace(trace.id, outcome="found", success=True, user_identifier=user)
    got = await bolt.get_trace(trace.id, user_identifier=user)
    assert got is not None and done.completed_at is not None
    assert (got.outcome, got.success, got.completed_at) == ("found", True, done.completed_at)
    assert got.metadata == {"k": [1, None]}
    assert [s.step_number for s in got.steps] == [1, 2]
    assert got.steps[1].metadata == {"n": 2} and got.steps[0].thought == "look it up"
    calls = got.steps[1].tool_calls
    assert [c.id for c in calls] == [call.id, plain.id]
    assert calls[0].model_dump() == call.model_dump()
    assert (calls[1].result, calls[1].arguments, calls[1].status) == (0, {}, "success")
    assert got.entity_ids == [ada.id] and got.message_ids == [str(message.id)]


async def test_completing_twice_keeps_the_first_completion(
    bolt: MemoryBackend, unique: Unique
) -> None:
    trace = await bolt.start_trace(unique("s"), "task")
    first = await bolt.complete_trace(trace.id, outcome="first", success=False)
    again = await bolt.complete_trace(trace.id, outcome="second", success=True)
    assert again.model_dump() == first.model_dump()
    assert (again.outcome, again.success) == ("first", False)


async def test_concurrent_steps_get_distinct_gapless_numbers(
    bolt: MemoryBackend, unique: Unique
) -> None:
    trace = await bolt.start_trace(unique("s"), "race")
    numbers: list[int] = []

    async def append(i: int) -> None:
        step = await bolt.add_step(trace.id, thought=f"step {i}")
        numbers.append(step.step_number)

    async with anyio.create_task_group() as group:
        for i in range(24):
            group.start_soon(append, i)
    assert sorted(numbers) == list(range(1, 25))
    got = await bolt.get_trace(trace.id)
    assert got is not None and [s.step_number for s in got.steps] == list(range(1, 25))


async def test_concurrent_completions_complete_once(bolt: MemoryBackend, unique: Unique) -> None:
    trace = await bolt.start_trace(unique("s"), "race")
    outcomes: list[str | None] = []

    async def complete(i: int) -> None:
        done = await bolt.complete_trace(trace.id, outcome=f"o{i}", success=True)
        outcomes.append(done.outcome)

    async with anyio.create_task_group() as group:
        for i in range(8):
            group.start_soon(complete, i)
    assert len(set(outcomes)) == 1, outcomes


@pytest.mark.neo4j_private
async def test_unknown_ids_raise_naming_the_argument_and_write_nothing(
    bolt: MemoryBackend, graph: Graph, unique: Unique, neo4j_server: Neo4jHandle
) -> None:
    neo4j_server.require_wipeable("it counts every trace and tool call of the database")
    user = unique("user")
    trace = await bolt.start_trace(unique("s"), "task", user_identifier=user)
    step = await bolt.add_step(trace.id, thought="t", user_identifier=user)
    ada = await bolt.add_entity(unique("Ada"), "PERSON")
    with pytest.raises(NotFoundError) as caught:
        await bolt.start_trace(unique("s"), unique("task"), triggered_by_message_id="nope")
    assert caught.value.argument == "triggered_by_message_id"
    for call, argument in [
        (bolt.add_step("nope", thought="t"), "trace_id"),
        (bolt.record_tool_call("nope", "tool"), "step_id"),
        (bolt.complete_trace("nope"), "trace_id"),
        (bolt.link_trace("nope", entity_ids=[ada.id]), "trace_id"),
        (bolt.link_trace(trace.id, entity_ids=[ada.id, "nope"]), "entity_ids"),
        (bolt.link_trace(trace.id, entity_ids=[ada.id], message_ids=["nope"]), "message_ids"),
    ]:
        with pytest.raises(NotFoundError) as caught:
            await call
        assert caught.value.argument == argument
    got = await bolt.get_trace(trace.id)
    assert got is not None and got.entity_ids == [] and len(got.steps) == 1
    assert graph("MATCH (n:ToolCall) RETURN n") == []
    assert graph("MATCH (n:ReasoningTrace) RETURN n.id AS id") == [{"id": trace.id}]
    assert await bolt.get_trace("nope") is None
    assert step.step_number == 1


async def test_a_user_reaches_only_their_own_traces(bolt: MemoryBackend, unique: Unique) -> None:
    alice, bob, session = unique("alice"), unique("bob"), unique("s")
    trace = await bolt.start_trace(session, "alice's task", user_identifier=alice)
    step = await bolt.add_step(trace.id, thought="secret plan", user_identifier=alice)
    await bolt.record_tool_call(step.id, "search", user_identifier=alice)
    await bolt.complete_trace(trace.id, success=True, user_identifier=alice)
    assert await bolt.get_trace(trace.id, user_identifier=bob) is None
    assert await bolt.list_traces(session, user_identifier=bob) == []
    assert await bolt.tool_stats(user_identifier=bob) == []
    assert await bolt.similar_traces("alice's task", user_identifier=bob) == []
    assert await bolt.search_steps("secret plan", user_identifier=bob) == []
    for call in [
        bolt.add_step(trace.id, thought="t", user_identifier=bob),
        bolt.record_tool_call(step.id, "search", user_identifier=bob),
        bolt.complete_trace(trace.id, user_identifier=bob),
        bolt.link_trace(trace.id, user_identifier=bob),
    ]:
        with pytest.raises(NotFoundError):
            await call
    assert [t.id for t in await bolt.list_traces(session, user_identifier=alice)] == [trace.id]
    [stats] = await bolt.tool_stats(user_identifier=alice)
    assert stats.total_calls == 1


async def test_a_tenant_sees_only_its_own_traces_and_links(
    tenant_bolt: MemoryBackend, unique: Unique
) -> None:
    alice, bob, session = unique("alice"), unique("bob"), unique("s")
    bobs_entity = await tenant_bolt.add_entity(unique("Bo"), "PERSON", user_identifier=bob)
    bobs_message = await tenant_bolt.add_message(session, "user", "hi", user_identifier=bob)
    trace = await tenant_bolt.start_trace(session, "task", user_identifier=alice)
    assert await tenant_bolt.get_trace(trace.id, user_identifier=bob) is None
    with pytest.raises(NotFoundError) as caught:
        await tenant_bolt.link_trace(trace.id, entity_ids=[bobs_entity.id], user_identifier=alice)
    assert caught.value.argument == "entity_ids"
    with pytest.raises(NotFoundError) as caught:
        await tenant_bolt.link_trace(trace.id, message_ids=[bobs_message.id], user_identifier=alice)
    assert caught.value.argument == "message_ids"
    with pytest.raises(NotFoundError):
        await tenant_bolt.start_trace(
            session, "task", triggered_by_message_id=bobs_message.id, user_identifier=alice
        )


async def test_tool_stats_are_exact_per_status_and_duration(
    bolt: MemoryBackend, unique: Unique
) -> None:
    user = unique("user")
    trace = await bolt.start_trace(unique("s"), "task", user_identifier=user)
    step = await bolt.add_step(trace.id, thought="t", user_identifier=user)
    calls = [
        ("success", 10),
        ("success", None),
        ("failure", 20),
        ("error", None),
        ("timeout", 40),
        ("pending", None),
        ("cancelled", 5),
    ]
    for status, took in calls:
        await bolt.record_tool_call(
            step.id, "search", status=status, duration_ms=took, user_identifier=user
        )
    await bolt.record_tool_call(step.id, "add", duration_ms=None, user_identifier=user)
    added, search = await bolt.tool_stats(user_identifier=user)
    assert (added.name, added.total_calls, added.avg_duration_ms) == ("add", 1, None)
    assert (search.total_calls, search.successful_calls, search.failed_calls) == (7, 2, 3)
    assert search.success_rate == pytest.approx(2 / 7)
    assert search.avg_duration_ms == pytest.approx(75 / 4)
    assert search.last_used_at is not None
    only = await bolt.tool_stats("search", user_identifier=user)
    assert [s.model_dump() for s in only] == [search.model_dump()]
    assert await bolt.tool_stats("never", user_identifier=user) == []


@pytest.mark.neo4j_private
async def test_store_wide_stats_and_the_tool_nodes_running_totals(
    bolt: MemoryBackend, graph: Graph, unique: Unique, neo4j_server: Neo4jHandle
) -> None:
    neo4j_server.require_wipeable("it reads the statistics of every tool call of the database")
    for user in (unique("a"), unique("b")):
        trace = await bolt.start_trace(unique("s"), "task", user_identifier=user)
        step = await bolt.add_step(trace.id, thought="t", user_identifier=user)
        for status, took in [("success", 10), ("error", None), ("failure", 30)]:
            await bolt.record_tool_call(
                step.id, "search", status=status, duration_ms=took, user_identifier=user
            )
    [search] = await bolt.tool_stats("search")
    assert (search.total_calls, search.successful_calls, search.failed_calls) == (6, 2, 4)
    assert search.avg_duration_ms == pytest.approx(20.0)
    assert [s.model_dump() for s in await bolt.tool_stats()] == [search.model_dump()]
    [tool] = graph("MATCH (t:Tool {name: 'search'}) RETURN properties(t) AS p")
    # The reference's rule: failures are error and timeout; every duration is summed.
    assert {k: tool["p"][k] for k in ("total_calls", "successful_calls", "failed_calls")} == {
        "total_calls": 6,
        "successful_calls": 2,
        "failed_calls": 2,
    }
    assert tool["p"]["total_duration_ms"] == 80


async def test_listing_pages_newest_first_by_session_and_success(
    bolt: MemoryBackend, unique: Unique
) -> None:
    user, session, other = unique("user"), unique("s"), unique("s")
    made = [await bolt.start_trace(session, f"t{i}", user_identifier=user) for i in range(5)]
    await bolt.start_trace(other, "elsewhere", user_identifier=user)
    await bolt.complete_trace(made[1].id, success=True, user_identifier=user)
    await bolt.complete_trace(made[3].id, success=False, user_identifier=user)
    expected = [t.id for t in sorted(made, key=lambda t: (t.started_at, t.id), reverse=True)]
    seen: list[str] = []
    cursor = None
    while True:
        page = await bolt.list_traces_page(session, limit=2, cursor=cursor, user_identifier=user)
        seen += [t.id for t in page.traces]
        assert all(t.steps == [] for t in page.traces)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == expected
    wins = await bolt.list_traces(session, success=True, user_identifier=user)
    assert [t.id for t in wins] == [made[1].id]
    losses = await bolt.list_traces(success=False, user_identifier=user)
    assert [t.id for t in losses] == [made[3].id]
    assert len(await bolt.list_traces(user_identifier=user)) == 6


async def test_similar_traces_and_step_search_score_by_words(
    bolt: MemoryBackend, unique: Unique
) -> None:
    user = unique("user")
    good = await bolt.start_trace(unique("s"), "book a flight to Paris", user_identifier=user)
    bad = await bolt.start_trace(unique("s"), "book a flight to Rome", user_identifier=user)
    await bolt.start_trace(unique("s"), "bake bread", user_identifier=user)
    await bolt.complete_trace(good.id, success=True, user_identifier=user)
    await bolt.complete_trace(bad.id, success=False, user_identifier=user)
    step = await bolt.add_step(good.id, thought="compare airline fares", user_identifier=user)
    await bolt.record_tool_call(step.id, "fares", user_identifier=user)
    await bolt.add_step(bad.id, observation="no fares left", user_identifier=user)
    hits = await bolt.similar_traces("flight to Paris", user_identifier=user)
    assert [t.id for t in hits] == [good.id] and hits[0].score is not None
    both = await bolt.similar_traces("flight to Paris", success_only=False, user_identifier=user)
    assert [t.id for t in both] == [good.id, bad.id]
    assert both[0].score is not None and both[1].score is not None
    above = await bolt.similar_traces(
        "flight to Paris", success_only=False, threshold=both[0].score, user_identifier=user
    )
    assert [t.id for t in above] == [good.id]
    steps = await bolt.search_steps("airline fares", user_identifier=user)
    assert steps[0].id == step.id and len(steps) == 2
    assert steps[0].trace_id == good.id and [c.tool_name for c in steps[0].tool_calls] == ["fares"]


async def test_scores_equal_the_embedded_stores(
    open_bolt: Callable[..., MemoryBackend], unique: Unique
) -> None:
    user = unique("user")
    async with (
        open_bolt(embedder=HashingEmbedder()) as bolt,
        open_backend("memory://", embedder=HashingEmbedder()) as embedded,
    ):
        found = []
        for memory in (bolt, embedded):
            for task in ("book a flight to Paris", "flight", "bake bread for Paris"):
                trace = await memory.start_trace("s", task, user_identifier=user)
                await memory.add_step(trace.id, thought=f"think {task}", user_identifier=user)
            traces = await memory.similar_traces(
                "flight to Paris", success_only=False, user_identifier=user
            )
            steps = await memory.search_steps("think flight", user_identifier=user)
            found.append(
                ([(t.task, t.score) for t in traces], [(s.thought, s.score) for s in steps])
            )
    ours, theirs = found
    for mine, reference in zip(ours, theirs, strict=True):
        assert [text for text, _ in mine] == [text for text, _ in reference]
        for (_, a), (_, b) in zip(mine, reference, strict=True):
            assert a == pytest.approx(b, abs=1e-6)


async def test_forget_user_recomputes_a_shared_tools_running_totals(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    tool, gone, kept = unique("tool"), unique("gone"), unique("kept")
    for user, statuses in ((gone, ["success", "error", "timeout"]), (kept, ["success", "error"])):
        trace = await bolt.start_trace(unique("s"), "task", user_identifier=user)
        step = await bolt.add_step(trace.id, thought="t", user_identifier=user)
        for status in statuses:
            await bolt.record_tool_call(
                step.id, tool, status=status, duration_ms=7, user_identifier=user
            )
    [before] = await bolt.tool_stats(tool, user_identifier=kept)
    await bolt.forget_user(gone)
    totals = "MATCH (t:Tool {name: $name}) RETURN properties(t) AS p"
    [row] = graph(totals, name=tool)
    assert {k: row["p"][k] for k in ("total_calls", "successful_calls", "failed_calls")} == {
        "total_calls": 2,
        "successful_calls": 1,
        "failed_calls": 1,
    }
    assert row["p"]["total_duration_ms"] == 14
    assert row["p"]["last_used_at"].to_native() == before.last_used_at
    assert [s.model_dump() for s in await bolt.tool_stats(tool)] == [before.model_dump()]
    await bolt.forget_user(kept)
    assert graph(totals, name=tool) == []


async def test_a_merge_moves_a_traces_entity_link_to_the_target(
    bolt: MemoryBackend, unique: Unique
) -> None:
    source = await bolt.add_entity(unique("Ada"), "PERSON")
    target = await bolt.add_entity(unique("Ada L"), "PERSON")
    trace = await bolt.start_trace(unique("s"), "task")
    await bolt.link_trace(trace.id, entity_ids=[source.id])
    await bolt.merge_entities(source.id, target.id)
    got = await bolt.get_trace(trace.id)
    assert got is not None and got.entity_ids == [target.id]


async def test_the_dry_run_counts_an_entity_the_users_own_trace_touched(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    user, session, name = unique("user"), unique("s"), unique("Ada")
    await bolt.add_message(
        session,
        "user",
        "hi",
        extraction_mode="explicit",
        explicit_mentions=[EntityRef(name=name, type="PERSON")],
        user_identifier=user,
    )
    [entity] = await bolt.find_entities(name)
    trace = await bolt.start_trace(session, "task", user_identifier=user)
    step = await bolt.add_step(trace.id, thought="t", user_identifier=user)
    await bolt.link_trace(trace.id, entity_ids=[entity.id], user_identifier=user)
    # and, as the reference links them, from a step
    graph(
        "MATCH (s:ReasoningStep {id: $s}), (e:Entity {id: $e}) CREATE (s)-[:TOUCHED]->(e)",
        s=step.id,
        e=entity.id,
    )
    preview = await bolt.forget_user(user, dry_run=True)
    done = await bolt.forget_user(user)
    assert preview.counts["entities"] == done.counts["entities"] == 1
