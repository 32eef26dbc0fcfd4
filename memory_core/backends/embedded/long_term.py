"""The long-term hooks of :class:`~memory_core.backends.embedded.store.EmbeddedStore`:
preferences, facts, relationships, entity search, reads, updates and merges, each one
transaction. A write of one record, or a read of one entity, is ``small``: it runs on the
calling thread when it can finish there without waiting (see
:mod:`~memory_core.backends.embedded.database`); searches, listings, walks and merges go
to the worker threads."""

from __future__ import annotations

from memory_core.store import Entity, Fact, Preference, Relationship
from memory_core.store import requests as rq

from . import entities, entity_updates, facts, preferences, relationships
from .database import Database


class EmbeddedLongTerm:
    """Mixed into the embedded store, whose ``_store`` is the :class:`Database`."""

    _store: Database

    async def search_entities(self, req: rq.SearchEntities) -> list[Entity]:
        return await self._store.call(lambda c: entities.search_entities(c, req), write=False)

    async def get_entity(self, req: rq.GetEntity) -> Entity | None:
        return await self._store.read(lambda c: entity_updates.get(c, req), small=True)

    async def get_entity_by_name(self, req: rq.GetEntityByName) -> Entity | None:
        return await self._store.read(lambda c: entity_updates.by_name(c, req), small=True)

    async def update_entity(self, req: rq.UpdateEntity) -> Entity:
        return await self._store.write(lambda c: entity_updates.update(c, req), small=True)

    async def merge_entities(self, req: rq.MergeEntities) -> Entity:
        return await self._store.call(lambda c: entity_updates.merge(c, req), write=True)

    async def add_preference(self, req: rq.AddPreference) -> Preference:
        return await self._store.write(lambda c: preferences.add(c, req), small=True)

    async def search_preferences(self, req: rq.SearchPreferences) -> list[Preference]:
        return await self._store.call(lambda c: preferences.search(c, req), write=False)

    async def list_preferences(self, req: rq.ListPreferences) -> list[Preference]:
        return await self._store.call(lambda c: preferences.list_preferences(c, req), write=False)

    async def supersede_preference(self, req: rq.SupersedePreference) -> Preference:
        return await self._store.write(lambda c: preferences.supersede(c, req), small=True)

    async def delete_preference(self, req: rq.DeleteRecord) -> bool:
        return await self._store.write(lambda c: preferences.delete(c, req), small=True)

    async def add_fact(self, req: rq.AddFact) -> Fact:
        return await self._store.write(lambda c: facts.add(c, req), small=True)

    async def search_facts(self, req: rq.SearchFacts) -> list[Fact]:
        return await self._store.call(lambda c: facts.search(c, req), write=False)

    async def facts_about(self, req: rq.FactsAbout) -> list[Fact]:
        return await self._store.call(lambda c: facts.about(c, req), write=False)

    async def delete_fact(self, req: rq.DeleteRecord) -> bool:
        return await self._store.write(lambda c: facts.delete(c, req), small=True)

    async def add_relationship(self, req: rq.AddRelationship) -> Relationship:
        return await self._store.write(lambda c: relationships.add(c, req), small=True)

    async def list_relationships(self, req: rq.ListRelationships) -> list[Relationship]:
        return await self._store.call(
            lambda c: relationships.list_relationships(c, req), write=False
        )

    async def related_entities(self, req: rq.RelatedEntities) -> list[Entity]:
        return await self._store.call(lambda c: relationships.related(c, req), write=False)

    async def delete_relationship(self, req: rq.DeleteRecord) -> bool:
        return await self._store.write(lambda c: relationships.delete(c, req), small=True)
