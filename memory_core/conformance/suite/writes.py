"""Writes: single, batch, bulk and concurrent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import anyio

from memory_core import MessageRole

from ..checks import assert_time_order, contents, ids
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


class WritesSuite(SuiteBase):
    """Scenarios of area ``writes``."""

    @scenario("writes.add_returns_message", "add_message returns the stored message")
    async def test_writes_add_returns_message(self, harness: Harness) -> None:
        handle = await harness.new_session()
        stored = await harness.backend.add_message(handle, "user", "hello there")
        assert stored.role is MessageRole.USER
        assert stored.content == "hello there"
        assert stored.created_at.tzinfo is not None
        [read] = await harness.messages(handle)
        assert read.id == stored.id
        assert (read.role, read.content) == (stored.role, stored.content)

    @scenario("writes.all_roles", "user, assistant, system and tool messages are stored as such")
    async def test_writes_all_roles(self, harness: Harness) -> None:
        handle = await harness.new_session()
        for role in ("user", "assistant", MessageRole.SYSTEM, "TOOL"):
            await harness.backend.add_message(handle, role, f"from {role}")
        read = await harness.messages(handle)
        assert [m.role for m in read] == [
            MessageRole.USER,
            MessageRole.ASSISTANT,
            MessageRole.SYSTEM,
            MessageRole.TOOL,
        ]

    @scenario(
        "writes.rapid_inserts_keep_order",
        "120 add_message calls back to back come back in insertion order",
    )
    async def test_writes_rapid_inserts_keep_order(self, harness: Harness) -> None:
        handle = await harness.new_session()
        written = [
            await harness.backend.add_message(handle, "user", f"rapid {i}") for i in range(120)
        ]
        read = await harness.messages(handle)
        assert contents(read) == [f"rapid {i}" for i in range(120)]
        assert ids(read) == ids(written)
        assert_time_order(read)

    @scenario("writes.batch_keeps_order", "add_messages_batch stores every message in order")
    async def test_writes_batch_keeps_order(self, harness: Harness) -> None:
        handle = await harness.new_session()
        batch = [{"role": "user", "content": f"b{i}"} for i in range(45)]
        stored = await harness.backend.add_messages_batch(handle, batch, batch_size=10)
        assert contents(stored) == [f"b{i}" for i in range(45)]
        read = await harness.messages(handle)
        assert ids(read) == ids(stored)
        assert_time_order(read)

    @scenario(
        "writes.batch_callbacks",
        "on_progress and on_batch_complete run once per batch with running totals",
    )
    async def test_writes_batch_callbacks(self, harness: Harness) -> None:
        handle = await harness.new_session()
        progress: list[tuple[int, int]] = []
        batches: list[tuple[int, int]] = []
        batch = [{"role": "assistant", "content": f"c{i}"} for i in range(7)]
        await harness.backend.add_messages_batch(
            handle,
            batch,
            batch_size=3,
            on_progress=lambda done, total: progress.append((done, total)),
            on_batch_complete=lambda n, chunk: batches.append((n, len(chunk))),
        )
        assert progress == [(3, 7), (6, 7), (7, 7)]
        assert batches == [(0, 3), (1, 3), (2, 1)]

    @scenario("writes.bulk_keeps_order", "bulk_add_messages stores every message in order")
    async def test_writes_bulk_keeps_order(self, harness: Harness) -> None:
        handle = await harness.new_session()
        stored = await harness.fill(handle, 30, label="bulk")
        assert contents(stored) == [f"bulk{i}" for i in range(30)]
        assert ids(await harness.messages(handle)) == ids(stored)

    @scenario("writes.bulk_empty", "an empty bulk returns [] and writes nothing")
    async def test_writes_bulk_empty(self, harness: Harness) -> None:
        handle = await harness.new_session()
        assert await harness.backend.bulk_add_messages(handle, []) == []
        assert await harness.backend.add_messages_batch(handle, []) == []
        assert await harness.contents(handle) == []

    @scenario(
        "writes.duplicates_stored_separately",
        "the same content written twice without a key is stored twice with new ids",
    )
    async def test_writes_duplicates_stored_separately(self, harness: Harness) -> None:
        handle = await harness.new_session()
        first = await harness.backend.add_message(handle, "user", "again")
        second = await harness.backend.add_message(handle, "user", "again")
        assert first.id != second.id
        assert await harness.contents(handle) == ["again", "again"]

    @scenario(
        "writes.concurrent_writers",
        "20 concurrent writers to one new session lose nothing and keep a total order",
    )
    async def test_writes_concurrent_writers(self, harness: Harness) -> None:
        handle = await harness.new_session()

        async def writer(n: int) -> None:
            for j in range(3):
                await harness.backend.add_message(handle, "user", f"w{n}-{j}")

        async with anyio.create_task_group() as group:
            for n in range(20):
                group.start_soon(writer, n)
        read = await harness.messages(handle)
        got = contents(read)
        assert sorted(got) == sorted(f"w{n}-{j}" for n in range(20) for j in range(3))
        assert len(set(ids(read))) == 60
        for n in range(20):
            own = [c for c in got if c.startswith(f"w{n}-")]
            assert own == [f"w{n}-{j}" for j in range(3)], f"writer {n} out of order: {own}"
        assert_time_order(read)

    @scenario(
        "writes.caller_timestamps",
        "batch messages keep caller-supplied timestamps exactly (out of order, equal, a "
        "microsecond apart, any UTC offset) and still read back in insertion order",
        requires="caller_timestamps",
    )
    async def test_writes_caller_timestamps(self, harness: Harness) -> None:
        handle = await harness.new_session()
        base = datetime(2020, 5, 17, 12, 0, 0, 500_000, tzinfo=UTC)
        india = timezone(timedelta(hours=5, minutes=30))
        stamps = [
            base + timedelta(minutes=2),
            base,
            base,  # equal to the one before
            base + timedelta(microseconds=1),
            (base + timedelta(minutes=2, microseconds=-1)).astimezone(india),
        ]
        batch = [
            {"role": "user", "content": f"t{i}", "timestamp": stamp}
            for i, stamp in enumerate(stamps)
        ]
        stored = await harness.backend.add_messages_batch(handle, batch)
        assert [m.created_at for m in stored] == stamps, "the returned messages lost them"
        read = await harness.messages(handle)
        assert contents(read) == [f"t{i}" for i in range(5)], "not read in insertion order"
        assert [m.created_at for m in read] == stamps, "caller timestamps were not kept exactly"
        newest = await harness.messages(handle, limit=2)
        assert contents(newest) == ["t3", "t4"], "limit kept the newest by time, not by order"
