"""Small reads run in the calling thread only when they cannot wait or run long."""

from __future__ import annotations

import sqlite3
import threading
import time
from typing import Any

import pytest
from embedded_support import busy, db_url_fixture, loop_ticks, record_threads  # noqa: F401

from memory_core import MemoryBackend, TransportError, open_backend
from memory_core.backends.embedded import database, messages

pytestmark = pytest.mark.anyio


@pytest.fixture(name="threads")
def threads_fixture(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The threads ``get_conversation``'s SQL work ran in, in order."""
    return record_threads(monkeypatch, messages, "get_conversation")


async def _filled(url: str, **options: Any) -> MemoryBackend:
    backend = open_backend(url, **options)
    await backend.connect()
    await backend.add_messages_batch(
        "s", [{"role": "user", "content": f"message {i}"} for i in range(250)]
    )
    return backend


@pytest.mark.parametrize("url", ["memory://", "file"])
async def test_a_small_read_runs_in_the_calling_thread(
    url: str, db_url: str, threads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A loaded machine can take more than the 1 ms budget for 100 messages, and the read
    # then rightly moves to a worker (tested below); here only the size decides.
    monkeypatch.setattr(database, "INLINE_BUDGET", 30.0)
    backend = await _filled(db_url if url == "file" else url)
    try:
        inline = await backend.get_conversation("s", limit=100)
        assert threads == [threading.get_ident()]
        big = await backend.get_conversation("s", limit=201)
        assert threads[1] != threading.get_ident()  # over the size: a worker thread
        assert inline.messages == big.messages[-100:]
        assert [m.content for m in inline.messages] == [f"message {i}" for i in range(150, 250)]
    finally:
        await backend.close()


async def test_turned_off_every_read_runs_in_a_worker_thread(
    db_url: str, threads: list[int]
) -> None:
    backend = await _filled(db_url, inline_reads=False)
    try:
        await backend.get_conversation("s", limit=10)
        assert threads and threading.get_ident() not in threads
    finally:
        await backend.close()


async def test_a_read_over_its_budget_starts_again_in_a_worker_thread(
    db_url: str, threads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = await _filled(db_url)
    try:
        expected = await backend.get_conversation("s", limit=150)
        monkeypatch.setattr(database, "INLINE_BUDGET", 0.0)
        monkeypatch.setattr(database, "INLINE_CHECK_STEPS", 1)
        attempts: list[object] = []
        real = database.Database._inline_transaction

        def attempt(
            self: database.Database, conn: sqlite3.Connection, work: Any, *, write: bool
        ) -> object:
            attempts.append(real(self, conn, work, write=write))
            return attempts[-1]

        monkeypatch.setattr(database.Database, "_inline_transaction", attempt)
        threads.clear()
        again = await backend.get_conversation("s", limit=150)
        assert attempts == [database._NOT_RUN]  # interrupted in the calling thread ...
        assert threads[-1] != threading.get_ident()  # ... and run again in a worker
        assert again == expected
        # the inline connection is usable afterwards (no progress handler left behind)
        monkeypatch.undo()
        assert await backend.get_conversation("s", limit=150) == expected
    finally:
        await backend.close()


async def test_a_busy_answer_moves_the_read_and_other_errors_do_not(db_url: str) -> None:
    backend = await _filled(db_url)
    try:
        calls: list[int] = []

        def busy_in_the_calling_thread(conn: sqlite3.Connection) -> int:
            calls.append(threading.get_ident())
            if len(calls) == 1:
                raise busy()
            return len(calls)

        assert await backend.store._store.read(busy_in_the_calling_thread, small=True) == 2
        assert calls[0] == threading.get_ident() != calls[1]

        def broken(conn: sqlite3.Connection) -> None:
            conn.execute("SELECT * FROM no_such_table")

        with pytest.raises(TransportError, match="no_such_table"):
            await backend.store._store.read(broken, small=True)
    finally:
        await backend.close()


async def test_a_memory_store_busy_with_a_write_does_not_block_the_loop() -> None:
    backend = await _filled("memory://")
    started = threading.Event()

    def hold() -> None:
        with backend.store._store._lock:  # what a long write on the one connection holds
            started.set()
            threading.Event().wait(0.3)

    try:
        ticks = await loop_ticks(lambda: backend.get_conversation("s", limit=5), hold, settle=0.05)
        assert started.is_set()
        assert ticks >= 10  # the read waited in a worker thread, not in the event loop
    finally:
        await backend.close()


@pytest.mark.parametrize("url", ["memory://", "file"])
async def test_a_read_past_its_budget_leaves_no_transaction_open(
    url: str, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The budget can run out after the last statement of the read; the statement that
    # ends the read's snapshot must not be interrupted then (it was, under CI load: the
    # connection stayed in its transaction and every later call failed).
    backend = await _filled(db_url if url == "file" else url)
    monkeypatch.setattr(database, "INLINE_CHECK_STEPS", 1)

    def slow(conn: sqlite3.Connection) -> int:
        count = int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
        time.sleep(2 * database.INLINE_BUDGET)
        return count

    try:
        assert await backend.store._store.read(slow, small=True) == 250
        held = backend.store._store._conn if url == "memory://" else backend.store._store._inline
        assert held is not None and not held.in_transaction
        await backend.add_message("s", "user", "after")
        assert (await backend.get_conversation("s", limit=1)).messages[0].content == "after"
    finally:
        await backend.close()
