"""The long-term hooks of :class:`~memory_core.backends.postgres.store.PostgresStore`:
preferences, facts, relationships, entity search, reads, updates and merges.

Reads and the adds of preferences and facts (one replayable statement each: see
:mod:`.preferences`) run outside a transaction block, a round trip per statement. The
other writes run in a transaction: one lost before its commit is made again, and a
delete made again would report ``False`` for what its first attempt deleted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TypeVar
from uuid import uuid4

from memory_core.store import Entity, Fact, Preference, Relationship
from memory_core.store import requests as rq

from . import entities, entity_updates, facts, preferences, relationships
from .tx import Tx

T = TypeVar("T")


class PostgresLongTerm:
    """Mixed into the PostgreSQL store, whose ``_run`` runs the work of each hook."""

    async def _run(
        self, work: Callable[[Tx], Awaitable[T]], *, write: bool, autocommit: bool = False
    ) -> T:
        raise NotImplementedError  # PostgresStore's

    async def _read(self, work: Callable[[Tx], Awaitable[T]]) -> T:
        return await self._run(work, write=False, autocommit=True)

    async def search_entities(self, req: rq.SearchEntities) -> list[Entity]:
        return await self._read(lambda tx: entities.search_entities(tx, req))

    async def get_entity(self, req: rq.GetEntity) -> Entity | None:
        return await self._read(lambda tx: entity_updates.get(tx, req))

    async def get_entity_by_name(self, req: rq.GetEntityByName) -> Entity | None:
        return await self._read(lambda tx: entity_updates.by_name(tx, req))

    async def update_entity(self, req: rq.UpdateEntity) -> Entity:
        now = datetime.now(UTC)
        return await self._run(lambda tx: entity_updates.update(tx, req, now), write=True)

    async def merge_entities(self, req: rq.MergeEntities) -> Entity:
        now = datetime.now(UTC)
        return await self._run(lambda tx: entity_updates.merge(tx, req, now), write=True)

    async def add_preference(self, req: rq.AddPreference) -> Preference:
        ident, now = str(uuid4()), datetime.now(UTC)
        return await self._run(
            lambda tx: preferences.add(tx, req, ident, now), write=True, autocommit=True
        )

    async def search_preferences(self, req: rq.SearchPreferences) -> list[Preference]:
        return await self._read(lambda tx: preferences.search(tx, req))

    async def list_preferences(self, req: rq.ListPreferences) -> list[Preference]:
        return await self._read(lambda tx: preferences.list_preferences(tx, req))

    async def supersede_preference(self, req: rq.SupersedePreference) -> Preference:
        now = datetime.now(UTC)
        return await self._run(lambda tx: preferences.supersede(tx, req, now), write=True)

    async def delete_preference(self, req: rq.DeleteRecord) -> bool:
        return await self._run(lambda tx: preferences.delete(tx, req), write=True)

    async def add_fact(self, req: rq.AddFact) -> Fact:
        ident, now = str(uuid4()), datetime.now(UTC)
        return await self._run(
            lambda tx: facts.add(tx, req, ident, now), write=True, autocommit=True
        )

    async def search_facts(self, req: rq.SearchFacts) -> list[Fact]:
        return await self._read(lambda tx: facts.search(tx, req))

    async def facts_about(self, req: rq.FactsAbout) -> list[Fact]:
        return await self._read(lambda tx: facts.about(tx, req))

    async def delete_fact(self, req: rq.DeleteRecord) -> bool:
        return await self._run(lambda tx: facts.delete(tx, req), write=True)

    async def add_relationship(self, req: rq.AddRelationship) -> Relationship:
        now = datetime.now(UTC)
        return await self._run(lambda tx: relationships.add(tx, req, now), write=True)

    async def list_relationships(self, req: rq.ListRelationships) -> list[Relationship]:
        return await self._read(lambda tx: relationships.list_relationships(tx, req))

    async def related_entities(self, req: rq.RelatedEntities) -> list[Entity]:
        return await self._read(lambda tx: relationships.related(tx, req))

    async def delete_relationship(self, req: rq.DeleteRecord) -> bool:
        return await self._run(lambda tx: relationships.delete(tx, req), write=True)
