"""SQLite rows → memory-core models."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from memory_core.store import (
    Conversation,
    Entity,
    EntityRef,
    Message,
    MessageRole,
    SessionInfo,
    preview,
    trusted,
    trusted_many,
)

from .codec import (
    FLOAT_EXACT_MICROS,
    UNKNOWN_SAFETY,
    from_micros,
    load_json,
    stored_uuid,
    unpack_vector,
)

# Message rows are read as plain tuples (positions below). ``has_mentions`` lets a read
# skip the mentions lookup when none of its messages mention anything.
_COLUMNS = (
    "m.num, m.id, m.conversation_id, m.seq, m.role, m.content, m.metadata, m.created_at, "
    "m.embedding, m.idempotency_key, c.session_id"
)
MESSAGE_COLUMNS = (
    f"{_COLUMNS}, EXISTS (SELECT 1 FROM mentions mn WHERE mn.message_id = m.id) AS has_mentions"
)
# The same for a store without any mention (entities unused, the common case): the
# per-row lookup was a tenth of a newest-100 read.
MESSAGE_COLUMNS_NO_MENTIONS = f"{_COLUMNS}, 0 AS has_mentions"
NUM, ID, HAS_MENTIONS = 0, 1, 11

_ROLES = {role.value: role for role in MessageRole}
_MESSAGE_FIELDS = frozenset(Message.model_fields)
_new = object.__new__
_set = object.__setattr__


def read_messages(
    rows: Iterable[tuple[Any, ...]], mentions: dict[str, list[EntityRef]] | None = None
) -> list[Message]:
    """Rows selected with :data:`MESSAGE_COLUMNS` → messages, in order, with
    the mentions given by message id for the rows whose ``has_mentions`` is set.

    What the store guarantees is not validated again (ids are canonical UUIDs it wrote,
    roles are valid, times are integers): each model is filled in directly, as
    :func:`memory_core.models.trusted` does, which is several times cheaper than
    validating. This is the hottest loop of a read, so :func:`~.codec.stored_uuid` and
    the fast path of :func:`~.codec.from_micros` are written out here and names are
    looked up once per call rather than once per row (a tenth of the read)."""
    found = mentions or {}
    conversations: dict[str, UUID] = {}  # ids repeat across rows: parse each once
    new, put, safety, roles = _new, _set, UNKNOWN_SAFETY, _ROLES
    stamp, utc = datetime.fromtimestamp, UTC
    every = set(_MESSAGE_FIELDS)  # one fields set for all (see ``trusted_many``)
    built: list[Message] = []
    for row in rows:
        key = row[2]
        conversation_id = conversations.get(key)
        if conversation_id is None:
            conversation_id = conversations[key] = stored_uuid(key)
        message_id = new(UUID)
        put(message_id, "int", int(row[1].replace("-", ""), 16))
        put(message_id, "is_safe", safety)
        micros = row[7]
        blob = row[8]
        metadata = row[6]
        message = new(Message)
        put(
            message,
            "__dict__",
            {
                "id": message_id,
                "created_at": stamp(micros / 1_000_000, utc)
                if 0 <= micros < FLOAT_EXACT_MICROS
                else from_micros(micros),
                "updated_at": None,
                "embedding": None if blob is None else unpack_vector(blob),
                "metadata": {} if metadata == "{}" else load_json(metadata),
                "role": roles[row[4]],
                "content": row[5],
                "conversation_id": conversation_id,
                "session_id": row[10],
                "tool_calls": None,
                "score": None,
                "idempotency_key": row[9],
                "mentions": found.get(row[1], []) if row[11] else [],
            },
        )
        put(message, "__pydantic_fields_set__", every)
        put(message, "__pydantic_extra__", None)
        put(message, "__pydantic_private__", None)
        built.append(message)
    return built


def to_conversation(row: sqlite3.Row, messages: list[Message] | None = None) -> Conversation:
    """A ``conversations`` row (plus messages for ``get_conversation``)."""
    return trusted(Conversation, _conversation_values(row, messages))


def to_conversations(rows: Iterable[sqlite3.Row]) -> list[Conversation]:
    """``conversations`` rows, without messages (one ``trusted_many`` for a listing)."""
    return trusted_many(Conversation, (_conversation_values(row, None) for row in rows))


def _conversation_values(row: sqlite3.Row, messages: list[Message] | None) -> dict[str, Any]:
    return {
        "id": stored_uuid(row["id"]),
        "session_id": row["session_id"],
        "title": row["title"],
        "messages": messages or [],
        "created_at": from_micros(row["created_at"]),
        "updated_at": from_micros(row["updated_at"]),
        "metadata": load_json(row["metadata"]),
        "user_identifier": row["user_identifier"],
    }


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
        aliases=_aliases(row["aliases"]),
        attributes=load_json(row["attributes"]),
        created_at=from_micros(row["created_at"]),
        updated_at=from_micros(row["updated_at"]),
    )


def _aliases(text: str | None) -> list[str]:
    if not text or text == "[]":
        return []
    value = json.loads(text)
    return [str(item) for item in value] if isinstance(value, list) else []


def to_ref(row: sqlite3.Row) -> EntityRef:
    """An entity row as the reference stored on ``Message.mentions``."""
    return EntityRef(id=row["id"], name=row["name"], type=row["type"])
