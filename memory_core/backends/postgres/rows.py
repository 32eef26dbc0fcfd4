"""PostgreSQL rows → memory-core models."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC
from typing import Any
from uuid import UUID

from memory_core.store import (
    Conversation,
    Entity,
    EntityRef,
    Message,
    MessageRole,
    SessionInfo,
    foreign,
    preview,
    trusted,
    trusted_many,
)

from .codec import load_content, load_metadata, load_optional, load_text, utc

# The message columns every read selects, in this order (see to_message).
MESSAGE_COLUMNS = (
    "m.id, m.conversation_id, m.role, m.content, m.content_exact, m.metadata, "
    "m.created_at, m.embedding, m.idempotency_key, c.session_id, m.num, "
    "(SELECT json_agg(json_build_array(e.id, e.name, e.type) ORDER BY mn.position) "
    "FROM {s}.mentions mn JOIN {s}.entities e ON e.id = mn.entity_id "
    "WHERE mn.message_id = m.id)"
)
NUM = 10
CONVERSATION_COLUMNS = (
    "c.id, c.session_id, c.title, c.metadata, c.user_identifier, c.created_at, c.updated_at"
)

_ROLES = {role.value: role for role in MessageRole}
BACKEND = "postgres"


def to_message(row: tuple[Any, ...], score: float | None = None) -> Message:
    """A row of :data:`MESSAGE_COLUMNS` (one memory-core wrote: see :func:`read_messages`
    for rows of a read)."""
    return trusted(Message, _message_fields(row, score))


def read_messages(
    rows: Sequence[tuple[Any, ...]], scores: Sequence[float | None] | None = None
) -> list[Message]:
    """Rows of :data:`MESSAGE_COLUMNS` (with their ``scores``) as messages. A row another
    program wrote with a value the model cannot hold is read by :func:`checked_fields`:
    left out, or with the value replaced, and a warning."""
    given = scores if scores is not None else [None] * len(rows)
    try:
        return [to_message(row, score) for row, score in zip(rows, given, strict=True)]
    except (KeyError, ValueError):  # an unknown role; metadata or exact bytes unreadable
        fields = (checked_fields(row, score) for row, score in zip(rows, given, strict=True))
        return [trusted(Message, found) for found in fields if found is not None]


def checked_fields(row: tuple[Any, ...], score: float | None) -> dict[str, Any] | None:
    """:func:`_message_fields` for a row that may be another program's: ``None`` for a role
    memory-core does not have (left out); metadata that is not a JSON object read as ``{}``;
    exact bytes that are not UTF-8 read from the text column. Each with a warning."""
    mid = row[0]
    if row[2] not in _ROLES:
        why = f"has the role {str(row[2])[:40]!r}, which is none of memory-core's"
        foreign.left_out(BACKEND, "message", mid, why)
        return None
    values = list(row)
    values[5] = metadata_text(row[5], "message", mid)
    if row[4] is not None and not _decodes(row[4]):
        foreign.not_utf8(BACKEND, "message", mid, "content_exact", row[3])
        values[4] = None
    return _message_fields(tuple(values), score)


def metadata_text(text: str, kind: str, record: Any) -> str:
    """Stored metadata text as read: ``"{}"`` (with a warning) unless a JSON object."""
    try:
        load_metadata(text)
    except ValueError:
        foreign.not_an_object(BACKEND, kind, record, text)
        return "{}"
    return text


def _decodes(exact: bytes) -> bool:
    try:
        load_content("", exact)
    except UnicodeDecodeError:
        return False
    return True


def safe_content(text: str, exact: bytes | None) -> str:
    """The content as :func:`~.codec.load_content` reads it, or the text column when the
    exact bytes do not decode (for scoring: the row's warning comes when it is read)."""
    return text if exact is None or not _decodes(exact) else load_content(text, exact)


def newest(
    rows: Iterable[tuple[Any, ...]], start: int, conversation_id: UUID, session_id: str
) -> list[Message]:
    """The messages of a newest-N read: rows holding ``seq`` then :data:`MESSAGE_COLUMNS`
    from ``start`` on (NULL ``seq``: no message), their conversation given. What
    :func:`_message_fields` does, inlined in one pass: it runs a hundred times a read
    (a value another program wrote: :func:`read_messages` instead)."""
    rows = list(rows)
    try:
        return _newest(rows, start, conversation_id, session_id)
    except (KeyError, ValueError):
        found = [row[start + 1 :] for row in rows if row[start] is not None]
        full = [(r[0], conversation_id, *r[2:9], session_id, *r[10:]) for r in found]
        return read_messages(full)


def _newest(
    rows: list[tuple[Any, ...]], start: int, conversation_id: UUID, session_id: str
) -> list[Message]:
    roles = _ROLES
    return trusted_many(
        Message,
        (
            {
                "id": mid,
                "created_at": stamp if stamp.tzinfo is UTC else stamp.astimezone(UTC),
                "updated_at": None,
                "embedding": None if vector is None else [float(x) for x in vector],
                "metadata": {} if metadata == "{}" else load_metadata(metadata),
                "role": roles[role],
                "content": text if exact is None else load_content(text, exact),
                "conversation_id": conversation_id,
                "session_id": session_id,
                "tool_calls": None,
                "score": None,
                "idempotency_key": key if key is None else load_text(key),
                "mentions": refs(mentions) if mentions else [],
            }
            for seq, mid, _, role, text, exact, metadata, stamp, vector, key, _, _, mentions in (
                row[start:] for row in rows
            )
            if seq is not None
        ),
    )


def _message_fields(row: tuple[Any, ...], score: float | None) -> dict[str, Any]:
    # The common cases inline (no exact bytes, empty metadata, no mentions): this runs
    # once per message of every read.
    embedding, metadata, mentions = row[7], row[5], row[11]
    return {
        "id": row[0],
        "created_at": row[6].astimezone(UTC),
        "updated_at": None,
        "embedding": None if embedding is None else [float(x) for x in embedding],
        "metadata": {} if metadata == "{}" else load_metadata(metadata),
        "role": _ROLES[row[2]],
        "content": row[3] if row[4] is None else load_content(row[3], row[4]),
        "conversation_id": row[1],
        "session_id": row[9],
        "tool_calls": None,
        "score": score,
        "idempotency_key": load_optional(row[8]),
        "mentions": refs(mentions) if mentions else [],
    }


def refs(found: list[list[str]] | None) -> list[EntityRef]:
    """The aggregated (id, name, type) triples of a message's mentions."""
    if not found:
        return []
    return [EntityRef(id=i, name=load_text(n), type=t) for i, n, t in found]


def to_entity(row: tuple[Any, ...]) -> Entity:
    """A row of :data:`ENTITY_COLUMNS`."""
    return Entity(
        id=row[0],
        name=load_text(row[1]),
        type=row[2],
        description=load_optional(row[3]),
        created_at=utc(row[4]),
        updated_at=utc(row[5]),
        aliases=_aliases(row[6]),
        attributes=load_metadata(metadata_text(row[7], "entity", row[0])),
    )


def _aliases(text: str | None) -> list[str]:
    """The stored JSON list of aliases (another program's text that is not one: none)."""
    try:
        value = json.loads(text or "[]")
    except ValueError:
        return []
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


ENTITY_COLUMNS = (
    "e.id, e.name, e.type, e.description, e.created_at, e.updated_at, e.aliases, e.attributes"
)


def to_conversation(row: tuple[Any, ...], messages: list[Message] | None = None) -> Conversation:
    """A row of :data:`CONVERSATION_COLUMNS` (plus messages for ``get_conversation``)."""
    return trusted(
        Conversation,
        {
            "id": row[0],
            "session_id": row[1],
            "title": load_optional(row[2]),
            "messages": messages or [],
            "created_at": utc(row[5]),
            "updated_at": utc(row[6]),
            "metadata": load_metadata(metadata_text(row[3], "conversation", row[0])),
            "user_identifier": row[4],
        },
    )


def to_session(row: tuple[Any, ...]) -> SessionInfo:
    """:data:`CONVERSATION_COLUMNS` plus count and the first/last content (text, exact)."""
    first = None if row[8] is None else safe_content(row[8], row[9])
    last = None if row[10] is None else safe_content(row[10], row[11])
    conversation_id: UUID = row[0]
    return SessionInfo(
        session_id=row[1],
        conversation_id=conversation_id,
        title=load_optional(row[2]),
        message_count=row[7],
        first_message_preview=None if first is None else preview(first),
        last_message_preview=None if last is None else preview(last),
        created_at=utc(row[5]),
        updated_at=utc(row[6]),
        user_identifier=row[4],
    )
