"""One SQLite connection, one lock, and transactions run in worker threads.

Concurrency model: the backend owns a single ``sqlite3`` connection (opened with
``check_same_thread=False``) and a ``threading.Lock``. Every operation is a plain function
``work(conn)`` that :meth:`Store.call` runs in an anyio worker thread; the thread takes the
lock and runs ``work`` inside one transaction (``BEGIN IMMEDIATE`` for writes, so another
process writing the same file waits ``busy_timeout`` instead of failing half-way). The
event loop never blocks on SQLite, the code works under asyncio and trio, and concurrent
tasks are serialised: each write sees the previous one committed, so sequence numbers,
idempotency checks and get-or-create are race-free. Worker threads are not abandoned on
cancellation, so a transaction always finishes (commit or rollback) before the task is
cancelled.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable
from functools import partial
from typing import TypeVar

import anyio.to_thread

from memory_core import MemoryCoreError, TransportError

from .filters import metadata_matches
from .location import Location
from .schema import create_schema

T = TypeVar("T")
Work = Callable[[sqlite3.Connection], T]


class Store:
    """The connection of one backend object (see the module docstring for the model)."""

    def __init__(self, location: Location, busy_timeout: float) -> None:
        self.location = location
        self.busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    async def open(self) -> None:
        """Open the database file (creating parent folders) and create the schema."""
        await anyio.to_thread.run_sync(self._open)

    async def close(self) -> None:
        """Close the connection once running work has finished."""
        await anyio.to_thread.run_sync(self._close)

    async def call(self, work: Work[T], *, write: bool) -> T:
        """Run ``work(conn)`` in a worker thread inside one transaction."""
        return await anyio.to_thread.run_sync(partial(self.run, work, write=write))

    def run(self, work: Work[T], *, write: bool) -> T:
        """Run ``work(conn)`` in one transaction, holding the lock (blocking)."""
        with self._lock:
            conn = self._conn
            if conn is None:
                raise TransportError(f"embedded store {self.location.url} is not open")
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

    def _open(self) -> None:
        with self._lock:
            if self._conn is not None:
                return
            try:
                conn = self._connect()
            except sqlite3.Error as exc:
                raise self._translate(exc) from exc
            except OSError as exc:
                raise TransportError(
                    f"embedded store {self.location.url} cannot be opened: {exc.strerror or exc}"
                ) from exc
            self._conn = conn

    def _connect(self) -> sqlite3.Connection:
        path = self.location.path
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            ":memory:" if path is None else str(path),
            timeout=self.busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            if path is not None:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.create_function("meta_match", 2, metadata_matches, deterministic=True)
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
            conn, self._conn = self._conn, None
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
