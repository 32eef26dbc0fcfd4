"""Pydantic v2 models returned by every backend."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar
from uuid import UUID, SafeUUID, uuid4

from pydantic import BaseModel, ConfigDict, Field

ModelT = TypeVar("ModelT", bound=BaseModel)

FINAL_EXTRACTION_STATES = frozenset({"completed", "complete", "done", "failed", "skipped"})
PENDING_EXTRACTION_STATES = frozenset({"pending", "processing", "running", "in_progress", "queued"})


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


# Version 4 / RFC 4122 variant bits of a UUID's 128-bit integer.
_V4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_V4_SET = (0x4000 << 64) | (0x8000 << 48)


_UNKNOWN_SAFETY = SafeUUID.unknown  # read once: each lookup of an enum member is a call


def random_ids(count: int) -> list[UUID]:
    """``count`` random (version 4) UUIDs, as ``uuid4()`` makes them, from one read of the
    OS's random source (``uuid4()`` reads it once per id and validates what it builds:
    four times the cost, which shows in a batch of hundreds)."""
    data = os.urandom(16 * count)
    ids = []
    for start in range(0, 16 * count, 16):
        value = object.__new__(UUID)
        bits = int.from_bytes(data[start : start + 16]) & _V4_CLEAR | _V4_SET
        object.__setattr__(value, "int", bits)
        object.__setattr__(value, "is_safe", _UNKNOWN_SAFETY)
        ids.append(value)
    return ids


class MessageRole(StrEnum):
    """Who wrote a message."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class Message(_Model):
    """One stored message. ``score`` is set by search, ``None`` elsewhere."""

    id: UUID = Field(default_factory=uuid4)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime | None = None
    embedding: list[float] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    role: MessageRole
    content: str
    conversation_id: UUID | None = None
    session_id: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    score: float | None = None
    idempotency_key: str | None = None
    mentions: list[EntityRef] = Field(default_factory=list)


class Conversation(_Model):
    """A conversation header and (from ``get_conversation``) its messages, oldest first."""

    id: UUID = Field(default_factory=uuid4)
    session_id: str
    title: str | None = None
    messages: list[Message] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    user_identifier: str | None = None


class ConversationPage(_Model):
    """One page of :meth:`~memory_core.MemoryBackend.list_conversations_page`.

    ``conversations`` are headers (no messages), most recently updated first.
    ``next_cursor`` continues the walk after the last of them: pass it back as ``cursor``;
    ``None`` means there is nothing after this page. A cursor is an opaque string made by
    the store that made the page (do not build or edit one).
    """

    conversations: list[Conversation] = Field(default_factory=list)
    next_cursor: str | None = None


class SessionInfo(_Model):
    """One row of ``list_sessions``."""

    session_id: str
    conversation_id: UUID
    title: str | None = None
    message_count: int = 0
    first_message_preview: str | None = None
    last_message_preview: str | None = None
    created_at: datetime
    updated_at: datetime | None = None
    user_identifier: str | None = None


class ConversationSummary(_Model):
    """What ``get_conversation_summary`` returns."""

    session_id: str
    conversation_id: UUID
    summary: str
    message_count: int
    first_message_at: datetime | None = None
    last_message_at: datetime | None = None
    key_terms: list[str] = Field(default_factory=list)


class ExtractionStatus(_Model):
    """Per-message entity-extraction progress, as NAMS reports it."""

    messages: list[dict[str, Any]] = Field(default_factory=list)
    summary: dict[str, int] = Field(default_factory=dict)

    @property
    def pending_count(self) -> int:
        """Messages whose extraction has not reached a final state."""
        return sum(n for state, n in self.summary.items() if state in PENDING_EXTRACTION_STATES)

    @property
    def is_complete(self) -> bool:
        """True when no message is still pending."""
        return self.pending_count == 0


class EntityType(StrEnum):
    """POLE+O entity types (upper case, as callers use them)."""

    PERSON = "PERSON"
    ORGANIZATION = "ORGANIZATION"
    LOCATION = "LOCATION"
    EVENT = "EVENT"
    OBJECT = "OBJECT"
    CONCEPT = "CONCEPT"
    TOOL = "TOOL"
    CUSTOM = "CUSTOM"


class EntityRef(_Model):
    """A reference to an entity for ``extraction_mode='explicit'``.

    ``id`` links that entity; ``name`` + ``type`` links or creates (MERGE on name and
    type); ``name`` alone links the single existing entity with that name, never creating.
    """

    id: str | None = None
    name: str | None = None
    type: str | None = None


class Entity(_Model):
    """A long-term entity. ``aliases`` are other names it is found by
    (:meth:`~memory_core.MemoryBackend.get_entity_by_name`); ``attributes`` is a JSON
    object of the caller's own (both set by
    :meth:`~memory_core.MemoryBackend.update_entity`)."""

    id: str
    name: str
    type: str
    description: str | None = None
    aliases: list[str] = Field(default_factory=list)
    attributes: dict[str, Any] = Field(default_factory=dict)
    confidence: float | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime | None = None
    score: float | None = None


class Preference(_Model):
    """A preference of a user: a statement in a category (``"food"``: ``"likes spicy
    dishes"``), with when it applies (``context``) and how sure the agent is.

    ``superseded_at`` and ``superseded_by`` are set once a newer preference replaced it
    (:meth:`~memory_core.MemoryBackend.supersede_preference`); it stays readable.
    """

    id: str
    category: str
    preference: str
    context: str | None = None
    confidence: float = 1.0
    linked_entities: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    user_identifier: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    superseded_at: datetime | None = None
    superseded_by: str | None = None
    score: float | None = None


class Fact(_Model):
    """A subject-predicate-object statement (``Alice`` ``WORKS_AT`` ``Acme``), true from
    ``valid_from`` until ``valid_until`` (``None``: unbounded on that side)."""

    id: str
    subject: str
    predicate: str
    object: str
    confidence: float = 1.0
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    source_message_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    user_identifier: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    score: float | None = None

    @property
    def as_triple(self) -> tuple[str, str, str]:
        """``(subject, predicate, object)``."""
        return (self.subject, self.predicate, self.object)


class Relationship(_Model):
    """A typed, directed link between two entities (``source_id`` ``WORKS_AT``
    ``target_id``), with properties and an optional validity window."""

    id: str
    source_id: str
    target_id: str
    type: str
    properties: dict[str, Any] = Field(default_factory=dict)
    confidence: float = 1.0
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)


def trusted(cls: type[ModelT], values: dict[str, Any]) -> ModelT:
    """Build ``cls`` from ``values`` WITHOUT validation, for backends reading their own store.

    Each value must already be of its field's type (``UUID``, aware ``datetime``,
    ``MessageRole``, ...): the backend guarantees it because it wrote them. Fields with a
    default factory must be given. Pass every field, in declaration order, for the fast
    path; otherwise the missing plain defaults are filled in. The result equals (and dumps
    like) the validated model built from the same values, several times faster than
    ``cls(**values)`` or ``cls.model_construct(**values)`` — it matters when a read
    returns hundreds of messages.
    """
    defaults = _defaults(cls)
    fields_set = set(values)
    if len(values) != len(defaults):
        missing = [n for n, d in defaults.items() if d is _REQUIRED and n not in values]
        if missing:
            raise TypeError(f"trusted({cls.__name__}): give {', '.join(missing)}")
        values = {name: values.get(name, default) for name, default in defaults.items()}
    model = cls.__new__(cls)
    object.__setattr__(model, "__dict__", values)
    object.__setattr__(model, "__pydantic_fields_set__", fields_set)
    object.__setattr__(model, "__pydantic_extra__", None)
    object.__setattr__(model, "__pydantic_private__", None)
    return model


def trusted_many(cls: type[ModelT], rows: Iterable[dict[str, Any]]) -> list[ModelT]:
    """:func:`trusted` for many rows at once (the same rules; the per-call lookups are
    made once, which counts when a read builds hundreds of messages). The models given
    every field share one fields set: it holds every field, so pydantic's additions on
    assignment change nothing, and it is one object, not one per model, for the garbage
    collector to walk (those sets were a fifth of the client's own time in a 10k-message
    NAMS batch)."""
    defaults = _defaults(cls)
    size = len(defaults)
    every = set(defaults)
    new = cls.__new__
    put = object.__setattr__
    built: list[ModelT] = []
    for values in rows:
        if len(values) != size:
            built.append(trusted(cls, values))
            continue
        model = new(cls)
        put(model, "__dict__", values)
        put(model, "__pydantic_fields_set__", every)
        put(model, "__pydantic_extra__", None)
        put(model, "__pydantic_private__", None)
        built.append(model)
    return built


_DEFAULTS: dict[type[BaseModel], dict[str, Any]] = {}
_REQUIRED = object()


def _defaults(cls: type[BaseModel]) -> dict[str, Any]:
    """Every field of ``cls`` in declaration order with its plain default, or
    ``_REQUIRED`` (no default, or a default factory)."""
    found = _DEFAULTS.get(cls)
    if found is None:
        found = {
            name: info.default
            if info.default_factory is None and not info.is_required()
            else _REQUIRED
            for name, info in cls.model_fields.items()
        }
        _DEFAULTS[cls] = found
    return found


class ToolCallStatus(StrEnum):
    """How a tool call ended (the agent-memory TCK's six). ``success`` counts as a
    success in :class:`ToolStats`; ``failure``, ``error`` and ``timeout`` as failures;
    ``pending`` and ``cancelled`` only in the total."""

    PENDING = "pending"
    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


class ToolCall(_Model):
    """One call of a tool during a reasoning step: its arguments, result and status."""

    id: str
    step_id: str
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    status: ToolCallStatus = ToolCallStatus.SUCCESS
    duration_ms: int | None = None
    error: str | None = None
    created_at: datetime = Field(default_factory=utcnow)


class ReasoningStep(_Model):
    """A step of a trace: what the agent thought, did and saw, numbered from 1 in the
    order the steps were added, with the tool calls it made (oldest first)."""

    id: str
    trace_id: str
    step_number: int
    thought: str | None = None
    action: str | None = None
    observation: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    created_at: datetime = Field(default_factory=utcnow)
    score: float | None = None


class ReasoningTrace(_Model):
    """How an agent went about one task in a session: its steps (filled by
    :meth:`~memory_core.MemoryBackend.get_trace`, empty in listings), the outcome once
    completed, and the messages and entities it was linked to."""

    id: str
    session_id: str
    task: str
    outcome: str | None = None
    success: bool | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    user_identifier: str | None = None
    started_at: datetime = Field(default_factory=utcnow)
    completed_at: datetime | None = None
    steps: list[ReasoningStep] = Field(default_factory=list)
    message_ids: list[str] = Field(default_factory=list)
    entity_ids: list[str] = Field(default_factory=list)
    score: float | None = None


class ToolStats(_Model):
    """What the recorded calls of one tool add up to (see :class:`ToolCallStatus` for
    what counts as a success or a failure). ``success_rate`` is successes over every
    call; ``avg_duration_ms`` the mean of the calls that have a duration (``None``: no
    call has one)."""

    name: str
    total_calls: int = 0
    successful_calls: int = 0
    failed_calls: int = 0
    success_rate: float = 0.0
    avg_duration_ms: float | None = None
    last_used_at: datetime | None = None


class TracePage(_Model):
    """One page of :meth:`~memory_core.MemoryBackend.list_traces_page`: traces newest
    first (by ``started_at``, then id), ``next_cursor`` an opaque string to pass back as
    ``cursor`` (``None``: nothing after this page)."""

    traces: list[ReasoningTrace] = Field(default_factory=list)
    next_cursor: str | None = None


__all__ = [
    "Conversation",
    "ConversationPage",
    "ConversationSummary",
    "Entity",
    "EntityRef",
    "EntityType",
    "ExtractionStatus",
    "Fact",
    "Message",
    "MessageRole",
    "Preference",
    "ReasoningStep",
    "ReasoningTrace",
    "Relationship",
    "SessionInfo",
    "ToolCall",
    "ToolCallStatus",
    "ToolStats",
    "TracePage",
    "random_ids",
    "trusted",
    "trusted_many",
    "utcnow",
]

Message.model_rebuild()
