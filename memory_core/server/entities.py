"""The entity routes beyond create: read one, delete one, search, and the entity graph,
over any backing store (each call in the workspace's tenant, as in :mod:`.hosted`).

* ``GET /entities/{id}`` answers the entity and its outgoing relationships inline
  (``relType``, ``targetId``, ``targetName``, ``targetType``, as the reference library
  reads them). A backing store without ``entity_graph`` inlines none.
  Where the backing store has ``entity_updates`` the entity is read with
  ``get_entity`` and answered with its ``aliases`` and ``attributes``.
* ``PUT /entities/{id}`` (flag ``entity_updates``) changes what the body gives
  (:class:`~memory_core.nams_wire.EntityUpdateIn`) and answers the entity as stored:
  ``404`` for an unknown id, ``409 conflict`` for a name (any case) another entity of the
  same type has, ``400`` for a value over a limit; nothing is written on an error.
* ``POST /entities/{id}/merge`` (flag ``entity_merge``) merges the entity of the path
  into the body's ``targetId`` and answers the target: ``404`` when either is unknown
  (the message says which), ``400`` when both are the same.
* ``DELETE /entities/{id}`` deletes it with its mentions and relationships (``204``;
  ``404`` when the workspace has no such entity).
* ``POST /entities/search`` answers the entities whose id or name equals the query first
  (what ``find_entities`` matches), then, where the backing store has ``entity_search``,
  those holding a word of the query in their name or description, each with the store's
  ``score``.
* ``GET /entities/graph?entityId=…&depth=1..3`` answers that entity, the entities within
  ``depth`` relationships of it (either direction) and the relationships among them. The
  hosted service's graph of the whole workspace (no ``entityId``) is refused with ``400``:
  the backing store's public API cannot list every entity.

A backing store without the flag an operation needs answers ``501 not_supported``, as
every other route does. ``GET /entities`` (list every entity) is not served: no store
method lists entities.
"""

from __future__ import annotations

from collections.abc import Iterable

from memory_core import Entity, MemoryBackend, NotFoundError, Relationship

from .. import nams_wire as wire
from .errors import ApiError, not_found
from .limits import ServerLimits, check_content, check_name, check_object

# Most relationships read per entity while a graph is built, and most entities a graph
# holds: a test and development server, not a graph database.
MAX_EDGES_PER_ENTITY = 1000
MAX_NODES = 1000


def entity_out(entity: Entity, merged: bool = False) -> wire.EntityOut:
    """An entity on the wire (types lower case; ``resolution`` when a create merged)."""
    return wire.EntityOut(
        id=entity.id,
        name=entity.name,
        type=wire.entity_type_to_wire(entity.type),
        description=entity.description,
        confidence=entity.confidence,
        created_at=entity.created_at,
        updated_at=entity.updated_at or entity.created_at,
        resolution="merged" if merged else None,
        merged_into=entity.id if merged else None,
        score=entity.score,
        aliases=list(entity.aliases),
        attributes=dict(entity.attributes),
    )


async def _one(backend: MemoryBackend, tenant: str, entity_id: str) -> Entity:
    """The workspace's entity with this id, else ``404``."""
    if backend.capabilities.entity_updates:
        found = await backend.get_entity(entity_id, user_identifier=tenant)
        if found is None:
            raise not_found("entity")
        return found
    for entity in await backend.find_entities(entity_id, 8, user_identifier=tenant):
        if entity.id == entity_id:
            return entity
    raise not_found("entity")


async def get_entity(backend: MemoryBackend, tenant: str, entity_id: str) -> wire.EntityDetailOut:
    """The entity and its outgoing relationships (none without ``entity_graph``)."""
    entity = await _one(backend, tenant, entity_id)
    refs: list[wire.RelationshipRef] = []
    if backend.capabilities.entity_graph:
        near = await backend.related_entities(entity_id, limit=MAX_NODES, user_identifier=tenant)
        names = {e.id: e for e in near}
        outgoing = await backend.list_relationships(
            entity_id, direction="out", limit=MAX_EDGES_PER_ENTITY, user_identifier=tenant
        )
        refs = [_ref(link, names.get(link.target_id)) for link in outgoing]
    base = entity_out(entity).model_dump()
    return wire.EntityDetailOut(**base, relationships=refs)


def _ref(link: Relationship, target: Entity | None) -> wire.RelationshipRef:
    return wire.RelationshipRef(
        rel_type=link.type,
        target_id=link.target_id,
        target_name=target.name if target else None,
        target_type=wire.entity_type_to_wire(target.type) if target else None,
        id=link.id,
        confidence=link.confidence,
        properties=link.properties,
        valid_from=link.valid_from,
        valid_until=link.valid_until,
        created_at=link.created_at,
    )


def check_update(limits: ServerLimits, body: wire.EntityUpdateIn) -> None:
    """``400`` for a field over the server's limits (before anything is stored)."""
    check_name(limits, body.name, "name")
    if body.description is not None:
        check_content(limits, body.description, "description")
    for alias in body.aliases or ():
        check_name(limits, alias, "aliases")
    if body.attributes is not None:
        check_object(limits, body.attributes, "attributes")


async def update_entity(
    backend: MemoryBackend, tenant: str, entity_id: str, body: wire.EntityUpdateIn
) -> wire.EntityOut:
    """Change what the body gives; the entity as stored (``404``/``409``/``400`` come
    from the store's typed errors)."""
    entity = await backend.update_entity(
        entity_id,
        name=body.name,
        description=body.description,
        aliases=body.aliases,
        attributes=body.attributes,
        user_identifier=tenant,
    )
    return entity_out(entity)


async def merge_entity(
    backend: MemoryBackend, tenant: str, source_id: str, body: wire.EntityMergeIn
) -> wire.EntityOut:
    """Merge ``source_id`` into ``body.target_id``; the target. A ``404`` says which of
    the two is unknown."""
    try:
        target = await backend.merge_entities(source_id, body.target_id, user_identifier=tenant)
    except NotFoundError as exc:
        which = "target" if exc.argument == "target_id" else "source"
        raise not_found(f"{which} entity") from None
    return entity_out(target)


async def delete_entity(backend: MemoryBackend, tenant: str, entity_id: str) -> None:
    """Delete it; ``404`` when the workspace has none with this id."""
    if not await backend.delete_entity(entity_id, user_identifier=tenant):
        raise not_found("entity")


async def search_entities(
    backend: MemoryBackend, tenant: str, query: str, kind: str | None, limit: int
) -> wire.EntitySearchOut:
    """Exact id or name matches first, then word matches with their score."""
    upper = kind.upper() if kind else None
    found = await backend.find_entities(query, limit, type=upper, user_identifier=tenant)
    if backend.capabilities.entity_search:
        words = await backend.search_entities(
            query, type=upper, limit=limit, user_identifier=tenant
        )
        seen = {e.id for e in found}
        found += [e for e in words if e.id not in seen]
    return wire.EntitySearchOut(entities=[entity_out(e) for e in found[:limit]])


async def graph(
    backend: MemoryBackend, tenant: str, entity_id: str | None, depth: int
) -> wire.EntityGraphOut:
    """The entity, those within ``depth`` relationships of it, and the relationships
    among them (oldest first)."""
    if entity_id is None:
        raise ApiError(
            400,
            wire.ErrorCode.INVALID_REQUEST,
            "entityId is required: this server answers the graph around one entity",
        )
    start = await _one(backend, tenant, entity_id)
    try:
        near = await backend.related_entities(
            entity_id, depth=depth, limit=MAX_NODES, user_identifier=tenant
        )
    except NotFoundError:
        raise not_found("entity") from None
    nodes = [start, *near]
    inside = {e.id for e in nodes}
    edges: dict[str, Relationship] = {}
    for entity in nodes:
        links = await backend.list_relationships(
            entity.id, limit=MAX_EDGES_PER_ENTITY, user_identifier=tenant
        )
        edges.update((r.id, r) for r in links if r.source_id in inside and r.target_id in inside)
    ordered = sorted(edges.values(), key=lambda r: (r.created_at, r.id))
    return wire.EntityGraphOut(nodes=list(_nodes(nodes)), edges=[_edge(r) for r in ordered])


def _nodes(entities: Iterable[Entity]) -> Iterable[wire.GraphNode]:
    for entity in entities:
        yield wire.GraphNode(
            id=entity.id,
            name=entity.name,
            type=wire.entity_type_to_wire(entity.type),
            description=entity.description,
            confidence=entity.confidence,
            created_at=entity.created_at,
            updated_at=entity.updated_at,
        )


def _edge(link: Relationship) -> wire.GraphEdge:
    return wire.GraphEdge(
        id=link.id,
        source=link.source_id,
        target=link.target_id,
        type=link.type,
        properties=link.properties,
        confidence=link.confidence,
        valid_from=link.valid_from,
        valid_until=link.valid_until,
        created_at=link.created_at,
    )


async def seed_relationship(
    backend: MemoryBackend, tenant: str, seed: wire.RelationshipSeedIn
) -> wire.GraphEdge:
    """Test-admin only: write a relationship the wire has no route for."""
    link = await backend.add_relationship(
        seed.source_id,
        seed.target_id,
        seed.type,
        properties=seed.properties,
        confidence=seed.confidence,
        user_identifier=tenant,
    )
    return _edge(link)
