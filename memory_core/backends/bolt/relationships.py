"""Relationships between entities on Neo4j, as neo4j-agent-memory 0.8.0 writes them.

``(:Entity)-[:RELATED_TO {id, type, relation_type, confidence, valid_from, valid_until,
created_at}]->(:Entity)``: the semantic type in the ``type`` property (and its mirror
``relation_type``), MERGEd on (source, ``type``, target) like the reference's
``add_relationship``, so adding one again finds the same edge. ``valid_from`` and
``valid_until`` are ISO 8601 strings, which is how the reference writes and reads them.
Our addition: ``properties``, a JSON string (null when empty). Edges another writer left
without ``type`` are read by ``relation_type``; a type filter ignores case, since the
reference keeps a type as it was spelled.

On a multi-tenant store both entities belong to the tenant, so an edge does too; the
walks of :func:`related` stay inside the tenant.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from memory_core.store import Entity, NotFoundError, Relationship
from memory_core.store import requests as rq

from .cypher import NOW
from .records import dump_metadata, load_metadata, to_datetime, to_entity
from .session import Connection

_IN_SCOPE = "($tenant IS NULL OR {var}.tenant = $tenant)"
_TYPE = "coalesce(r.type, r.relation_type)"
# The type as the filters compare it (upper-case; null for a value that is not text).
UPPER_TYPE = f"CASE WHEN {_TYPE} IS :: STRING THEN toUpper({_TYPE}) END"

PROJECTION = f"""r {{.confidence, .properties, .valid_from, .valid_until, .created_at,
    id: coalesce(r.id, elementId(r)), type: coalesce({_TYPE}, type(r)),
    source_id: startNode(r).id, target_id: endNode(r).id}}"""
ENTITY = (
    "e {.id, .name, .type, .description, .confidence, .created_at, .updated_at, .aliases, "
    ".metadata}"
)

ADD = f"""
OPTIONAL MATCH (s:Entity {{id: $source_id}}) WHERE {_IN_SCOPE.format(var="s")}
OPTIONAL MATCH (t:Entity {{id: $target_id}}) WHERE {_IN_SCOPE.format(var="t")}
OPTIONAL CALL (s, t) {{
    WITH s, t WHERE s IS NOT NULL AND t IS NOT NULL
    MERGE (s)-[r:RELATED_TO {{type: $type}}]->(t)
    ON CREATE SET r.id = $id, r.relation_type = $type, r.properties = $properties,
        r.confidence = $confidence, r.valid_from = $valid_from, r.valid_until = $valid_until,
        r.created_at = {NOW}
    RETURN r
}}
RETURN s IS NOT NULL AS source, t IS NOT NULL AS target,
       CASE WHEN r IS NULL THEN null ELSE {PROJECTION} END AS relationship
"""

LIST = f"""
OPTIONAL MATCH (e:Entity {{id: $entity_id}}) WHERE {_IN_SCOPE.format(var="e")}
RETURN e IS NOT NULL AS found, COLLECT {{
    CALL (e) {{
        MATCH (e)-[r:RELATED_TO]->(o:Entity)
        WHERE $direction <> 'in' AND {_IN_SCOPE.format(var="o")}
        RETURN r
      UNION
        MATCH (e)<-[r:RELATED_TO]-(o:Entity)
        WHERE $direction <> 'out' AND {_IN_SCOPE.format(var="o")}
        RETURN r
    }}
    WITH r WHERE $type IS NULL OR {UPPER_TYPE} = $type
    RETURN {PROJECTION} AS relationship ORDER BY r.created_at, relationship.id
    LIMIT $limit
}} AS relationships
"""


def _related(depth: int) -> str:
    """Entities within ``depth`` steps of ``$entity_id`` (a constant 1 to 3): each once, at
    its shortest distance (``ANY SHORTEST`` per entity reached), nearest first, then
    oldest."""
    return f"""
OPTIONAL MATCH (start:Entity {{id: $entity_id}}) WHERE {_IN_SCOPE.format(var="start")}
RETURN start IS NOT NULL AS found, COLLECT {{
    MATCH p = ANY SHORTEST (start)(()-[r:RELATED_TO]-(x:Entity)
        WHERE ($types = [] OR {UPPER_TYPE} IN $types) AND {_IN_SCOPE.format(var="x")}
    ){{1,{int(depth)}}}(e)
    WHERE e <> start
    WITH e, length(p) AS distance
    ORDER BY distance, e.created_at, e.id
    LIMIT $limit
    RETURN {ENTITY} AS entity
}} AS entities
"""


RELATED = {depth: _related(depth) for depth in (1, 2, 3)}

# By ``id``, or by element id for an edge another writer left without one.
DELETE = f"""
CALL () {{
    MATCH (s:Entity)-[r:RELATED_TO {{id: $id}}]->(t:Entity) RETURN s, r, t
  UNION
    MATCH (s:Entity)-[r:RELATED_TO]->(t:Entity) WHERE elementId(r) = $id AND r.id IS NULL
    RETURN s, r, t
}}
WITH r WHERE {_IN_SCOPE.format(var="s")} AND {_IN_SCOPE.format(var="t")}
DELETE r
RETURN count(*) AS deleted
"""


async def add(conn: Connection, req: rq.AddRelationship) -> Relationship:
    """The ``add_relationship`` hook: one statement; an existing one is returned as is."""
    [row] = await conn.run_write(
        ADD,
        source_id=req.source_id,
        target_id=req.target_id,
        type=req.type,
        id=str(uuid4()),
        properties=dump_metadata(req.properties),
        confidence=req.confidence,
        valid_from=None if req.valid_from is None else req.valid_from.isoformat(),
        valid_until=None if req.valid_until is None else req.valid_until.isoformat(),
        tenant=req.tenant,
    )
    if not row["source"]:
        raise NotFoundError.missing("bolt", "entity", req.source_id, argument="source_id")
    if not row["target"]:
        raise NotFoundError.missing("bolt", "entity", req.target_id, argument="target_id")
    return to_relationship(row["relationship"])


async def list_relationships(conn: Connection, req: rq.ListRelationships) -> list[Relationship]:
    """The ``list_relationships`` hook: oldest first."""
    [row] = await conn.run_read(
        LIST,
        entity_id=req.entity_id,
        direction=req.direction,
        type=req.type,
        limit=req.limit,
        tenant=req.tenant,
    )
    if not row["found"]:
        raise NotFoundError.missing("bolt", "entity", req.entity_id, argument="entity_id")
    return [to_relationship(item) for item in row["relationships"]]


async def related(conn: Connection, req: rq.RelatedEntities) -> list[Entity]:
    """The ``related_entities`` hook."""
    [row] = await conn.run_read(
        RELATED[req.depth],
        entity_id=req.entity_id,
        types=list(req.types),
        limit=req.limit,
        tenant=req.tenant,
    )
    if not row["found"]:
        raise NotFoundError.missing("bolt", "entity", req.entity_id, argument="entity_id")
    return [to_entity(item) for item in row["entities"]]


async def delete(conn: Connection, req: rq.DeleteRecord) -> bool:
    """The ``delete_relationship`` hook."""
    found = await conn.run_write(DELETE, id=req.record_id, tenant=req.tenant)
    return bool(found and found[0]["deleted"])


def to_relationship(props: dict[str, Any]) -> Relationship:
    """A projected relationship (see :data:`PROJECTION`)."""
    confidence = props.get("confidence")
    return Relationship(
        id=str(props["id"]),
        source_id=str(props.get("source_id")),
        target_id=str(props.get("target_id")),
        type=str(props.get("type")),
        properties=load_metadata(props.get("properties")),
        confidence=float(confidence) if isinstance(confidence, int | float) else 1.0,
        valid_from=to_datetime(props.get("valid_from")),
        valid_until=to_datetime(props.get("valid_until")),
        created_at=to_datetime(props.get("created_at")) or datetime.now(UTC),
    )
