"""Message rows: writing (single, batch, idempotent), reading newest-N, deleting.

Stored timestamps never go backwards within a conversation: a message stamped by the
store gets ``max(now, created_at of the previous message)``. Caller timestamps of batch
writes are kept as given; order is always ``seq``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any
from uuid import uuid4

from memory_core.store import (
    Conversation,
    Entity,
    EntityRef,
    Message,
    MessageRole,
    first_named,
    lookups,
    trusted,
)
from memory_core.store import requests as rq

from . import conversations, entities
from .codec import (
    dump_json,
    from_micros,
    load_json,
    now_micros,
    pack_vector,
    sql_int,
    stored_uuid,
    to_micros,
)
from .fts_purge import mark_pending
from .rows import (
    HAS_MENTIONS,
    ID,
    MESSAGE_COLUMNS,
    MESSAGE_COLUMNS_NO_MENTIONS,
    read_messages,
    to_conversation,
)

_FROM = "FROM messages m JOIN conversations c ON c.id = m.conversation_id"
SELECT_MESSAGES = f"SELECT {MESSAGE_COLUMNS} {_FROM}"
_SELECT_WITHOUT_MENTIONS = f"SELECT {MESSAGE_COLUMNS_NO_MENTIONS} {_FROM}"


def select_messages(conn: sqlite3.Connection) -> str:
    """:data:`SELECT_MESSAGES`, without its per-row mentions lookup when the store holds
    no mention at all (one index probe, in the caller's snapshot)."""
    if conn.execute("SELECT EXISTS (SELECT 1 FROM mentions)").fetchone()[0]:
        return SELECT_MESSAGES
    return _SELECT_WITHOUT_MENTIONS


def add_message(conn: sqlite3.Connection, req: rq.AddMessage) -> Message:
    """The ``add_message`` hook; a replayed idempotency key returns the stored message.

    Without a key or mentions this is two statements between BEGIN and COMMIT: the
    conversation row is advanced (``UPDATE … RETURNING``) and the message inserted
    (``INSERT … RETURNING`` its timestamp).
    """
    return add_keyed(conn, req)[0]


def add_keyed(conn: sqlite3.Connection, req: rq.AddMessage) -> tuple[Message, bool]:
    """:func:`add_message`, and whether its idempotency key was stored before (then the
    stored message is returned and nothing is written)."""
    target = req.target
    now = now_micros()
    if req.idempotency_key is not None:
        found = conversations.require(conn, target)
        if found is not None:
            stored = _by_key(conn, found["id"], req.idempotency_key)
            if stored is not None:
                return stored, True
    row = _advance(conn, target, 1, now)
    tenant = conversations.tenant_key(target.tenant)
    linked = entities.resolve(conn, tenant, req.mentions, now) if req.mentions else []
    writer = _Writer(conn, row, now, 1)
    written = writer.write(
        req.role, req.content, req.metadata, None, req.embedding, req.idempotency_key, linked
    )
    return written, False


def add_messages(conn: sqlite3.Connection, req: rq.AddMessages) -> list[Message]:
    """The ``add_messages`` hook: one batch, one transaction, in order."""
    now = now_micros()
    tenant = conversations.tenant_key(req.target.tenant)
    row = _advance(conn, req.target, len(req.messages), now)
    writer = _Writer(conn, row, now, len(req.messages))
    stored = []
    for item in req.messages:
        linked = entities.resolve(conn, tenant, item.mentions, now) if item.mentions else []
        stored.append(
            writer.write(
                item.role,
                item.content,
                item.metadata,
                item.timestamp,
                item.embedding,
                None,
                linked,
            )
        )
    return stored


def _advance(conn: sqlite3.Connection, target: rq.Target, count: int, now: int) -> sqlite3.Row:
    """Reserve ``count`` sequence numbers of the target's conversation (created for a
    session that has none; an unknown ``conversation_id`` raises NotFoundError)."""
    row = conversations.advance(conn, target, count, now)
    if row is None:
        conversations.ensure(conn, target, now)
        row = conversations.advance(conn, target, count, now)
        assert row is not None
    return row


# The store stamps a message max(now, the previous message's time): never backwards.
_INSERT = (
    "INSERT INTO messages (id, conversation_id, seq, role, content, metadata, created_at, "
    "embedding, idempotency_key, tenant) VALUES (?1, ?2, ?3, ?4, ?5, ?6, coalesce(?7, max(?8, "
    "coalesce((SELECT created_at FROM messages WHERE conversation_id = ?2 "
    "ORDER BY seq DESC LIMIT 1), 0))), ?9, ?10, ?11) RETURNING created_at"
)


class _Writer:
    """Appends messages to one conversation inside the current transaction, given its
    row as :func:`conversations.advance` returned it after reserving ``count`` numbers."""

    def __init__(
        self, conn: sqlite3.Connection, conversation: sqlite3.Row, now: int, count: int
    ) -> None:
        self.conn = conn
        self.now = now
        self.seq = conversation["next_seq"] - count
        self.conversation_key = conversation["id"]
        self.conversation_id = stored_uuid(conversation["id"])
        self.session_id = conversation["session_id"]
        self.tenant = conversation["tenant"]  # see schema.SCHEMA_VERSION 4

    def write(
        self,
        role: MessageRole,
        content: str,
        metadata: dict[str, Any],
        timestamp: datetime | None,
        embedding: list[float] | None,
        key: str | None,
        linked: Sequence[sqlite3.Row],
    ) -> Message:
        message_id = uuid4()
        meta_text = dump_json(metadata)
        [stamp] = self.conn.execute(
            _INSERT,
            (
                str(message_id),
                self.conversation_key,
                self.seq,
                role.value,
                content,
                meta_text,
                None if timestamp is None else to_micros(timestamp),
                self.now,
                pack_vector(embedding),
                key,
                self.tenant,
            ),
        ).fetchone()
        if linked:
            entities.link(self.conn, str(message_id), linked)
        self.seq += 1
        # Built from what was stored (metadata re-read from its JSON) so it equals a read.
        return trusted(
            Message,
            {
                "id": message_id,
                "created_at": from_micros(stamp),
                "updated_at": None,
                "embedding": None if embedding is None else [float(x) for x in embedding],
                "metadata": load_json(meta_text),
                "role": role,
                "content": content,
                "conversation_id": self.conversation_id,
                "session_id": self.session_id,
                "tool_calls": None,
                "score": None,
                "idempotency_key": key,
                "mentions": entities.refs(linked),
            },
        )


def _by_key(conn: sqlite3.Connection, conversation_id: str, key: str) -> Message | None:
    rows = fetch(
        conn,
        f"{SELECT_MESSAGES} WHERE m.conversation_id = ? AND m.idempotency_key = ?",
        (conversation_id, key),
    )
    return load(conn, rows)[0] if rows else None


def fetch(conn: sqlite3.Connection, sql: str, params: Sequence[object]) -> list[tuple[Any, ...]]:
    """Rows of a :data:`SELECT_MESSAGES` query, as plain tuples (cheaper than Row)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor.execute(sql, params).fetchall()


def load(conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> list[Message]:
    """Rows from :func:`fetch` → messages with their mentions (looked up only for the
    messages that have some)."""
    mentioned = [row[ID] for row in rows if row[HAS_MENTIONS]]
    return read_messages(rows, entities.mentions_of(conn, mentioned) if mentioned else None)


def get_conversation(conn: sqlite3.Connection, req: rq.GetConversation) -> Conversation:
    """The newest ``limit`` messages (after ``since``, filtered before the limit), oldest
    first; an empty conversation for a session with none yet."""
    row = conversations.require(conn, req.target)
    if row is None:
        return conversations.missing(req.target)
    sql = f"{select_messages(conn)} WHERE m.conversation_id = ?"
    params: list[object] = [row["id"]]
    if req.since is not None:
        sql += " AND m.created_at > ?"
        params.append(to_micros(req.since))
    sql += " ORDER BY m.seq DESC LIMIT ?"
    params.append(sql_int(req.limit))
    rows = fetch(conn, sql, params)
    rows.reverse()
    return to_conversation(row, load(conn, rows))


def neighbours(conn: sqlite3.Connection, req: rq.MessageNeighbours) -> list[list[Message]]:
    """The ``message_neighbours`` hook: around each message of the tenant, the
    ``req.count`` messages before and after it in its conversation (by ``seq``), oldest
    first, itself among them."""
    select = f"{select_messages(conn)} WHERE m.conversation_id = ? AND m.seq"
    before = f"{select} <= ? ORDER BY m.seq DESC LIMIT ?"
    after = f"{select} > ? ORDER BY m.seq ASC LIMIT ?"
    tenant = conversations.tenant_key(req.tenant)
    windows: list[list[Message]] = []
    for message_id in req.message_ids:
        hit = conn.execute(
            f"SELECT m.conversation_id, m.seq {_FROM} WHERE m.id = ? AND c.tenant = ?",
            (str(message_id), tenant),
        ).fetchone()
        if hit is None:
            windows.append([])
            continue
        rows = fetch(conn, before, (hit[0], hit[1], sql_int(req.count + 1)))[::-1]
        rows += fetch(conn, after, (hit[0], hit[1], sql_int(req.count)))
        windows.append(load(conn, rows))
    return windows


def delete_message(conn: sqlite3.Connection, req: rq.DeleteMessage) -> bool:
    """Delete one message of the caller's tenant. Its mentions always go with it
    (``cascade`` only matters on graph stores, where it decides whether the relationships
    are removed); the entities stay. The others keep their order (``seq`` gaps are fine)."""
    row = conn.execute(
        "SELECT m.id FROM messages m JOIN conversations c ON c.id = m.conversation_id "
        "WHERE m.id = ? AND c.tenant = ?",
        (str(req.message_id), conversations.tenant_key(req.tenant)),
    ).fetchone()
    if row is None:
        return False
    conn.execute("DELETE FROM mentions WHERE message_id = ?", (row["id"],))
    conn.execute("DELETE FROM messages WHERE id = ?", (row["id"],))
    mark_pending(conn)  # the caller purges the index of its words
    return True


def open_turn(conn: sqlite3.Connection, req: rq.OpenTurn) -> tuple[list[Entity], Message, bool]:
    """The ``open_turn`` hook in one transaction: the entities the identifiers name (as
    ``find_entities`` finds them, in order, at most ``req.limit``), then the keyed
    message with them as its mentions."""
    named = first_named([entities.find_entities(conn, look) for look in lookups(req)], req.limit)
    refs = [EntityRef(id=entity.id) for entity in named]
    stored, replayed = add_keyed(conn, replace(req.message, mentions=refs))
    return named, stored, replayed
