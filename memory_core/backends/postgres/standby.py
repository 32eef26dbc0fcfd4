"""``require_standby``: a write is acknowledged only if the server that committed it
waits for a synchronous standby.

After a write commits, one more statement on the same connection reads the server's
``synchronous_standby_names`` and ``synchronous_commit``. With a synchronous standby named
and a commit level that waits for it, the commit returned only once a standby had the
write, so promoting that standby keeps it. Otherwise the write was committed on the
server alone: it is reported as a retryable ``TransportError`` with ``maybe_applied``
(it is stored, and may be lost if that server is replaced), and a retry with the same
idempotency key stores it once, wherever it lands.

Why a separate statement after the commit: a server reloading its configuration (an HA
manager turning synchronous replication off) changes what commits wait for before the
session running the write sees the new value; a session applies a reload between
statements, so the statement after the commit sees it.

What this catches: a primary whose HA manager has turned synchronous replication off,
then lets it take writes while a standby is promoted (pg_auto_failover 2.0 does this in
a switchover now and then: see the Reliability page). What it costs: one round trip per
write, and no writes while the primary has no synchronous standby (each one is reported
in doubt), the trade ``number_sync_standbys = 1`` makes in pg_auto_failover.
"""

from __future__ import annotations

from typing import Any

import psycopg

from memory_core.store import TransportError

_WAITING_LEVELS = ("on", "remote_write", "remote_apply")
CHECK = "SELECT current_setting('synchronous_standby_names'), current_setting('synchronous_commit')"


async def confirm(conn: psycopg.AsyncConnection[Any]) -> None:
    """``TransportError`` (``maybe_applied``) unless the server's commits wait for a
    synchronous standby."""
    row = await (await conn.execute(CHECK)).fetchone()
    names, level = row if row else ("", "")
    named = bool(str(names).strip())
    if named and level in _WAITING_LEVELS:
        return
    why = f"synchronous_commit={level}" if named else "no synchronous standby"
    raise TransportError(
        f"postgres: the write was committed by a server whose commits do not wait for a "
        f"standby ({why}); it is stored there but a failover may lose it "
        "(require_standby=True): retry it with its idempotency key",
        retryable=True,
        maybe_applied=True,
    )
