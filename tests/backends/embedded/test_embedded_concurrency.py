"""Reads of a file store run on their own connections: a slow read holds up nothing else.

The "slow" read is a transaction parked on an event inside its worker thread, so the
tests show ordering (what finished while it was still open), never timings.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from uuid import uuid4

import anyio
import pytest
from embedded_support import db_url_fixture, memory_fixture  # noqa: F401

from memory_core import Limits, TransportError, open_backend
from memory_core.scoring import query_terms

pytestmark = pytest.mark.anyio

# Only a bound so that a regression fails instead of hanging; nothing is timed.
DEADLINE = 30


def _parked_read(
    entered: threading.Event, release: threading.Event, seen: list[int]
) -> Callable[[sqlite3.Connection], None]:
    def work(conn: sqlite3.Connection) -> None:
        seen.append(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
        entered.set()
        if not release.wait(DEADLINE):
            raise AssertionError("never released")
        # Still inside the same snapshot: writes committed meanwhile are not visible.
        seen.append(conn.execute("SELECT count(*) FROM messages").fetchone()[0])

    return work


async def test_a_slow_read_does_not_block_other_reads_or_a_write(db_url: str) -> None:
    async with open_backend(db_url) as backend:
        await backend.add_message("s", "user", "first")
        entered, release = threading.Event(), threading.Event()
        order: list[str] = []
        seen: list[int] = []

        async def slow_read() -> None:
            await backend.store._store.call(_parked_read(entered, release, seen), write=False)
            order.append("slow read")

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(slow_read)
                await anyio.to_thread.run_sync(entered.wait, DEADLINE)
                with anyio.fail_after(DEADLINE):
                    read = await backend.get_conversation("s")
                    order.append("other read")
                    hits = await backend.search_messages("first", session_id="s")
                    order.append("search")
                    await backend.add_message("s", "user", "second")
                    order.append("write")
                    after = await backend.get_conversation("s")
                    order.append("read after write")
                release.set()
        finally:
            release.set()
    assert order == ["other read", "search", "write", "read after write", "slow read"]
    assert [m.content for m in read.messages] == ["first"]
    assert [m.content for m in hits] == ["first"]
    assert [m.content for m in after.messages] == ["first", "second"]
    assert seen == [1, 1]


async def test_two_slow_reads_overlap(db_url: str) -> None:
    """Both reads are inside their transactions at the same time."""
    async with open_backend(db_url) as backend:
        await backend.add_message("s", "user", "first")
        both_in = threading.Barrier(2, timeout=DEADLINE)

        def work(conn: sqlite3.Connection) -> int:
            count: int = conn.execute("SELECT count(*) FROM messages").fetchone()[0]
            both_in.wait()  # raises BrokenBarrierError if the other read cannot start
            return count

        results: list[int] = []

        async def read() -> None:
            results.append(await backend.store._store.call(work, write=False))

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            tg.start_soon(read)
    assert results == [1, 1]


async def test_reader_connections_cannot_write(db_url: str) -> None:
    async with open_backend(db_url) as backend:
        await backend.add_message("s", "user", "first")

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM messages")

        with pytest.raises(TransportError, match=r"readonly"):
            await backend.store._store.call(write, write=False)
        assert len((await backend.get_conversation("s")).messages) == 1


async def test_memory_store_stays_correct_under_concurrent_reads_and_writes() -> None:
    """``memory://`` keeps one connection behind one lock: interleaved calls all finish."""
    async with open_backend("memory://") as backend:

        async def writer(n: int) -> None:
            for i in range(20):
                await backend.add_message("s", "user", f"w{n}-{i}")

        async def reader() -> None:
            for _ in range(20):
                await backend.get_conversation("s", limit=5)

        async with anyio.create_task_group() as tg:
            for n in range(3):
                tg.start_soon(writer, n)
                tg.start_soon(reader)
        assert len((await backend.get_conversation("s")).messages) == 60


def test_query_terms_dedups_in_order_in_linear_time() -> None:
    assert query_terms("b a B c a, b") == ["b", "a", "c"]
    words = [f"w{i}" for i in range(50_000)]
    # Quadratic dedup took minutes here; linear takes milliseconds (not asserted).
    assert query_terms(" ".join(words + words)) == words


async def test_a_huge_query_searches_without_error() -> None:
    # 30k words is far above the default query limit (10,000 characters): raise it, so
    # that what is checked is the search itself (word dedup is linear, not quadratic).
    async with open_backend("memory://", limits=Limits(max_query_chars=300_000)) as memory:
        await memory.add_message("s", "user", "needle in a haystack")
        query = " ".join(f"w{i}" for i in range(30_000)) + " needle"
        hits = await memory.search_messages(query, session_id="s")
    assert [m.content for m in hits] == ["needle in a haystack"]
    assert hits[0].score is not None and 0 < hits[0].score < 0.01


async def test_a_cancelled_call_finishes_its_transaction_first(db_url: str) -> None:
    """Cancelling a task whose write is running waits for the commit: nothing is left
    half-done, and the cancellation is delivered after it."""
    async with open_backend(db_url) as backend:
        entered, release = threading.Event(), threading.Event()
        events: list[str] = []

        def slow_write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO conversations (id, tenant, session_id, created_at, updated_at) "
                "VALUES (?, '', 'cancelled-but-committed', 0, 0)",
                (str(uuid4()),),
            )
            entered.set()
            release.wait(DEADLINE)
            events.append("committed")

        async def writer() -> None:
            try:
                await backend.store._store.call(slow_write, write=True)
            except anyio.get_cancelled_exc_class():
                events.append("cancelled")
                raise

        async with anyio.create_task_group() as tg:
            tg.start_soon(writer)
            await anyio.to_thread.run_sync(entered.wait, DEADLINE)
            tg.cancel_scope.cancel()
            release.set()
        assert events == ["committed", "cancelled"]
        sessions = await backend.list_sessions()
        assert [s.session_id for s in sessions] == ["cancelled-but-committed"]
