"""Validated requests the contract hands to a backend's hooks.

:class:`~memory_core.backend.MemoryBackend` checks every argument, resolves aliases,
applies defaults and capability rules, then calls the backend's ``_hook`` with one of
these frozen objects. A backend author implements the hooks and never re-validates.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from .models import EntityRef, Message, MessageRole

ProgressCallback = Callable[[int, int], None]
BatchCallback = Callable[[int, list[Message]], None]
Summarizer = Callable[[list[Message]], "str | Awaitable[str]"]


@dataclass(frozen=True)
class Target:
    """Which conversation a call is about.

    ``session_id`` wins when both are given. On backends with ``client_chosen_ids`` the
    session name is the key and ``conversation_id`` (a UUID) is an alternative handle; on
    NAMS both name the server-issued id and :attr:`handle` is what to send.
    ``tenant`` is ``user_identifier`` when the backend is multi-tenant, else ``None``.
    """

    session_id: str | None
    conversation_id: UUID | None
    user_identifier: str | None
    tenant: str | None

    @property
    def handle(self) -> str:
        """The id to use: the session name, else the conversation UUID as a string."""
        if self.session_id is not None:
            return self.session_id
        return str(self.conversation_id)


@dataclass(frozen=True)
class AddMessage:
    target: Target
    role: MessageRole
    content: str
    metadata: dict[str, Any]
    idempotency_key: str | None
    mentions: list[EntityRef]
    # "explicit": unresolvable name-only refs are skipped; ids must exist.
    extraction_mode: Literal["auto", "skip", "explicit"]
    embedding: list[float] | None
    extract_relations: bool


@dataclass(frozen=True)
class NewMessage:
    role: MessageRole
    content: str
    metadata: dict[str, Any]
    timestamp: datetime | None
    embedding: list[float] | None = None
    mentions: list[EntityRef] = field(default_factory=list)


@dataclass(frozen=True)
class AddMessages:
    """One batch, already cut to the backend's ``max_bulk_messages``."""

    target: Target
    messages: list[NewMessage]


@dataclass(frozen=True)
class GetConversation:
    target: Target
    limit: int
    since: datetime | None


@dataclass(frozen=True)
class DeleteMessage:
    message_id: UUID
    cascade: bool
    user_identifier: str | None
    tenant: str | None


@dataclass(frozen=True)
class CreateConversation:
    target: Target
    title: str | None
    metadata: dict[str, Any]


@dataclass(frozen=True)
class ListConversations:
    limit: int
    user_identifier: str | None
    tenant: str | None


@dataclass(frozen=True)
class ListSessions:
    prefix: str | None
    limit: int
    offset: int
    order_by: str
    order_dir: Literal["asc", "desc"]
    user_identifier: str | None
    tenant: str | None


@dataclass(frozen=True)
class SearchMessages:
    query: str
    target: Target | None
    limit: int
    threshold: float | None
    metadata_filters: dict[str, Any]
    query_embedding: list[float] | None
    user_identifier: str | None
    tenant: str | None


@dataclass(frozen=True)
class GetContext:
    target: Target
    query: str | None
    max_messages: int
    max_hits: int


@dataclass(frozen=True)
class AddEntity:
    name: str
    type: str
    description: str | None
    user_identifier: str | None
    tenant: str | None


@dataclass(frozen=True)
class FindEntities:
    identifier: str
    limit: int
    type: str | None
    user_identifier: str | None
    tenant: str | None


@dataclass(frozen=True)
class DeleteEntity:
    entity_id: str
    user_identifier: str | None
    tenant: str | None
