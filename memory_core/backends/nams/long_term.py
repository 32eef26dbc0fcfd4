"""Long-term memory over the NAMS wire: what its entity routes allow.

* ``search_entities``: ``POST /entities/search`` with ``query``, ``type`` and ``limit``.
  The hosted service ranks hits (text or vector) without a score on the shared scale, so
  text hits are scored here from their name and description
  (:func:`memory_core.scoring.text_score`, as every backend scores them) and re-ranked;
  hits holding none of the query's words are dropped. Vector hits keep the service's
  ``score`` (``None`` when it sends none).
* ``delete_entity``: ``DELETE /entities/{id}`` (a 404 is False).
* ``get_entity``: ``GET /entities/{id}`` (a 404 is ``None``).
* ``get_entity_by_name``: the service has no lookup by name, so (as the reference library
  does) ``POST /entities/search`` with the name as ``query`` and up to
  :data:`BY_NAME_HITS` hits, kept here when their name or one of their ``aliases`` equals
  the name ignoring case (``str.casefold``) and, with ``type``, of that type: one named
  so before one known by an alias, then the oldest. A service that sends no ``aliases``
  is found by name only.
* ``update_entity``: ``PUT /entities/{id}`` with the fields given; a 404 is
  ``NotFoundError`` naming ``entity_id``, a 409 ``ConflictError`` naming ``name``.
* ``merge_entities``: ``POST /entities/{source}/merge`` with ``{"targetId": …}``; the
  target comes back. On a 404 one ``GET /entities/{source}`` tells which id is unknown,
  so the ``NotFoundError`` names ``source_id`` or ``target_id``.
* ``list_relationships`` and ``related_entities``: ``GET /entities/graph`` with
  ``entityId`` and ``depth``; whatever graph comes back (the entity's neighbourhood, or
  the whole workspace's from a service that ignores the parameters) is filtered here to
  what was asked, so the answer is the same either way. An entity absent from the graph
  is ``NotFoundError`` naming ``entity_id``.

Relationship writes, preferences and facts have no route: their flags are False and the
calls raise ``NotSupportedError`` (:data:`WORKAROUNDS`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from memory_core.store import (
    ConflictError,
    Entity,
    NotFoundError,
    Relationship,
    query_terms,
    text_score,
    utcnow,
)
from memory_core.store import nams_wire as wire
from memory_core.store import requests as rq

WORKAROUNDS = {
    "preferences": "NAMS has no preference routes: keep preferences with the Bolt, "
    "PostgreSQL or embedded backend (copy_store moves them), or in your application",
    "facts": "NAMS has no fact routes: keep facts with the Bolt, PostgreSQL or embedded "
    "backend, or in your application",
    "relationships": "NAMS reads relationships (list_relationships, related_entities) but "
    "cannot write them: write them with the Bolt backend on the graph NAMS reads, or keep "
    "them in your application",
}
"""What a refusal on NAMS suggests, per flag it lacks."""

KEPT_ENTITY_TYPES = frozenset(
    kind for kind, wired in wire.ENTITY_TYPE_TO_WIRE.items() if kind == wired.upper()
)
"""The entity types the wire carries as given; ``OBJECT`` and ``EVENT`` travel as
``custom`` and come back ``CUSTOM``."""

Fetch = Callable[..., Any]

BY_NAME_HITS = wire.MAX_PAGE
"""Most search hits ``get_entity_by_name`` looks through (the most one search returns)."""


def entity(item: wire.EntityOut | wire.GraphNode, score: float | None = None) -> Entity:
    """A wire entity as an Entity (types back to upper case)."""
    return Entity(
        id=item.id,
        name=item.name or item.id,
        type=wire.entity_type_from_wire(item.type) if item.type else "CUSTOM",
        description=item.description,
        confidence=item.confidence,
        aliases=list(getattr(item, "aliases", None) or []),
        attributes=dict(getattr(item, "attributes", None) or {}),
        created_at=item.created_at or utcnow(),
        updated_at=item.updated_at,
        score=score,
    )


def by_name_body(req: rq.GetEntityByName) -> dict[str, Any]:
    return wire.EntitySearchIn.model_validate(
        {
            "query": req.name,
            "limit": BY_NAME_HITS,
            "type": None if req.type is None else wire.entity_type_to_wire(req.type),
        }
    ).to_wire(omit_none=True)


def by_name(req: rq.GetEntityByName, found: wire.EntitySearchOut) -> Entity | None:
    """The hit named ``req.name`` (ignoring case), else the oldest known by it as an
    alias; of ``req.type`` (as the wire carries types) when set."""
    key = req.name.casefold()
    wanted = None if req.type is None else wire.entity_type_to_wire(req.type)
    hits = [entity(e) for e in found.entities if wanted is None or e.type == wanted]
    named = [e for e in hits if e.name.casefold() == key]
    known = [e for e in hits if any(a.casefold() == key for a in e.aliases)]
    for group in (named, known):
        if group:
            return min(group, key=lambda e: e.created_at)
    return None


def update_body(req: rq.UpdateEntity) -> dict[str, Any]:
    """The ``PUT /entities/{id}`` body: only the fields the request sets."""
    return wire.EntityUpdateIn(
        name=req.name,
        description=req.description,
        aliases=req.aliases,
        attributes=req.attributes,
    ).to_wire(omit_none=True)


def merge_body(req: rq.MergeEntities) -> dict[str, Any]:
    return wire.EntityMergeIn(target_id=req.target_id).to_wire()


def conflict() -> ConflictError:
    return ConflictError(
        "another entity of the same type already has this name (ignoring case)",
        argument="name",
    )


def search_body(req: rq.SearchEntities) -> dict[str, Any]:
    return wire.EntitySearchIn.model_validate(
        {
            "query": req.query,
            "limit": req.limit,
            "type": None if req.type is None else wire.entity_type_to_wire(req.type),
        }
    ).to_wire(omit_none=True)


def ranked(req: rq.SearchEntities, found: wire.EntitySearchOut) -> list[Entity]:
    """Search hits as Entities, best first (see the module doc for the score)."""
    wanted = None if req.type is None else wire.entity_type_to_wire(req.type)
    items = [e for e in found.entities if wanted is None or e.type is None or e.type == wanted]
    if found.search_type == "vector":
        return [entity(e, e.score) for e in items[: req.limit]]
    terms = query_terms(req.query)
    scored = [(text_score(terms, f"{e.name or ''} {e.description or ''}"), e) for e in items]
    hits = [(score, e) for score, e in scored if score > 0.0]
    hits.sort(key=lambda pair: -pair[0])  # stable: equal scores keep the service's order
    return [entity(e, score) for score, e in hits[: req.limit]]


def graph_params(entity_id: str, depth: int) -> dict[str, Any]:
    return {"entityId": entity_id, "depth": depth}


def missing(entity_id: str, argument: str = "entity_id") -> NotFoundError:
    return NotFoundError.missing("nams", "entity", entity_id, argument=argument)


def _present(graph: wire.EntityGraphOut, entity_id: str) -> None:
    if not any(node.id == entity_id for node in graph.nodes):
        raise missing(entity_id)


def relationship(edge: wire.GraphEdge) -> Relationship:
    return Relationship(
        id=edge.id,
        source_id=edge.source,
        target_id=edge.target,
        type=edge.type.upper(),
        properties=edge.properties or {},
        confidence=1.0 if edge.confidence is None else edge.confidence,
        valid_from=edge.valid_from,
        valid_until=edge.valid_until,
        created_at=edge.created_at or utcnow(),
    )


def relationships_of(req: rq.ListRelationships, graph: wire.EntityGraphOut) -> list[Relationship]:
    """The entity's relationships in the graph, by direction and type, oldest first."""
    _present(graph, req.entity_id)
    me = req.entity_id
    picked = [
        edge
        for edge in graph.edges
        if (req.direction in ("out", "both") and edge.source == me)
        or (req.direction in ("in", "both") and edge.target == me)
    ]
    found = [relationship(edge) for edge in picked]
    if req.type is not None:
        found = [r for r in found if r.type == req.type]
    found.sort(key=lambda r: r.created_at)  # stable: the service's order among equals
    return found[: req.limit]


def related(req: rq.RelatedEntities, graph: wire.EntityGraphOut) -> list[Entity]:
    """Breadth first over the graph's relationships (either direction, of ``types``
    when given), each entity once, nearest first, never the start."""
    _present(graph, req.entity_id)
    nodes = {node.id: node for node in graph.nodes}
    near = _neighbours(graph.edges, set(req.types))
    seen = {req.entity_id}
    frontier = [req.entity_id]
    order: list[str] = []
    for _ in range(req.depth):
        step: list[str] = []
        for here in frontier:
            for there in near.get(here, ()):
                if there not in seen and there in nodes:
                    seen.add(there)
                    step.append(there)
        order += step
        frontier = step
    return [entity(nodes[i]) for i in order[: req.limit]]


def _neighbours(edges: Iterable[wire.GraphEdge], types: set[str]) -> dict[str, list[str]]:
    near: dict[str, list[str]] = {}
    for edge in edges:
        if types and edge.type.upper() not in types:
            continue
        near.setdefault(edge.source, []).append(edge.target)
        near.setdefault(edge.target, []).append(edge.source)
    return near
