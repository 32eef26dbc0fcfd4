"""SQLite rows → memory-core models."""

from __future__ import annotations

import sqlite3
from uuid import UUID

from memory_core import Conversation, Entity, EntityRef, Message, MessageRole, SessionInfo
from memory_core.summary import preview

from .codec import from_micros, load_json, unpack_vector

MESSAGE_COLUMNS = (
    "m.num, m.id, m.conversation_id, m.seq, m.role, m.content, m.metadata, m.created_at, "
    "m.embedding, m.idempotency_key, c.session_id"
)


def to_message(
    row: sqlite3.Row, mentions: list[EntityRef] | None = None, score: float | None = None
) -> Message:
    """A row selected with :data:`MESSAGE_COLUMNS`."""
    return Message(
        id=UUID(row["id"]),
        created_at=from_micros(row["created_at"]),
        embedding=unpack_vector(row["embedding"]),
        metadata=load_json(row["metadata"]),
        role=MessageRole(row["role"]),
        content=row["content"],
        conversation_id=UUID(row["conversation_id"]),
        session_id=row["session_id"],
        idempotency_key=row["idempotency_key"],
        mentions=mentions or [],
        score=score,
    )


def to_conversation(row: sqlite3.Row, messages: list[Message] | None = None) -> Conversation:
    """A ``conversations`` row (plus messages for ``get_conversation``)."""
    return Conversation(
        id=UUID(row["id"]),
        session_id=row["session_id"],
        title=row["title"],
        messages=messages or [],
        created_at=from_micros(row["created_at"]),
        updated_at=from_micros(row["updated_at"]),
        metadata=load_json(row["metadata"]),
        user_identifier=row["user_identifier"],
    )


def to_session(row: sqlite3.Row) -> SessionInfo:
    """A ``list_sessions`` row: conversation columns plus count and preview columns."""
    first, last = row["first_content"], row["last_content"]
    return SessionInfo(
        session_id=row["session_id"],
        conversation_id=UUID(row["id"]),
        title=row["title"],
        message_count=row["message_count"],
        first_message_preview=None if first is None else preview(first),
        last_message_preview=None if last is None else preview(last),
        created_at=from_micros(row["created_at"]),
        updated_at=from_micros(row["updated_at"]),
        user_identifier=row["user_identifier"],
    )


def to_entity(row: sqlite3.Row) -> Entity:
    """An ``entities`` row."""
    return Entity(
        id=row["id"],
        name=row["name"],
        type=row["type"],
        description=row["description"],
        created_at=from_micros(row["created_at"]),
        updated_at=from_micros(row["updated_at"]),
    )


def to_ref(row: sqlite3.Row) -> EntityRef:
    """An entity row as the reference stored on ``Message.mentions``."""
    return EntityRef(id=row["id"], name=row["name"], type=row["type"])
