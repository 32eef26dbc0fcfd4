"""The archive records: building them from models and checking them when read.

An archive is JSON Lines. Every line is one object whose ``"record"`` key names its kind:
``header`` (first), ``entity``, ``conversation``, ``message``, ``mention``, since format
version 2 ``relationship``, ``preference`` and ``fact``, since format version 3 ``trace``,
``step`` and ``tool_call``, and ``end`` (last; its absence means the archive was cut
short). The JSON Schema of every kind ships as
``memory_core/transfer/schema.json``; :func:`check_record` applies the same rules without
needing ``jsonschema`` at run time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from ..capabilities import Capabilities
from ..errors import InvalidRequestError
from ..limits import DEFAULT_LIMITS, Limits
from ..models import (
    Conversation,
    Entity,
    Fact,
    Message,
    MessageRole,
    Preference,
    ReasoningStep,
    ReasoningTrace,
    Relationship,
    ToolCall,
    ToolCallStatus,
)
from ..validation import (
    MAX_LINKED_ENTITIES,
    RELATION_TYPE,
    check_aliases,
    check_entity_type,
    check_identifier,
    check_json_value,
    check_metadata,
    check_str,
    check_threshold,
)
from .errors import ArchiveError

FORMAT = "memory-core-archive"
FORMAT_VERSION = 3
# The versions this code reads (a reader of version N refuses N + 1 and anything below 1).
READS_VERSIONS = range(1, FORMAT_VERSION + 1)
# The largest seq, position or count an archive may carry: exact in every JSON reader
# (an IEEE double), and far enough below the 64-bit integers of SQLite and Neo4j that a
# conversation imported at the top of the range still takes 2**63 - 2**53 appends.
MAX_ORDINAL = 2**53 - 1
KINDS = (
    "header",
    "entity",
    "conversation",
    "message",
    "mention",
    "relationship",
    "preference",
    "fact",
    "trace",
    "step",
    "tool_call",
    "end",
)
# The long-term kinds, added in format version 2 (a version-1 archive holds none), in
# the order they follow a tenant's conversations.
LONG_TERM = ("relationship", "preference", "fact")
# The reasoning kinds, added in format version 3, after a tenant's facts: each trace
# followed by its steps, each step by its tool calls.
REASONING = ("trace", "step", "tool_call")
SINCE_VERSION = {**dict.fromkeys(LONG_TERM, 2), **dict.fromkeys(REASONING, 3)}
# The kinds a header's ``not_exported`` may name (what an export could not read).
OMITTABLE = (*LONG_TERM, *REASONING)
# As the public API takes them (memory_core.long_term, which this package may not import:
# it would close a circle through the store interface; a test holds the two equal).
ROLES = frozenset(r.value for r in MessageRole)
STATUSES = frozenset(s.value for s in ToolCallStatus)

Record = dict[str, Any]


def stamp(moment: datetime | None) -> str | None:
    """A datetime as ISO 8601 UTC with exactly six fractional digits (``…:05.000123Z``)."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_stamp(value: str) -> datetime:
    """The inverse of :func:`stamp` (any ISO 8601 with an offset is accepted).

    ``ValueError`` for anything else, including an instant that exists only outside UTC's
    range (``0001-01-01T00:00:00+01:00``)."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError("a timestamp needs a UTC offset")
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise ValueError("the timestamp is out of range in UTC") from None


def header(
    backend_name: str,
    location: str,
    capabilities: Capabilities,
    multi_tenant: bool,
    users: list[str] | None,
    session_prefix: str | None,
    not_exported: Mapping[str, str] | None = None,
) -> Record:
    """The first record: format, version, and what the source could do.
    ``not_exported`` names the long-term kinds the source holds but the export cannot
    read, each with the reason (``{"fact": "the public API cannot list every fact"}``)."""
    record: Record = {
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
    if not_exported:
        record["not_exported"] = [
            {"kind": kind, "reason": reason} for kind, reason in not_exported.items()
        ]
    return record


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
    """An entity record; ``user_identifier`` is the tenant it belongs to (or null).
    ``aliases`` and ``attributes`` are written only when not empty."""
    record: Record = {
        "record": "entity",
        "id": ent.id,
        "user_identifier": user,
        "name": ent.name,
        "type": ent.type,
        "description": ent.description,
        "created_at": stamp(ent.created_at),
        "updated_at": stamp(ent.updated_at),
    }
    if ent.aliases:
        record["aliases"] = list(ent.aliases)
    if ent.attributes:
        record["attributes"] = ent.attributes
    return record


def mention(message_id: str, entity_id: str, position: int) -> Record:
    """A link from a message to an entity; ``position`` orders a message's mentions."""
    return {
        "record": "mention",
        "message_id": message_id,
        "entity_id": entity_id,
        "position": position,
    }


def relationship(rel: Relationship, user: str | None) -> Record:
    """A relationship record; ``user_identifier`` is the tenant of its entities (or null)."""
    return {
        "record": "relationship",
        "id": rel.id,
        "user_identifier": user,
        "source_id": rel.source_id,
        "target_id": rel.target_id,
        "type": rel.type,
        "properties": rel.properties,
        "confidence": rel.confidence,
        "valid_from": stamp(rel.valid_from),
        "valid_until": stamp(rel.valid_until),
        "created_at": stamp(rel.created_at),
    }


def preference(pref: Preference, embedding: list[float] | None = None) -> Record:
    """A preference record, superseded or not; ``embedding`` is the stored vector (the
    model does not carry it)."""
    return {
        "record": "preference",
        "id": pref.id,
        "user_identifier": pref.user_identifier,
        "category": pref.category,
        "preference": pref.preference,
        "context": pref.context,
        "confidence": pref.confidence,
        "linked_entities": list(pref.linked_entities),
        "metadata": pref.metadata,
        "created_at": stamp(pref.created_at),
        "superseded_at": stamp(pref.superseded_at),
        "superseded_by": pref.superseded_by,
        "embedding": embedding,
    }


def fact(item: Fact, embedding: list[float] | None = None) -> Record:
    """A fact record; ``embedding`` is the stored vector (the model does not carry it)."""
    return {
        "record": "fact",
        "id": item.id,
        "user_identifier": item.user_identifier,
        "subject": item.subject,
        "predicate": item.predicate,
        "object": item.object,
        "confidence": item.confidence,
        "valid_from": stamp(item.valid_from),
        "valid_until": stamp(item.valid_until),
        "source_message_id": item.source_message_id,
        "metadata": item.metadata,
        "created_at": stamp(item.created_at),
        "embedding": embedding,
    }


def trace_record(trace: ReasoningTrace, embedding: list[float] | None = None) -> Record:
    """A trace record, without its steps (they follow it as records of their own);
    ``embedding`` is the stored vector of its task (the model does not carry it)."""
    return {
        "record": "trace",
        "id": trace.id,
        "session_id": trace.session_id,
        "task": trace.task,
        "outcome": trace.outcome,
        "success": trace.success,
        "metadata": trace.metadata,
        "user_identifier": trace.user_identifier,
        "started_at": stamp(trace.started_at),
        "completed_at": stamp(trace.completed_at),
        "message_ids": list(trace.message_ids),
        "entity_ids": list(trace.entity_ids),
        "embedding": embedding,
    }


def step_record(step: ReasoningStep, embedding: list[float] | None = None) -> Record:
    """A step record, without its tool calls (they follow it as records of their own);
    ``embedding`` is the stored vector (the model does not carry it)."""
    return {
        "record": "step",
        "id": step.id,
        "trace_id": step.trace_id,
        "step_number": step.step_number,
        "thought": step.thought,
        "action": step.action,
        "observation": step.observation,
        "metadata": step.metadata,
        "created_at": stamp(step.created_at),
        "embedding": embedding,
    }


def tool_call_record(call: ToolCall) -> Record:
    """A tool call record."""
    return {
        "record": "tool_call",
        "id": call.id,
        "step_id": call.step_id,
        "tool_name": call.tool_name,
        "arguments": call.arguments,
        "result": call.result,
        "status": call.status.value,
        "duration_ms": call.duration_ms,
        "error": call.error,
        "created_at": stamp(call.created_at),
    }


def end(counts: Mapping[str, int], truncated: list[Record], unreadable: list[str]) -> Record:
    """The last record: totals, truncated conversations, what could not be read."""
    return {
        "record": "end",
        "counts": dict(counts),
        "truncated": truncated,
        "unreadable": unreadable,
    }


# ---------------------------------------------------------------------------- checking

_STR = (str,)
_OPT_STR = (str, type(None))
_INT = (int,)
_DICT = (dict,)
_LIST_OR_NONE = (list, type(None))
_NUMBER = (int, float)
_OPT_STAMP = _OPT_STR
_OPT_BOOL = (bool, type(None))
_OPT_INT = (int, type(None))
_JSON = (dict, list, str, int, float, bool, type(None))

# kind -> field -> (allowed types, required)
FIELDS: dict[str, dict[str, tuple[tuple[type, ...], bool]]] = {
    "header": {
        "format": (_STR, True),
        "version": (_INT, True),
        "created_at": (_STR, True),
        "source": (_DICT, True),
        "scope": (_DICT, False),
        "not_exported": ((list,), False),
    },
    "entity": {
        "id": (_STR, True),
        "user_identifier": (_OPT_STR, True),
        "name": (_STR, True),
        "type": (_STR, True),
        "description": (_OPT_STR, False),
        "created_at": (_OPT_STR, False),
        "updated_at": (_OPT_STR, False),
        "aliases": ((list,), False),
        "attributes": (_DICT, False),
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
    "relationship": {
        "id": (_STR, True),
        "user_identifier": (_OPT_STR, True),
        "source_id": (_STR, True),
        "target_id": (_STR, True),
        "type": (_STR, True),
        "properties": (_DICT, True),
        "confidence": (_NUMBER, True),
        "valid_from": (_OPT_STAMP, False),
        "valid_until": (_OPT_STAMP, False),
        "created_at": (_STR, True),
    },
    "preference": {
        "id": (_STR, True),
        "user_identifier": (_OPT_STR, True),
        "category": (_STR, True),
        "preference": (_STR, True),
        "context": (_OPT_STR, False),
        "confidence": (_NUMBER, True),
        "linked_entities": ((list,), True),
        "metadata": (_DICT, True),
        "created_at": (_STR, True),
        "superseded_at": (_OPT_STAMP, False),
        "superseded_by": (_OPT_STR, False),
        "embedding": (_LIST_OR_NONE, False),
    },
    "fact": {
        "id": (_STR, True),
        "user_identifier": (_OPT_STR, True),
        "subject": (_STR, True),
        "predicate": (_STR, True),
        "object": (_STR, True),
        "confidence": (_NUMBER, True),
        "valid_from": (_OPT_STAMP, False),
        "valid_until": (_OPT_STAMP, False),
        "source_message_id": (_OPT_STR, False),
        "metadata": (_DICT, True),
        "created_at": (_STR, True),
        "embedding": (_LIST_OR_NONE, False),
    },
    "trace": {
        "id": (_STR, True),
        "session_id": (_STR, True),
        "task": (_STR, True),
        "outcome": (_OPT_STR, False),
        "success": (_OPT_BOOL, False),
        "metadata": (_DICT, True),
        "user_identifier": (_OPT_STR, True),
        "started_at": (_STR, True),
        "completed_at": (_OPT_STAMP, False),
        "message_ids": ((list,), True),
        "entity_ids": ((list,), True),
        "embedding": (_LIST_OR_NONE, False),
    },
    "step": {
        "id": (_STR, True),
        "trace_id": (_STR, True),
        "step_number": (_INT, True),
        "thought": (_OPT_STR, False),
        "action": (_OPT_STR, False),
        "observation": (_OPT_STR, False),
        "metadata": (_DICT, True),
        "created_at": (_STR, True),
        "embedding": (_LIST_OR_NONE, False),
    },
    "tool_call": {
        "id": (_STR, True),
        "step_id": (_STR, True),
        "tool_name": (_STR, True),
        "arguments": (_DICT, True),
        "result": (_JSON, False),
        "status": (_STR, True),
        "duration_ms": (_OPT_INT, False),
        "error": (_OPT_STR, False),
        "created_at": (_STR, True),
    },
    "end": {
        "counts": (_DICT, True),
        "truncated": ((list,), False),
        "unreadable": ((list,), False),
    },
}
STAMPS = {
    "created_at",
    "updated_at",
    "superseded_at",
    "valid_from",
    "valid_until",
    "started_at",
    "completed_at",
}
UUID_FIELDS = {
    "conversation": ("id",),
    "message": ("id", "conversation_id"),
    "mention": ("message_id",),
}
ORDINALS = {
    "conversation": ("message_count",),
    "message": ("seq",),
    "mention": ("position",),
    "step": ("step_number",),
    "tool_call": ("duration_ms",),
}
_UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def check_record(value: Any, line: int | None = None, limits: Limits = DEFAULT_LIMITS) -> Record:
    """``value`` if it is a valid record, else :class:`ArchiveError` naming the line.

    Beyond its shape (what ``schema.json`` says), every value a target would store is
    checked as the public API checks it, against ``limits`` (the target's): content,
    metadata (size, depth, JSON types), identifiers (size; no control characters in
    session ids and user identifiers), entity types, timestamps representable in UTC,
    ``seq``/``position`` within ``0..MAX_ORDINAL``, finite embeddings. The record is
    normalised in place: UUIDs in canonical (lower-case) form, entity types in upper
    case, metadata as plain JSON.
    """
    if not isinstance(value, dict):
        raise ArchiveError("a record must be a JSON object", line=line)
    kind = value.get("record")
    if not isinstance(kind, str) or kind not in FIELDS:
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
            except ValueError as exc:
                raise ArchiveError(
                    f"{kind}.{name} is not an ISO 8601 timestamp in UTC's range ({exc})",
                    line=line,
                ) from None
    for name in UUID_FIELDS.get(kind, ()):
        if not _UUID_TEXT.fullmatch(value[name]):
            raise ArchiveError(f"{kind}.{name} is not a UUID (8-4-4-4-12 hex digits)", line=line)
        value[name] = value[name].lower()
    for name in ORDINALS.get(kind, ()):
        if value.get(name) is not None and not 0 <= value[name] <= MAX_ORDINAL:
            raise ArchiveError(f"{kind}.{name} must be within 0..{MAX_ORDINAL}", line=line)
    if kind == "header":
        _check_header(value, line)
    try:
        _CONTENT_CHECKS.get(kind, _nothing)(value, limits)
    except InvalidRequestError as exc:
        raise ArchiveError(f"{kind}.{exc.argument}: {exc.message}", line=line) from None
    return value


def _check_header(value: Record, line: int | None) -> None:
    if value["format"] != FORMAT:
        raise ArchiveError(f"not a {FORMAT} (format {_short(value['format'])})", line=line)
    version = value["version"]
    if version > FORMAT_VERSION:
        raise ArchiveError(
            f"archive version {_short(version)} is newer than this memory-core reads "
            f"({FORMAT_VERSION}); upgrade memory-core",
            line=line,
        )
    if version not in READS_VERSIONS:
        raise ArchiveError(
            f"archive version {_short(version)} does not exist (this memory-core reads "
            f"version {', '.join(str(v) for v in READS_VERSIONS)})",
            line=line,
        )
    for item in value.get("not_exported", ()):
        if not (
            isinstance(item, dict)
            and item.get("kind") in OMITTABLE
            and isinstance(item.get("reason"), str)
        ):
            raise ArchiveError(
                "header.not_exported: each item is {kind, reason} of a long-term or "
                f"reasoning kind ({', '.join(OMITTABLE)})",
                line=line,
            )


def check_kind_in_version(kind: str, version: int, line: int | None) -> None:
    """A record of a kind that came after the archive's format version (a preference in
    a version-1 archive) is not a record of that archive."""
    since = SINCE_VERSION.get(kind, 1)
    if version < since:
        raise ArchiveError(
            f"a {kind} record is not part of format version {version} (it came in version {since})",
            line=line,
        )


def _short(value: Any) -> str:
    """A value of an archive quoted in an error message, cut to a readable length."""
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 64 else "a huge int"
    return text if len(text) <= 80 else text[:77] + "..."


def _nothing(record: Record, limits: Limits) -> None:
    pass


def _check_entity(record: Record, limits: Limits) -> None:
    check_identifier(record["id"], "id", limits)
    _user(record, limits)
    check_identifier(record["name"], "name", limits)
    record["type"] = check_entity_type(record["type"])
    if record.get("description") is not None:
        check_str(record["description"], "description", max_chars=limits.max_content_chars)
    if "aliases" in record:
        record["aliases"] = check_aliases(record["aliases"], limits)
    if "attributes" in record:
        record["attributes"] = check_metadata(record["attributes"], "attributes", limits)


def _check_conversation(record: Record, limits: Limits) -> None:
    check_identifier(record["session_id"], "session_id", limits, plain=True)
    _user(record, limits)
    if record.get("title") is not None:
        check_identifier(record["title"], "title", limits)
    record["metadata"] = check_metadata(record["metadata"], "metadata", limits)


def _check_message(record: Record, limits: Limits) -> None:
    if record["role"] not in ROLES:
        raise InvalidRequestError(f"{_short(record['role'])} is not a role", argument="role")
    check_str(record["content"], "content", max_chars=limits.max_content_chars)
    record["metadata"] = check_metadata(record["metadata"], "metadata", limits)
    if record.get("idempotency_key") is not None:
        check_str(
            record["idempotency_key"],
            "idempotency_key",
            allow_empty=False,
            max_chars=limits.max_content_chars,
        )
    _vector(record)


def _finite(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int beyond a float's range
        return False


def _check_mention(record: Record, limits: Limits) -> None:
    check_identifier(record["entity_id"], "entity_id", limits)


def _check_relationship(record: Record, limits: Limits) -> None:
    check_identifier(record["id"], "id", limits, plain=True)
    _user(record, limits)
    check_identifier(record["source_id"], "source_id", limits)
    check_identifier(record["target_id"], "target_id", limits)
    if not RELATION_TYPE.fullmatch(record["type"]):
        raise InvalidRequestError(
            f"{_short(record['type'])} is not a relationship type (a letter, then letters, "
            "digits or _; at most 100)",
            argument="type",
        )
    record["type"] = record["type"].upper()
    record["properties"] = check_metadata(record["properties"], "properties", limits)
    _long_term_common(record)


def _check_preference(record: Record, limits: Limits) -> None:
    check_identifier(record["id"], "id", limits, plain=True)
    _user(record, limits)
    check_identifier(record["category"], "category", limits)
    _text(record, "preference", limits)
    _text(record, "context", limits)
    linked = record["linked_entities"]
    if len(linked) > MAX_LINKED_ENTITIES:
        raise InvalidRequestError(
            f"must hold at most {MAX_LINKED_ENTITIES} ids, got {len(linked)}",
            argument="linked_entities",
        )
    for ident in linked:
        check_identifier(ident, "linked_entities", limits)
    if len(set(linked)) != len(linked):
        raise InvalidRequestError("names an entity twice", argument="linked_entities")
    record["metadata"] = check_metadata(record["metadata"], "metadata", limits)
    successor = record.get("superseded_by")
    if successor is not None:
        check_identifier(successor, "superseded_by", limits, plain=True)
        if successor == record["id"]:
            raise InvalidRequestError("names the preference itself", argument="superseded_by")
        if record.get("superseded_at") is None:
            raise InvalidRequestError("is set without superseded_at", argument="superseded_by")
    _long_term_common(record)


def _check_fact(record: Record, limits: Limits) -> None:
    check_identifier(record["id"], "id", limits, plain=True)
    _user(record, limits)
    check_identifier(record["subject"], "subject", limits)
    check_identifier(record["predicate"], "predicate", limits)
    _text(record, "object", limits)
    if record.get("source_message_id") is not None:
        check_identifier(record["source_message_id"], "source_message_id", limits, plain=True)
    record["metadata"] = check_metadata(record["metadata"], "metadata", limits)
    _long_term_common(record)


def _check_trace(record: Record, limits: Limits) -> None:
    check_identifier(record["id"], "id", limits, plain=True)
    check_identifier(record["session_id"], "session_id", limits, plain=True)
    _user(record, limits)
    _text(record, "task", limits)
    _text(record, "outcome", limits)
    record["metadata"] = check_metadata(record["metadata"], "metadata", limits)
    completed = record.get("completed_at")
    if completed is None:
        for name in ("outcome", "success"):
            if record.get(name) is not None:
                raise InvalidRequestError("is set without completed_at", argument=name)
    elif parse_stamp(completed) < parse_stamp(record["started_at"]):
        raise InvalidRequestError("must not be earlier than started_at", argument="completed_at")
    for name in ("message_ids", "entity_ids"):
        _distinct_ids(record[name], name, limits)
    _vector(record)


def _distinct_ids(ids: list[Any], name: str, limits: Limits) -> None:
    """A list of record ids, each once."""
    for ident in ids:
        if not isinstance(ident, str):
            raise InvalidRequestError("must hold ids (strings)", argument=name)
        check_identifier(ident, name, limits, plain=True)
    if len(set(ids)) != len(ids):
        raise InvalidRequestError("names a record twice", argument=name)


def _check_step(record: Record, limits: Limits) -> None:
    check_identifier(record["id"], "id", limits, plain=True)
    check_identifier(record["trace_id"], "trace_id", limits, plain=True)
    if record["step_number"] < 1:
        raise InvalidRequestError("must be at least 1", argument="step_number")
    texts = ("thought", "action", "observation")
    for name in texts:
        _text(record, name, limits)
    if all(record.get(name) is None for name in texts):
        raise InvalidRequestError(
            "a step needs a thought, an action or an observation", argument="thought"
        )
    record["metadata"] = check_metadata(record["metadata"], "metadata", limits)
    _vector(record)


def _check_tool_call(record: Record, limits: Limits) -> None:
    check_identifier(record["id"], "id", limits, plain=True)
    check_identifier(record["step_id"], "step_id", limits, plain=True)
    check_identifier(record["tool_name"], "tool_name", limits)
    record["arguments"] = check_metadata(record["arguments"], "arguments", limits)
    record["result"] = check_json_value(record.get("result"), "result", limits)
    if record["status"] not in STATUSES:
        raise InvalidRequestError(
            f"{_short(record['status'])} is not one of {', '.join(sorted(STATUSES))}",
            argument="status",
        )
    _text(record, "error", limits)


def _text(record: Record, name: str, limits: Limits) -> None:
    """A non-empty text within ``max_content_chars`` (an optional one may be null)."""
    if record.get(name) is not None:
        check_str(record[name], name, allow_empty=False, max_chars=limits.max_content_chars)


def _long_term_common(record: Record) -> None:
    """Confidence within 0..1 (stored as a float), a validity window that ends after it
    starts, a finite embedding."""
    record["confidence"] = check_threshold(record["confidence"], "confidence")
    start, until = record.get("valid_from"), record.get("valid_until")
    if start is not None and until is not None and parse_stamp(until) <= parse_stamp(start):
        raise InvalidRequestError("must be later than valid_from", argument="valid_until")
    _vector(record)


def _vector(record: Record) -> None:
    vector = record.get("embedding")
    if vector is not None and not all(_finite(x) for x in vector):
        raise InvalidRequestError("must be a list of finite numbers", argument="embedding")


def _user(record: Record, limits: Limits) -> None:
    if record["user_identifier"] is not None:
        check_identifier(record["user_identifier"], "user_identifier", limits, plain=True)


_CONTENT_CHECKS: dict[str, Callable[[Record, Limits], None]] = {
    "entity": _check_entity,
    "conversation": _check_conversation,
    "message": _check_message,
    "mention": _check_mention,
    "relationship": _check_relationship,
    "preference": _check_preference,
    "fact": _check_fact,
    "trace": _check_trace,
    "step": _check_step,
    "tool_call": _check_tool_call,
}
