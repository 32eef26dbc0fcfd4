"""Entities and the mentions that link messages to them.

Names are matched ignoring case with ``str.casefold`` (stored as ``name_key``), which folds
non-ASCII letters too, unlike SQLite's ``NOCASE``. An entity is unique per (tenant,
name_key, type): adding it again returns the existing one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from uuid import uuid4

from memory_core.store import Entity, EntityRef, NotFoundError, candidate_pool, query_terms
from memory_core.store import requests as rq

from . import ranking, words
from .codec import now_micros, sql_int
from .conversations import tenant_key
from .rows import to_entity, to_ref


def merge(
    conn: sqlite3.Connection, tenant: str, name: str, kind: str, description: str | None, now: int
) -> sqlite3.Row:
    """Get-or-create on (tenant, name ignoring case, type). An existing entity keeps its
    name and description; a missing description is filled in."""
    key = name.casefold()
    conn.execute(
        "INSERT INTO entities (id, tenant, name, name_key, type, description, created_at, "
        "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (tenant, name_key, type) DO UPDATE SET "
        "description = COALESCE(entities.description, excluded.description), "
        "updated_at = CASE WHEN entities.description IS NULL AND excluded.description IS NOT "
        "NULL THEN MAX(entities.updated_at, excluded.updated_at) ELSE entities.updated_at END",
        (str(uuid4()), tenant, name, key, kind, description, now, now),
    )
    row: sqlite3.Row = conn.execute(
        "SELECT * FROM entities WHERE tenant = ? AND name_key = ? AND type = ?",
        (tenant, key, kind),
    ).fetchone()
    if now in (row["created_at"], row["updated_at"]):  # created, or its description filled
        words.index(conn, words.ENTITY, tenant, row["id"], (row["name"], row["description"]))
    return row


def add_entity(conn: sqlite3.Connection, req: rq.AddEntity) -> Entity:
    """The ``add_entity`` hook."""
    row = merge(conn, tenant_key(req.tenant), req.name, req.type, req.description, now_micros())
    return to_entity(row)


def find_entities(conn: sqlite3.Connection, req: rq.FindEntities) -> list[Entity]:
    """Exact matches only: the entity with this id, then those whose name equals the
    identifier ignoring case, then those with such an alias (each oldest first). No fuzzy
    matches are added."""
    tenant, key = tenant_key(req.tenant), req.identifier.casefold()
    sql = (
        "SELECT *, CASE WHEN id = ? THEN 0 WHEN name_key = ? THEN 1 ELSE 2 END AS rank "
        "FROM entities WHERE tenant = ? AND (id = ? OR name_key = ? OR id IN "
        "(SELECT entity_id FROM entity_aliases WHERE tenant = ? AND alias_key = ?))"
    )
    params: list[object] = [req.identifier, key, tenant, req.identifier, key, tenant, key]
    if req.type is not None:
        sql += " AND type = ?"
        params.append(req.type)
    sql += " ORDER BY rank, created_at, id LIMIT ?"
    params.append(sql_int(req.limit))
    return [to_entity(row) for row in conn.execute(sql, params)]


def resolve(
    conn: sqlite3.Connection, tenant: str, refs: Sequence[EntityRef], now: int
) -> list[sqlite3.Row]:
    """The entities a message mentions, in order and without repeats.

    ``id`` → that entity (unknown: :class:`NotFoundError` naming it; checked before any
    entity is created); ``name`` + ``type`` → merged; ``name`` alone → the single existing
    entity with that name, skipped when there is none or more than one.
    """
    for ref in refs:
        if ref.id and _by_id(conn, tenant, ref.id) is None:
            raise NotFoundError.missing("embedded", "entity", ref.id, argument="explicit_mentions")
    found: list[sqlite3.Row] = []
    seen: set[str] = set()
    for ref in refs:
        row = _resolve_one(conn, tenant, ref, now)
        if row is not None and row["id"] not in seen:
            seen.add(row["id"])
            found.append(row)
    return found


def _resolve_one(
    conn: sqlite3.Connection, tenant: str, ref: EntityRef, now: int
) -> sqlite3.Row | None:
    if ref.id:
        return _by_id(conn, tenant, ref.id)
    assert ref.name is not None
    if ref.type is not None:
        return merge(conn, tenant, ref.name, ref.type, None, now)
    rows = conn.execute(
        "SELECT * FROM entities WHERE tenant = ? AND name_key = ? LIMIT 2",
        (tenant, ref.name.casefold()),
    ).fetchall()
    return rows[0] if len(rows) == 1 else None


def _by_id(conn: sqlite3.Connection, tenant: str, entity_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM entities WHERE tenant = ? AND id = ?", (tenant, entity_id)
    ).fetchone()
    return row


def link(conn: sqlite3.Connection, message_id: str, entities: Iterable[sqlite3.Row]) -> None:
    """Store the mentions of one message, keeping their order."""
    conn.executemany(
        "INSERT OR IGNORE INTO mentions (message_id, entity_id, position) VALUES (?, ?, ?)",
        [(message_id, row["id"], i) for i, row in enumerate(entities)],
    )


def refs(entities: Iterable[sqlite3.Row]) -> list[EntityRef]:
    """Entity rows as ``Message.mentions``."""
    return [to_ref(row) for row in entities]


def mentions_of(conn: sqlite3.Connection, message_ids: Sequence[str]) -> dict[str, list[EntityRef]]:
    """``Message.mentions`` for many messages at once."""
    found: dict[str, list[EntityRef]] = {}
    chunk = 500
    for start in range(0, len(message_ids), chunk):
        ids = list(message_ids[start : start + chunk])
        marks = ",".join("?" * len(ids))
        rows = conn.execute(
            "SELECT mn.message_id, e.id, e.name, e.type FROM mentions mn "
            f"JOIN entities e ON e.id = mn.entity_id WHERE mn.message_id IN ({marks}) "
            "ORDER BY mn.message_id, mn.position",
            ids,
        )
        for row in rows:
            found.setdefault(row["message_id"], []).append(to_ref(row))
    return found


def delete_entity(conn: sqlite3.Connection, req: rq.DeleteEntity) -> bool:
    """The ``delete_entity`` hook: its mentions go with it (``ON DELETE CASCADE``)."""
    cursor = conn.execute(
        "DELETE FROM entities WHERE id = ? AND tenant = ?", (req.entity_id, tenant_key(req.tenant))
    )
    return cursor.rowcount > 0


def search_entities(conn: sqlite3.Connection, req: rq.SearchEntities) -> list[Entity]:
    """The ``search_entities`` hook."""
    terms = query_terms(req.query)
    if not terms:
        return []
    tenant = tenant_key(req.tenant)
    where = "r.tenant = ?"
    params: list[object] = [tenant]
    if req.type is not None:
        where += " AND r.type = ?"
        params.append(req.type)
    sql, args = words.matching(words.ENTITY, "entities", tenant, terms, where, params)
    rows = conn.execute(sql, [*args, candidate_pool(req.limit)])
    found = ranking.by_text(rows, terms, _text)
    hits = []
    for row, score in ranking.best(found, req.limit):
        entity = to_entity(row)
        entity.__dict__["score"] = score
        hits.append(entity)
    return hits


def _text(row: sqlite3.Row) -> str:
    return f"{row['name']} {row['description'] or ''}"
