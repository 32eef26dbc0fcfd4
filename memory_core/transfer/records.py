"""The archive records: building them from models and checking them when read.

An archive is JSON Lines. Every line is one object whose ``"record"`` key names its kind:
``header`` (first), ``entity``, ``conversation``, ``message``, ``mention`` and ``end``
(last; its absence means the archive was cut short). The JSON Schema of every kind ships
as ``memory_core/transfer/schema.json``; :func:`check_record` applies the same rules
without needing ``jsonschema`` at run time.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from ..capabilities import Capabilities
from ..models import Conversation, Entity, EntityRef, Message, MessageRole
from .errors import ArchiveError

FORMAT = "memory-core-archive"
FORMAT_VERSION = 1
KINDS = ("header", "entity", "conversation", "message", "mention", "end")
ROLES = frozenset(r.value for r in MessageRole)

Record = dict[str, Any]


def stamp(moment: datetime | None) -> str | None:
    """A datetime as ISO 8601 UTC with exactly six fractional digits (``…:05.000123Z``)."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_stamp(value: str) -> datetime:
    """The inverse of :func:`stamp` (any ISO 8601 with an offset is accepted)."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError("a timestamp needs a UTC offset")
    return moment.astimezone(UTC)


def header(
    backend_name: str,
    location: str,
    capabilities: Capabilities,
    multi_tenant: bool,
    users: list[str] | None,
    session_prefix: str | None,
) -> Record:
    """The first record: format, version, and what the source could do."""
    return {
        "record": "header",
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "created_at": stamp(datetime.now(UTC)),
        "source": {
            "backend": backend_name,
            "location": location,
            "multi_tenant": multi_tenant,
            "capabilities": capabilities.as_dict(),
        },
        "scope": {"users": users, "session_prefix": session_prefix},
    }


def conversation(
    conv: Conversation, message_count: int, truncated: bool, user: str | None = None
) -> Record:
    """A conversation header record."""
    return {
        "record": "conversation",
        "id": str(conv.id),
        "session_id": conv.session_id,
        "user_identifier": conv.user_identifier if conv.user_identifier is not None else user,
        "title": conv.title,
        "metadata": conv.metadata,
        "created_at": stamp(conv.created_at),
        "updated_at": stamp(conv.updated_at),
        "message_count": message_count,
        "truncated": truncated,
    }


def message(msg: Message, conversation_id: str, seq: int) -> Record:
    """A message record (its mentions are separate records)."""
    return {
        "record": "message",
        "id": str(msg.id),
        "conversation_id": conversation_id,
        "seq": seq,
        "role": msg.role.value,
        "content": msg.content,
        "metadata": msg.metadata,
        "created_at": stamp(msg.created_at),
        "idempotency_key": msg.idempotency_key,
        "embedding": msg.embedding,
    }


def entity(ent: Entity, user: str | None) -> Record:
    """An entity record; ``user_identifier`` is the tenant it belongs to (or null)."""
    return {
        "record": "entity",
        "id": ent.id,
        "user_identifier": user,
        "name": ent.name,
        "type": ent.type,
        "description": ent.description,
        "created_at": stamp(ent.created_at),
        "updated_at": stamp(ent.updated_at),
    }


def mention(message_id: str, entity_id: str, position: int) -> Record:
    """A link from a message to an entity; ``position`` orders a message's mentions."""
    return {
        "record": "mention",
        "message_id": message_id,
        "entity_id": entity_id,
        "position": position,
    }


def end(counts: Mapping[str, int], truncated: list[Record], unreadable: list[str]) -> Record:
    """The last record: totals, truncated conversations, what could not be read."""
    return {
        "record": "end",
        "counts": dict(counts),
        "truncated": truncated,
        "unreadable": unreadable,
    }


def ref_of(record: Record) -> EntityRef:
    """An entity record as the reference a message mentions."""
    return EntityRef(id=record["id"], name=record["name"], type=record["type"])


# ---------------------------------------------------------------------------- checking

_STR = (str,)
_OPT_STR = (str, type(None))
_INT = (int,)
_DICT = (dict,)
_LIST_OR_NONE = (list, type(None))

# kind -> field -> (allowed types, required)
FIELDS: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    "header": {
        "format": (_STR, True),
        "version": (_INT, True),
        "created_at": (_STR, True),
        "source": (_DICT, True),
        "scope": (_DICT, False),
    },
    "entity": {
        "id": (_STR, True),
        "user_identifier": (_OPT_STR, True),
        "name": (_STR, True),
        "type": (_STR, True),
        "description": (_OPT_STR, False),
        "created_at": (_OPT_STR, False),
        "updated_at": (_OPT_STR, False),
    },
    "conversation": {
        "id": (_STR, True),
        "session_id": (_STR, True),
        "user_identifier": (_OPT_STR, True),
        "title": (_OPT_STR, False),
        "metadata": (_DICT, True),
        "created_at": (_STR, True),
        "updated_at": (_OPT_STR, False),
        "message_count": (_INT, False),
        "truncated": ((bool,), False),
    },
    "message": {
        "id": (_STR, True),
        "conversation_id": (_STR, True),
        "seq": (_INT, True),
        "role": (_STR, True),
        "content": (_STR, True),
        "metadata": (_DICT, True),
        "created_at": (_STR, True),
        "idempotency_key": (_OPT_STR, False),
        "embedding": (_LIST_OR_NONE, False),
    },
    "mention": {
        "message_id": (_STR, True),
        "entity_id": (_STR, True),
        "position": (_INT, True),
    },
    "end": {
        "counts": (_DICT, True),
        "truncated": ((list,), False),
        "unreadable": ((list,), False),
    },
}
STAMPS = {"created_at", "updated_at"}
UUID_FIELDS = {
    "conversation": ("id",),
    "message": ("id", "conversation_id"),
    "mention": ("message_id",),
}


def check_record(value: Any, line: int | None = None) -> Record:
    """``value`` if it is a valid record, else :class:`ArchiveError` naming the line."""
    if not isinstance(value, dict):
        raise ArchiveError("a record must be a JSON object", line=line)
    kind = value.get("record")
    if kind not in FIELDS:
        raise ArchiveError(f"unknown record kind {kind!r} (one of {', '.join(KINDS)})", line=line)
    for name, (types, required) in FIELDS[kind].items():
        if name not in value:
            if required:
                raise ArchiveError(f"{kind} record has no {name!r}", line=line)
            continue
        field = value[name]
        if isinstance(field, bool) and bool not in types:
            raise ArchiveError(f"{kind}.{name} has the wrong type", line=line)
        if not isinstance(field, types):
            raise ArchiveError(f"{kind}.{name} has the wrong type", line=line)
        if name in STAMPS and isinstance(field, str):
            try:
                parse_stamp(field)
            except ValueError:
                raise ArchiveError(
                    f"{kind}.{name} is not an ISO 8601 timestamp", line=line
                ) from None
    for name in UUID_FIELDS.get(kind, ()):
        try:
            UUID(value[name])
        except ValueError:
            raise ArchiveError(f"{kind}.{name} is not a UUID", line=line) from None
    if kind == "message":
        if value["role"] not in ROLES:
            raise ArchiveError(f"message.role {value['role']!r} is not a role", line=line)
        vector = value.get("embedding")
        if vector is not None and not all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in vector
        ):
            raise ArchiveError("message.embedding must be a list of numbers", line=line)
    if kind == "header" and value["format"] != FORMAT:
        raise ArchiveError(f"not a {FORMAT} (format {value['format']!r})", line=line)
    if kind == "header" and value["version"] > FORMAT_VERSION:
        raise ArchiveError(
            f"archive version {value['version']} is newer than this memory-core reads "
            f"({FORMAT_VERSION}); upgrade memory-core",
            line=line,
        )
    return value
