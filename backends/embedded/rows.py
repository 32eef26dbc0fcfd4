"""SQLite rows → memory-core models."""

from __future__ import annotations

import sqlite3
from typing import Any
from uuid import UUID

from memory_core import Conversation, Entity, EntityRef, Message, MessageRole, SessionInfo
from memory_core.models import trusted
from memory_core.summary import preview

from .codec import from_micros, load_json, stored_uuid, unpack_vector

# Message rows are read as plain tuples (positions below). ``has_mentions`` lets a read
# skip the mentions lookup when none of its messages mention anything.
MESSAGE_COLUMNS = (
    "m.num, m.id, m.conversation_id, m.seq, m.role, m.content, m.metadata, m.created_at, "
    "m.embedding, m.idempotency_key, c.session_id, "
    "EXISTS (SELECT 1 FROM mentions mn WHERE mn.message_id = m.id) AS has_mentions"
)
NUM, ID, HAS_MENTIONS = 0, 1, 11

_ROLES = {role.value: role for role in MessageRole}
_MESSAGE_FIELDS = frozenset(Message.model_fields)
_new = object.__new__
_set = object.__setattr__


class MessageReader:
    """Rows selected with :data:`MESSAGE_COLUMNS` → :class:`Message`, without
    re-validating what the store guarantees (ids are UUIDs it wrote, roles are valid,
    times are integers): the model is filled in directly, as
    :func:`memory_core.models.trusted` does, which is several times cheaper than
    validating. Conversation ids repeat across rows, so each is parsed once."""

    def __init__(self, mentions: dict[str, list[EntityRef]] | None = None) -> None:
        self._mentions = mentions or {}
        self._conversations: dict[str, UUID] = {}

    def __call__(self, row: tuple[Any, ...], score: float | None = None) -> Message:
        conversation = row[2]
        conversation_id = self._conversations.get(conversation)
        if conversation_id is None:
            conversation_id = self._conversations[conversation] = stored_uuid(conversation)
        blob = row[8]
        metadata = row[6]
        message = _new(Message)
        _set(
            message,
            "__dict__",
            {
                "id": stored_uuid(row[1]),
                "created_at": from_micros(row[7]),
                "updated_at": None,
                "embedding": None if blob is None else unpack_vector(blob),
                "metadata": {} if metadata == "{}" else load_json(metadata),
                "role": _ROLES[row[4]],
                "content": row[5],
                "conversation_id": conversation_id,
                "session_id": row[10],
                "tool_calls": None,
                "score": score,
                "idempotency_key": row[9],
                "mentions": self._mentions.get(row[1], []) if row[11] else [],
            },
        )
        _set(message, "__pydantic_fields_set__", set(_MESSAGE_FIELDS))
        _set(message, "__pydantic_extra__", None)
        _set(message, "__pydantic_private__", None)
        return message


def to_conversation(row: sqlite3.Row, messages: list[Message] | None = None) -> Conversation:
    """A ``conversations`` row (plus messages for ``get_conversation``)."""
    return trusted(
        Conversation,
        {
            "id": stored_uuid(row["id"]),
            "session_id": row["session_id"],
            "title": row["title"],
            "messages": messages or [],
            "created_at": from_micros(row["created_at"]),
            "updated_at": from_micros(row["updated_at"]),
            "metadata": load_json(row["metadata"]),
            "user_identifier": row["user_identifier"],
        },
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
