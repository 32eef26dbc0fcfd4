"""Message rows: writing (single, batch, idempotent), reading newest-N, deleting.

Stored timestamps never go backwards within a conversation: a message stamped by the
store gets ``max(now, created_at of the previous message)``. Caller timestamps of batch
writes are kept as given; order is always ``seq``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from memory_core import Conversation, EntityRef, Message, MessageRole
from memory_core import requests as rq

from . import conversations, entities
from .codec import dump_json, from_micros, load_json, now_micros, pack_vector, sql_int, to_micros
from .rows import MESSAGE_COLUMNS, to_conversation, to_message

SELECT_MESSAGES = (
    f"SELECT {MESSAGE_COLUMNS} FROM messages m JOIN conversations c ON c.id = m.conversation_id"
)


def add_message(conn: sqlite3.Connection, req: rq.AddMessage) -> Message:
    """The ``add_message`` hook; a replayed idempotency key returns the stored message."""
    target = req.target
    now = now_micros()
    row = conversations.require(conn, target)
    if row is not None and req.idempotency_key is not None:
        stored = _by_key(conn, row["id"], req.idempotency_key)
        if stored is not None:
            return stored
    tenant = conversations.tenant_key(target.tenant)
    linked = entities.resolve(conn, tenant, req.mentions, now)
    if row is None:
        row = conversations.ensure(conn, target, now)
    writer = _Writer(conn, row, now)
    message = writer.write(
        req.role, req.content, req.metadata, None, req.embedding, req.idempotency_key, linked
    )
    writer.finish(target.user_identifier)
    return message


def add_messages(conn: sqlite3.Connection, req: rq.AddMessages) -> list[Message]:
    """The ``add_messages`` hook: one batch, one transaction, in order."""
    now = now_micros()
    tenant = conversations.tenant_key(req.target.tenant)
    row = conversations.ensure(conn, req.target, now)
    writer = _Writer(conn, row, now)
    stored = []
    for item in req.messages:
        linked = entities.resolve(conn, tenant, item.mentions, now)
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
    writer.finish(req.target.user_identifier)
    return stored


class _Writer:
    """Appends messages to one conversation inside the current transaction."""

    def __init__(self, conn: sqlite3.Connection, conversation: sqlite3.Row, now: int) -> None:
        self.conn = conn
        self.conversation = conversation
        self.now = now
        self.seq = conversation["next_seq"]
        previous = conn.execute(
            "SELECT created_at FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 1",
            (conversation["id"],),
        ).fetchone()
        self.last = previous[0] if previous is not None else None

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
        if timestamp is not None:
            stamp = to_micros(timestamp)
        else:
            stamp = self.now if self.last is None else max(self.now, self.last)
        message_id = uuid4()
        meta_text = dump_json(metadata)
        self.conn.execute(
            "INSERT INTO messages (id, conversation_id, seq, role, content, metadata, "
            "created_at, embedding, idempotency_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                str(message_id),
                self.conversation["id"],
                self.seq,
                role.value,
                content,
                meta_text,
                stamp,
                pack_vector(embedding),
                key,
            ),
        )
        entities.link(self.conn, str(message_id), linked)
        self.seq += 1
        self.last = stamp
        # Built from what was stored (metadata re-read from its JSON) so it equals a read.
        return Message(
            id=message_id,
            created_at=from_micros(stamp),
            embedding=None if embedding is None else [float(x) for x in embedding],
            metadata=load_json(meta_text),
            role=role,
            content=content,
            conversation_id=UUID(self.conversation["id"]),
            session_id=self.conversation["session_id"],
            idempotency_key=key,
            mentions=entities.refs(linked),
        )

    def finish(self, user: str | None) -> None:
        conversations.touch(self.conn, self.conversation, self.seq, user, self.now)


def _by_key(conn: sqlite3.Connection, conversation_id: str, key: str) -> Message | None:
    row = conn.execute(
        f"{SELECT_MESSAGES} WHERE m.conversation_id = ? AND m.idempotency_key = ?",
        (conversation_id, key),
    ).fetchone()
    if row is None:
        return None
    return load(conn, [row])[0]


def load(conn: sqlite3.Connection, rows: Sequence[sqlite3.Row]) -> list[Message]:
    """Rows selected with :data:`SELECT_MESSAGES` → messages with their mentions."""
    mentions: dict[str, list[EntityRef]] = entities.mentions_of(conn, [r["id"] for r in rows])
    return [to_message(row, mentions.get(row["id"])) for row in rows]


def get_conversation(conn: sqlite3.Connection, req: rq.GetConversation) -> Conversation:
    """The newest ``limit`` messages (after ``since``, filtered before the limit), oldest
    first; an empty conversation for a session with none yet."""
    row = conversations.require(conn, req.target)
    if row is None:
        return conversations.missing(req.target)
    sql = f"{SELECT_MESSAGES} WHERE m.conversation_id = ?"
    params: list[object] = [row["id"]]
    if req.since is not None:
        sql += " AND m.created_at > ?"
        params.append(to_micros(req.since))
    sql += " ORDER BY m.seq DESC LIMIT ?"
    params.append(sql_int(req.limit))
    rows = conn.execute(sql, params).fetchall()
    rows.reverse()
    return to_conversation(row, load(conn, rows))


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
    return True
