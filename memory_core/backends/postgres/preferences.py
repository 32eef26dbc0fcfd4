"""Preferences: one row each, the entities they link in ``preference_entities`` (in
order; a link goes with either side), their words in ``words`` (see :mod:`.words`).

A user's preferences are the rows of the tenant that name that user
(``user_identifier``); without a user a read covers the whole tenant. Category, statement
and context are stored as :func:`~.codec.store_text` escapes them, metadata as its exact
JSON text. An add is one statement outside a transaction block: its id is chosen before
the first attempt, so a replay after a lost connection finds the row it wrote.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg import errors as pg_errors

from memory_core.store import NotFoundError, Preference, candidate_pool, query_terms
from memory_core.store import requests as rq

from . import words
from .codec import (
    load_metadata,
    load_optional,
    load_text,
    sql_int,
    store_metadata,
    store_optional,
    store_text,
    utc,
)
from .conversations import BACKEND, tenant_key
from .rows import metadata_text
from .tx import Tx

# Every read's columns, in this order (see to_preference): id and creation time first,
# as words.best reads them.
COLUMNS = (
    "r.id, r.created_at, r.category, r.preference, r.context, r.confidence, r.metadata, "
    "r.user_identifier, r.superseded_at, r.superseded_by, (SELECT coalesce(array_agg("
    "pe.entity_id ORDER BY pe.position), '{}') FROM {s}.preference_entities pe "
    "WHERE pe.preference_id = r.id)"
)
_INSERT = (
    "INSERT INTO {s}.preferences (id, tenant, user_identifier, category, preference, "
    "context, confidence, metadata, embedding, words, created_at) "
)
_VALUES = (
    "%(id)s, %(tenant)s, %(user)s, %(category)s, %(preference)s, %(context)s, "
    "%(confidence)s, %(metadata)s, %(embedding)s::float8[], %(words)s::text[], %(now)s"
)
_ADD = _INSERT + "VALUES (" + _VALUES + ")"
# With linked entities: written only when each is an entity of the tenant.
_ADD_LINKED = (
    "WITH p AS ("
    + _INSERT
    + "SELECT "
    + _VALUES
    + " WHERE (SELECT count(*) FROM {s}.entities e WHERE e.tenant = %(tenant)s "
    "AND e.id = ANY(%(linked)s::text[])) = %(count)s RETURNING id), "
    "l AS (INSERT INTO {s}.preference_entities (preference_id, entity_id, position) "
    "SELECT p.id, x.id, x.n - 1 FROM p, unnest(%(linked)s::text[]) WITH ORDINALITY "
    "AS x (id, n)) SELECT count(*) FROM p"
)


async def add(tx: Tx, req: rq.AddPreference, ident: str, now: datetime) -> Preference:
    """The ``add_preference`` hook: ``ident`` and ``now`` are chosen once for every
    attempt (see the module docstring)."""
    tenant = tenant_key(req.tenant)
    linked = req.linked_entities
    params: dict[str, Any] = {
        "id": ident,
        "tenant": tenant,
        "user": req.user_identifier,
        "category": store_text(req.category),
        "preference": store_text(req.preference),
        "context": store_optional(req.context),
        "confidence": req.confidence,
        "metadata": store_metadata(req.metadata)[0],
        "embedding": req.embedding,
        "words": words.of(req.category, req.preference, req.context),
        "now": now,
        "linked": linked,
        "count": len(linked),
    }
    try:
        if not linked:
            await tx.run(_ADD, params)
        else:
            row = await tx.row(_ADD_LINKED, params)
            if not (row and row[0]):
                raise await _unlinked(tx, tenant, linked)
    except pg_errors.UniqueViolation as exc:
        if exc.diag.constraint_name != "preferences_pkey":
            raise
        return await _one(tx, ident)  # a replay: the first attempt wrote it
    except pg_errors.ForeignKeyViolation:  # an entity deleted meanwhile: nothing written
        raise await _unlinked(tx, tenant, linked) from None
    stored = (params["category"], params["preference"], params["context"], req.confidence)
    return to_preference(
        (ident, now, *stored, params["metadata"], req.user_identifier, None, None, linked)
    )


async def _unlinked(tx: Tx, tenant: str, ids: list[str]) -> NotFoundError:
    """The error naming the first of ``ids`` that is no entity of ``tenant``."""
    rows = await tx.rows(
        "SELECT id FROM {s}.entities WHERE tenant = %s AND id = ANY(%s::text[])", (tenant, ids)
    )
    there = {row[0] for row in rows}
    first = next((ident for ident in ids if ident not in there), ids[0])
    return NotFoundError.missing(BACKEND, "entity", first, argument="linked_entities")


async def search(tx: Tx, req: rq.SearchPreferences) -> list[Preference]:
    """The ``search_preferences`` hook (see :mod:`.words`)."""
    where, params = _filters(req.tenant, req.user_identifier, req.category, req.include_superseded)
    terms = query_terms(req.query)
    found: words.Found = {}
    if terms:
        wanted = words.wanted(terms)
        rows = await tx.rows(
            words.matching(COLUMNS, "preferences", where),
            [wanted, *params, wanted, sql_int(candidate_pool(req.limit))],
        )
        found = words.by_text(rows, terms, lambda row: words.joined(*row[2:5]))
    if req.query_embedding is not None:
        await words.vector_hits(
            tx, COLUMNS, "preferences", (where, params), req.query_embedding, req.limit, found
        )
    return [to_preference(row, score) for row, score in words.best(found, req.limit)]


async def list_preferences(tx: Tx, req: rq.ListPreferences) -> list[Preference]:
    """The ``list_preferences`` hook: newest first."""
    where, params = _filters(req.tenant, req.user_identifier, req.category, req.include_superseded)
    rows = await tx.rows(
        f"SELECT {COLUMNS} FROM {{s}}.preferences r WHERE {where} "
        "ORDER BY r.created_at DESC, r.id LIMIT %s",
        [*params, sql_int(req.limit)],
    )
    return [to_preference(row) for row in rows]


async def supersede(tx: Tx, req: rq.SupersedePreference, now: datetime) -> Preference:
    """The ``supersede_preference`` hook (in a transaction): only the first call marks."""
    tenant = tenant_key(req.tenant)
    await _owned(tx, tenant, req.user_identifier, req.old_id, "old_id")
    await _owned(tx, tenant, req.user_identifier, req.new_id, "new_id")
    await tx.run(
        "UPDATE {s}.preferences SET superseded_at = %s, superseded_by = %s "
        "WHERE id = %s AND superseded_at IS NULL",
        (now, req.new_id, req.old_id),
    )
    return await _one(tx, req.old_id)


async def delete(tx: Tx, req: rq.DeleteRecord) -> bool:
    """The ``delete_preference`` hook, one statement: the preferences it superseded keep
    ``superseded_at`` and lose ``superseded_by``."""
    tenant = tenant_key(req.tenant)
    sql = "DELETE FROM {s}.preferences WHERE id = %s AND tenant = %s"
    params: list[object] = [req.record_id, tenant]
    if req.user_identifier is not None:
        sql += " AND user_identifier = %s"
        params.append(req.user_identifier)
    row = await tx.row(
        f"WITH d AS ({sql} RETURNING id), u AS (UPDATE {{s}}.preferences "
        "SET superseded_by = NULL WHERE superseded_by IN (SELECT id FROM d) AND tenant = %s) "
        "SELECT count(*) FROM d",
        [*params, tenant],
    )
    return bool(row and row[0])


def _filters(
    tenant: str | None, user: str | None, category: str | None, superseded: bool
) -> tuple[str, list[object]]:
    where = "r.tenant = %s"
    params: list[object] = [tenant_key(tenant)]
    if user is not None:
        where += " AND r.user_identifier = %s"
        params.append(user)
    if category is not None:
        where += " AND r.category = %s"
        params.append(store_text(category))
    if not superseded:
        where += " AND r.superseded_at IS NULL"
    return where, params


async def _owned(tx: Tx, tenant: str, user: str | None, ident: str, argument: str) -> None:
    sql = "SELECT 1 FROM {s}.preferences WHERE id = %s AND tenant = %s"
    params: list[object] = [ident, tenant]
    if user is not None:
        sql += " AND user_identifier = %s"
        params.append(user)
    if await tx.row(sql, params) is None:
        raise NotFoundError.missing(BACKEND, "preference", ident, argument=argument)


async def _one(tx: Tx, ident: str) -> Preference:
    row = await tx.row(f"SELECT {COLUMNS} FROM {{s}}.preferences r WHERE r.id = %s", (ident,))
    assert row is not None
    return to_preference(row)


def to_preference(row: tuple[Any, ...], score: float | None = None) -> Preference:
    """A row of :data:`COLUMNS`."""
    superseded = row[8]
    return Preference(
        id=row[0],
        category=load_text(row[2]),
        preference=load_text(row[3]),
        context=load_optional(row[4]),
        confidence=row[5],
        linked_entities=list(row[10]),
        metadata=load_metadata(metadata_text(row[6], "preference", row[0])),
        user_identifier=row[7],
        created_at=utc(row[1]),
        superseded_at=None if superseded is None else utc(superseded),
        superseded_by=row[9],
        score=score,
    )
