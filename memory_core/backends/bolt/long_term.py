"""The long-term hooks of :class:`~memory_core.backends.bolt.store.BoltStore`:
preferences, facts, relationships between entities and entity search, each one managed
transaction (see :mod:`.preferences`, :mod:`.facts`, :mod:`.relationships` for the graph
they keep, compatible with neo4j-agent-memory 0.8.0's)."""

from __future__ import annotations

from neo4j import AsyncManagedTransaction

from memory_core.store import Entity, Fact, Preference, Relationship
from memory_core.store import requests as rq

from . import entity_updates, facts, preferences, relationships
from .long_term_search import Kind, Scope, load_ranked, ranked
from .records import to_entity
from .schema import ENTITY_SEARCH
from .session import Connection

ENTITY_KIND = Kind(index=ENTITY_SEARCH, fields=("name", "description"))
_ENTITY_SCOPE = (
    "($tenant IS NULL OR n.tenant = $tenant) AND ($type IS NULL OR n.type = $type) "
    "AND n.merged_into IS NULL"
)
LOAD_ENTITIES = """
MATCH (n:Entity) WHERE n.id IN $ids
RETURN n {.id, .name, .type, .description, .confidence, .created_at, .updated_at, .aliases,
    .metadata} AS entity
"""


class BoltLongTerm:
    """Mixed into the Bolt store, whose ``_conn`` is its :class:`Connection`."""

    _conn: Connection

    async def search_entities(self, req: rq.SearchEntities) -> list[Entity]:
        params = {"tenant": req.tenant, "type": req.type}
        match = f"MATCH (n:Entity) WHERE {_ENTITY_SCOPE}"
        scope = Scope(match=match, keep=_ENTITY_SCOPE, params=params)

        async def work(tx: AsyncManagedTransaction) -> list[Entity]:
            best = await ranked(tx, ENTITY_KIND, scope, req.query, None, req.limit)
            return await load_ranked(tx, best, LOAD_ENTITIES, to_entity)

        return await self._conn.read(work)

    async def get_entity(self, req: rq.GetEntity) -> Entity | None:
        return await entity_updates.get(self._conn, req)

    async def get_entity_by_name(self, req: rq.GetEntityByName) -> Entity | None:
        return await entity_updates.by_name(self._conn, req)

    async def update_entity(self, req: rq.UpdateEntity) -> Entity:
        return await entity_updates.update(self._conn, req)

    async def merge_entities(self, req: rq.MergeEntities) -> Entity:
        return await entity_updates.merge(self._conn, req)

    async def add_preference(self, req: rq.AddPreference) -> Preference:
        return await preferences.add(self._conn, req)

    async def search_preferences(self, req: rq.SearchPreferences) -> list[Preference]:
        return await preferences.search(self._conn, req)

    async def list_preferences(self, req: rq.ListPreferences) -> list[Preference]:
        return await preferences.list_preferences(self._conn, req)

    async def supersede_preference(self, req: rq.SupersedePreference) -> Preference:
        return await preferences.supersede(self._conn, req)

    async def delete_preference(self, req: rq.DeleteRecord) -> bool:
        return await preferences.delete(self._conn, req)

    async def add_fact(self, req: rq.AddFact) -> Fact:
        return await facts.add(self._conn, req)

    async def search_facts(self, req: rq.SearchFacts) -> list[Fact]:
        return await facts.search(self._conn, req)

    async def facts_about(self, req: rq.FactsAbout) -> list[Fact]:
        return await facts.about(self._conn, req)

    async def delete_fact(self, req: rq.DeleteRecord) -> bool:
        return await facts.delete(self._conn, req)

    async def add_relationship(self, req: rq.AddRelationship) -> Relationship:
        return await relationships.add(self._conn, req)

    async def list_relationships(self, req: rq.ListRelationships) -> list[Relationship]:
        return await relationships.list_relationships(self._conn, req)

    async def related_entities(self, req: rq.RelatedEntities) -> list[Entity]:
        return await relationships.related(self._conn, req)

    async def delete_relationship(self, req: rq.DeleteRecord) -> bool:
        return await relationships.delete(self._conn, req)
