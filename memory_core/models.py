"""Pydantic v2 models returned by every backend."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict, Field

PENDING_EXTRACTION_STATES = frozenset({"pending", "processing", "running", "in_progress", "queued"})


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


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
    """A long-term entity (the small surface the turn protocol needs)."""

    id: str
    name: str
    type: str
    description: str | None = None
    confidence: float | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime | None = None


__all__ = [
    "Conversation",
    "ConversationSummary",
    "Entity",
    "EntityRef",
    "EntityType",
    "ExtractionStatus",
    "Message",
    "MessageRole",
    "SessionInfo",
    "utcnow",
]

Message.model_rebuild()
