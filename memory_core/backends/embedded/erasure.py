"""``forget_user`` on SQLite: bounded transactions, then a purge of the FTS index in
bounded steps.

The user's traces go first, a batch of them per transaction, their steps, tool calls and
links with them.

Each transaction deletes at most ``batch_size`` messages of one of the user's conversations
(with their mentions; the FTS delete trigger removes their index entries), or the
conversation once it is empty. One call erases what the user has when it starts: the
conversations then listed, each one's messages numbered below its ``next_seq`` of then,
and a multi-tenant store's entities up to the last ``rowid`` of then. What the user's
writers add meanwhile is left to the next call (``Erased.remaining``), so a call ends
even while they keep writing. On a single-tenant store an entity whose last mention went
in that transaction goes in it too, so a crash never leaves an entity that nothing marks as
the user's, unless another user's preference links it (the user's own preferences and
facts went first). A multi-tenant store's entities belong to the tenant: they go last.

An external-content FTS5 index only marks a deleted row as deleted: its tokens stay in the
``messages_fts_data`` segments until they are merged. Every transaction that deletes
messages sets ``fts_purge_pending`` in ``schema_info``; the run ends with a merge of the
index in short steps, each its own write transaction (see :mod:`.fts_purge`), the last of
which clears it, so a re-run after a crash still purges. ``secure_delete`` overwrites
freed pages with zeros.

Last, the write-ahead log is copied into the file and emptied (``Database.truncate_log``):
until then its old page images hold the user's words, and a checkpoint alone leaves them
in the ``-wal`` file, whose frames are overwritten only as later writes reach them. A
reader that keeps an older snapshot beyond ``busy_timeout`` stops it; the report then
says so in ``not_reached``, and running ``forget_user`` again tries once more.
"""

from __future__ import annotations

import sqlite3
from functools import partial

from memory_core.store import Erased
from memory_core.store import requests as rq

from .database import Database
from .fts_purge import mark_pending, purge

# The user's long-term rows, deleted in batches before the conversations.
LONG_TERM = ("preferences", "facts", "relationships")
LOG_BLOCKED = (
    "SQLite's write-ahead log (the -wal file beside the database): a reader kept an older "
    "snapshot, so the log, whose old pages may hold this user's data, was not emptied; "
    "run forget_user again once long reads have ended, or close every connection to the "
    "file (the last one removes the log)"
)


async def forget_user(db: Database, req: rq.ForgetUser) -> Erased:
    """Erase ``req``'s user, one bounded transaction at a time, then purge the index and
    empty the write-ahead log."""
    erased = Erased()
    while await db.call(partial(_trace_batch, req=req, erased=erased), write=True):
        pass
    for table in LONG_TERM:
        while await db.call(
            partial(_long_term_batch, req=req, table=table, erased=erased), write=True
        ):
            pass
    for conversation, cut in await db.call(partial(_conversations, req=req), write=False):
        await _conversation(db, req, conversation, cut, erased)
    await _entities(db, req, erased)
    await purge(db)
    if not await db.truncate_log():
        erased.not_reached.append(LOG_BLOCKED)
    erased.remaining = await db.call(partial(_remaining, req=req), write=False)
    return erased


def _long_term_batch(
    conn: sqlite3.Connection, req: rq.ForgetUser, table: str, erased: Erased
) -> int:
    """One batch of the user's rows of ``table`` (``preferences``, ``facts``, or a
    multi-tenant store's ``relationships``); how many went. Their words and links go
    with them (triggers, ``ON DELETE CASCADE``)."""
    conn.execute("PRAGMA secure_delete = ON")
    params: list[object]
    if req.tenant is not None:
        where, params = "tenant = ?", [req.tenant]
    elif table == "relationships":
        return 0  # single-tenant: they go with the user's entities
    else:
        where, params = "tenant = '' AND user_identifier = ?", [req.user_identifier]
    gone: int = conn.execute(
        f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} WHERE {where} LIMIT ?)",
        [*params, req.batch_size],
    ).rowcount
    erased.add(table, gone)
    return gone


def _trace_batch(conn: sqlite3.Connection, req: rq.ForgetUser, erased: Erased) -> int:
    """One batch of the user's traces; how many went. Their steps, tool calls, links and
    words go with them (``ON DELETE CASCADE``, triggers), counted first."""
    conn.execute("PRAGMA secure_delete = ON")
    params: list[object]
    if req.tenant is not None:
        where, params = "tenant = ?", [req.tenant]
    else:
        where, params = "tenant = '' AND user_identifier = ?", [req.user_identifier]
    ids = [
        row[0]
        for row in conn.execute(
            f"SELECT id FROM traces WHERE {where} LIMIT ?", [*params, req.batch_size]
        )
    ]
    if not ids:
        return 0
    marks = ",".join("?" * len(ids))
    steps = f"SELECT id FROM steps WHERE trace_id IN ({marks})"
    calls = conn.execute(
        f"SELECT count(*) FROM tool_calls WHERE step_id IN ({steps})", ids
    ).fetchone()[0]
    erased.add("tool_calls", calls)
    erased.add("steps", conn.execute(f"SELECT count(*) FROM ({steps})", ids).fetchone()[0])
    erased.add("traces", conn.execute(f"DELETE FROM traces WHERE id IN ({marks})", ids).rowcount)
    return len(ids)


def _conversations(conn: sqlite3.Connection, req: rq.ForgetUser) -> list[tuple[str, int]]:
    """The user's conversations now, each with the ``seq`` its next message will get."""
    if req.tenant is not None:
        rows = conn.execute(
            "SELECT id, next_seq FROM conversations WHERE tenant = ?", (req.tenant,)
        )
    else:
        rows = conn.execute(
            "SELECT id, next_seq FROM conversations WHERE tenant = '' AND user_identifier = ?",
            (req.user_identifier,),
        )
    return [(row[0], row[1]) for row in rows]


def _remaining(conn: sqlite3.Connection, req: rq.ForgetUser) -> bool:
    """Whether the user has a conversation (or, multi-tenant, an entity) now."""
    if req.tenant is not None:
        query = " OR ".join(
            f"EXISTS (SELECT 1 FROM {table} WHERE tenant = ?1)"
            for table in ("conversations", "entities", "preferences", "facts", "traces")
        )
        return bool(conn.execute(f"SELECT {query}", (req.tenant,)).fetchone()[0])
    query = " OR ".join(
        f"EXISTS (SELECT 1 FROM {table} WHERE tenant = '' AND user_identifier = ?1)"
        for table in ("conversations", "preferences", "facts", "traces")
    )
    return bool(conn.execute(f"SELECT {query}", (req.user_identifier,)).fetchone()[0])


async def _conversation(
    db: Database, req: rq.ForgetUser, conversation: str, cut: int, erased: Erased
) -> None:
    """Erase one conversation's messages numbered below ``cut``, then the conversation."""
    while await db.call(lambda conn: _step(conn, req, conversation, cut, erased), write=True):
        pass


def _step(
    conn: sqlite3.Connection, req: rq.ForgetUser, conversation: str, cut: int, erased: Erased
) -> bool:
    """One transaction: a batch of ``conversation``'s messages numbered below ``cut``, or,
    once none is left, the conversation if it holds no message (one written since keeps
    it for the next call). False when this conversation is done."""
    conn.execute("PRAGMA secure_delete = ON")
    batch = conn.execute(
        "SELECT num, id, idempotency_key FROM messages WHERE conversation_id = ? AND seq < ? "
        "ORDER BY seq DESC LIMIT ?",
        (conversation, cut, req.batch_size),
    ).fetchall()
    if batch:
        _delete_messages(conn, batch, shared_entities=req.tenant is None, erased=erased)
        return True
    gone = conn.execute(
        "DELETE FROM conversations WHERE id = ?1 "
        "AND NOT EXISTS (SELECT 1 FROM messages WHERE conversation_id = ?1)",
        (conversation,),
    ).rowcount
    erased.add("conversations", gone)
    return False


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
    mark_pending(conn)
    erased.add("messages", len(batch))
    erased.add("mentions", mentions)
    erased.add("idempotency_keys", sum(1 for row in batch if row[2] is not None))
    if shared_entities and linked:
        orphan = (
            f"tenant = '' AND id IN ({','.join('?' * len(linked))}) "
            "AND NOT EXISTS (SELECT 1 FROM mentions WHERE entity_id = entities.id) "
            "AND NOT EXISTS (SELECT 1 FROM preference_entities WHERE entity_id = entities.id) "
            "AND NOT EXISTS (SELECT 1 FROM trace_entities WHERE entity_id = entities.id)"
        )
        unmentioned = f"IN (SELECT id FROM entities WHERE {orphan})"
        links = conn.execute(
            f"SELECT count(*) FROM relationships WHERE source_id {unmentioned} "
            f"OR target_id {unmentioned}",
            [*linked, *linked],
        ).fetchone()[0]
        erased.add("relationships", links)  # they go with the entities (ON DELETE CASCADE)
        orphans = conn.execute(f"DELETE FROM entities WHERE {orphan}", linked).rowcount
        erased.add("entities", orphans)


async def _entities(db: Database, req: rq.ForgetUser, erased: Erased) -> None:
    """A multi-tenant store: the tenant's entities (their mentions went with the
    messages), oldest first, in batches; as many batches as the entities there were."""
    if req.tenant is None:
        return
    count, cut = await db.call(
        lambda conn: conn.execute(
            "SELECT count(*), max(rowid) FROM entities WHERE tenant = ?", (req.tenant,)
        ).fetchone(),
        write=False,
    )
    for _ in range(-(-count // req.batch_size)):
        if not await db.call(partial(_entity_batch, req=req, cut=cut, erased=erased), write=True):
            return


def _entity_batch(conn: sqlite3.Connection, req: rq.ForgetUser, cut: int, erased: Erased) -> int:
    """One batch of the tenant's entities up to ``rowid`` ``cut``; how many went."""
    conn.execute("PRAGMA secure_delete = ON")
    gone: int = conn.execute(
        "DELETE FROM entities WHERE rowid IN (SELECT rowid FROM entities "
        "WHERE tenant = ? AND rowid <= ? ORDER BY rowid LIMIT ?)",
        (req.tenant, cut, req.batch_size),
    ).rowcount
    erased.add("entities", gone)
    return gone
