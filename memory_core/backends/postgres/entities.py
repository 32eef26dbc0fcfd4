"""Entities and the mentions that link messages to them.

Names match ignoring case with ``str.casefold`` (stored as ``name_key``). An entity is
unique per (tenant, name_key, type): adding it again returns the existing one. Names,
name keys and descriptions are stored as :func:`~.codec.store_text` escapes them (so a
NUL is kept); ids are never escaped: one with a NUL names no stored entity. ``words``
holds the words of the name and description (see :mod:`.words`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

from memory_core.store import Entity, EntityRef, NotFoundError, candidate_pool, query_terms
from memory_core.store import requests as rq

from . import words
from .codec import load_text, sql_int, store_optional, store_text
from .conversations import BACKEND, tenant_key
from .rows import ENTITY_COLUMNS, to_entity
from .tx import Tx

Row = tuple[Any, ...]


async def merge(
    tx: Tx, tenant: str, name: str, kind: str, description: str | None, now: datetime
) -> Row:
    """Get-or-create on (tenant, name ignoring case, type); a missing description is
    filled in, the name and an existing description are kept."""
    row = await tx.row(
        "INSERT INTO {s}.entities AS e (id, tenant, name, name_key, type, description, "
        "created_at, updated_at, words) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (tenant, name_key, type) DO UPDATE SET "
        "description = coalesce(e.description, excluded.description), "
        "updated_at = CASE WHEN e.description IS NULL AND excluded.description IS NOT NULL "
        "THEN greatest(e.updated_at, excluded.updated_at) ELSE e.updated_at END, "
        "words = CASE WHEN e.description IS NULL AND excluded.description IS NOT NULL "
        "THEN excluded.words ELSE e.words END "
        f"RETURNING {ENTITY_COLUMNS}",
        (
            str(uuid4()),
            tenant,
            store_text(name),
            name_key(name),
            kind,
            store_optional(description),
            now,
            now,
            # the same name ignoring case has the same words: the kept name's
            words.of(name, description),
        ),
    )
    assert row is not None
    return row


async def add_entity(tx: Tx, req: rq.AddEntity, now: datetime) -> Entity:
    """The ``add_entity`` hook."""
    return to_entity(
        await merge(tx, tenant_key(req.tenant), req.name, req.type, req.description, now)
    )


async def find_entities(tx: Tx, req: rq.FindEntities) -> list[Entity]:
    """The entity with this id, then those whose name equals it ignoring case, then those
    with such an alias (each oldest first); no fuzzy matches."""
    sql = (
        f"SELECT {ENTITY_COLUMNS} FROM {{s}}.entities e WHERE e.tenant = %s "
        "AND (e.id = %s OR e.name_key = %s OR e.alias_keys @> ARRAY[%s]::text[])"
    )
    entity_id, key = comparable_id(req.identifier), name_key(req.identifier)
    params: list[object] = [tenant_key(req.tenant), entity_id, key, key]
    if req.type is not None:
        sql += " AND e.type = %s"
        params.append(req.type)
    sql += " ORDER BY (e.id = %s) DESC, (e.name_key = %s) DESC, e.created_at, e.id LIMIT %s"
    params += [entity_id, key, sql_int(req.limit)]
    return [to_entity(row) for row in await tx.rows(sql, params)]


async def resolve(tx: Tx, tenant: str, refs: Sequence[EntityRef], now: datetime) -> list[Row]:
    """The entities a message mentions, in order, without repeats: ``id`` → that entity
    (unknown: NotFoundError, checked before anything is created); ``name`` + ``type`` →
    merged; ``name`` alone → the single entity with that name, skipped otherwise."""
    for ref in refs:
        if ref.id and await _by_id(tx, tenant, ref.id) is None:
            raise NotFoundError.missing(BACKEND, "entity", ref.id, argument="explicit_mentions")
    found: list[Row] = []
    seen: set[str] = set()
    for ref in refs:
        row = await _resolve_one(tx, tenant, ref, now)
        if row is not None and row[0] not in seen:
            seen.add(row[0])
            found.append(row)
    return found


async def _resolve_one(tx: Tx, tenant: str, ref: EntityRef, now: datetime) -> Row | None:
    if ref.id:
        return await _by_id(tx, tenant, ref.id)
    assert ref.name is not None
    if ref.type is not None:
        return await merge(tx, tenant, ref.name, ref.type, None, now)
    rows = await tx.rows(
        f"SELECT {ENTITY_COLUMNS} FROM {{s}}.entities e "
        "WHERE e.tenant = %s AND e.name_key = %s LIMIT 2",
        (tenant, name_key(ref.name)),
    )
    return rows[0] if len(rows) == 1 else None


def name_key(name: str) -> str:
    """The stored key a name matches by: case-folded, then escaped."""
    return store_text(name.casefold())


def comparable_id(identifier: str) -> str | None:
    """``identifier`` as an id to compare, or None when no stored id can equal it."""
    return None if "\x00" in identifier else identifier


async def _by_id(tx: Tx, tenant: str, entity_id: str) -> Row | None:
    if comparable_id(entity_id) is None:
        return None
    return await tx.row(
        f"SELECT {ENTITY_COLUMNS} FROM {{s}}.entities e WHERE e.tenant = %s AND e.id = %s",
        (tenant, entity_id),
    )


async def link(tx: Tx, message_id: UUID, entities: Sequence[Row]) -> None:
    """Store the mentions of one message, keeping their order."""
    await tx.cursor.executemany(
        tx.sql(
            "INSERT INTO {s}.mentions (message_id, entity_id, position) VALUES (%s, %s, %s) "
            "ON CONFLICT DO NOTHING"
        ),
        [(message_id, row[0], i) for i, row in enumerate(entities)],
    )


def refs(entities: Sequence[Row]) -> list[EntityRef]:
    """Entity rows as ``Message.mentions``."""
    return [EntityRef(id=row[0], name=load_text(row[1]), type=row[2]) for row in entities]


async def delete_entity(tx: Tx, req: rq.DeleteEntity) -> bool:
    """The ``delete_entity`` hook: its mentions go with it."""
    if comparable_id(req.entity_id) is None:
        return False
    deleted = await tx.run(
        "DELETE FROM {s}.entities WHERE id = %s AND tenant = %s",
        (req.entity_id, tenant_key(req.tenant)),
    )
    return deleted > 0


async def search_entities(tx: Tx, req: rq.SearchEntities) -> list[Entity]:
    """The ``search_entities`` hook (see :mod:`.words`)."""
    terms = query_terms(req.query)
    if not terms:
        return []
    where = "e.tenant = %s"
    params: list[object] = [tenant_key(req.tenant)]
    if req.type is not None:
        where += " AND e.type = %s"
        params.append(req.type)
    wanted = words.wanted(terms)
    rows = await tx.rows(
        words.matching(ENTITY_COLUMNS_BY_AGE, "entities", where, alias="e"),
        [wanted, *params, wanted, sql_int(candidate_pool(req.limit))],
    )
    found = words.by_text(rows, terms, lambda row: words.joined(row[2], row[4]))
    hits = []
    for row, score in words.best(found, req.limit):
        entity = to_entity((row[0], row[2], row[3], row[4], row[1], *row[5:]))
        entity.__dict__["score"] = score
        hits.append(entity)
    return hits


# ENTITY_COLUMNS with the creation time second, as words.best reads it.
ENTITY_COLUMNS_BY_AGE = (
    "e.id, e.created_at, e.name, e.type, e.description, e.updated_at, e.aliases, e.attributes"
)
