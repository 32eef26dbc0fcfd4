"""Reads from standbys (``read_from="replica"``), with read-your-writes.

Reads take their connections from a second pool, opened on the backend's URL with
``target_session_attrs=prefer-standby``: libpq picks a standby among the URL's hosts, or
the primary when none answers. Writes keep the first pool (the primary).

Read-your-writes: after each write of this store, on the write's connection and after its
commit, the primary's WAL write position is read (``pg_current_wal_lsn()``: with
``synchronous_commit`` on, the default, the commit has written its record, so the
position is at or past its end; the insert position is not used, as it can point past a
page header no record ends at). The highest such position is kept.
A read on a standby first checks that the standby has replayed it
(``pg_last_wal_replay_lsn()``), polling for up to ``replica_wait`` seconds; past that
bound the read runs on the primary. A write that raised may have committed: the next
read first asks the primary for its position.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import psycopg

from .tx import Tx

T = TypeVar("T")

_POSITION = "SELECT pg_current_wal_lsn() - '0/0'::pg_lsn"
_REPLAYED = "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn() - '0/0'::pg_lsn"
_FIRST_PAUSE, _LONGEST_PAUSE = 0.001, 0.05


class Lagging(Exception):
    """The standby had not replayed this store's last write within ``replica_wait``."""


async def primary_position(tx: Tx) -> int:
    """The primary's WAL write position, in bytes."""
    row = await tx.row(_POSITION)
    return int(row[0]) if row else 0


class Replicas:
    """Where this store's reads go, and how far its writes reached on the primary."""

    def __init__(self, wait: float) -> None:
        self.wait = wait
        self.pool: Any = None  # the reads' AsyncConnectionPool, once connected
        self._written = 0  # the highest primary position after one of this store's writes
        self._doubt = 0  # writes that raised since the position was last known
        self._seen: dict[tuple[str, str], int] = {}  # server -> a position it replayed

    @property
    def in_doubt(self) -> int:
        """Non-zero after a write that raised: it may have committed at a position not
        known here; see :meth:`learn`."""
        return self._doubt

    def write_failed(self) -> None:
        """A write raised (it may have committed)."""
        self._doubt += 1

    def learn(self, position: int, doubt: int) -> None:
        """The primary's ``position``, read after the writes that raised (``doubt`` is
        :attr:`in_doubt` from before it was read)."""
        self._written = max(self._written, position)
        if self._doubt == doubt:
            self._doubt = 0

    async def note_write(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """After a write's commit, on its connection: remember the primary's position.
        A connection lost now cannot undo the write: the position is then unknown, and
        the next read asks the primary."""
        try:
            cursor = await conn.execute(_POSITION)
            row = await cursor.fetchone()
        except psycopg.Error:
            self.write_failed()
            return
        if row is not None:
            self._written = max(self._written, int(row[0]))

    def after_catch_up(self, work: Callable[[Tx], Awaitable[T]]) -> Callable[[Tx], Awaitable[T]]:
        """``work``, run once the server has replayed this store's writes; ``Lagging``
        when it has not within ``replica_wait``."""
        target = self._written

        async def routed(tx: Tx) -> T:
            if target:
                await self._catch_up(tx, target)
            return await work(tx)

        return routed

    async def _catch_up(self, tx: Tx, target: int) -> None:
        info = tx.cursor.connection.info
        server = (info.host, str(info.port))
        if self._seen.get(server, -1) >= target:
            return
        deadline, pause = time.monotonic() + self.wait, _FIRST_PAUSE
        while True:
            row = await tx.row(_REPLAYED)
            standby, replayed = row if row else (False, None)
            if not standby:
                return  # the primary: prefer-standby found no standby, or it was promoted
            if replayed is None:
                raise Lagging  # a replica that reports no replay position: never known
            if int(replayed) >= target:
                self._seen[server] = max(self._seen.get(server, 0), int(replayed))
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise Lagging
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, _LONGEST_PAUSE)
