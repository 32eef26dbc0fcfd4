"""SQLite connections, locking, and transactions run in worker threads.

Concurrency model. Every operation is a plain function ``work(conn)`` that
:meth:`Database.call` runs in an anyio worker thread inside one transaction (``BEGIN
IMMEDIATE`` for writes, so another process writing the same file waits ``busy_timeout``
instead of failing half-way). The event loop never waits on SQLite (small calls that cannot
wait are the one thing run in the calling thread, see below), the code works under
asyncio and trio, and worker threads are not abandoned on cancellation, so a transaction
always finishes (commit or rollback) before the task is cancelled.

* **Writes** go one at a time through a ``threading.Lock`` and the writer connection (or
  the inline writer's, below): each write sees the previous one committed, so sequence
  numbers, idempotency checks and get-or-create are race-free.
* **Reads of a file store** do not take that lock. Each read borrows a reader connection
  from a small pool (opened on demand, ``PRAGMA query_only``) and runs in its own
  ``BEGIN`` … ``COMMIT`` snapshot. In WAL mode SQLite lets those readers run at the same
  time as each other and as the writer, so a slow read never holds up an unrelated read
  or a write.
* **Threads.** Under asyncio a write runs on the store's own writer thread and a read on
  one of a few reader threads (``concurrent.futures`` executors kept warm for the life of
  the store): the hop costs less than a general worker pool, and the writer's connection
  is always used from the same thread. Under other event loops (trio) anyio's worker
  threads are used. Either way a task cancelled while its call runs is cancelled only
  once the transaction has finished.
* **Small calls in the calling thread.** A read the backend marks small (the newest
  few hundred messages of one conversation, the read every agent turn makes) and a
  small write (one message) first try the calling thread, where they cost no thread hop
  (the hop was half of such a read and two thirds of such a write). They run there only
  if they cannot wait: the store's inline connection (or, on ``memory://``, the lock) is
  taken without blocking, the connection has no busy timeout, and a progress handler
  interrupts SQLite once :data:`INLINE_BUDGET` has passed. A call that would wait (a lock
  held, a busy file) or run long is rolled back and starts again in a worker thread, so
  the event loop is held at most about that budget plus building the models.
  ``inline_reads=False`` / ``inline_writes=False`` on the backend turn this off.
* **Inline writes** additionally take the write lock without blocking and only when no
  write or checkpoint of this store is queued for the writer thread, so writes still
  land in the order they were made. On a file store they use a connection of their own
  whose automatic WAL checkpoint is off (a checkpoint calls ``fsync``, which the event
  loop must not wait for); every :data:`CHECKPOINT_EVERY` inline writes a passive
  checkpoint is handed to the writer thread instead (see :meth:`Database._checkpoint`).
* **The file stays the file.** SQLite keeps the database file open, so a file deleted
  (or moved away and replaced) while the store is open would go on taking writes into an
  inode no one can reach again, while new reader connections opened (and created)
  whatever was now at the path. A call compares the path's ``(st_dev, st_ino)`` with the
  file opened (one ``stat``, about 1.5 µs) when the last look is :data:`FILE_CHECK_EVERY`
  old or more; once they differ, that call and every later one raises
  :class:`~memory_core.TransportError` (not retryable) naming the path, and nothing more
  is written. Connections other than the writer's open the file without creating it
  (see :meth:`Database._check_file`).
* **``memory://``** stays one connection behind the one lock: a private in-memory
  database is only visible to the connection that opened it, and a shared-cache database
  would bring table-level locking (readers blocked by writers with ``SQLITE_LOCKED``),
  which is worse than a queue. It is the store for tests and throwaway sessions; use a
  file for concurrent work.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio.to_thread

from memory_core.store import (
    ConfigurationError,
    MemoryCoreError,
    NotFoundError,
    TransportError,
    default_store_path,
    round_trip,
)

from .filters import metadata_matches
from .location import Location
from .schema import create_schema

T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]

# Idle reader connections kept open; more are opened while more reads run at once.
MAX_IDLE_READERS = 8
# How long a small read may hold the calling thread inside SQLite before it moves to a
# reader thread, and how many SQLite VM steps pass between looks at the clock.
INLINE_BUDGET = 0.001
INLINE_CHECK_STEPS = 1000
# SQLite answers meaning "not now" (interrupted by the budget, busy, locked): the read
# starts again in a reader thread.
_NOT_NOW = frozenset({sqlite3.SQLITE_INTERRUPT, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_NOT_RUN = object()
# Inline writes between two checkpoints handed to the writer thread. A one-message write
# adds about 13 WAL pages; SQLite's own automatic checkpoint comes at 1000.
CHECKPOINT_EVERY = 75
# Seconds between two looks at whether the path still names the file the store opened:
# one stat per millisecond at most, whatever the call rate (see Database._check_file).
FILE_CHECK_EVERY = 0.001
# Emptying the write-ahead log waits for readers of an older snapshot: at most this long
# per try, holding the write lock, then the lock is let go for this pause, until
# busy_timeout has passed (see Database.truncate_log).
TRUNCATE_WAIT = 0.05
TRUNCATE_PAUSE = 0.05


def _on_asyncio() -> bool:
    """Whether the caller runs on an asyncio event loop (not trio)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Database:
    """The connections of one backend object (see the module docstring for the model)."""

    def __init__(
        self,
        location: Location,
        busy_timeout: float,
        inline_reads: bool = True,
        inline_writes: bool = True,
        create: bool = True,
    ) -> None:
        self.location = location
        self.namespace = ":memory:" if location.in_memory else str(location.path)
        self.create = create
        self.busy_timeout = busy_timeout
        self.inline_reads = inline_reads
        self.inline_writes = inline_writes
        self._inline_lock = threading.Lock()
        self._inline: sqlite3.Connection | None = None
        self._inline_writer: sqlite3.Connection | None = None
        self._queued_writes = 0
        self._inline_commits = 0
        self._checkpointing = False
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pool_lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._writer_thread: ThreadPoolExecutor | None = None
        self._reader_threads: ThreadPoolExecutor | None = None
        # (st_dev, st_ino) of the file the writer opened (None: memory://, or not open),
        # and why the store stopped, once the path no longer names that file.
        self._identity: tuple[int, int] | None = None
        self._lost: str | None = None
        self._next_file_check = 0.0
        self._file_path = ""  # the file's absolute path, resolved when first opened

    async def open(self) -> None:
        """Open the database file (see :meth:`_check_path`) and create the schema."""
        if self._conn is None:
            self._check_path()
        if self._writer_thread is None:
            self._writer_thread = ThreadPoolExecutor(1, "memory-core-sqlite-writer")
            self._reader_threads = ThreadPoolExecutor(MAX_IDLE_READERS, "memory-core-sqlite-reader")
        await self._in_thread(self._open, write=True)

    async def close(self) -> None:
        """Close the connections once running work has finished."""
        await self._in_thread(self._close, write=True)
        threads = (self._writer_thread, self._reader_threads)
        self._writer_thread = self._reader_threads = None
        for pool in threads:
            if pool is not None:
                pool.shutdown(wait=False)

    async def call(self, work: Work[T], *, write: bool) -> T:
        """Run ``work(conn)`` in a worker thread inside one transaction."""
        with round_trip("sqlite", namespace=self.namespace):
            return await self._call(work, write=write)

    async def _call(self, work: Work[T], *, write: bool) -> T:
        if not write:
            return await self._in_thread(partial(self.run, work, write=False), write=False)
        self._queued_writes += 1
        try:
            return await self._in_thread(partial(self.run, work, write=True), write=True)
        finally:
            self._queued_writes -= 1

    async def write(self, work: Work[T], *, small: bool) -> T:
        """Run the write ``work(conn)``: a ``small`` one in the calling thread when no
        other write or checkpoint is queued and it can finish there without waiting (see
        the module docstring), otherwise as :meth:`call`."""
        with round_trip("sqlite", namespace=self.namespace):
            return await self._write(work, small=small)

    async def _write(self, work: Work[T], *, small: bool) -> T:
        if small and self.inline_writes and not (self._queued_writes or self._checkpointing):
            result = self._write_inline(work)
            if result is not _NOT_RUN:
                return result  # type: ignore[return-value]
        return await self._call(work, write=True)

    async def read(self, work: Work[T], *, small: bool) -> T:
        """Run the read ``work(conn)``: a ``small`` one in the calling thread when it can
        finish there without waiting (see the module docstring), otherwise as :meth:`call`."""
        with round_trip("sqlite", namespace=self.namespace):
            return await self._read(work, small=small)

    async def _read(self, work: Work[T], *, small: bool) -> T:
        if small and self.inline_reads:
            result = self._read_inline(work)
            if result is not _NOT_RUN:
                return result  # type: ignore[return-value]
        return await self._call(work, write=False)

    def _read_inline(self, work: Work[T]) -> T | object:
        lock = self._lock if self.location.in_memory else self._inline_lock
        return self._inline_call(lock, work, write=False)

    def _write_inline(self, work: Work[T]) -> T | object:
        result = self._inline_call(self._lock, work, write=True)
        if result is not _NOT_RUN and not self.location.in_memory:
            self._inline_commits += 1
            if self._inline_commits % CHECKPOINT_EVERY == 0:
                self._checkpoint_soon()
        return result

    def _inline_call(self, lock: threading.Lock, work: Work[T], *, write: bool) -> T | object:
        """``work`` in the calling thread if ``lock`` and the connection are free now;
        :data:`_NOT_RUN` (nothing done) when it cannot run or finish there."""
        self._check_file()
        if not lock.acquire(blocking=False):
            return _NOT_RUN
        try:
            conn = self._inline_connection(write=write)
            if conn is None:
                return _NOT_RUN
            try:
                return self._inline_transaction(conn, work, write=write)
            finally:
                # The handler goes first: with the budget spent it would interrupt the
                # ROLLBACK too and leave the connection inside the call's transaction.
                conn.set_progress_handler(None, 0)
                _rollback(conn)
                if conn.in_transaction:
                    self._drop_inline(conn)  # cannot be ended: not used again
        finally:
            lock.release()

    def _inline_connection(self, *, write: bool) -> sqlite3.Connection | None:
        """The connection for inline calls (caller holds its lock): the writer's on
        ``memory://``; on a file store one of its own for reads and one for writes (see
        :meth:`_connect`); ``None`` when the store is not open or the connection cannot
        be opened without waiting."""
        if self._conn is None or self.location.in_memory:
            return self._conn
        conn = self._inline_writer if write else self._inline
        if conn is None:
            try:
                conn = self._connect(reader=not write, inline=True)
            except sqlite3.Error:
                return None
            if write:
                self._inline_writer = conn
            else:
                self._inline = conn
        return conn

    def _drop_inline(self, conn: sqlite3.Connection) -> None:
        if conn is self._inline:
            self._inline = None
        elif conn is self._inline_writer:
            self._inline_writer = None
        else:
            return  # the writer's own connection (memory://) is never dropped
        with contextlib.suppress(sqlite3.Error):
            conn.close()

    def _checkpoint_soon(self) -> None:
        """Hand a passive WAL checkpoint to the writer thread (not awaited)."""
        pool = self._writer_thread
        if pool is not None and not self._checkpointing:
            self._checkpointing = True
            try:
                pool.submit(self._checkpoint)
            except RuntimeError:  # shut down: closing the store checkpoints anyway
                self._checkpointing = False

    def _checkpoint(self) -> None:
        # Under the write lock: with writes going on, a checkpoint never catches up with
        # the end of the log, and the log only starts again from its beginning when a
        # write finds it fully copied (it grew by every write). Writes made meanwhile wait
        # in the writer thread, not in the event loop.
        try:
            with self._lock:
                if self._conn is not None:
                    self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error:
            pass  # the next one will try again; SQLite checkpoints on close too
        finally:
            self._checkpointing = False

    async def truncate_log(self) -> bool:
        """Copy the write-ahead log into the database file and empty it (the ``-wal``
        file is cut to nothing): after an erasure, the log's old page images hold what
        was deleted. A reader still on a snapshot older than the log's end stops this;
        it is tried again, holding the write lock at most :data:`TRUNCATE_WAIT` a time,
        until ``busy_timeout`` has passed. True once the log is empty (``memory://``:
        there is none); False when readers kept it."""
        if self.location.in_memory:
            return True
        deadline = time.monotonic() + self.busy_timeout
        while True:
            with round_trip("sqlite", namespace=self.namespace):
                self._queued_writes += 1  # inline writes wait their turn meanwhile
                try:
                    emptied = await self._in_thread(self._truncate, write=True)
                finally:
                    self._queued_writes -= 1
            if emptied or time.monotonic() >= deadline:
                return emptied
            await anyio.sleep(TRUNCATE_PAUSE)

    def _truncate(self) -> bool:
        self._check_file()
        with self._lock:
            conn = self._writer()
            try:
                conn.execute(f"PRAGMA busy_timeout = {int(TRUNCATE_WAIT * 1000)}")
                try:
                    busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                finally:
                    conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            except sqlite3.Error as exc:
                raise self._translate(exc) from exc
            return not busy

    def _inline_transaction(
        self, conn: sqlite3.Connection, work: Work[T], *, write: bool
    ) -> T | object:
        """``work`` in a transaction interrupted once :data:`INLINE_BUDGET` has passed;
        a write is committed, a read's snapshot is left to the caller, which removes the
        handler and rolls back whatever is still open."""
        deadline = time.perf_counter() + INLINE_BUDGET
        conn.set_progress_handler(lambda: time.perf_counter() > deadline, INLINE_CHECK_STEPS)
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            result = work(conn)
            if write:
                conn.set_progress_handler(None, 0)  # a COMMIT is never interrupted
                conn.execute("COMMIT")
            return result
        except sqlite3.Error as exc:
            if (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF in _NOT_NOW:
                return _NOT_RUN
            raise self._translate(exc) from exc

    async def _in_thread(self, fn: Callable[[], T], *, write: bool) -> T:
        pool = self._writer_thread if write else self._reader_threads
        if pool is None or not _on_asyncio():
            return await anyio.to_thread.run_sync(fn)
        try:
            future = asyncio.get_running_loop().run_in_executor(pool, fn)
        except RuntimeError:  # the pool was shut down (closing, or interpreter exit)
            return await anyio.to_thread.run_sync(fn)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # Not abandoned: the transaction commits or rolls back before the task ends.
            while not future.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait([future])
            raise

    def run(self, work: Work[T], *, write: bool) -> T:
        """Run ``work(conn)`` in one transaction (blocking): writes, and every call on
        ``memory://``, hold the lock; reads of a file store use a reader connection."""
        self._check_file()
        if write or self.location.in_memory:
            with self._lock:
                return self._transaction(self._writer(), work, write)
        conn = self._borrow()
        try:
            return self._transaction(conn, work, write)
        finally:
            self._give_back(conn)

    def _check_file(self, *, now: bool = False) -> None:
        """Raise :class:`TransportError` (not retryable) once the store's path no longer
        names the file this store opened: deleted, moved away, or replaced by another
        file. SQLite would go on writing into the file it has open, which no one can
        reach again, and acknowledge every write.

        Looked at (one ``stat``) when the last look is :data:`FILE_CHECK_EVERY` old, or
        ``now``: at most a thousand a second, however fast calls come, so the hot path
        pays a clock read. A call that starts within that millisecond after a deletion
        may still be acknowledged: to the caller it is the same as a call made just
        before it, and a deleted file loses those too. Connections other than the
        writer's never create the file (see :meth:`_connect`), so no empty store appears
        at the path meanwhile. Once it has failed, every later call fails the same way
        without looking again: the open file is no longer the store."""
        identity = self._identity
        if identity is None:
            return
        if self._lost is None:
            if not now:
                clock = time.monotonic()
                if clock < self._next_file_check:
                    return
                self._next_file_check = clock + FILE_CHECK_EVERY
            try:
                found = os.stat(self._file_path)
            except (FileNotFoundError, NotADirectoryError):
                self._lost = "was deleted or moved away"
            except OSError:
                return  # cannot look (e.g. a folder's permissions): SQLite answers itself
            else:
                if (found.st_dev, found.st_ino) == identity:
                    return
                self._lost = "was replaced by another file"
        raise TransportError(
            f"embedded store {self.location.url}: the database file {self._file_path} "
            f"{self._lost} while the store was open; nothing more is read or written "
            "(writes would go to a file no longer at that path). Close the backend and "
            "open it again to use the file now there",
            retryable=False,
        )

    def _writer(self) -> sqlite3.Connection:
        conn = self._conn
        if conn is None:
            raise TransportError(f"embedded store {self.location.url} is not open")
        return conn

    def _transaction(self, conn: sqlite3.Connection, work: Work[T], write: bool) -> T:
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                result = work(conn)
            except BaseException:
                _rollback(conn)
                raise
            conn.execute("COMMIT")
            return result
        except sqlite3.Error as exc:
            _rollback(conn)
            raise self._translate(exc) from exc

    def _borrow(self) -> sqlite3.Connection:
        """An idle reader connection, or a new one (the store must be open)."""
        self._writer()
        with self._pool_lock:
            if self._idle:
                return self._idle.pop()
        try:
            return self._connect(reader=True)
        except sqlite3.Error as exc:
            self._check_file(now=True)  # the likely reason: the file is gone
            raise self._translate(exc) from exc

    def _give_back(self, conn: sqlite3.Connection) -> None:
        with self._pool_lock:
            if self._conn is not None and len(self._idle) < MAX_IDLE_READERS:
                self._idle.append(conn)
                return
        with contextlib.suppress(sqlite3.Error):
            conn.close()

    def _check_path(self) -> None:
        """A missing database file is created, unless ``create`` is False. Its folder must
        exist: a mistyped folder is an error, not a new empty store somewhere else. The
        one folder created is the default store's data folder (``~/.local/share/
        memory-core`` and its equivalents), which memory-core itself chose."""
        path = self.location.path
        if path is None or path.exists():
            return
        url = self.location.url
        if not self.create:
            raise NotFoundError.missing(
                "embedded", "database file", path, hint="opened with create=False"
            )
        folder = path.parent
        if folder.exists():
            return  # a folder, or a file in the way (then SQLite fails: TransportError)
        if os.path.abspath(path) == os.path.abspath(default_store_path()):
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise TransportError(
                    f"embedded store {url}: its folder cannot be created: {exc.strerror or exc}",
                    retryable=False,
                ) from exc
            return
        raise ConfigurationError(
            f"embedded store {url}: the folder {folder} does not exist; create it first "
            "(only the default store's data folder is created)"
        )

    def _open(self) -> None:
        with self._lock:
            if self._conn is not None:
                return
            if self.location.path is not None and not self._file_path:
                # Resolved once: every later connection opens this file, whatever the
                # working directory has become (a relative URL would follow a chdir).
                self._file_path = os.path.abspath(self.location.path)
            try:
                conn = self._connect(reader=False)
            except sqlite3.Error as exc:
                raise self._translate(exc) from exc
            except OSError as exc:
                raise TransportError(
                    f"embedded store {self.location.url} cannot be opened: {exc.strerror or exc}"
                ) from exc
            self._conn = conn
            self._remember_file()

    def _remember_file(self) -> None:
        """Note which file the writer opened, for :meth:`_check_file`."""
        self._lost = None
        if not self._file_path:
            return  # memory://
        try:
            found = os.stat(self._file_path)
        except OSError:
            return  # cannot look: unchecked, rather than refusing a file SQLite opened
        self._identity = (found.st_dev, found.st_ino)

    def _connect(self, *, reader: bool, inline: bool = False) -> sqlite3.Connection:
        """A configured connection: the writer (which creates the schema), a reader, or
        (``inline``) one for the calling thread, which never waits for a lock (no busy
        timeout, from its first statement on) and, as a writer, leaves checkpoints to the
        writer thread; the writer has already switched the file to WAL."""
        path = self.location.path
        wait = 0.0 if inline else self.busy_timeout
        if path is None:
            target, uri = ":memory:", False
        elif reader or inline:  # the writer made the file: never create one here
            target, uri = Path(self._file_path or os.path.abspath(path)).as_uri() + "?mode=rw", True
        else:
            target, uri = self._file_path or str(path), False
        conn = sqlite3.connect(
            target, timeout=wait, isolation_level=None, check_same_thread=False, uri=uri
        )
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.create_function("meta_match", 2, metadata_matches, deterministic=True)
            if reader:
                conn.execute("PRAGMA query_only = ON")
                return conn
            # Every write, not only erasures: a page split leaves a stale copy of its cells
            # in the unused space of the page it came from, and on SQLite 3.44+ such copies
            # of a forgotten user's words outlived the erasure's own zeroing.
            conn.execute("PRAGMA secure_delete = ON")
            if inline:
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA wal_autocheckpoint = 0")
                return conn
            if path is not None:
                _ensure_wal(conn, self.busy_timeout)
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                create_schema(conn)
            except BaseException:
                _rollback(conn)
                raise
            conn.execute("COMMIT")
        except BaseException:
            conn.close()
            raise
        return conn

    def _close(self) -> None:
        with self._lock:
            with self._pool_lock:
                conn, self._conn = self._conn, None
                idle, self._idle = self._idle, []
            self._identity = None
            with self._inline_lock:
                inline, self._inline = self._inline, None
            writer, self._inline_writer = self._inline_writer, None
            for reader in [*idle, *(c for c in (inline, writer) if c is not None)]:
                with contextlib.suppress(sqlite3.Error):
                    reader.close()
            if conn is not None:
                try:
                    conn.close()
                except sqlite3.Error as exc:
                    raise self._translate(exc) from exc

    def _translate(self, exc: sqlite3.Error) -> MemoryCoreError:
        """A sqlite3 error as ours: the store failed, not the caller's request."""
        reason = str(exc) or type(exc).__name__
        if isinstance(exc, sqlite3.OperationalError) and "locked" in reason.lower():
            reason += f" (still locked after busy_timeout={self.busy_timeout}s)"
        return TransportError(f"embedded store {self.location.url}: {reason}")


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def _ensure_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Switch a file store to WAL once. The switch needs the database to itself and SQLite
    answers "locked" at once (no busy wait) while another process opens the same new file,
    so it is retried until ``timeout``; a store already in WAL is left alone."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)
