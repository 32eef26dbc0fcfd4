"""Facts: one row each, the subject also as ``subject_key`` (case-folded, then escaped:
:func:`.entities.name_key`) for lookups ignoring case, their words in ``words`` (see
:mod:`.words`). Validity bounds are times, ``NULL`` when open; a fact is valid at ``t``
when ``valid_from <= t < valid_until``. Subject, predicate and object are stored as
:func:`~.codec.store_text` escapes them, metadata as its exact JSON text. An add is one
statement outside a transaction block, replayable as a preference's (see
:mod:`.preferences`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg import errors as pg_errors

from memory_core.store import Fact, candidate_pool, query_terms
from memory_core.store import requests as rq

from . import words
from .codec import load_metadata, load_text, sql_int, store_metadata, store_text, utc
from .conversations import tenant_key
from .entities import name_key
from .rows import metadata_text
from .tx import Tx

# Every read's columns, in this order (see to_fact).
COLUMNS = (
    "r.id, r.created_at, r.subject, r.predicate, r.object, r.confidence, r.valid_from, "
    "r.valid_until, r.source_message_id, r.metadata, r.user_identifier"
)
_ADD = (
    "INSERT INTO {s}.facts (id, tenant, user_identifier, subject, subject_key, predicate, "
    "object, confidence, valid_from, valid_until, source_message_id, metadata, embedding, "
    "words, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
    "%s::float8[], %s::text[], %s)"
)


async def add(tx: Tx, req: rq.AddFact, ident: str, now: datetime) -> Fact:
    """The ``add_fact`` hook: ``ident`` and ``now`` are chosen once for every attempt."""
    stored = (
        store_text(req.subject),
        store_text(req.predicate),
        store_text(req.object),
        req.confidence,
        req.valid_from,
        req.valid_until,
        req.source_message_id,
        store_metadata(req.metadata)[0],
        req.user_identifier,
    )
    try:
        await tx.run(
            _ADD,
            (
                ident,
                tenant_key(req.tenant),
                req.user_identifier,
                stored[0],
                name_key(req.subject),
                *stored[1:8],
                req.embedding,
                words.of(req.subject, req.predicate, req.object),
                now,
            ),
        )
    except pg_errors.UniqueViolation as exc:
        if exc.diag.constraint_name != "facts_pkey":
            raise
        row = await tx.row(f"SELECT {COLUMNS} FROM {{s}}.facts r WHERE r.id = %s", (ident,))
        assert row is not None  # a replay: the first attempt wrote it
        return to_fact(row)
    return to_fact((ident, now, *stored))


async def search(tx: Tx, req: rq.SearchFacts) -> list[Fact]:
    """The ``search_facts`` hook (see :mod:`.words`)."""
    where, params = _filters(req.tenant, req.user_identifier, req.as_of)
    terms = query_terms(req.query)
    found: words.Found = {}
    if terms:
        wanted = words.wanted(terms)
        rows = await tx.rows(
            words.matching(COLUMNS, "facts", where),
            [wanted, *params, wanted, sql_int(candidate_pool(req.limit))],
        )
        found = words.by_text(rows, terms, lambda row: words.joined(*row[2:5]))
    if req.query_embedding is not None:
        await words.vector_hits(
            tx, COLUMNS, "facts", (where, params), req.query_embedding, req.limit, found
        )
    return [to_fact(row, score) for row, score in words.best(found, req.limit)]


async def about(tx: Tx, req: rq.FactsAbout) -> list[Fact]:
    """The ``facts_about`` hook: newest first."""
    where, params = _filters(req.tenant, req.user_identifier, req.as_of)
    where += " AND r.subject_key = %s"
    params.append(name_key(req.subject))
    if req.predicate is not None:
        where += " AND r.predicate = %s"
        params.append(store_text(req.predicate))
    rows = await tx.rows(
        f"SELECT {COLUMNS} FROM {{s}}.facts r WHERE {where} "
        "ORDER BY r.created_at DESC, r.id LIMIT %s",
        [*params, sql_int(req.limit)],
    )
    return [to_fact(row) for row in rows]


async def delete(tx: Tx, req: rq.DeleteRecord) -> bool:
    """The ``delete_fact`` hook."""
    sql = "DELETE FROM {s}.facts WHERE id = %s AND tenant = %s"
    params: list[object] = [req.record_id, tenant_key(req.tenant)]
    if req.user_identifier is not None:
        sql += " AND user_identifier = %s"
        params.append(req.user_identifier)
    return await tx.run(sql, params) > 0


def _filters(
    tenant: str | None, user: str | None, as_of: datetime | None
) -> tuple[str, list[object]]:
    where = "r.tenant = %s"
    params: list[object] = [tenant_key(tenant)]
    if user is not None:
        where += " AND r.user_identifier = %s"
        params.append(user)
    if as_of is not None:
        where += (
            " AND (r.valid_from IS NULL OR r.valid_from <= %s)"
            " AND (r.valid_until IS NULL OR r.valid_until > %s)"
        )
        params += [as_of, as_of]
    return where, params


def to_fact(row: tuple[Any, ...], score: float | None = None) -> Fact:
    """A row of :data:`COLUMNS`."""
    start, end = row[6], row[7]
    return Fact(
        id=row[0],
        subject=load_text(row[2]),
        predicate=load_text(row[3]),
        object=load_text(row[4]),
        confidence=row[5],
        valid_from=None if start is None else utc(start),
        valid_until=None if end is None else utc(end),
        source_message_id=row[8],
        metadata=load_metadata(metadata_text(row[9], "fact", row[0])),
        user_identifier=row[10],
        created_at=utc(row[1]),
        score=score,
    )
