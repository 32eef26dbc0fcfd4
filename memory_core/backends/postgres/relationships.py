"""Relationships between entities: one row per (source, type, target), removed with
either entity (``ON DELETE CASCADE``), of the entities' tenant. Properties are the exact
JSON text. ``related_entities`` walks them in both directions with a recursive query
bounded by the depth, so cycles end.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import uuid4

from psycopg import errors as pg_errors

from memory_core.store import Entity, NotFoundError, Relationship
from memory_core.store import requests as rq

from .codec import load_metadata, sql_int, store_metadata, utc
from .conversations import BACKEND, tenant_key
from .rows import ENTITY_COLUMNS, metadata_text, to_entity
from .tx import Tx

# Every read's columns, in this order (see to_relationship).
COLUMNS = (
    "r.id, r.created_at, r.source_id, r.target_id, r.type, r.properties, r.confidence, "
    "r.valid_from, r.valid_until"
)
_SAME = "r.source_id = %s AND r.type = %s AND r.target_id = %s"


async def add(tx: Tx, req: rq.AddRelationship, now: datetime) -> Relationship:
    """The ``add_relationship`` hook (in a transaction): the one with the same source,
    type and target when there is one, unchanged."""
    tenant = tenant_key(req.tenant)
    there = await _entities(tx, tenant, [req.source_id, req.target_id])
    for ident, argument in ((req.source_id, "source_id"), (req.target_id, "target_id")):
        if ident not in there:
            raise NotFoundError.missing(BACKEND, "entity", ident, argument=argument)
    same = (req.source_id, req.type, req.target_id)
    try:
        row = await tx.row(
            "INSERT INTO {s}.relationships AS r (id, tenant, source_id, target_id, type, "
            "properties, confidence, valid_from, valid_until, created_at) VALUES "
            "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            f"ON CONFLICT (source_id, type, target_id) DO NOTHING RETURNING {COLUMNS}",
            (
                str(uuid4()),
                tenant,
                req.source_id,
                req.target_id,
                req.type,
                store_metadata(req.properties)[0],
                req.confidence,
                req.valid_from,
                req.valid_until,
                now,
            ),
        )
    except pg_errors.ForeignKeyViolation:  # an entity deleted meanwhile: nothing written
        raise NotFoundError.missing(
            BACKEND, "entity", req.source_id, argument="source_id"
        ) from None
    if row is None:  # there already: a statement after the insert sees it
        row = await tx.row(f"SELECT {COLUMNS} FROM {{s}}.relationships r WHERE {_SAME}", same)
    assert row is not None
    return to_relationship(row)


async def list_relationships(tx: Tx, req: rq.ListRelationships) -> list[Relationship]:
    """The ``list_relationships`` hook: oldest first."""
    tenant = tenant_key(req.tenant)
    await _require(tx, tenant, req.entity_id)
    ends = {"out": "r.source_id = %s", "in": "r.target_id = %s"}
    if req.direction == "both":
        where = "(r.source_id = %s OR r.target_id = %s)"
        params: list[object] = [req.entity_id, req.entity_id]
    else:
        where = ends[req.direction]
        params = [req.entity_id]
    if req.type is not None:
        where += " AND r.type = %s"
        params.append(req.type)
    rows = await tx.rows(
        f"SELECT {COLUMNS} FROM {{s}}.relationships r WHERE r.tenant = %s AND {where} "
        "ORDER BY r.created_at, r.id LIMIT %s",
        [tenant, *params, sql_int(req.limit)],
    )
    return [to_relationship(row) for row in rows]


# Each entity reached, at its shortest distance; UNION drops a repeated (entity, depth),
# and the depth bounds the walk through cycles. LATERAL: each step reads the edges of the
# entities reached by their indexes (joined to the whole table, the planner scanned it at
# each step), and the entities are read by id (LIMIT 1: not flattened into a join).
_WALK = """
WITH RECURSIVE walk (id, depth) AS (
    SELECT %(start)s::text, 0
    UNION
    SELECT x.id, w.depth + 1 FROM walk w CROSS JOIN LATERAL (
        SELECT r.target_id AS id FROM {s}.relationships r
        WHERE r.source_id = w.id AND r.tenant = %(tenant)s {typed}
        UNION ALL
        SELECT r.source_id FROM {s}.relationships r
        WHERE r.target_id = w.id AND r.tenant = %(tenant)s {typed}
    ) x
    WHERE w.depth < %(depth)s
)
SELECT {columns} FROM (
    SELECT id, min(depth) AS distance FROM walk WHERE id <> %(start)s GROUP BY id
) w CROSS JOIN LATERAL (
    SELECT * FROM {s}.entities e WHERE e.id = w.id AND e.tenant = %(tenant)s LIMIT 1
) e
ORDER BY w.distance, e.created_at, e.id LIMIT %(limit)s
"""


async def related(tx: Tx, req: rq.RelatedEntities) -> list[Entity]:
    """The ``related_entities`` hook: nearest first, then oldest."""
    tenant = tenant_key(req.tenant)
    await _require(tx, tenant, req.entity_id)
    typed = "AND r.type = ANY(%(types)s::text[])" if req.types else ""
    sql = _WALK.replace("{typed}", typed).replace("{columns}", ENTITY_COLUMNS)
    params = {
        "start": req.entity_id,
        "tenant": tenant,
        "types": list(req.types),
        "depth": req.depth,
        "limit": sql_int(req.limit),
    }
    return [to_entity(row) for row in await tx.rows(sql, params)]


async def delete(tx: Tx, req: rq.DeleteRecord) -> bool:
    """The ``delete_relationship`` hook."""
    gone = await tx.run(
        "DELETE FROM {s}.relationships WHERE id = %s AND tenant = %s",
        (req.record_id, tenant_key(req.tenant)),
    )
    return gone > 0


async def _entities(tx: Tx, tenant: str, ids: list[str]) -> set[str]:
    rows = await tx.rows(
        "SELECT id FROM {s}.entities WHERE tenant = %s AND id = ANY(%s::text[])", (tenant, ids)
    )
    return {row[0] for row in rows}


async def _require(tx: Tx, tenant: str, ident: str) -> None:
    if not await _entities(tx, tenant, [ident]):
        raise NotFoundError.missing(BACKEND, "entity", ident, argument="entity_id")


def to_relationship(row: tuple[Any, ...]) -> Relationship:
    """A row of :data:`COLUMNS`."""
    start, end = row[7], row[8]
    return Relationship(
        id=row[0],
        source_id=row[2],
        target_id=row[3],
        type=row[4],
        properties=load_metadata(metadata_text(row[5], "relationship", row[0])),
        confidence=row[6],
        valid_from=None if start is None else utc(start),
        valid_until=None if end is None else utc(end),
        created_at=utc(row[1]),
    )
