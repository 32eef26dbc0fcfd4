"""The interface a store implements: :class:`Store`.

A store author writes one :class:`Store` subclass: it declares ``name`` and
``capabilities`` and implements the hooks below, storage logic only. It never sees the
public API's argument checks, aliases, defaults or capability rules: those live in
:mod:`memory_core.policy` and run in :class:`memory_core.MemoryBackend`, the class
applications call, which wraps a store. A store is registered by URL scheme
(:func:`memory_core.register_backend` or the ``memory_core.backends`` entry-point group)
and :func:`memory_core.open_backend` wraps it.

Every hook receives a request that is already checked (:mod:`memory_core.requests`);
the hooks of capabilities a store does not claim are never called. A target whose
``session_id`` is the canonical string of a UUID names the conversation with that id when
``conversation_id`` would find it, and is a session name otherwise
(:attr:`~memory_core.requests.Target.id_alias`): every hook resolving a target does that.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import replace
from itertools import zip_longest
from typing import TYPE_CHECKING, Any, ClassVar

from . import requests as rq
from .capabilities import HOOKS_FOR_FLAG, Capabilities
from .embedding import Embedder
from .erasure import Erased
from .errors import ConfigurationError, NotSupportedError
from .limits import DEFAULT_LIMITS, Limits
from .models import (
    Conversation,
    ConversationPage,
    Entity,
    EntityRef,
    ExtractionStatus,
    Fact,
    Message,
    Preference,
    ReasoningStep,
    ReasoningTrace,
    Relationship,
    SessionInfo,
    ToolCall,
    ToolStats,
    TracePage,
)
from .scoring import relevant_hits, relevant_pool
from .stats import StoreStats
from .summary import CHARS_PER_TOKEN, fit_context, format_context
from .validation import check_bool

if TYPE_CHECKING:
    from .archive.hooks import BulkTransfer

# Hooks with a working default that a store may override for a better source.
DEFAULTED_HOOKS = ("add_keyed_message", "open_turn", "get_context", "bulk_transfer")

__all__ = [
    "DEFAULTED_HOOKS",
    "HOOKS_FOR_FLAG",
    "Store",
    "first_named",
    "lookups",
    "with_neighbours",
]


def lookups(req: rq.OpenTurn) -> list[rq.FindEntities]:
    """The ``find_entities`` requests of an ``open_turn``: one per identifier, in order."""
    return [
        rq.FindEntities(identifier=name, limit=req.limit, type=None, scope=req.scope)
        for name in req.identifiers
    ]


def first_named(found: list[list[Entity]], limit: int) -> list[Entity]:
    """The first ``limit`` distinct entities of ``found`` (the lookups' results, in
    order): what ``open_turn`` links."""
    named: dict[str, Entity] = {}
    for entities in found:
        for entity in entities:
            named.setdefault(entity.id, entity)
    return list(named.values())[:limit]


class Store(ABC):
    """Storage behind :class:`memory_core.MemoryBackend`: what a store author implements.

    Subclasses declare ``name`` and ``capabilities`` (once per class; a store whose flags
    depend on an option sets ``self.capabilities`` in ``__init__`` before calling this
    ``__init__``), take their URL as the first argument and their own options as
    keywords, and pass the shared options below on to ``super().__init__``:

    ``multi_tenant``
        every request carries a tenant (``req.scope.tenant``); keep tenants apart.
    ``embedder``
        an :class:`~memory_core.embedding.Embedder` (vector search; requests carry the
        vectors already computed).
    ``limits``
        the :class:`~memory_core.limits.Limits` requests were checked against.
    """

    name: ClassVar[str] = "abstract"
    capabilities: Capabilities = Capabilities()
    workarounds: ClassVar[Mapping[str, str]] = {}
    """Per flag, what to do instead on this store when a call needs a flag it lacks
    (the refusal's ``workaround``; default: the method's own)."""
    kept_entity_types: ClassVar[frozenset[str] | None] = None
    """The entity types the store keeps as given (``None``: every type). ``add_entity``
    with another type is an argument the store cannot honour: it warns once (strict:
    ``NotSupportedError``) and the store keeps the entity as ``CUSTOM``."""
    durable_acks: bool = False
    """True when the store acknowledges a write only once it is durable beyond the server
    that took it, and reports it in doubt otherwise (PostgreSQL's ``require_standby``).
    What a read finds may then be a write reported in doubt: the turn protocol confirms a
    replay it found by reading through the half's keyed write."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        caps = getattr(cls, "capabilities", None)
        if not isinstance(caps, Capabilities):
            return  # declared per instance (a property): checked when it is read
        missing = [
            f"{flag} needs {hook}()"
            for flag, hooks in HOOKS_FOR_FLAG.items()
            if caps.supports(flag)
            for hook in hooks
            if getattr(cls, hook) is getattr(Store, hook)
        ]
        if missing:
            raise TypeError(
                f"{cls.__qualname__} claims capabilities whose hooks it does not implement: "
                f"{'; '.join(missing)}. Implement them, or set the flags to False."
            )

    def __init__(
        self,
        *,
        multi_tenant: bool = False,
        embedder: Embedder | None = None,
        limits: Limits | None = None,
    ) -> None:
        if limits is not None and not isinstance(limits, Limits):
            raise ConfigurationError("limits must be a memory_core.Limits")
        self.limits = limits or DEFAULT_LIMITS
        self.multi_tenant = check_bool(multi_tenant, "multi_tenant")
        if embedder is not None and not isinstance(embedder, Embedder):
            raise ConfigurationError("embedder must have .dimensions and async .embed()")
        self.embedder = embedder
        indexed = self.capabilities.max_indexed_bytes
        if indexed is not None and self.limits.max_identifier_bytes > indexed:
            raise ConfigurationError(
                f"limits.max_identifier_bytes={self.limits.max_identifier_bytes} is above what "
                f"the {self.name} backend can index ({indexed} bytes)"
            )

    def describe(self) -> str:
        """Where this store keeps data, with no secret in it."""
        return self.name

    def pool_stats(self) -> dict[str, int] | None:
        """The connection pool's ``idle``, ``used`` and ``max`` connections, for the
        telemetry's pool gauges; ``None`` (the default) where there is no pool."""
        return None

    def pools(self) -> dict[str, dict[str, int]]:
        """Every connection pool's :meth:`pool_stats` by the name the telemetry's pool
        gauges give it. By default the one pool, named by :meth:`describe`; a store with
        more than one pool (PostgreSQL reading from replicas) names each."""
        stats = self.pool_stats()
        return {} if stats is None else {self.describe(): stats}

    # ------------------------------------------------------------------ hooks
    #
    # Every hook receives a request the public method has already checked: arguments are
    # validated and typed, ``session_id``/``conversation_id`` are resolved into a
    # ``Target``, defaults and limits are applied (a read limit is already clamped to
    # ``max_messages_per_read``, a batch is already cut to ``max_bulk_messages``), and
    # capability rules are settled (arguments the backend cannot honour were dropped or
    # refused; a hook whose flag is False is never called). A hook contains storage logic
    # only. It may raise ``NotFoundError``, ``TransportError``, ``AuthenticationError``,
    # ``StoreError`` or ``InvalidRequestError`` (for a limit only the store knows), and
    # must translate every driver or HTTP exception into one of them.

    @abstractmethod
    async def connect(self) -> None:
        """Open connections and prepare storage (schema, indexes). Called once, by
        :meth:`memory_core.MemoryBackend.connect`; raise ``TransportError``,
        ``AuthenticationError`` or ``ConfigurationError`` when the store cannot be used."""

    @abstractmethod
    async def close(self) -> None:
        """Release every connection. Called once, only after a successful ``connect``."""

    @abstractmethod
    async def add_message(self, req: rq.AddMessage) -> Message:
        """Append one message to ``req.target``'s conversation and return it as stored.

        Creates the conversation where the backend has ``auto_create_conversation``; a
        ``conversation_id``-only target that does not exist raises ``NotFoundError``.
        ``req.idempotency_key`` (only set where ``idempotency_keys``): a stored message
        with the same key in that conversation is returned and nothing is written.
        ``req.mentions`` (only non-empty where ``explicit_mentions``) are linked.
        ``req.embedding`` is set when an embedder is configured.
        """

    async def add_keyed_message(self, req: rq.AddMessage) -> tuple[Message, bool | None]:
        """``add_message`` of a request with an idempotency key, and whether the key was
        stored before this call: ``True`` (the stored message is returned, nothing was
        written), ``False`` (this call stored it, an earlier attempt of the same call
        included) or ``None`` (the store cannot tell: this default).

        Optional. The turn protocol asks only stores that override it: it then tells a
        new turn from a replayed one by its write, without reading the conversation
        first, which saves every turn a round trip."""
        return await self.add_message(req), None

    async def open_turn(self, req: rq.OpenTurn) -> tuple[list[Entity], Message, bool | None]:
        """The entities ``req.identifiers`` name, and ``req.message`` stored with them as
        its mentions: ``(entities, message, replayed)``, ``replayed`` as
        :meth:`add_keyed_message` answers it (a replay links nothing new).

        Optional. This default is ``find_entities`` per identifier (:func:`lookups`,
        :func:`first_named`), then :meth:`add_keyed_message`. A store that does it in one
        round trip overrides it: the turn protocol then opens a turn with one call."""
        named = first_named([await self.find_entities(look) for look in lookups(req)], req.limit)
        refs = [EntityRef(id=entity.id) for entity in named]
        stored, replayed = await self.add_keyed_message(replace(req.message, mentions=refs))
        return named, stored, replayed

    @property
    def opens_turns(self) -> bool:
        """Whether :meth:`open_turn` is the store's own (one round trip)."""
        return type(self).open_turn is not Store.open_turn

    @property
    def tells_replays(self) -> bool:
        """Whether :meth:`add_keyed_message` is the store's own (it answers ``True`` or
        ``False``, never ``None``)."""
        return type(self).add_keyed_message is not Store.add_keyed_message

    @abstractmethod
    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        """Append one batch (at most ``max_bulk_messages``) in order, in one transaction
        or request where the store allows, and return the stored messages in order.
        ``NewMessage.timestamp`` is only set where ``caller_timestamps``."""

    @abstractmethod
    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        """Create the conversation of ``req.target`` (or return the existing one, filling
        a title or metadata it lacks) and return its header, without messages."""

    @abstractmethod
    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        """The conversation with its newest ``req.limit`` messages, oldest first, created
        strictly after ``req.since`` (filter in the store where ``server_side_since``;
        otherwise the contract filters the returned page). A missing session reads as an
        empty conversation with a stable id where ``auto_create_conversation``, else
        ``NotFoundError``."""

    @abstractmethod
    async def list_conversations(self, req: rq.ListConversations) -> ConversationPage:
        """One page of conversation headers (no messages) of ``req.scope``, filtered by
        ``req.user_identifier`` where given, in (``updated_at``, id) descending order
        (most recently updated first: a total order), after ``req.cursor`` (``None``:
        from the start).

        Keyset paging: at most ``req.limit`` headers, exactly that many while more follow
        (a store with ``max_page_size`` may return what its service sent). ``next_cursor``
        holds the sort key of the page's last header (see :mod:`memory_core.cursors`),
        ``None`` when nothing follows. Read a page by a seek on an index in that order
        (``WHERE (updated_at, id) < (…)``), never with OFFSET or by reading earlier pages:
        each page costs O(``req.limit``). A cursor this store did not make raises
        ``InvalidRequestError`` naming ``cursor`` (:func:`memory_core.cursors.cursor_error`).
        """

    @abstractmethod
    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        """At most ``req.limit`` hits, best first, each with ``score`` in 0..1 on the scale
        of :mod:`memory_core.scoring`: the text score computed there from the query and the
        content, for the engine's best ``candidate_pool(limit)`` matches (cosine for vector
        hits); ``threshold`` and ``limit`` apply after scoring. ``req.target`` is ``None``
        only where ``search_global``; a ``conversation_id``-only target that names no
        conversation (of the scope) raises ``NotFoundError``, an unknown session finds
        nothing. ``req.threshold`` and ``req.metadata_filters`` are only set where the
        backend declared it honours them, and must then be applied."""

    @abstractmethod
    async def clear_session(self, target: rq.Target) -> bool:
        """Delete the whole conversation of ``target`` and, where the store has ``traces``,
        the reasoning traces of its session in the tenant (with their steps, tool calls
        and links), in one transaction: True if something was deleted, False (not an
        error) when there was nothing. A session with traces and no conversation loses
        its traces; a ``conversation_id`` that names no conversation deletes nothing."""

    async def get_context(self, req: rq.GetContext) -> str:
        """Prompt text for ``req.target``. The default (any backend) is the newest
        ``req.max_messages`` plus, with ``req.query``, up to ``req.max_hits`` search hits
        not already among them (:func:`relevant_of`), cut to ``req.max_tokens``
        (:func:`~memory_core.summary.fit_context`) and formatted by
        :func:`~memory_core.summary.format_context`. Override only when the store has a
        better source (NAMS: its context endpoint), honouring the same fields."""
        conversation = await self.get_conversation(
            rq.GetConversation(target=req.target, limit=req.max_messages, since=None)
        )
        return await context_of(self, req, conversation)

    def unimplemented(self, method: str) -> NotSupportedError:
        return NotSupportedError(
            self.name,
            method,
            "not implemented by this backend",
            "check backend.capabilities before calling",
        )

    # Optional hooks: required exactly when their capability flag is True (checked when a
    # subclass is defined, see HOOKS_FOR_FLAG).

    async def list_sessions(self, req: rq.ListSessions) -> list[SessionInfo]:
        """``list_sessions``: rows of ``req.scope``'s sessions whose id starts with
        ``req.prefix`` (a literal prefix: no pattern characters), ordered by
        ``req.order_by``/``req.order_dir`` with ties broken by session id ascending, then
        ``req.offset`` skipped and ``req.limit`` kept."""
        raise self.unimplemented("list_sessions")

    async def delete_message(self, req: rq.DeleteMessage) -> bool:
        """``delete_message``: delete one message of ``req.scope`` and its mentions, keep
        the rest in order. False when no such message is visible to the caller."""
        raise self.unimplemented("delete_message")

    async def message_neighbours(self, req: rq.MessageNeighbours) -> list[list[Message]]:
        """``message_neighbours``: for each of ``req.message_ids``, in that order, the
        message with the ``req.count`` messages written just before it and the
        ``req.count`` written just after it in its own conversation, oldest first; ``[]``
        for an id that names no message of ``req.scope``. A store that overrides
        :meth:`get_context` and claims the flag honours ``GetContext.neighbours`` with it
        (:func:`with_neighbours`)."""
        raise self.unimplemented("message_neighbours")

    async def get_observations(self, target: rq.Target) -> list[dict[str, Any]]:
        """``observations``: the store's observation records for ``target``."""
        raise self.unimplemented("get_observations")

    async def get_reflections(self, target: rq.Target) -> list[dict[str, Any]]:
        """``reflections``: the store's reflection records for ``target``."""
        raise self.unimplemented("get_reflections")

    async def get_extraction_status(self, target: rq.Target) -> ExtractionStatus:
        """``extraction_status``: per-message extraction progress for ``target``."""
        raise self.unimplemented("get_extraction_status")

    async def add_entity(self, req: rq.AddEntity) -> Entity:
        """``entities``: create the entity, or return the one of ``req.scope`` with the
        same name and type."""
        raise self.unimplemented("add_entity")

    async def find_entities(self, req: rq.FindEntities) -> list[Entity]:
        """``entities``: at most ``req.limit`` entities of ``req.scope`` whose id equals
        ``req.identifier`` or whose name equals it ignoring case, exact matches first."""
        raise self.unimplemented("find_entities")

    async def delete_entity(self, req: rq.DeleteEntity) -> bool:
        """``delete_entity``: delete the entity of ``req.scope`` and the mentions linking
        messages to it (the messages stay). False when there is no such entity."""
        raise self.unimplemented("delete_entity")

    async def search_entities(self, req: rq.SearchEntities) -> list[Entity]:
        """``entity_search``: at most ``req.limit`` entities of ``req.scope`` (of
        ``req.type`` when set) containing a word of ``req.query`` in their name or
        description, each with ``score`` (:func:`memory_core.scoring.text_score` of the
        query over ``name + " " + description``), best first, then newest."""
        raise self.unimplemented("search_entities")

    async def get_entity(self, req: rq.GetEntity) -> Entity | None:
        """``entity_updates``: the entity of ``req.scope`` with this id, ``None`` when
        there is none."""
        raise self.unimplemented("get_entity")

    async def get_entity_by_name(self, req: rq.GetEntityByName) -> Entity | None:
        """``entity_updates``: see :class:`~memory_core.requests.GetEntityByName`;
        ``None`` when no entity of the scope has that name or alias."""
        raise self.unimplemented("get_entity_by_name")

    async def update_entity(self, req: rq.UpdateEntity) -> Entity:
        """``entity_updates``: change what the request sets (see
        :class:`~memory_core.requests.UpdateEntity`) and return the entity as stored,
        ``updated_at`` now. No entity of the scope with this id: ``NotFoundError`` naming
        ``entity_id``. A new name whose key and type another entity has: ``ConflictError``
        naming ``name``. Either way nothing is written. Words the name and description
        are searched by follow the change."""
        raise self.unimplemented("update_entity")

    async def merge_entities(self, req: rq.MergeEntities) -> Entity:
        """``entity_merge``: in one transaction, move the source's mentions, relationships
        (both directions) and preference links to the target, each once (a message, a
        preference or a relationship of the same type and other end the target already
        has keeps the target's; one between the two is dropped); rewrite the subject of
        the scope's facts naming the source (name or alias, ignoring case) to the target's
        name; add the source's name and aliases to the target's aliases; fill a
        description the target lacks and add attribute keys only the source has; delete
        the source. Return the target. Either id unknown to the scope: ``NotFoundError``
        naming ``source_id`` or ``target_id``, nothing written."""
        raise self.unimplemented("merge_entities")

    # ------------------------------------------------------------------ long-term
    #
    # Preferences and facts record ``req.scope.user_identifier``; a read whose scope has a
    # user returns only that user's records (on every store, multi-tenant or not).

    async def add_preference(self, req: rq.AddPreference) -> Preference:
        """``preferences``: store a new preference (never merged with another). Every id
        of ``req.linked_entities`` names an entity of the scope, else ``NotFoundError``
        naming ``linked_entities``, and nothing is written."""
        raise self.unimplemented("add_preference")

    async def search_preferences(self, req: rq.SearchPreferences) -> list[Preference]:
        """``preferences``: at most ``req.limit`` preferences with a word of the query in
        their category, statement or context (and, with ``req.query_embedding``, those of
        positive cosine), each with ``score``, best first; superseded ones only when
        ``req.include_superseded``."""
        raise self.unimplemented("search_preferences")

    async def list_preferences(self, req: rq.ListPreferences) -> list[Preference]:
        """``preferences``: the newest ``req.limit`` preferences (of ``req.category``)."""
        raise self.unimplemented("list_preferences")

    async def supersede_preference(self, req: rq.SupersedePreference) -> Preference:
        """``preferences``: mark ``req.old_id`` replaced by ``req.new_id`` (both of the
        scope, else ``NotFoundError`` naming ``old_id`` or ``new_id``) and return the old
        one. Its ``superseded_at`` is set once: a second call changes nothing."""
        raise self.unimplemented("supersede_preference")

    async def delete_preference(self, req: rq.DeleteRecord) -> bool:
        """``preferences``: delete it; a preference it superseded points nowhere after.
        False when the scope has no preference with this id."""
        raise self.unimplemented("delete_preference")

    async def add_fact(self, req: rq.AddFact) -> Fact:
        """``facts``: store a new fact. ``req.source_message_id`` is recorded as given."""
        raise self.unimplemented("add_fact")

    async def search_facts(self, req: rq.SearchFacts) -> list[Fact]:
        """``facts``: at most ``req.limit`` facts with a word of the query in subject,
        predicate or object, valid at ``req.as_of`` when set, each with ``score``."""
        raise self.unimplemented("search_facts")

    async def facts_about(self, req: rq.FactsAbout) -> list[Fact]:
        """``facts``: see :class:`~memory_core.requests.FactsAbout`."""
        raise self.unimplemented("facts_about")

    async def delete_fact(self, req: rq.DeleteRecord) -> bool:
        """``facts``: delete it; False when the scope has no fact with this id."""
        raise self.unimplemented("delete_fact")

    async def add_relationship(self, req: rq.AddRelationship) -> Relationship:
        """``relationships``: create the relationship, or return the existing one with the
        same source, type and target (unchanged). Both entities are of the scope, else
        ``NotFoundError`` naming ``source_id`` or ``target_id``."""
        raise self.unimplemented("add_relationship")

    async def list_relationships(self, req: rq.ListRelationships) -> list[Relationship]:
        """``entity_graph``: see :class:`~memory_core.requests.ListRelationships`; an
        entity the scope does not have raises ``NotFoundError`` naming ``entity_id``."""
        raise self.unimplemented("list_relationships")

    async def related_entities(self, req: rq.RelatedEntities) -> list[Entity]:
        """``entity_graph``: see :class:`~memory_core.requests.RelatedEntities`; an
        entity the scope does not have raises ``NotFoundError`` naming ``entity_id``."""
        raise self.unimplemented("related_entities")

    async def delete_relationship(self, req: rq.DeleteRecord) -> bool:
        """``relationships``: False when the scope has no relationship with this id."""
        raise self.unimplemented("delete_relationship")

    # ------------------------------------------------------------------ reasoning
    #
    # A trace records ``req.scope.user_identifier``; a call whose scope has a user
    # reaches only that user's traces (their steps and tool calls with them). An id the
    # scope does not have raises ``NotFoundError`` naming the argument, nothing written.

    async def start_trace(self, req: rq.StartTrace) -> ReasoningTrace:
        """``traces``: store a new, open trace (no steps, ``completed_at`` None)."""
        raise self.unimplemented("start_trace")

    async def add_step(self, req: rq.AddStep) -> ReasoningStep:
        """``traces``: append a step numbered one past the trace's last, atomically
        (concurrent appends get distinct, gapless numbers); ``trace_id`` unknown:
        ``NotFoundError`` naming ``trace_id``."""
        raise self.unimplemented("add_step")

    async def record_tool_call(self, req: rq.RecordToolCall) -> ToolCall:
        """``traces``: store a tool call of step ``req.step_id`` (unknown: ``NotFoundError``
        naming ``step_id``)."""
        raise self.unimplemented("record_tool_call")

    async def complete_trace(self, req: rq.CompleteTrace) -> ReasoningTrace:
        """``traces``: set outcome, success and ``completed_at`` once; completing a
        completed trace changes nothing and returns it as it was completed."""
        raise self.unimplemented("complete_trace")

    async def get_trace(self, req: rq.GetTrace) -> ReasoningTrace | None:
        """``traces``: the trace with its steps (by number) and their tool calls (oldest
        first), its linked message and entity ids; None when the scope has none."""
        raise self.unimplemented("get_trace")

    async def list_traces(self, req: rq.ListTraces) -> TracePage:
        """``traces``: see :class:`~memory_core.requests.ListTraces` (headers: no steps)."""
        raise self.unimplemented("list_traces")

    async def tool_stats(self, req: rq.ToolStatsQuery) -> list[ToolStats]:
        """``tool_stats``: one :class:`~memory_core.models.ToolStats` per tool the scope's
        traces called (or only ``req.tool_name``'s; none when it was never called), by
        name, computed with aggregate queries."""
        raise self.unimplemented("tool_stats")

    async def similar_traces(self, req: rq.SimilarTraces) -> list[ReasoningTrace]:
        """``similar_traces``: see :class:`~memory_core.requests.SimilarTraces` (headers,
        scores on the shared scale of :mod:`memory_core.scoring`)."""
        raise self.unimplemented("similar_traces")

    async def search_steps(self, req: rq.SearchSteps) -> list[ReasoningStep]:
        """``similar_traces``: see :class:`~memory_core.requests.SearchSteps` (each step
        with its tool calls and ``score``)."""
        raise self.unimplemented("search_steps")

    async def link_trace(self, req: rq.LinkTrace) -> ReasoningTrace:
        """``trace_links``: link the trace to every message and entity named (each id
        known to the scope, else ``NotFoundError`` naming ``message_ids`` or
        ``entity_ids`` and nothing linked; a link made twice is kept once); the trace."""
        raise self.unimplemented("link_trace")

    async def forget_user(self, req: rq.ForgetUser) -> Erased:
        """``user_erasure``: delete every record of ``req.scope``'s user (see
        :class:`~memory_core.requests.ForgetUser`) and count what went, per kind.

        Idempotent and safe to re-run after a crash halfway: delete one conversation at a
        time in transactions of at most ``req.batch_size`` messages, so a re-run finds
        what is left and finishes it; entities go last. An entity another user's message
        still mentions stays (only the links go). List in ``not_reached`` what the store
        keeps for the user that cannot be deleted. Return while the user's writers keep
        writing: erase what the user has when the call starts, and set ``remaining`` when
        records of the user are there at the end (the caller calls again, a few times at
        most)."""
        raise self.unimplemented("forget_user")

    async def stats(self, req: rq.Stats) -> StoreStats:
        """``store_stats``: count conversations, messages and entities per user (the
        tenant on a multi-tenant store; see :class:`~memory_core.stats.UserStats` for
        which entities are a user's), and the kinds of
        :data:`~memory_core.stats.COUNTED_KINDS` the store keeps, in the store
        (aggregate queries: never read every record into the program); ``req.user``:
        that user's row only (zeros when the user has nothing) and no total.
        ``size_bytes``: the store's size where it can tell; ``None`` for a count or a
        size the store cannot make."""
        raise self.unimplemented("stats")

    # ------------------------------------------------------------------ transfer

    def bulk_transfer(self) -> BulkTransfer | None:
        """Optional fast path of :mod:`memory_core.transfer`: an object that reads and
        writes archive records directly, keeping ids, sequence numbers and timestamps
        (see :class:`memory_core.transfer.BulkTransfer`). ``None`` (the default) means
        transfers go through the public methods."""
        return None


async def context_of(store: Store, req: rq.GetContext, conversation: Conversation) -> str:
    """The default :meth:`Store.get_context`'s text once ``conversation`` (its newest
    ``req.max_messages``) is read, so a caller that needs the messages too reads them
    once."""
    recent = list(conversation.messages)
    seen = {m.id for m in recent}
    relevant = await with_neighbours(store, req, await relevant_of(store, req, seen), seen)
    if req.max_tokens is not None:
        room = req.max_tokens * CHARS_PER_TOKEN
        recent, relevant = fit_context(recent, relevant, room, sessions=req.across_sessions)
    return format_context(recent, relevant, sessions=req.across_sessions)


async def relevant_of(store: Store, req: rq.GetContext, seen: set[Any]) -> list[Message]:
    """Up to ``req.max_hits`` search hits for ``req.query`` that are not in ``seen`` (the
    recent messages), best first: in the target's session, or in every session of its
    scope with ``req.across_sessions``; by meaning too with ``req.query_embedding``;
    grouped by session with ``req.per_session`` (:func:`~.scoring.relevant_hits`)."""
    if not req.query:
        return []
    hits = await store.search_messages(
        rq.SearchMessages(
            query=req.query,
            target=None if req.across_sessions else req.target,
            limit=relevant_pool(
                req.max_hits + len(seen),
                req.per_session,
                store.capabilities.max_search_hits,
                req.recency_half_life,
            ),
            threshold=None,
            metadata_filters={},
            query_embedding=req.query_embedding,
            scope=req.target.scope,
        )
    )
    return relevant_hits(hits, seen, req.per_session, req.max_hits, req.recency_half_life)


async def with_neighbours(
    store: Store, req: rq.GetContext, hits: list[Message], seen: AbstractSet[Any]
) -> list[Message]:
    """``hits`` (best first), each followed by its ``req.neighbours`` messages before and
    after (:meth:`Store.message_neighbours`), the nearest first, that are neither in
    ``seen`` (the recent messages) nor listed already; a neighbour that is a hit itself
    stays a hit, in its place. This order is the one a token budget keeps them in (a
    hit, then its neighbours, then the next hit)."""
    if not req.neighbours or not hits:
        return hits
    windows = await store.message_neighbours(
        rq.MessageNeighbours(
            message_ids=tuple(hit.id for hit in hits),
            count=req.neighbours,
            scope=req.target.scope,
        )
    )
    hit_ids = {hit.id for hit in hits}
    listed = set(seen)
    found: list[Message] = []
    for hit, window in zip(hits, windows, strict=True):
        near = [m for m in nearest_first(window, hit.id) if m.id not in hit_ids]
        for message in (hit, *near):
            if message.id not in listed:
                listed.add(message.id)
                found.append(message)
    return found


def nearest_first(window: list[Message], hit: Any) -> list[Message]:
    """The messages of ``window`` (oldest first) other than the one with id ``hit``, the
    nearest to it first: the one before, the one after, the second before, …"""
    at = next((i for i, m in enumerate(window) if m.id == hit), None)
    if at is None:
        return []
    before, after = window[:at][::-1], window[at + 1 :]
    paired = zip_longest(before, after)
    return [m for pair in paired for m in pair if m is not None]
