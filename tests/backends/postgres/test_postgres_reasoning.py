"""Reasoning memory on PostgreSQL beyond the conformance suite (issue 51): step numbers
under concurrent appends, completion once, tool statistics exact for every status,
strings PostgreSQL text cannot hold, keyset pages, scoping by user and tenant, links,
replayed writes, similar traces and step search scored as the embedded store scores them
(on pgvector and the Python fallback), and the indexes the listings and statistics read."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime

import anyio
import psycopg
import pytest

from memory_core import (
    EntityRef,
    InvalidRequestError,
    MemoryBackend,
    NotFoundError,
    ToolCallStatus,
    open_backend,
)
from memory_core.backends.postgres import traces
from memory_core.backends.postgres.store import PostgresStore
from memory_core.backends.postgres.tx import Tx
from memory_core.requests import RecordToolCall, Scope
from memory_core.scoring import TOLERANCE
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = pytest.mark.anyio

# Every character the codec escapes, beside the ones it keeps.
ODD = "a\x00b \x01 \x010 \x011 naïve 🦊 'q\" \\ %_"


def _url(server: PostgresHandle, schema: str) -> str:
    separator = "&" if "?" in server.url else "?"
    return f"{server.url}{separator}schema={schema}"


def _schema() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def store(postgres_server: PostgresHandle) -> AsyncIterator[MemoryBackend]:
    async with open_backend(_url(postgres_server, _schema())) as backend:
        yield backend


def _ids(records: Sequence[object]) -> list[str]:
    return [getattr(r, "id") for r in records]  # noqa: B009


def _pg(memory: MemoryBackend) -> PostgresStore:
    assert isinstance(memory.store, PostgresStore)
    return memory.store


# ------------------------------------------------------------------ writes and reads


async def test_concurrent_steps_get_distinct_gapless_numbers(store: MemoryBackend) -> None:
    trace = await store.start_trace("s1", "count in parallel")
    numbers: list[int] = []

    async def one(n: int) -> None:
        numbers.append((await store.add_step(trace.id, thought=f"step {n}")).step_number)

    async with anyio.create_task_group() as group:
        for n in range(30):
            group.start_soon(one, n)
    assert sorted(numbers) == list(range(1, 31))
    full = await store.get_trace(trace.id)
    assert full is not None
    assert [s.step_number for s in full.steps] == list(range(1, 31))


async def test_a_trace_round_trips_with_steps_calls_and_odd_strings(store: MemoryBackend) -> None:
    session = "sess naïve 🦊 'q\" \\ %_"  # a session id holds no control character
    trace = await store.start_trace(session, f"task {ODD}", metadata={"k": ODD, "z": 1})
    first = await store.add_step(trace.id, thought=f"think {ODD}", metadata={"n": [1, 2]})
    second = await store.add_step(trace.id, action="act", observation=f"saw {ODD}")
    calls = [
        await store.record_tool_call(
            first.id,
            f"tool {ODD}",
            {"q": ODD, "b": 2},
            result=[ODD, None, 1.5, {"x": True}],
            status=status,
            duration_ms=10 * n,
            error=f"err {ODD}" if status != ToolCallStatus.SUCCESS else None,
        )
        for n, status in enumerate(ToolCallStatus)
    ]
    plain = await store.record_tool_call(second.id, "plain", result="text")
    full = await store.get_trace(trace.id)
    assert full is not None
    assert (full.session_id, full.task, full.metadata) == (
        session,
        f"task {ODD}",
        {"k": ODD, "z": 1},
    )
    assert [s.id for s in full.steps] == [first.id, second.id]
    assert full.steps[0].thought == f"think {ODD}" and full.steps[0].metadata == {"n": [1, 2]}
    assert (full.steps[1].action, full.steps[1].observation) == ("act", f"saw {ODD}")
    assert full.steps[0].tool_calls == calls
    assert full.steps[1].tool_calls == [plain]
    assert calls[0].result == [ODD, None, 1.5, {"x": True}] and plain.result == "text"
    assert list(calls[0].arguments) == ["q", "b"]
    assert [c.status for c in calls] == list(ToolCallStatus)
    listed = await store.list_traces(session)
    assert _ids(listed) == [trace.id] and listed[0].steps == []


async def test_a_trace_is_completed_once(store: MemoryBackend) -> None:
    trace = await store.start_trace("s", "finish")
    await store.add_step(trace.id, thought="go")
    done = await store.complete_trace(trace.id, outcome="done", success=True)
    again = await store.complete_trace(trace.id, outcome="other", success=False)
    assert (done.outcome, done.success) == ("done", True) and done.completed_at is not None
    assert again == done
    assert len(done.steps) == 1
    assert _ids(await store.list_traces(success=True)) == [trace.id]
    assert await store.list_traces(success=False) == []


async def test_tool_stats_are_exact_for_every_status(store: MemoryBackend) -> None:
    trace = await store.start_trace("s", "stats")
    step = await store.add_step(trace.id, action="use")
    plan = [
        (ToolCallStatus.SUCCESS, 100),
        (ToolCallStatus.SUCCESS, 300),
        (ToolCallStatus.FAILURE, None),
        (ToolCallStatus.ERROR, 50),
        (ToolCallStatus.TIMEOUT, 30000),
        (ToolCallStatus.PENDING, None),
        (ToolCallStatus.CANCELLED, None),
    ]
    last = None
    for status, took in plan:
        last = await store.record_tool_call(step.id, "search", status=status, duration_ms=took)
    await store.record_tool_call(step.id, f"other {ODD}", duration_ms=7)
    [stats] = await store.tool_stats("search")
    assert (stats.total_calls, stats.successful_calls, stats.failed_calls) == (7, 2, 3)
    assert stats.success_rate == pytest.approx(2 / 7)
    assert stats.avg_duration_ms == pytest.approx((100 + 300 + 50 + 30000) / 4)
    assert last is not None and stats.last_used_at == last.created_at
    every = await store.tool_stats()
    assert [s.name for s in every] == [f"other {ODD}", "search"]
    assert every[0].avg_duration_ms == 7.0 and every[0].success_rate == 1.0
    assert await store.tool_stats("never") == []


async def test_traces_page_newest_first_without_repeats(store: MemoryBackend) -> None:
    made = [await store.start_trace("paged", f"task {n}") for n in range(7)]
    await store.start_trace("elsewhere", "not listed")
    seen: list[str] = []
    cursor = None
    while True:
        page = await store.list_traces_page("paged", limit=3, cursor=cursor)
        seen += _ids(page.traces)
        if page.next_cursor is None:
            break
        await store.start_trace("paged", "started while paging")
        cursor = page.next_cursor
    assert seen == _ids(made[::-1])
    with pytest.raises(InvalidRequestError) as info:
        await store.list_traces_page(cursor="postgres.W10")
    assert info.value.argument == "cursor"


# ------------------------------------------------------------------ scope


async def test_a_users_traces_never_reach_another_user(store: MemoryBackend) -> None:
    await _never_crosses(store)


async def test_a_tenants_traces_never_reach_another_tenant(
    postgres_server: PostgresHandle,
) -> None:
    url = _url(postgres_server, _schema())
    async with open_backend(url, multi_tenant=True) as store:
        await _never_crosses(store)


async def _never_crosses(store: MemoryBackend) -> None:
    trace = await store.start_trace("shared", "alpha secret", user_identifier="alice")
    step = await store.add_step(trace.id, thought="alpha thought", user_identifier="alice")
    await store.record_tool_call(step.id, "alphatool", user_identifier="alice")
    await store.complete_trace(trace.id, success=True, user_identifier="alice")
    bob = "bob"
    assert await store.get_trace(trace.id, user_identifier=bob) is None
    for write in (
        store.add_step(trace.id, thought="x", user_identifier=bob),
        store.record_tool_call(step.id, "alphatool", user_identifier=bob),
        store.complete_trace(trace.id, user_identifier=bob),
        store.link_trace(trace.id, user_identifier=bob),
    ):
        with pytest.raises(NotFoundError):
            await write
    assert await store.list_traces(user_identifier=bob) == []
    assert await store.tool_stats(user_identifier=bob) == []
    assert await store.similar_traces("alpha", user_identifier=bob) == []
    assert await store.search_steps("alpha", user_identifier=bob) == []
    assert _ids(await store.similar_traces("alpha", user_identifier="alice")) == [trace.id]
    full = await store.get_trace(trace.id, user_identifier="alice")
    assert full is not None and full.steps[0].tool_calls[0].tool_name == "alphatool"


# ------------------------------------------------------------------ links


async def test_links_are_checked_first_kept_once_and_go_with_either_side(
    store: MemoryBackend,
) -> None:
    message = await store.add_message("s", "user", "hello")
    other = await store.add_message("s", "user", "again")
    entity = await store.add_entity("Ada", "PERSON")
    trace = await store.start_trace("s", "linking", triggered_by_message_id=message.id)
    assert trace.message_ids == [str(message.id)]
    for kwargs, argument in (
        ({"message_ids": [str(other.id), str(uuid.uuid4())]}, "message_ids"),
        ({"message_ids": ["not-a-uuid"]}, "message_ids"),
        ({"message_ids": [str(other.id)], "entity_ids": ["nobody"]}, "entity_ids"),
    ):
        with pytest.raises(NotFoundError) as info:
            await store.link_trace(trace.id, **kwargs)  # type: ignore[arg-type]
        assert info.value.argument == argument
    unchanged = await store.get_trace(trace.id)
    assert unchanged is not None and unchanged.message_ids == [str(message.id)]
    assert unchanged.entity_ids == []
    linked = await store.link_trace(
        trace.id, message_ids=[other.id, message.id], entity_ids=[entity.id]
    )
    again = await store.link_trace(trace.id, message_ids=[other.id], entity_ids=[entity.id])
    assert linked.message_ids == again.message_ids == [str(message.id), str(other.id)]
    assert linked.entity_ids == again.entity_ids == [entity.id]
    await store.delete_message(other.id)
    await store.delete_entity(entity.id)
    kept = await store.get_trace(trace.id)
    assert kept is not None and (kept.message_ids, kept.entity_ids) == ([str(message.id)], [])


async def test_a_trigger_no_message_of_the_tenant_has_is_refused_and_nothing_written(
    postgres_server: PostgresHandle,
) -> None:
    async with open_backend(_url(postgres_server, _schema()), multi_tenant=True) as store:
        theirs = await store.add_message("s", "user", "hi", user_identifier="bob")
        for trigger in ("from-elsewhere", str(uuid.uuid4()), theirs.id):
            with pytest.raises(NotFoundError) as info:
                await store.start_trace(
                    "s", "t", triggered_by_message_id=trigger, user_identifier="alice"
                )
            assert info.value.argument == "triggered_by_message_id"
        assert await store.list_traces(user_identifier="alice") == []


# ------------------------------------------------------------------ replays


async def test_a_replayed_tool_call_writes_once(store: MemoryBackend) -> None:
    """Its id is chosen before the first attempt: a replay after a lost connection finds
    what the first attempt wrote."""
    trace = await store.start_trace("s", "again")
    step = await store.add_step(trace.id, thought="t")
    call = RecordToolCall(
        step_id=step.id,
        tool_name="t",
        arguments={"a": 1},
        result=None,
        status="success",
        duration_ms=None,
        error=None,
        scope=Scope(),
    )
    ident, now = str(uuid.uuid4()), datetime.now(UTC)

    async def record_twice(tx: Tx) -> list[object]:
        return [await traces.record_call(tx, call, ident, now) for _ in range(2)]

    one, two = await _pg(store)._run(record_twice, write=True, autocommit=True)
    assert one == two
    [stats] = await store.tool_stats("t")
    assert stats.total_calls == 1


# ------------------------------------------------------------------ search


class _Meanings:
    """Vectors by the first known word of a text: texts sharing no word can be close."""

    dimensions = 3
    known = {"pizza": [1.0, 0.0, 0.0], "italian": [0.9, 0.2, 0.0], "jazz": [0.0, 0.0, 1.0]}

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def _one(self, text: str) -> list[float]:
        for word in text.lower().split():
            if word in self.known:
                return self.known[word]
        return [0.0, 1.0, 0.0]


async def _search_hits(backend: MemoryBackend) -> dict[str, float]:
    found: dict[str, float] = {}
    for task in ("order pizza tonight", "book a jazz concert", "order a taxi"):
        trace = await backend.start_trace("s", task)
        await backend.add_step(trace.id, thought=f"how to {task}", action="search")
        await backend.complete_trace(trace.id, success=task != "order a taxi")
    for hit in await backend.similar_traces("italian order", success_only=False, limit=10):
        found[f"trace {hit.task}"] = hit.score or 0.0
    for hit in await backend.similar_traces("italian order", threshold=0.5):
        found[f"good {hit.task}"] = hit.score or 0.0
    for step in await backend.search_steps("italian how"):
        found[f"step {step.thought}"] = step.score or 0.0
    return found


async def test_similar_traces_and_steps_score_alike_on_pgvector_the_fallback_and_sqlite(
    pgvector_server: PostgresHandle, postgres_server: PostgresHandle
) -> None:
    vec = open_backend(_url(pgvector_server, _schema()), embedder=_Meanings())
    plain = open_backend(_url(postgres_server, _schema()), embedder=_Meanings())
    reference = open_backend("memory://", embedder=_Meanings())
    async with vec, plain, reference:
        if not reference.capabilities.similar_traces:
            pytest.skip("the embedded store has no reasoning memory yet")
        expected = await _search_hits(reference)
        assert "trace order pizza tonight" in expected, "no shared word: found by vector"
        for backend in (vec, plain):
            got = await _search_hits(backend)
            assert set(got) == set(expected)
            assert all(abs(got[k] - expected[k]) <= TOLERANCE for k in expected)


async def test_similar_traces_keep_only_successes_by_default(store: MemoryBackend) -> None:
    good = await store.start_trace("s", "deploy the service")
    bad = await store.start_trace("s", "deploy the service again")
    await store.start_trace("s", "deploy, still open")
    await store.complete_trace(good.id, success=True)
    await store.complete_trace(bad.id, success=False)
    assert _ids(await store.similar_traces("deploy service")) == [good.id]
    every = await store.similar_traces("deploy service", success_only=False)
    assert set(_ids(every)) == {good.id, bad.id} | {t.id for t in every}
    assert len(every) == 3 and every[0].id == good.id
    step = await store.add_step(good.id, thought="rollout", observation="it worked")
    await store.record_tool_call(step.id, "kubectl")
    [hit] = await store.search_steps("rollout worked")
    assert hit.id == step.id and [c.tool_name for c in hit.tool_calls] == ["kubectl"]
    assert hit.score is not None and hit.score > 0.5


# ------------------------------------------------------------------ indexes


def _plan(url: str, schema: str, sql: str, params: Sequence[object]) -> str:
    with psycopg.connect(url) as conn:
        conn.execute("SET enable_seqscan = off")
        rows = conn.execute(f"EXPLAIN {sql.replace('{s}.', schema + '.')}", params).fetchall()
    return "\n".join(row[0] for row in rows)


async def test_listings_and_one_tools_statistics_read_their_indexes(
    postgres_server: PostgresHandle,
) -> None:
    schema = _schema()
    url = _url(postgres_server, schema)
    async with open_backend(url) as store:
        trace = await store.start_trace("s", "t", user_identifier="u")
        step = await store.add_step(trace.id, thought="x", user_identifier="u")
        await store.record_tool_call(step.id, "tool", user_identifier="u")
    by_tool = _plan(
        postgres_server.url,
        schema,
        "SELECT count(*), avg(duration_ms), max(created_at) FROM {s}.tool_calls "
        "WHERE tenant = '' AND tool_name = %s AND user_identifier = %s",
        ("tool", "u"),
    )
    assert "tool_calls_by_tool" in by_tool
    listing = _plan(
        postgres_server.url,
        schema,
        "SELECT id FROM {s}.traces WHERE tenant = '' AND user_identifier = %s "
        "ORDER BY created_at DESC, id DESC LIMIT 10",
        ("u",),
    )
    assert "traces_by_user_recency" in listing and "Sort" not in listing


# ------------------------------------------------------------------ erasure


async def test_forget_user_keeps_an_entity_another_users_trace_links(
    store: MemoryBackend,
) -> None:
    """Single-tenant entities are shared: one only the forgotten user's messages mention
    stays while another user's trace links it, and the dry run counts alike."""
    await store.create_conversation("alice-s", user_identifier="alice")
    await store.add_message(
        "alice-s",
        "user",
        "Linked and Alone",
        extraction_mode="explicit",
        explicit_mentions=[
            EntityRef(name="Linked", type="PERSON"),
            EntityRef(name="Alone", type="PERSON"),
        ],
        user_identifier="alice",
    )
    [linked] = await store.find_entities("Linked")
    trace = await store.start_trace("bob-s", "uses Linked", user_identifier="bob")
    await store.link_trace(trace.id, entity_ids=[linked.id], user_identifier="bob")
    preview = await store.forget_user("alice", dry_run=True)
    report = await store.forget_user("alice")
    assert preview.counts.get("entities") == report.counts.get("entities") == 1
    assert _ids(await store.find_entities("Linked")) == [linked.id]
    assert await store.find_entities("Alone") == []
    kept = await store.get_trace(trace.id, user_identifier="bob")
    assert kept is not None and kept.entity_ids == [linked.id]
