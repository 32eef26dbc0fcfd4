"""``forget_user`` on SQLite: bounded transactions, then a purge of the FTS index in
bounded steps.

Each transaction deletes at most ``batch_size`` messages of one of the user's conversations
(with their mentions; the FTS delete trigger removes their index entries), or the
conversation once it is empty. On a single-tenant store an entity whose last mention went
in that transaction goes in it too, so a crash never leaves an entity that nothing marks as
the user's. A multi-tenant store's entities belong to the tenant: they go last.

An external-content FTS5 index only marks a deleted row as deleted: its tokens stay in the
``messages_fts_data`` segments until they are merged. Every transaction that deletes
messages sets ``fts_purge_pending`` in ``schema_info``; the run ends with a merge of the
index in short steps, each its own write transaction (see :mod:`.fts_purge`), the last of
which clears it, so a re-run after a crash still purges. ``secure_delete`` overwrites
freed pages with zeros.
"""

from __future__ import annotations

import sqlite3

from memory_core.store import Erased
from memory_core.store import requests as rq

from .database import Database
from .fts_purge import PURGE_KEY, purge_step


async def forget_user(db: Database, req: rq.ForgetUser) -> Erased:
    """Erase ``req``'s user, one bounded transaction at a time, then purge the index."""
    erased = Erased()
    while await db.call(lambda conn: _step(conn, req, erased), write=True):
        pass
    while await db.call(lambda conn: _entities(conn, req, erased), write=True):
        pass
    while await db.call(purge_step, write=True):
        pass  # other writers run between two steps
    return erased


def _step(conn: sqlite3.Connection, req: rq.ForgetUser, erased: Erased) -> bool:
    """One transaction: a batch of messages of one conversation, or that conversation
    once empty. False when the user has no conversation left."""
    conn.execute("PRAGMA secure_delete = ON")
    if req.tenant is not None:
        row = conn.execute(
            "SELECT id FROM conversations WHERE tenant = ? LIMIT 1", (req.tenant,)
        ).fetchone()
    else:
        row = conn.execute(
            "SELECT id FROM conversations WHERE tenant = '' AND user_identifier = ? LIMIT 1",
            (req.user_identifier,),
        ).fetchone()
    if row is None:
        return False
    conversation = row[0]
    batch = conn.execute(
        "SELECT num, id, idempotency_key FROM messages WHERE conversation_id = ? "
        "ORDER BY seq DESC LIMIT ?",
        (conversation, req.batch_size),
    ).fetchall()
    if not batch:
        conn.execute("DELETE FROM conversations WHERE id = ?", (conversation,))
        erased.add("conversations", 1)
        return True
    _delete_messages(conn, batch, shared_entities=req.tenant is None, erased=erased)
    return True


def _delete_messages(
    conn: sqlite3.Connection, batch: list[sqlite3.Row], *, shared_entities: bool, erased: Erased
) -> None:
    ids = [row[1] for row in batch]
    marks = ",".join("?" * len(ids))
    linked = [
        r[0]
        for r in conn.execute(
            f"SELECT DISTINCT entity_id FROM mentions WHERE message_id IN ({marks})", ids
        )
    ]
    mentions = conn.execute(f"DELETE FROM mentions WHERE message_id IN ({marks})", ids).rowcount
    conn.execute(
        f"DELETE FROM messages WHERE num IN ({marks})", [row[0] for row in batch]
    )  # the FTS delete trigger drops each row's index entries
    conn.execute("INSERT OR REPLACE INTO schema_info (key, value) VALUES (?, '1')", (PURGE_KEY,))
    erased.add("messages", len(batch))
    erased.add("mentions", mentions)
    erased.add("idempotency_keys", sum(1 for row in batch if row[2] is not None))
    if shared_entities and linked:
        entity_marks = ",".join("?" * len(linked))
        orphans = conn.execute(
            f"DELETE FROM entities WHERE tenant = '' AND id IN ({entity_marks}) "
            "AND NOT EXISTS (SELECT 1 FROM mentions WHERE entity_id = entities.id)",
            linked,
        ).rowcount
        erased.add("entities", orphans)


def _entities(conn: sqlite3.Connection, req: rq.ForgetUser, erased: Erased) -> bool:
    """A multi-tenant store: one batch of the tenant's entities (their mentions went with
    the messages). False when none is left."""
    if req.tenant is None:
        return False
    conn.execute("PRAGMA secure_delete = ON")
    gone = conn.execute(
        "DELETE FROM entities WHERE id IN (SELECT id FROM entities WHERE tenant = ? LIMIT ?)",
        (req.tenant, req.batch_size),
    ).rowcount
    erased.add("entities", gone)
    return gone > 0
