"""Validated requests the contract hands to a store's hooks.

:class:`~memory_core.backend.MemoryBackend` checks every argument, resolves aliases,
applies defaults and capability rules, then calls the backend's ``_hook`` with one of
these frozen, keyword-only objects. A store author implements the hooks and never
re-validates.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from .models import EntityRef, Message, MessageRole


def canonical_uuid(text: str | None) -> UUID | None:
    """The UUID whose canonical string (``str(uuid)``) ``text`` is, else ``None``."""
    if text is None or len(text) != 36:
        return None
    try:
        value = UUID(text)
    except ValueError:
        return None
    return value if str(value) == text else None


ProgressCallback = Callable[[int, int], None]
BatchCallback = Callable[[int, list[Message]], None]
Summarizer = Callable[[list[Message]], "str | Awaitable[str]"]


@dataclass(frozen=True, kw_only=True)
class Scope:
    """Whose data a call is about.

    ``user_identifier`` is the caller's user as given (``None`` when none was).
    ``tenant`` is the same user when the backend is multi-tenant, else ``None``: a store
    partitions data by ``tenant``, and only records ``user_identifier``.
    """

    user_identifier: str | None = None
    tenant: str | None = None


UNSCOPED = Scope()


class _Scoped:
    """Read access to the scope's two fields, for requests that carry a ``scope``."""

    scope: Scope

    @property
    def user_identifier(self) -> str | None:
        return self.scope.user_identifier

    @property
    def tenant(self) -> str | None:
        return self.scope.tenant


@dataclass(frozen=True, kw_only=True)
class Target(_Scoped):
    """Which conversation a call is about.

    ``session_id`` wins when both are given. On backends with ``client_chosen_ids`` the
    session name is the key and ``conversation_id`` (a UUID) is an alternative handle; on
    NAMS both name the server-issued id and :attr:`handle` is what to send.
    """

    session_id: str | None
    conversation_id: UUID | None
    scope: Scope = UNSCOPED

    @property
    def id_alias(self) -> UUID | None:
        """The conversation id ``session_id`` may stand for: the UUID when ``session_id`` is
        its canonical string (``str(uuid)``: 36 characters, lower-case hex), else ``None``.

        Ids travel as strings (JSON, URLs, configs), so a store resolves a session this way
        first: when a conversation with that id exists and ``conversation_id`` would find
        it (same tenant), the target names that conversation; otherwise ``session_id`` is
        a session name like any other (sessions named with ``str(uuid4())`` keep working).
        """
        return canonical_uuid(self.session_id)

    @property
    def handle(self) -> str:
        """The id to use: the session name, else the conversation UUID as a string."""
        if self.session_id is not None:
            return self.session_id
        return str(self.conversation_id)


@dataclass(frozen=True, kw_only=True)
class AddMessage:
    target: Target
    role: MessageRole
    content: str
    metadata: dict[str, Any]
    idempotency_key: str | None
    mentions: list[EntityRef]
    embedding: list[float] | None


@dataclass(frozen=True, kw_only=True)
class OpenTurn(_Scoped):
    """A turn's question and the entities it names (see ``Store.open_turn``).

    ``message`` has its idempotency key and no mentions; ``identifiers`` are looked up in
    order as ``find_entities`` does, each for at most ``limit`` entities, and the first
    ``limit`` distinct ones found are linked to the message in that order. ``scope`` is
    the entities' (``message.target`` is the conversation's)."""

    message: AddMessage
    identifiers: list[str]
    limit: int
    scope: Scope


@dataclass(frozen=True, kw_only=True, slots=True)
class NewMessage:
    role: MessageRole
    content: str
    metadata: dict[str, Any]
    timestamp: datetime | None
    embedding: list[float] | None = None
    mentions: list[EntityRef] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class AddMessages:
    """One batch, already cut to the backend's ``max_bulk_messages``."""

    target: Target
    messages: list[NewMessage]


@dataclass(frozen=True, kw_only=True)
class GetConversation:
    target: Target
    limit: int
    since: datetime | None


@dataclass(frozen=True, kw_only=True)
class DeleteMessage(_Scoped):
    message_id: UUID
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class CreateConversation:
    target: Target
    title: str | None
    metadata: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class ListConversations(_Scoped):
    """One page of conversation headers: at most ``limit`` (already capped by
    ``max_page_size``), after ``cursor`` (a ``next_cursor`` this store made, checked to be
    a string; ``None``: from the start)."""

    limit: int
    scope: Scope
    cursor: str | None = None


@dataclass(frozen=True, kw_only=True)
class ListSessions(_Scoped):
    prefix: str | None
    limit: int
    offset: int
    order_by: str
    order_dir: Literal["asc", "desc"]
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class SearchMessages(_Scoped):
    query: str
    target: Target | None
    limit: int
    threshold: float | None
    metadata_filters: dict[str, Any]
    query_embedding: list[float] | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class GetContext:
    """``get_context``: the newest ``max_messages`` of ``target`` and, with ``query``, up
    to ``max_hits`` search hits not among them (of every session in the target's scope
    when ``across_sessions``; by meaning too with ``query_embedding``), the whole text
    within ``max_tokens`` (:func:`~memory_core.summary.approx_tokens`) when given."""

    target: Target
    query: str | None
    max_messages: int
    max_hits: int
    query_embedding: list[float] | None = None
    across_sessions: bool = False
    max_tokens: int | None = None
    per_session: int | None = None
    """Group the hits by session before the first ``max_hits`` are kept (see
    :func:`~memory_core.scoring.relevant_hits`)."""
    recency_half_life: timedelta | None = None
    """Weigh the hits by their age before the first ``max_hits`` are kept (see
    :func:`~memory_core.scoring.by_recency`)."""
    neighbours: int = 0
    """Add the ``neighbours`` messages written just before and just after each kept hit
    in its conversation (:meth:`~memory_core.interface.Store.message_neighbours`)."""


@dataclass(frozen=True, kw_only=True)
class MessageNeighbours(_Scoped):
    """``message_neighbours``: the ``count`` messages written just before and the ``count``
    written just after each of ``message_ids`` in its own conversation (of ``scope``)."""

    message_ids: tuple[UUID, ...]
    count: int
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class AddEntity(_Scoped):
    name: str
    type: str
    description: str | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class FindEntities(_Scoped):
    identifier: str
    limit: int
    type: str | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class DeleteEntity(_Scoped):
    entity_id: str
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class ForgetUser(_Scoped):
    """Erase everything of ``scope.user_identifier``: on a multi-tenant store every record
    of ``scope.tenant``; otherwise the conversations recorded for that user and the
    entities only their messages referenced. ``batch_size`` bounds the messages one
    transaction deletes."""

    scope: Scope
    batch_size: int


@dataclass(frozen=True, kw_only=True)
class Stats:
    """Count what the store holds, per user (the tenant on a multi-tenant store).
    ``user``: only that user's counts, and no totals; ``None``: every user's and the
    totals."""

    user: str | None


# ---------------------------------------------------------------- long-term memory
#
# Preferences and facts record ``scope.user_identifier`` (the caller's user, when given)
# and reads given a user return only that user's records, on every store; a multi-tenant
# store partitions them by ``scope.tenant`` as well. Relationships belong to entities and
# follow their scope (``scope.tenant``).


@dataclass(frozen=True, kw_only=True)
class AddPreference(_Scoped):
    category: str
    preference: str
    context: str | None
    confidence: float
    linked_entities: list[str]
    metadata: dict[str, Any]
    embedding: list[float] | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class SearchPreferences(_Scoped):
    """``query`` scored by :mod:`memory_core.scoring` over the category, statement and
    context; with ``query_embedding``, also by cosine over stored embeddings."""

    query: str
    category: str | None
    limit: int
    include_superseded: bool
    query_embedding: list[float] | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class ListPreferences(_Scoped):
    """Newest first; ``category`` ``None`` means every category."""

    category: str | None
    include_superseded: bool
    limit: int
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class SupersedePreference(_Scoped):
    old_id: str
    new_id: str
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class DeleteRecord(_Scoped):
    """Delete one preference, fact or relationship (the hook says which) by id."""

    record_id: str
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class AddFact(_Scoped):
    subject: str
    predicate: str
    object: str
    confidence: float
    valid_from: datetime | None
    valid_until: datetime | None
    source_message_id: str | None
    metadata: dict[str, Any]
    embedding: list[float] | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class SearchFacts(_Scoped):
    """``query`` scored over subject, predicate and object; ``as_of`` keeps the facts
    valid at that instant (``valid_from <= as_of < valid_until``, a missing bound open)."""

    query: str
    as_of: datetime | None
    limit: int
    query_embedding: list[float] | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class FactsAbout(_Scoped):
    """Facts whose subject equals ``subject`` ignoring case, newest first."""

    subject: str
    predicate: str | None
    as_of: datetime | None
    limit: int
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class SearchEntities(_Scoped):
    """``query`` scored over name and description, best first."""

    query: str
    type: str | None
    limit: int
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class GetEntity(_Scoped):
    entity_id: str
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class GetEntityByName(_Scoped):
    """The entity whose name or an alias equals ``name`` ignoring case (folded as
    ``find_entities`` folds), of ``type`` when set; a name before an alias, then the
    oldest."""

    name: str
    type: str | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class UpdateEntity(_Scoped):
    """Change what is not ``None``: ``aliases`` replaces the list (already without
    repeats ignoring case, nor the entity's name after the update: the store drops one
    equal to it), ``attributes`` replaces the object."""

    entity_id: str
    name: str | None
    description: str | None
    aliases: list[str] | None
    attributes: dict[str, Any] | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class MergeEntities(_Scoped):
    """Move everything of ``source_id`` to ``target_id`` and remove the source (see
    :meth:`memory_core.MemoryBackend.merge_entities`)."""

    source_id: str
    target_id: str
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class AddRelationship(_Scoped):
    source_id: str
    target_id: str
    type: str
    properties: dict[str, Any]
    confidence: float
    valid_from: datetime | None
    valid_until: datetime | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class ListRelationships(_Scoped):
    """The relationships of ``entity_id`` in ``direction`` (``"out"``: it is the source,
    ``"in"``: the target, ``"both"``), optionally of one ``type``, oldest first."""

    entity_id: str
    direction: Literal["out", "in", "both"]
    type: str | None
    limit: int
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class RelatedEntities(_Scoped):
    """Entities reachable from ``entity_id`` over at most ``depth`` relationships of the
    ``types`` given (every type when empty), either direction, each once, nearest first,
    never ``entity_id`` itself."""

    entity_id: str
    depth: int
    types: tuple[str, ...]
    limit: int
    scope: Scope


# ------------------------------------------------------------------ reasoning memory
#
# A trace records ``scope.user_identifier`` (the tenant on a multi-tenant store); a call
# whose scope has a user reaches only that user's traces, their steps and tool calls.


@dataclass(frozen=True, kw_only=True)
class StartTrace(_Scoped):
    """A new trace of ``task`` in ``session_id`` (a session name; no conversation needs
    to exist). ``embedding``: the task's, when the backend has an embedder."""

    session_id: str
    task: str
    metadata: dict[str, Any]
    triggered_by_message_id: str | None
    embedding: list[float] | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class AddStep(_Scoped):
    """The next step of trace ``trace_id`` (at least one of the three texts is given)."""

    trace_id: str
    thought: str | None
    action: str | None
    observation: str | None
    metadata: dict[str, Any]
    embedding: list[float] | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class RecordToolCall(_Scoped):
    """A tool call of step ``step_id``. ``result`` is any JSON value."""

    step_id: str
    tool_name: str
    arguments: dict[str, Any]
    result: Any
    status: str
    duration_ms: int | None
    error: str | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class CompleteTrace(_Scoped):
    trace_id: str
    outcome: str | None
    success: bool | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class GetTrace(_Scoped):
    trace_id: str
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class ListTraces(_Scoped):
    """At most ``limit`` traces newest first, of ``session_id`` when given, only
    completed ones of that ``success`` when ``success`` is not None, after ``cursor``."""

    session_id: str | None
    success: bool | None
    limit: int
    cursor: str | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class ToolStatsQuery(_Scoped):
    """Statistics of every tool the scope's traces called, or of ``tool_name`` only."""

    tool_name: str | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class SimilarTraces(_Scoped):
    """At most ``limit`` traces whose task shares words with ``task`` (and, with
    ``query_embedding``, whose task embedding has a positive cosine), each with
    ``score``, best first; only successful ones when ``success_only``; none scoring
    below ``threshold`` when given."""

    task: str
    query_embedding: list[float] | None
    limit: int
    success_only: bool
    threshold: float | None
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class LinkTrace(_Scoped):
    """Link trace ``trace_id`` to messages and entities it touched (each once)."""

    trace_id: str
    message_ids: tuple[str, ...]
    entity_ids: tuple[str, ...]
    scope: Scope


@dataclass(frozen=True, kw_only=True)
class SearchSteps(_Scoped):
    """At most ``limit`` steps with a word of ``query`` in their thought, action or
    observation (and, with ``query_embedding``, of positive cosine), best first."""

    query: str
    query_embedding: list[float] | None
    limit: int
    scope: Scope
