"""Deleting a session's reasoning traces, for ``clear_session``.

A trace's steps, tool calls and links go with it (``ON DELETE CASCADE``), and the
delete triggers of ``traces`` and ``steps`` take their words out of ``long_term_words``.
"""

from __future__ import annotations

import sqlite3


def delete_session_traces(conn: sqlite3.Connection, tenant: str, session_id: str) -> int:
    """Delete every trace of ``session_id`` in ``tenant`` (the stored tenant: ``''`` on a
    single-tenant store, whoever's the traces are); how many went."""
    gone: int = conn.execute(
        "DELETE FROM traces WHERE tenant = ? AND session_id = ?", (tenant, session_id)
    ).rowcount
    return gone
