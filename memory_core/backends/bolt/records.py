"""Turning Neo4j property maps into memory-core models, and models into parameters.

Stored shapes match neo4j-agent-memory 0.8.0: timestamps are Neo4j ``DateTime`` values
(UTC), metadata is a JSON string (``null`` for an empty dict, as the reference writes
it), ids are UUID strings, roles are lower-case strings.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid5

from neo4j.time import Duration

from memory_core.store import (
    Conversation,
    Entity,
    EntityRef,
    Message,
    MessageRole,
    NotFoundError,
    SessionInfo,
    StoreError,
    foreign,
    metadata_json,
    parse_uuid,
    preview,
    trusted_many,
)
from memory_core.store import requests as rq

# The same namespace as the embedded backend: a session's conversation has the same id
# in every memory-core store.
NAMESPACE = UUID("76d6accc-5703-50c3-bfc3-6639b22e80f8")


def session_uuid(tenant: str | None, session_id: str) -> UUID:
    """The deterministic conversation id of ``session_id`` for ``tenant``."""
    return uuid5(NAMESPACE, f"{tenant or ''}\x00{session_id}")


def session_params(target: rq.Target) -> dict[str, Any]:
    """The parameters of a statement that resolves a session target (``RESOLVE_SESSION``):
    the name, its deterministic id, the tenant, and the id the name may stand for."""
    assert target.session_id is not None
    alias = target.id_alias
    return {
        "session_id": target.session_id,
        "own_id": str(session_uuid(target.tenant, target.session_id)),
        "as_id": None if alias is None else str(alias),
        "tenant": target.tenant,
    }


def to_datetime(value: Any) -> datetime | None:
    """A Neo4j ``DateTime`` (or ISO string, or datetime) as an aware UTC datetime."""
    if value is None:
        return None
    if hasattr(value, "to_native"):
        value = value.to_native()
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
BACKEND = "bolt"


def _instant(props: Mapping[str, Any], key: str, kind: str) -> datetime | None:
    """The temporal property ``key`` of a projected map (see ``cypher._as_micros``): sent
    as ``{key}_us`` microseconds since the epoch, or as itself when another writer stored
    another type. One outside Python's range reads as the nearest time it has."""
    micros = props.get(f"{key}_us")
    if not isinstance(micros, int) or isinstance(micros, bool):
        return to_datetime(props.get(key))
    try:
        return _EPOCH + timedelta(microseconds=micros)
    except OverflowError:
        stored = iso_from_micros(micros)
        return foreign.out_of_range(BACKEND, kind, props.get("id"), key, stored, late=micros > 0)


def iso_from_micros(micros: int) -> str:
    """Microseconds since 1970 as an ISO 8601 UTC time, also for years Python's datetime
    does not have (a sign and as many digits as the year needs, as Cypher writes them)."""
    year, month, day, hour, minute, second, micro = foreign.civil(micros)
    fraction = f".{micro:06}" if micro else ""
    sign = "-" if year < 0 else ("+" if year > 9999 else "")
    return f"{sign}{abs(year):04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{fraction}Z"


def dump_metadata(metadata: Mapping[str, Any]) -> str | None:
    """Metadata as stored: a JSON string, ``None`` when empty."""
    return metadata_json(metadata) if metadata else None


def load_metadata(text: Any) -> dict[str, Any]:
    """Stored metadata back as a dict (``{}`` for null or anything that is not a JSON
    object)."""
    if not isinstance(text, str) or not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _read_metadata(props: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """A node's metadata: a JSON object's text, or null (how the reference stores empty
    metadata); anything else is another program's, read as ``{}`` with a warning."""
    text = props.get("metadata")
    if text is None:
        return {}
    if isinstance(text, str):
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        if isinstance(value, dict):
            return value
        if value is None:
            return {}
    return foreign.not_an_object(BACKEND, kind, props.get("id"), text)


def storable_embedding(vector: Sequence[float] | None) -> list[float] | None:
    """The vector to store, or ``None`` for none or a zero vector (cosine is undefined)."""
    if vector is None:
        return None
    values = [float(x) for x in vector]
    return values if any(x != 0.0 and math.isfinite(x) for x in values) else None


def to_refs(items: Any) -> list[EntityRef]:
    """A message's mentions in the order they were given (``position``); links another
    writer made without one come after, by name."""
    ordered = sorted(
        items or [],
        key=lambda i: (
            i.get("position") is None,
            i.get("position") or 0,
            (i.get("name") or "").lower(),
            i.get("id") or "",
        ),
    )
    return [EntityRef(id=i.get("id"), name=i.get("name"), type=i.get("type")) for i in ordered]


def to_message(
    props: Mapping[str, Any],
    *,
    conversation_id: Any = None,
    session_id: str | None = None,
    score: float | None = None,
) -> Message:
    """A message property map (with ``mentions``) as a :class:`Message`; a node another
    writer left unreadable (an id that is not a UUID, an unknown role) is a
    :class:`~memory_core.StoreError` naming it, never a raw ``ValueError``."""
    conv = props.get("conversation_id") or conversation_id
    try:
        return Message(
            id=UUID(str(props["id"])),
            role=MessageRole(str(props.get("role", "user")).lower()),
            content=_content(props),
            created_at=_instant(props, "timestamp", "message") or datetime.now(UTC),
            embedding=props.get("embedding"),
            metadata=_read_metadata(props, "message"),
            conversation_id=UUID(str(conv)) if conv else None,
            session_id=session_id,
            idempotency_key=props.get("idempotency_key"),
            mentions=to_refs(props.get("mentions")),
            score=score,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise _Unreadable("message", props, exc) from None


def _content(props: Mapping[str, Any]) -> str:
    content = props.get("content")
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    return foreign.not_text(BACKEND, "message", props.get("id"), "content", content)


def read_message(
    props: Mapping[str, Any],
    *,
    conversation_id: Any = None,
    session_id: str | None = None,
    score: float | None = None,
) -> Message | None:
    """:func:`to_message` for a read of several: ``None``, with a
    :class:`~memory_core.ForeignDataWarning` naming it, for a message another program left
    unreadable (an id that is not a UUID, a role memory-core does not have)."""
    try:
        return to_message(
            props, conversation_id=conversation_id, session_id=session_id, score=score
        )
    except _Unreadable as exc:
        foreign.left_out(BACKEND, "message", props.get("id"), exc.why)
        return None


def readable_messages(
    found: Iterable[Mapping[str, Any]], *, conversation_id: Any, session_id: str | None
) -> list[Message]:
    """The messages of ``found`` (property maps, in order) that can be read (see
    :func:`read_message`)."""
    read = (
        read_message(props, conversation_id=conversation_id, session_id=session_id)
        for props in found
    )
    return [message for message in read if message is not None]


class _Unreadable(StoreError):
    """A node another program left unreadable, with why in a few words."""

    def __init__(self, kind: str, props: Mapping[str, Any], exc: Exception) -> None:
        shown = str(props.get("id"))[:80]
        if parse_uuid(str(props.get("id"))) is None:
            self.why = "has an id that is not a UUID"
        elif kind == "message" and str(props.get("role", "user")).lower() not in _ROLES:
            self.why = (
                f"has the role {str(props.get('role'))[:40]!r}, which is none of memory-core's"
            )
        else:
            reason = str(exc).split("\n")[0] if isinstance(exc, ValueError) else type(exc).__name__
            self.why = f"cannot be read ({reason[:200]})"
        super().__init__(
            f"bolt: a stored {kind} cannot be read (id {shown!r}: {self.why}); it was not "
            "written by memory-core or neo4j-agent-memory"
        )


def to_conversation(
    props: Mapping[str, Any], messages: list[Message] | None = None
) -> Conversation:
    """A conversation property map as a :class:`Conversation` (no messages by default)."""
    try:
        created = _instant(props, "created_at", "conversation") or datetime.now(UTC)
        return Conversation(
            id=UUID(str(props["id"])),
            session_id=props.get("session_id") or "",
            title=props.get("title"),
            messages=messages or [],
            created_at=created,
            updated_at=_instant(props, "updated_at", "conversation"),
            metadata=_read_metadata(props, "conversation"),
            user_identifier=props.get("user_identifier"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise _Unreadable("conversation", props, exc) from None


def read_conversation(props: Mapping[str, Any]) -> Conversation | None:
    """:func:`to_conversation` for a listing: ``None``, with a
    :class:`~memory_core.ForeignDataWarning` naming it, for a conversation another program
    left unreadable (an id that is not a UUID, say)."""
    try:
        return to_conversation(props)
    except _Unreadable as exc:
        foreign.left_out(BACKEND, "conversation", props.get("id"), exc.why)
        return None


def _preview(content: Any) -> str | None:
    """A listing's preview of a message's content; none for content that is not text
    (another writer's list of strings, say), which would otherwise fail the whole list."""
    return preview(content) if isinstance(content, str) else None


def to_session(row: Mapping[str, Any]) -> SessionInfo | None:
    """A ``list_sessions`` row as a :class:`SessionInfo` (``None`` as for
    :func:`read_conversation`)."""
    conversation = read_conversation(row["conversation"])
    if conversation is None:
        return None
    first, last = row.get("first_content"), row.get("last_content")
    return SessionInfo(
        session_id=conversation.session_id,
        conversation_id=conversation.id,
        title=conversation.title,
        message_count=int(row.get("message_count") or 0),
        first_message_preview=_preview(first),
        last_message_preview=_preview(last),
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
        user_identifier=conversation.user_identifier,
    )


def to_entity(props: Mapping[str, Any]) -> Entity:
    """An entity property map as an :class:`Entity` (its attributes are under
    ``"attributes"`` in its metadata JSON, as the reference keeps them)."""
    confidence = props.get("confidence")
    metadata = load_metadata(props.get("metadata"))
    attributes = metadata.get("attributes")
    return Entity(
        id=str(props["id"]),
        name=str(props.get("name", "")),
        type=str(props.get("type", "")),
        description=props.get("description"),
        confidence=float(confidence) if isinstance(confidence, int | float) else None,
        aliases=_entity_aliases(props, metadata),
        attributes=attributes if isinstance(attributes, dict) else {},
        created_at=to_datetime(props.get("created_at")) or datetime.now(UTC),
        updated_at=to_datetime(props.get("updated_at")),
    )


def _entity_aliases(props: Mapping[str, Any], metadata: dict[str, Any]) -> list[str]:
    """The top-level ``aliases`` list; for a node the reference wrote before it had one,
    the list inside its metadata (as the reference reads them)."""
    found = props.get("aliases")
    if not (isinstance(found, list) and found):
        found = metadata.get("aliases")
    return [item for item in found if isinstance(item, str)] if isinstance(found, list) else []


_ROLES = {role.value: role for role in MessageRole}


def batch_messages(
    found: list[dict[str, Any]],
    items: list[dict[str, Any]],
    ids: list[UUID],
    target: Any,
    missing: Callable[[Any], Exception],
) -> list[Message]:
    """The messages a batch stored, built from its parameters ``items`` (keys without a
    value left out; ``ids`` are their ids as UUIDs) and the one row the batch statement
    returns (see ``cypher._write_batch``): equal to what a read of them returns, without
    the store sending them back."""
    [row] = found
    if row["missing"]:
        unknown = ", ".join(sorted(set(row["missing"])))
        raise NotFoundError.missing(
            "bolt", "entity", unknown, argument="explicit_mentions", hint="nothing was written"
        )
    conversation = row["conversation"]
    if conversation is None:
        raise missing(target)
    conversation_id = UUID(str(conversation["id"]))
    session_id = conversation.get("session_id")
    stamps = _store_stamps(row["base"], len(items))
    mentions = row["mentions"]
    values = []
    for i, item in enumerate(items):
        given = item.get("timestamp")
        metadata = item.get("metadata")
        values.append(
            {
                "id": ids[i],
                "created_at": stamps[i] if given is None else given.astimezone(UTC),
                "updated_at": None,
                "embedding": item.get("embedding"),
                "metadata": {} if metadata is None else load_metadata(metadata),
                "role": _ROLES[item["role"]],
                "content": item["content"],
                "conversation_id": conversation_id,
                "session_id": session_id,
                "tool_calls": None,
                "score": None,
                "idempotency_key": None,
                "mentions": [] if mentions is None else to_refs(mentions[i]),
            }
        )
    return trusted_many(Message, values)


def _store_stamps(base: Any, count: int) -> list[datetime]:
    """``base + i`` microseconds for each message, as a read returns them: exact in
    Python unless ``base`` has nanoseconds (a timestamp another writer stored), when
    Neo4j's own arithmetic is repeated."""
    if getattr(base, "nanosecond", 0) % 1000 == 0:
        start = to_datetime(base)
        assert start is not None
        return [start + timedelta(microseconds=i) for i in range(count)]
    stamps = [to_datetime(base + Duration(microseconds=i)) for i in range(count)]
    return [s for s in stamps if s is not None]
