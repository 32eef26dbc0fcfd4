"""The public long-term memory methods of :class:`~memory_core.MemoryBackend`:
preferences, facts, relationships between entities, entity search, reads by id or name,
updates and merges.

Each method checks its arguments (a typed error naming the argument, before anything is
written), requires its capability flag (``preferences``, ``facts``, ``relationships``,
``entity_search``, ``entity_updates``, ``entity_merge``), resolves the caller's scope and
calls one store hook with a request of :mod:`memory_core.requests`.

Preferences and facts belong to a user: given ``user_identifier``, a write records it and
a read returns only that user's records, on every backend (without one, a read returns
every record of the store, as :meth:`~memory_core.MemoryBackend.list_conversations` does).
On a multi-tenant backend the user is required and no call crosses users. Relationships
join entities and share their scope: per user on a multi-tenant backend, shared otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID

from . import requests as rq
from .errors import InvalidArgumentTypeError, InvalidRequestError
from .limits import Limits
from .models import Entity, Fact, Preference, Relationship
from .telemetry import instrument
from .validation import (
    MAX_ALIASES,
    MAX_LINKED_ENTITIES,
    RELATION_TYPE,
    check_aliases,
    check_bool,
    check_datetime,
    check_entity_type,
    check_identifier,
    check_int,
    check_limit,
    check_metadata,
    check_str,
    check_threshold,
)

if TYPE_CHECKING:
    from .interface import Store
    from .policy import Policy
    from .telemetry import Telemetry

MAX_DEPTH = 3
"""The deepest :meth:`LongTermMethods.related_entities` walks."""
__all__ = ["MAX_ALIASES", "MAX_DEPTH", "MAX_LINKED_ENTITIES", "LongTermMethods"]
_DIRECTIONS = ("out", "in", "both")
_KEEP = "keep them in your application"
_FIND = "use find_entities"


class LongTermMethods:
    """Preferences, facts, relationships and entity search (mixed into
    :class:`~memory_core.MemoryBackend`)."""

    store: Store
    _policy: Policy
    _telemetry: Telemetry | None

    async def _ready(self) -> None:
        raise NotImplementedError  # MemoryBackend's

    def _checked_limits(self) -> Limits:
        return self.store.limits

    # ------------------------------------------------------------------ preferences

    @instrument("add_preference")
    async def add_preference(
        self,
        category: str,
        preference: str,
        *,
        context: str | None = None,
        confidence: float = 1.0,
        linked_entities: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        user_identifier: str | None = None,
        generate_embedding: bool = True,
    ) -> Preference:
        """Store a preference of a user: ``preference`` is the statement (``"likes spicy
        food"``), ``category`` groups it (``"food"``), ``context`` says when it applies.
        Every add is a new record (nothing is merged: replace one with
        :meth:`supersede_preference`). ``linked_entities`` are ids of entities it is about."""
        self._policy.require("preferences", "add_preference", _KEEP)
        limits = self._checked_limits()
        kind = check_identifier(category, "category", limits)
        text = _text(preference, "preference", limits)
        about = None if context is None else _text(context, "context", limits)
        sure = _confidence(confidence)
        linked = _entity_ids(linked_entities, "linked_entities", limits)
        meta = check_metadata(metadata, "metadata", limits)
        embed = check_bool(generate_embedding, "generate_embedding")
        scope = self._policy.scope("add_preference", user_identifier)
        await self._ready()
        vectors = await self._policy.embed([_joined(text, about)], embed)
        return await self.store.add_preference(
            rq.AddPreference(
                category=kind,
                preference=text,
                context=about,
                confidence=sure,
                linked_entities=linked,
                metadata=meta,
                embedding=vectors[0] if vectors else None,
                scope=scope,
            )
        )

    @instrument("search_preferences")
    async def search_preferences(
        self,
        query: str,
        *,
        category: str | None = None,
        limit: int = 10,
        include_superseded: bool = False,
        user_identifier: str | None = None,
    ) -> list[Preference]:
        """Preferences with a word of ``query`` in their category, statement or context
        (with an embedder, also those close in meaning), best first, each with ``score``
        on the scale of :meth:`search_messages`. Superseded ones only when asked."""
        self._policy.require("preferences", "search_preferences", _KEEP)
        limits = self._checked_limits()
        text = _query(query, limits)
        kind = None if category is None else check_identifier(category, "category", limits)
        count = self._policy.search_limit("search_preferences", limit)
        old = check_bool(include_superseded, "include_superseded")
        scope = self._policy.scope("search_preferences", user_identifier)
        await self._ready()
        vectors = await self._policy.embed([text], True)
        return await self.store.search_preferences(
            rq.SearchPreferences(
                query=text,
                category=kind,
                limit=count,
                include_superseded=old,
                query_embedding=vectors[0] if vectors else None,
                scope=scope,
            )
        )

    @instrument("list_preferences")
    async def list_preferences(
        self,
        category: str | None = None,
        *,
        limit: int = 100,
        include_superseded: bool = False,
        user_identifier: str | None = None,
    ) -> list[Preference]:
        """The newest ``limit`` preferences (of ``category``), newest first."""
        self._policy.require("preferences", "list_preferences", _KEEP)
        limits = self._checked_limits()
        kind = None if category is None else check_identifier(category, "category", limits)
        count = check_limit(limit)
        old = check_bool(include_superseded, "include_superseded")
        scope = self._policy.scope("list_preferences", user_identifier)
        await self._ready()
        return await self.store.list_preferences(
            rq.ListPreferences(category=kind, include_superseded=old, limit=count, scope=scope)
        )

    @instrument("supersede_preference")
    async def supersede_preference(
        self, old_id: str, new_id: str, *, user_identifier: str | None = None
    ) -> Preference:
        """Mark the preference ``old_id`` as replaced by ``new_id``: it stays readable
        (``superseded_at``, ``superseded_by``) and leaves searches and lists unless they
        ask for superseded ones. Returns the old one; calling again changes nothing."""
        self._policy.require("preferences", "supersede_preference", _KEEP)
        limits = self._checked_limits()
        old = _record_id(old_id, "old_id", limits)
        new = _record_id(new_id, "new_id", limits)
        if old == new:
            raise InvalidRequestError("must differ from old_id", argument="new_id")
        scope = self._policy.scope("supersede_preference", user_identifier)
        await self._ready()
        return await self.store.supersede_preference(
            rq.SupersedePreference(old_id=old, new_id=new, scope=scope)
        )

    @instrument("delete_preference")
    async def delete_preference(
        self, preference_id: str, *, user_identifier: str | None = None
    ) -> bool:
        """Delete a preference; False when there is none with this id (of the user)."""
        self._policy.require("preferences", "delete_preference", _KEEP)
        ident = _record_id(preference_id, "preference_id", self._checked_limits())
        scope = self._policy.scope("delete_preference", user_identifier)
        await self._ready()
        return await self.store.delete_preference(rq.DeleteRecord(record_id=ident, scope=scope))

    # ------------------------------------------------------------------ facts

    @instrument("add_fact")
    async def add_fact(
        self,
        subject: str,
        predicate: str,
        object: str,
        *,
        confidence: float = 1.0,
        valid_from: datetime | str | None = None,
        valid_until: datetime | str | None = None,
        source_message_id: str | UUID | None = None,
        metadata: dict[str, Any] | None = None,
        user_identifier: str | None = None,
        generate_embedding: bool = True,
    ) -> Fact:
        """Store the fact ``subject predicate object`` (``"Alice" "WORKS_AT" "Acme"``),
        true from ``valid_from`` until ``valid_until`` (either may be open). Every add is
        a new record; ``source_message_id`` names the message it came from."""
        self._policy.require("facts", "add_fact", _KEEP)
        limits = self._checked_limits()
        who = check_identifier(subject, "subject", limits)
        verb = check_identifier(predicate, "predicate", limits)
        what = _text(object, "object", limits)
        start, end = _window(valid_from, valid_until)
        source = None if source_message_id is None else _source(source_message_id, limits)
        sure = _confidence(confidence)
        meta = check_metadata(metadata, "metadata", limits)
        embed = check_bool(generate_embedding, "generate_embedding")
        scope = self._policy.scope("add_fact", user_identifier)
        await self._ready()
        vectors = await self._policy.embed([f"{who} {verb} {what}"], embed)
        return await self.store.add_fact(
            rq.AddFact(
                subject=who,
                predicate=verb,
                object=what,
                confidence=sure,
                valid_from=start,
                valid_until=end,
                source_message_id=source,
                metadata=meta,
                embedding=vectors[0] if vectors else None,
                scope=scope,
            )
        )

    @instrument("search_facts")
    async def search_facts(
        self,
        query: str,
        *,
        as_of: datetime | str | None = None,
        limit: int = 10,
        user_identifier: str | None = None,
    ) -> list[Fact]:
        """Facts with a word of ``query`` in subject, predicate or object (with an
        embedder, also those close in meaning), best first, each with ``score``;
        ``as_of`` keeps only the facts valid at that instant."""
        self._policy.require("facts", "search_facts", _KEEP)
        limits = self._checked_limits()
        text = _query(query, limits)
        when = None if as_of is None else check_datetime(as_of, "as_of")
        count = self._policy.search_limit("search_facts", limit)
        scope = self._policy.scope("search_facts", user_identifier)
        await self._ready()
        vectors = await self._policy.embed([text], True)
        return await self.store.search_facts(
            rq.SearchFacts(
                query=text,
                as_of=when,
                limit=count,
                query_embedding=vectors[0] if vectors else None,
                scope=scope,
            )
        )

    @instrument("facts_about")
    async def facts_about(
        self,
        subject: str,
        *,
        predicate: str | None = None,
        as_of: datetime | str | None = None,
        limit: int = 100,
        user_identifier: str | None = None,
    ) -> list[Fact]:
        """The facts whose subject is ``subject`` (ignoring case), of ``predicate`` when
        given, valid at ``as_of`` when given, newest first."""
        self._policy.require("facts", "facts_about", _KEEP)
        limits = self._checked_limits()
        who = check_identifier(subject, "subject", limits)
        verb = None if predicate is None else check_identifier(predicate, "predicate", limits)
        when = None if as_of is None else check_datetime(as_of, "as_of")
        count = check_limit(limit)
        scope = self._policy.scope("facts_about", user_identifier)
        await self._ready()
        return await self.store.facts_about(
            rq.FactsAbout(subject=who, predicate=verb, as_of=when, limit=count, scope=scope)
        )

    @instrument("delete_fact")
    async def delete_fact(self, fact_id: str, *, user_identifier: str | None = None) -> bool:
        """Delete a fact; False when there is none with this id (of the user)."""
        self._policy.require("facts", "delete_fact", _KEEP)
        ident = _record_id(fact_id, "fact_id", self._checked_limits())
        scope = self._policy.scope("delete_fact", user_identifier)
        await self._ready()
        return await self.store.delete_fact(rq.DeleteRecord(record_id=ident, scope=scope))

    # ------------------------------------------------------------------ entities

    @instrument("search_entities")
    async def search_entities(
        self,
        query: str,
        *,
        type: str | None = None,
        limit: int = 10,
        user_identifier: str | None = None,
    ) -> list[Entity]:
        """Entities with a word of ``query`` in their name or description, best first,
        each with ``score`` (:meth:`find_entities` matches whole names only)."""
        self._policy.require("entity_search", "search_entities", "use find_entities")
        text = _query(query, self._checked_limits())
        kind = None if type is None else check_entity_type(type)
        count = self._policy.search_limit("search_entities", limit)
        scope = self._policy.scope("search_entities", user_identifier)
        await self._ready()
        return await self.store.search_entities(
            rq.SearchEntities(query=text, type=kind, limit=count, scope=scope)
        )

    @instrument("get_entity")
    async def get_entity(
        self, entity_id: str, *, user_identifier: str | None = None
    ) -> Entity | None:
        """The entity with this id, with its aliases and attributes; ``None`` when there
        is none (of the caller's scope)."""
        self._policy.require("entity_updates", "get_entity", _FIND)
        ident = _record_id(entity_id, "entity_id", self._checked_limits())
        scope = self._policy.scope("get_entity", user_identifier)
        await self._ready()
        return await self.store.get_entity(rq.GetEntity(entity_id=ident, scope=scope))

    @instrument("get_entity_by_name")
    async def get_entity_by_name(
        self, name: str, *, type: str | None = None, user_identifier: str | None = None
    ) -> Entity | None:
        """The entity whose name or one of whose aliases equals ``name`` ignoring case
        (as :meth:`find_entities` compares names), of ``type`` when given: one named so
        before one known by an alias, then the oldest. ``None`` when there is none."""
        self._policy.require("entity_updates", "get_entity_by_name", _FIND)
        label = check_identifier(name, "name", self._checked_limits())
        kind = None if type is None else check_entity_type(type)
        scope = self._policy.scope("get_entity_by_name", user_identifier)
        await self._ready()
        return await self.store.get_entity_by_name(
            rq.GetEntityByName(name=label, type=kind, scope=scope)
        )

    @instrument("update_entity")
    async def update_entity(
        self,
        entity_id: str,
        *,
        name: str | None = None,
        description: str | None = None,
        aliases: Sequence[str] | None = None,
        attributes: dict[str, Any] | None = None,
        user_identifier: str | None = None,
    ) -> Entity:
        """Change what is given and keep the rest. ``aliases`` replaces the list (each
        once ignoring case, and never the entity's own name); ``attributes`` replaces the
        object. A ``name`` another entity of the same type has raises
        :class:`~memory_core.errors.ConflictError`; an unknown id ``NotFoundError``;
        either way nothing changes."""
        self._policy.require("entity_updates", "update_entity", _KEEP)
        limits = self._checked_limits()
        ident = _record_id(entity_id, "entity_id", limits)
        label = None if name is None else check_identifier(name, "name", limits)
        about = None if description is None else _description(description, limits)
        known = None if aliases is None else check_aliases(aliases, limits)
        attrs = None if attributes is None else check_metadata(attributes, "attributes", limits)
        scope = self._policy.scope("update_entity", user_identifier)
        await self._ready()
        return await self.store.update_entity(
            rq.UpdateEntity(
                entity_id=ident,
                name=label,
                description=about,
                aliases=known,
                attributes=attrs,
                scope=scope,
            )
        )

    @instrument("merge_entities")
    async def merge_entities(
        self, source_id: str, target_id: str, *, user_identifier: str | None = None
    ) -> Entity:
        """Merge the duplicate ``source_id`` into ``target_id`` and return the target.

        The source's mentions, relationships and preference links move to the target,
        each once; the facts whose subject names the source (its name or an alias,
        ignoring case) then name the target; the source's name and aliases become
        aliases of the target; the source is deleted. Unknown ids raise
        ``NotFoundError``, and nothing changes."""
        self._policy.require("entity_merge", "merge_entities", _KEEP)
        limits = self._checked_limits()
        source = _record_id(source_id, "source_id", limits)
        target = _record_id(target_id, "target_id", limits)
        if source == target:
            raise InvalidRequestError("must differ from source_id", argument="target_id")
        scope = self._policy.scope("merge_entities", user_identifier)
        await self._ready()
        return await self.store.merge_entities(
            rq.MergeEntities(source_id=source, target_id=target, scope=scope)
        )

    # ------------------------------------------------------------------ relationships

    @instrument("add_relationship")
    async def add_relationship(
        self,
        source_id: str,
        target_id: str,
        type: str,
        *,
        properties: dict[str, Any] | None = None,
        confidence: float = 1.0,
        valid_from: datetime | str | None = None,
        valid_until: datetime | str | None = None,
        user_identifier: str | None = None,
    ) -> Relationship:
        """Link two entities by ids with a relationship ``type`` (letters, digits and
        ``_``, stored upper-case: ``WORKS_AT``). Adding the same source, type and target
        again returns the existing relationship unchanged."""
        self._policy.require("relationships", "add_relationship", _KEEP)
        limits = self._checked_limits()
        source = _record_id(source_id, "source_id", limits)
        target = _record_id(target_id, "target_id", limits)
        kind = _relation_type(type, "type")
        props = check_metadata(properties, "properties", limits)
        sure = _confidence(confidence)
        start, end = _window(valid_from, valid_until)
        scope = self._policy.scope("add_relationship", user_identifier)
        await self._ready()
        return await self.store.add_relationship(
            rq.AddRelationship(
                source_id=source,
                target_id=target,
                type=kind,
                properties=props,
                confidence=sure,
                valid_from=start,
                valid_until=end,
                scope=scope,
            )
        )

    @instrument("list_relationships")
    async def list_relationships(
        self,
        entity_id: str,
        *,
        direction: Literal["out", "in", "both"] = "both",
        type: str | None = None,
        limit: int = 100,
        user_identifier: str | None = None,
    ) -> list[Relationship]:
        """The relationships of an entity: ``"out"`` where it is the source, ``"in"``
        the target, ``"both"``; of one ``type`` when given; oldest first."""
        self._policy.require("entity_graph", "list_relationships", _KEEP)
        ident = _record_id(entity_id, "entity_id", self._checked_limits())
        if direction not in _DIRECTIONS:
            raise InvalidRequestError(
                f"{direction!r} is not one of 'out', 'in', 'both'", argument="direction"
            )
        kind = None if type is None else _relation_type(type, "type")
        count = check_limit(limit)
        scope = self._policy.scope("list_relationships", user_identifier)
        await self._ready()
        return await self.store.list_relationships(
            rq.ListRelationships(
                entity_id=ident, direction=direction, type=kind, limit=count, scope=scope
            )
        )

    @instrument("related_entities")
    async def related_entities(
        self,
        entity_id: str,
        *,
        depth: int = 1,
        types: Sequence[str] | str | None = None,
        limit: int = 100,
        user_identifier: str | None = None,
    ) -> list[Entity]:
        """Entities reachable from ``entity_id`` over at most ``depth`` (1 to 3)
        relationships in either direction, of ``types`` when given; each once, nearest
        first, never the entity itself."""
        self._policy.require("entity_graph", "related_entities", _KEEP)
        ident = _record_id(entity_id, "entity_id", self._checked_limits())
        steps = check_int(depth, "depth", minimum=1)
        if steps > MAX_DEPTH:
            raise InvalidRequestError(f"must be at most {MAX_DEPTH}", argument="depth")
        kinds = _relation_types(types)
        count = check_limit(limit)
        scope = self._policy.scope("related_entities", user_identifier)
        await self._ready()
        return await self.store.related_entities(
            rq.RelatedEntities(entity_id=ident, depth=steps, types=kinds, limit=count, scope=scope)
        )

    @instrument("delete_relationship")
    async def delete_relationship(
        self, relationship_id: str, *, user_identifier: str | None = None
    ) -> bool:
        """Delete a relationship; False when there is none with this id."""
        self._policy.require("relationships", "delete_relationship", _KEEP)
        ident = _record_id(relationship_id, "relationship_id", self._checked_limits())
        scope = self._policy.scope("delete_relationship", user_identifier)
        await self._ready()
        return await self.store.delete_relationship(rq.DeleteRecord(record_id=ident, scope=scope))


# ---------------------------------------------------------------------- checks


def _text(value: Any, argument: str, limits: Limits) -> str:
    return check_str(value, argument, allow_empty=False, max_chars=limits.max_content_chars)


def _query(value: Any, limits: Limits) -> str:
    return check_str(value, "query", allow_empty=False, max_chars=limits.max_query_chars)


def _joined(text: str, context: str | None) -> str:
    return text if context is None else f"{text} ({context})"


def _description(value: Any, limits: Limits) -> str:
    return check_str(value, "description", max_chars=limits.max_content_chars)


def _confidence(value: Any) -> float:
    sure = check_threshold(value, "confidence")
    if sure is None:
        raise InvalidArgumentTypeError("must be a number, got NoneType", argument="confidence")
    return sure


def _record_id(value: Any, argument: str, limits: Limits) -> str:
    """An id a store issued: a non-empty identifier (a ``UUID`` is taken as its string)."""
    if isinstance(value, UUID):
        return str(value)
    return check_identifier(value, argument, limits, plain=True)


def _source(value: Any, limits: Limits) -> str:
    return _record_id(value, "source_message_id", limits)


def _entity_ids(value: Any, argument: str, limits: Limits) -> list[str]:
    """A list of entity ids, each once, in order."""
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidArgumentTypeError(
            f"must be a list of entity ids, got {type(value).__name__}", argument=argument
        )
    if len(value) > MAX_LINKED_ENTITIES:
        raise InvalidRequestError(
            f"must hold at most {MAX_LINKED_ENTITIES} ids, got {len(value)}", argument=argument
        )
    ids = [_record_id(item, argument, limits) for item in value]
    return list(dict.fromkeys(ids))


def _window(start: Any, end: Any) -> tuple[datetime | None, datetime | None]:
    begins = None if start is None else check_datetime(start, "valid_from")
    ends = None if end is None else check_datetime(end, "valid_until")
    if begins is not None and ends is not None and ends <= begins:
        raise InvalidRequestError("must be later than valid_from", argument="valid_until")
    return begins, ends


def _relation_type(value: Any, argument: str) -> str:
    text = check_str(value, argument, allow_empty=False)
    if not RELATION_TYPE.fullmatch(text):
        raise InvalidRequestError(
            f"{value!r} is not a relationship type (a letter, then letters, digits or _; "
            "at most 100)",
            argument=argument,
        )
    return text.upper()


def _relation_types(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (_relation_type(value, "types"),)
    if not isinstance(value, Sequence):
        raise InvalidArgumentTypeError(
            f"must be a relationship type or a list of them, got {type(value).__name__}",
            argument="types",
        )
    return tuple(dict.fromkeys(_relation_type(item, "types") for item in value))
