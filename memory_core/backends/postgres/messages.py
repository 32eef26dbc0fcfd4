"""Message rows: writing (single, batch, idempotent), reading newest-N, deleting.

A message the store stamps gets ``max(now, created_at of the previous message)``: stored
times never go backwards within a conversation. Caller timestamps of batch writes are
kept as given. Order is always ``seq``, reserved on the conversation row, which also
serialises writers of one conversation.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from memory_core.store import Conversation, EntityRef, Message, MessageRole, random_ids, trusted
from memory_core.store import requests as rq

from . import conversations, entities
from .codec import (
    load_metadata,
    load_optional,
    sql_int,
    store_content,
    store_metadata,
    store_optional,
    word_parts,
)
from .rows import MESSAGE_COLUMNS, read_messages, to_conversation, to_message
from .tx import Tx

FROM = "FROM {s}.messages m JOIN {s}.conversations c ON c.id = m.conversation_id"

_INSERT = (
    "INSERT INTO {s}.messages (id, conversation_id, seq, role, content, content_exact, "
    "metadata, metadata_doc, created_at, embedding, idempotency_key, words) "
    "VALUES (%(id)s, %(conversation)s, %(seq)s, %(role)s, %(content)s, %(exact)s, "
    "%(metadata)s, %(doc)s::jsonb, coalesce(%(stamp)s, greatest(%(now)s, "
    "(SELECT p.created_at FROM {s}.messages p WHERE p.conversation_id = %(conversation)s "
    "ORDER BY p.seq DESC LIMIT 1))), %(embedding)s, %(key)s, "
    "array_to_tsvector(%(words)s::text[])) "
)


async def add_message(tx: Tx, req: rq.AddMessage, now: datetime) -> Message:
    """The ``add_message`` hook; a replayed idempotency key returns the stored message."""
    return (await add_keyed(tx, req, now))[0]


async def add_keyed(tx: Tx, req: rq.AddMessage, now: datetime) -> tuple[Message, bool]:
    """:func:`add_message`, and whether its idempotency key was stored before (a
    transaction is never made again once its COMMIT was sent: a message found under the
    key is another call's)."""
    if req.idempotency_key is not None:
        found = await conversations.require(tx, req.target)
        if found is not None:
            stored = await _by_key(tx, found[0], req.idempotency_key)
            if stored is not None:
                return stored, True
    row = await conversations.advance_or_create(tx, req.target, 1, now)
    item = rq.NewMessage(
        role=req.role,
        content=req.content,
        metadata=req.metadata,
        timestamp=None,
        embedding=req.embedding,
        mentions=req.mentions,
    )
    [message] = await _write(tx, row, [item], now, req.idempotency_key)
    if message is None:  # a concurrent replay of the key committed first
        assert req.idempotency_key is not None
        stored = await _by_key(tx, row[0], req.idempotency_key)
        assert stored is not None
        return stored, True
    return message, False


async def add_messages(tx: Tx, req: rq.AddMessages, now: datetime) -> list[Message]:
    """The ``add_messages`` hook: one batch, one transaction, in order."""
    row = await conversations.advance_or_create(tx, req.target, len(req.messages), now)
    written = await _write(tx, row, req.messages, now, None)
    return [m for m in written if m is not None]


async def _write(
    tx: Tx,
    conversation: tuple[Any, ...],
    items: list[rq.NewMessage],
    now: datetime,
    key: str | None,
) -> list[Message | None]:
    """Insert ``items`` after the reserved numbers; None for a row a concurrent writer of
    the same idempotency key already holds."""
    conversation_id, session_id, next_seq, tenant = conversation
    linked = [
        await entities.resolve(tx, tenant, item.mentions, now) if item.mentions else []
        for item in items
    ]
    first = next_seq - len(items)
    ids = random_ids(len(items))
    params = []
    more: list[tuple[UUID, list[list[str]]]] = []
    for offset, (item, message_id) in enumerate(zip(items, ids, strict=True)):
        text, exact = store_content(item.content)
        meta_text, doc = store_metadata(item.metadata)
        parts = word_parts(item.content)
        if len(parts) > 1:
            more.append((message_id, parts))
        params.append(
            {
                "id": message_id,
                "conversation": conversation_id,
                "seq": first + offset,
                "role": item.role.value,
                "content": text,
                "exact": exact,
                "metadata": meta_text,
                "doc": doc,
                "stamp": item.timestamp,
                "now": now,
                "embedding": item.embedding,
                "key": store_optional(key),
                "words": parts[0],
            }
        )
    sql = _INSERT
    if key is not None:
        sql += "ON CONFLICT (conversation_id, idempotency_key) DO NOTHING "
    sql += "RETURNING created_at"
    stamps: list[datetime | None] = []
    cursor = tx.cursor
    await cursor.executemany(tx.sql(sql), params, returning=True)
    while True:
        found = await cursor.fetchone()
        stamps.append(None if found is None else found[0])
        if not cursor.nextset():
            break
    built: list[Message | None] = []
    for p, stamp, item, found in zip(params, stamps, items, linked, strict=True):
        if stamp is None:
            built.append(None)
            continue
        if found:
            await entities.link(tx, p["id"], found)
        built.append(_built(p, stamp, session_id, item, entities.refs(found)))
    written = {p["id"] for p, stamp in zip(params, stamps, strict=True) if stamp is not None}
    await add_more_words(tx, [(mid, parts) for mid, parts in more if mid in written])
    return built


async def add_more_words(tx: Tx, messages: list[tuple[Any, list[list[str]]]]) -> None:
    """The rows of ``message_words`` for messages whose words (from
    :func:`~.codec.word_parts`) fill more than one tsvector: every part after the first,
    which is the message's own ``words``."""
    rows = [(mid, n, part) for mid, parts in messages for n, part in enumerate(parts) if n]
    if rows:
        await tx.cursor.executemany(
            tx.sql(
                "INSERT INTO {s}.message_words (message_id, part, words) "
                "VALUES (%s::uuid, %s, array_to_tsvector(%s::text[]))"
            ),
            rows,
        )


def _built(
    params: dict[str, Any],
    stamp: datetime,
    session_id: str,
    item: rq.NewMessage,
    mentions: list[EntityRef],
) -> Message:
    from .codec import utc

    embedding = item.embedding
    return trusted(
        Message,
        {
            "id": params["id"],
            "created_at": utc(stamp),
            "updated_at": None,
            "embedding": None if embedding is None else [float(x) for x in embedding],
            "metadata": load_metadata(params["metadata"]),
            "role": MessageRole(params["role"]),
            "content": item.content,
            "conversation_id": params["conversation"],
            "session_id": session_id,
            "tool_calls": None,
            "score": None,
            "idempotency_key": load_optional(params["key"]),
            "mentions": mentions,
        },
    )


async def _by_key(tx: Tx, conversation_id: UUID, key: str) -> Message | None:
    row = await tx.row(
        f"SELECT {MESSAGE_COLUMNS} {FROM} WHERE m.conversation_id = %s AND m.idempotency_key = %s",
        (conversation_id, store_optional(key)),
    )
    return None if row is None else to_message(row)


async def get_conversation(tx: Tx, req: rq.GetConversation) -> Conversation:
    """The newest ``limit`` messages (after ``since``, filtered before the limit), oldest
    first; an empty conversation for a session with none yet."""
    row = await conversations.require(tx, req.target)
    if row is None:
        return conversations.missing(req.target)
    sql = f"SELECT {MESSAGE_COLUMNS} {FROM} WHERE m.conversation_id = %s"
    params: list[object] = [row[0]]
    if req.since is not None:
        sql += " AND m.created_at > %s"
        params.append(req.since)
    sql += f" ORDER BY m.seq DESC LIMIT {sql_int(req.limit)}"  # a literal: see .reads
    rows = await tx.rows(sql, params)
    rows.reverse()
    return to_conversation(row, read_messages(rows))


async def delete_message(tx: Tx, req: rq.DeleteMessage) -> bool:
    """Delete one message of the caller's tenant; the others keep their order."""
    deleted = await tx.run(
        "DELETE FROM {s}.messages m USING {s}.conversations c "
        "WHERE m.id = %s AND c.id = m.conversation_id AND c.tenant = %s",
        (req.message_id, conversations.tenant_key(req.tenant)),
    )
    return deleted > 0
