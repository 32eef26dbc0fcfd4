"""A one-message write runs in the calling thread only when it cannot wait or run long,
and never ahead of a write made before it."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from embedded_support import busy, db_url_fixture, loop_ticks, record_threads  # noqa: F401

from memory_core import (
    ConfigurationError,
    MemoryBackend,
    NotFoundError,
    TransportError,
    open_backend,
)
from memory_core.backends.embedded import database, messages

pytestmark = pytest.mark.anyio


@pytest.fixture(name="threads")
def threads_fixture(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The threads ``add_message``'s SQL work ran in (attempts included), in order."""
    return record_threads(monkeypatch, messages, "add_message")


async def _contents(backend: MemoryBackend, session: str = "s") -> list[str]:
    return [m.content for m in (await backend.get_conversation(session, limit=1000)).messages]


@pytest.mark.parametrize("url", ["memory://", "file"])
async def test_a_single_add_runs_in_the_calling_thread(
    url: str, db_url: str, threads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(database, "INLINE_BUDGET", 30.0)  # a loaded machine must not move it
    async with open_backend(db_url if url == "file" else url) as backend:
        stored = await backend.add_message("s", "user", "hello", metadata={"k": [1, 2]})
        assert threads == [threading.get_ident()]
        [read] = (await backend.get_conversation("s")).messages
        assert read == stored
        again = await backend.add_message("s", "assistant", "hi", idempotency_key="t1")
        assert await backend.add_message("s", "assistant", "hi", idempotency_key="t1") == again
        assert await _contents(backend) == ["hello", "hi"]
        assert len(threads) == 3 and set(threads) == {threading.get_ident()}


async def test_turned_off_every_write_runs_in_the_writer_thread(
    db_url: str, threads: list[int]
) -> None:
    async with open_backend(db_url, inline_writes=False) as backend:
        await backend.add_message("s", "user", "hello")
        assert threads and threading.get_ident() not in threads
        assert await _contents(backend) == ["hello"]


@pytest.mark.parametrize("option", ["inline_reads", "inline_writes"])
@pytest.mark.parametrize("value", ["yes", 1, None])
def test_the_inline_options_must_be_bools(option: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=option):
        open_backend("memory://", **{option: value})


@pytest.mark.parametrize("url", ["memory://", "file"])
async def test_a_write_over_its_budget_is_rolled_back_and_stored_once(
    url: str, db_url: str, threads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with open_backend(db_url if url == "file" else url) as backend:
        await backend.add_message("s", "user", "first")
        monkeypatch.setattr(database, "INLINE_CHECK_STEPS", 1)
        spy = messages.add_message

        def slow_first(conn: sqlite3.Connection, req: Any) -> Any:
            if not threads:
                time.sleep(2 * database.INLINE_BUDGET)  # the budget runs out inside the work
            return spy(conn, req)

        monkeypatch.setattr(messages, "add_message", slow_first)
        threads.clear()
        stored = await backend.add_message("s", "assistant", "second", idempotency_key="k")
        # interrupted in the calling thread, then run again in the writer thread
        assert len(threads) == 2
        assert threads[0] == threading.get_ident() != threads[1]
        conversation = await backend.get_conversation("s")
        assert [m.content for m in conversation.messages] == ["first", "second"]
        assert conversation.messages[-1] == stored
        # nothing of the interrupted attempt is left: the next inline write follows on
        held = (
            backend.store._store._conn
            if url == "memory://"
            else backend.store._store._inline_writer
        )
        assert held is not None and not held.in_transaction
        monkeypatch.setattr(messages, "add_message", spy)
        monkeypatch.setattr(database, "INLINE_BUDGET", 30.0)  # a loaded machine must not move it
        threads.clear()
        await backend.add_message("s", "user", "third")
        assert threads == [threading.get_ident()]
        assert await _contents(backend) == ["first", "second", "third"]


async def test_a_caller_error_is_raised_in_place_and_writes_nothing(
    db_url: str, threads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(database, "INLINE_BUDGET", 30.0)  # a loaded machine must not move it
    async with open_backend(db_url) as backend:
        await backend.add_message("s", "user", "first")
        threads.clear()
        with pytest.raises(NotFoundError, match="conversation"):
            await backend.add_message(
                conversation_id="00000000-0000-4000-8000-000000000000",
                role="user",
                content="nowhere",
            )
        assert threads == [threading.get_ident()]  # not tried again in a worker thread
        assert backend.store._store._inline_writer is not None
        assert not backend.store._store._inline_writer.in_transaction
        assert len(await backend.list_conversations()) == 1
        await backend.add_message("s", "user", "second")
        assert await _contents(backend) == ["first", "second"]


async def test_a_busy_answer_moves_the_write_and_other_errors_do_not(db_url: str) -> None:
    async with open_backend(db_url) as backend:
        calls: list[int] = []

        def busy_then_insert(conn: sqlite3.Connection) -> int:
            calls.append(threading.get_ident())
            conn.execute(
                "INSERT INTO conversations (id, tenant, session_id, created_at, updated_at) "
                "VALUES (?, '', ?, 0, 0)",
                (f"c{len(calls)}", f"c{len(calls)}"),
            )
            if len(calls) == 1:
                raise busy()
            return len(calls)

        assert await backend.store._store.write(busy_then_insert, small=True) == 2
        assert calls[0] == threading.get_ident() != calls[1]
        # the first attempt's row was rolled back, the second's committed
        assert [c.session_id for c in await backend.list_conversations()] == ["c2"]

        def broken(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT INTO no_such_table VALUES (1)")

        with pytest.raises(TransportError, match="no_such_table"):
            await backend.store._store.write(broken, small=True)


async def test_a_write_queued_before_is_not_overtaken(db_url: str) -> None:
    async with open_backend(db_url) as backend:
        await backend.add_message("s", "user", "first")
        writer = backend.store._store._writer_thread
        assert writer is not None
        release = threading.Event()
        writer.submit(release.wait, 5)  # the writer thread is busy, the lock is free

        async def batch() -> None:
            await backend.add_messages_batch(
                "s", [{"role": "user", "content": "batch 1"}, {"role": "user", "content": "b2"}]
            )

        async with anyio.create_task_group() as group:
            group.start_soon(batch)
            await anyio.sleep(0.05)  # the batch is queued behind the busy writer thread
            single = anyio.Event()

            async def one() -> None:
                await backend.add_message("s", "user", "single")
                single.set()

            group.start_soon(one)
            await anyio.sleep(0.05)
            assert not single.is_set()  # it waits for the batch made before it
            release.set()
        assert await _contents(backend) == ["first", "batch 1", "b2", "single"]


async def test_a_file_locked_by_another_writer_does_not_block_the_loop(db_url: str) -> None:
    async with open_backend(db_url) as backend:
        await backend.add_message("s", "user", "first")
        path = backend.store.location.path
        assert path is not None
        other = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # another process's write transaction

        def release_later() -> None:
            time.sleep(0.3)
            other.execute("COMMIT")

        # the write waits in the writer thread
        ticks = await loop_ticks(lambda: backend.add_message("s", "user", "second"), release_later)
        other.close()
        assert ticks >= 10  # the event loop ran while the write waited for the lock
        assert await _contents(backend) == ["first", "second"]


def _wal_bytes(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


async def test_inline_writes_checkpoint_the_log_off_the_calling_thread(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Inline writes turn SQLite's automatic checkpoint off (its fsync would run in the
    # event loop) and hand checkpoints to the writer thread.
    monkeypatch.setattr(database, "CHECKPOINT_EVERY", 10)
    checkpoints: list[int] = []
    real = database.Database._checkpoint

    def spy(self: database.Database) -> None:
        checkpoints.append(threading.get_ident())
        real(self)

    monkeypatch.setattr(database.Database, "_checkpoint", spy)
    async with open_backend(db_url) as backend:
        path = backend.store.location.path
        assert path is not None
        for i in range(300):  # back to back, as a bulk import would write
            await backend.add_message("s", "user", f"message {i}")
        assert checkpoints and threading.get_ident() not in checkpoints
        # Without checkpoints the log takes about 13 pages a write (300 writes: 16 MB). It
        # also grew when a checkpoint ran beside the writes (it never caught up with the
        # end of the log, so the log never started again) or waited for the write lock
        # while the event loop kept taking it.
        assert _wal_bytes(path) < 1 << 20
        assert len(await _contents(backend)) == 300


async def test_the_inline_connections_never_wait_and_leave_checkpoints_alone(
    db_url: str,
) -> None:
    # Settings from the connection's first statement on: opened with a busy timeout, even
    # reading the journal mode could wait for another process in the event loop.
    async with open_backend(db_url) as backend:
        await backend.add_message("s", "user", "first")
        await backend.get_conversation("s", limit=10)
        writer, reader = backend.store._store._inline_writer, backend.store._store._inline
        assert writer is not None and reader is not None
        for conn in (writer, reader):
            assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 0
        assert writer.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
        assert writer.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL, as the writer
        assert writer.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert reader.execute("PRAGMA query_only").fetchone()[0] == 1


async def test_a_checkpoint_is_handed_over_after_every_checkpoint_every_inline_writes(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert database.CHECKPOINT_EVERY == 75  # the documented figure
    monkeypatch.setattr(database, "CHECKPOINT_EVERY", 10)
    monkeypatch.setattr(database, "INLINE_BUDGET", 30.0)  # a loaded machine must not move them
    handed: list[int] = []
    real = database.Database._checkpoint_soon

    def spy(self: database.Database) -> None:
        handed.append(self._inline_commits)
        real(self)

    monkeypatch.setattr(database.Database, "_checkpoint_soon", spy)
    async with open_backend(db_url) as backend:
        for i in range(60):
            await backend.add_message("s", "user", f"m{i}")
            await anyio.sleep(0.002)  # a handed-over checkpoint ends before the next write
        inline = backend.store._store._inline_commits
        assert inline >= 30, inline
        assert handed == list(range(10, inline + 1, 10))  # after the 10th, 20th ... only
