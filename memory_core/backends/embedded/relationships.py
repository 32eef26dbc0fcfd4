"""Relationships between entities: one row per (source, type, target), removed with
either entity (``ON DELETE CASCADE``). ``related_entities`` walks them in both directions
with a recursive query bounded by the depth, so cycles end."""

from __future__ import annotations

import sqlite3
from uuid import uuid4

from memory_core.store import Entity, NotFoundError, Relationship
from memory_core.store import requests as rq

from .codec import dump_json, from_micros, load_json, now_micros, sql_int, to_micros
from .conversations import tenant_key
from .rows import to_entity


def add(conn: sqlite3.Connection, req: rq.AddRelationship) -> Relationship:
    """The ``add_relationship`` hook."""
    tenant = tenant_key(req.tenant)
    _entity(conn, tenant, req.source_id, "source_id")
    _entity(conn, tenant, req.target_id, "target_id")
    conn.execute(
        "INSERT INTO relationships (id, tenant, source_id, target_id, type, properties, "
        "confidence, valid_from, valid_until, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (source_id, type, target_id) DO NOTHING",
        (
            str(uuid4()),
            tenant,
            req.source_id,
            req.target_id,
            req.type,
            dump_json(req.properties),
            req.confidence,
            None if req.valid_from is None else to_micros(req.valid_from),
            None if req.valid_until is None else to_micros(req.valid_until),
            now_micros(),
        ),
    )
    row = conn.execute(
        "SELECT * FROM relationships WHERE source_id = ? AND type = ? AND target_id = ?",
        (req.source_id, req.type, req.target_id),
    ).fetchone()
    return to_relationship(row)


def list_relationships(conn: sqlite3.Connection, req: rq.ListRelationships) -> list[Relationship]:
    """The ``list_relationships`` hook."""
    tenant = tenant_key(req.tenant)
    _entity(conn, tenant, req.entity_id, "entity_id")
    ends = {"out": "source_id = ?", "in": "target_id = ?"}
    if req.direction == "both":
        where = "(source_id = ? OR target_id = ?)"
        params: list[object] = [req.entity_id, req.entity_id]
    else:
        where = ends[req.direction]
        params = [req.entity_id]
    if req.type is not None:
        where += " AND type = ?"
        params.append(req.type)
    rows = conn.execute(
        f"SELECT * FROM relationships WHERE tenant = ? AND {where} ORDER BY created_at, id LIMIT ?",
        [tenant, *params, sql_int(req.limit)],
    )
    return [to_relationship(row) for row in rows]


def related(conn: sqlite3.Connection, req: rq.RelatedEntities) -> list[Entity]:
    """The ``related_entities`` hook: nearest first, then oldest."""
    tenant = tenant_key(req.tenant)
    _entity(conn, tenant, req.entity_id, "entity_id")
    typed = ""
    types: list[object] = []
    if req.types:
        typed = f" AND r.type IN ({','.join('?' * len(req.types))})"
        types = list(req.types)
    # One join on either end: SQLite reads each end by its index (MULTI-INDEX OR); a
    # subquery of both directions' edges scanned the whole table at every step.
    sql = (
        "WITH RECURSIVE walk (id, depth) AS (SELECT ?, 0 UNION "
        "SELECT CASE WHEN r.source_id = w.id THEN r.target_id ELSE r.source_id END, "
        "w.depth + 1 FROM walk w JOIN relationships r "
        f"ON (r.source_id = w.id OR r.target_id = w.id) WHERE w.depth < ? AND r.tenant = ?{typed}) "
        "SELECT x.*, MIN(w.depth) AS distance FROM walk w JOIN entities x ON x.id = w.id "
        "WHERE w.id != ? GROUP BY x.id ORDER BY distance, x.created_at, x.id LIMIT ?"
    )
    params = [req.entity_id, req.depth, tenant, *types, req.entity_id]
    rows = conn.execute(sql, [*params, sql_int(req.limit)])
    return [to_entity(row) for row in rows]


def delete(conn: sqlite3.Connection, req: rq.DeleteRecord) -> bool:
    """The ``delete_relationship`` hook."""
    cursor = conn.execute(
        "DELETE FROM relationships WHERE id = ? AND tenant = ?",
        (req.record_id, tenant_key(req.tenant)),
    )
    return cursor.rowcount > 0


def _entity(conn: sqlite3.Connection, tenant: str, ident: str, argument: str) -> None:
    row = conn.execute(
        "SELECT 1 FROM entities WHERE id = ? AND tenant = ?", (ident, tenant)
    ).fetchone()
    if row is None:
        raise NotFoundError.missing("embedded", "entity", ident, argument=argument)


def to_relationship(row: sqlite3.Row) -> Relationship:
    """A ``relationships`` row."""
    return Relationship(
        id=row["id"],
        source_id=row["source_id"],
        target_id=row["target_id"],
        type=row["type"],
        properties=load_json(row["properties"]),
        confidence=row["confidence"],
        valid_from=None if row["valid_from"] is None else from_micros(row["valid_from"]),
        valid_until=None if row["valid_until"] is None else from_micros(row["valid_until"]),
        created_at=from_micros(row["created_at"]),
    )
