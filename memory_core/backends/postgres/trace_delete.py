"""Deleting a session's reasoning traces, for ``clear_session``.

A trace's steps, tool calls and links go with it (``ON DELETE CASCADE``); its words are
columns of its rows.
"""

from __future__ import annotations

from .tx import Tx


async def delete_session_traces(tx: Tx, tenant: str, session_id: str) -> int:
    """Delete every trace of ``session_id`` in ``tenant`` (the stored tenant: ``''`` on a
    single-tenant store, whoever's the traces are); how many went."""
    return await tx.run(
        "DELETE FROM {s}.traces WHERE tenant = %s AND session_id = %s", (tenant, session_id)
    )
