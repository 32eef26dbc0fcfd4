"""Facts: one row each, the subject also folded (``subject_key``) for lookups ignoring
case, their words in ``long_term_words``. Validity bounds are microseconds, ``NULL`` when
open; a fact is valid at ``t`` when ``valid_from <= t < valid_until``."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from uuid import uuid4

from memory_core.store import Fact, candidate_pool, query_terms
from memory_core.store import requests as rq

from . import ranking, words
from .codec import dump_json, from_micros, load_json, now_micros, pack_vector, sql_int, to_micros
from .conversations import tenant_key


def add(conn: sqlite3.Connection, req: rq.AddFact) -> Fact:
    """The ``add_fact`` hook."""
    tenant = tenant_key(req.tenant)
    ident = str(uuid4())
    conn.execute(
        "INSERT INTO facts (id, tenant, user_identifier, subject, subject_key, predicate, "
        "object, confidence, valid_from, valid_until, source_message_id, metadata, embedding, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            ident,
            tenant,
            req.user_identifier,
            req.subject,
            req.subject.casefold(),
            req.predicate,
            req.object,
            req.confidence,
            _micros(req.valid_from),
            _micros(req.valid_until),
            req.source_message_id,
            dump_json(req.metadata),
            pack_vector(req.embedding),
            now_micros(),
        ),
    )
    words.index(conn, words.FACT, tenant, ident, (req.subject, req.predicate, req.object))
    row = conn.execute("SELECT * FROM facts WHERE id = ?", (ident,)).fetchone()
    return to_fact(row)


def search(conn: sqlite3.Connection, req: rq.SearchFacts) -> list[Fact]:
    """The ``search_facts`` hook."""
    tenant = tenant_key(req.tenant)
    where, params = _filters(tenant, req.user_identifier, req.as_of)
    terms = query_terms(req.query)
    found: dict[str, tuple[sqlite3.Row, float]] = {}
    if terms:
        sql, args = words.matching(words.FACT, "facts", tenant, terms, where, params)
        rows = conn.execute(sql, [*args, candidate_pool(req.limit)])
        found = ranking.by_text(rows, terms, _text)
    if req.query_embedding is not None:
        rows = conn.execute(
            f"SELECT * FROM facts r WHERE {where} AND r.embedding IS NOT NULL", params
        )
        ranking.add_vector_hits(found, rows, req.query_embedding)
    hits = []
    for row, score in ranking.best(found, req.limit):
        fact = to_fact(row)
        fact.__dict__["score"] = score
        hits.append(fact)
    return hits


def about(conn: sqlite3.Connection, req: rq.FactsAbout) -> list[Fact]:
    """The ``facts_about`` hook."""
    where, params = _filters(tenant_key(req.tenant), req.user_identifier, req.as_of)
    where += " AND r.subject_key = ?"
    params.append(req.subject.casefold())
    if req.predicate is not None:
        where += " AND r.predicate = ?"
        params.append(req.predicate)
    rows = conn.execute(
        f"SELECT * FROM facts r WHERE {where} ORDER BY r.created_at DESC, r.id LIMIT ?",
        [*params, sql_int(req.limit)],
    )
    return [to_fact(row) for row in rows]


def delete(conn: sqlite3.Connection, req: rq.DeleteRecord) -> bool:
    """The ``delete_fact`` hook."""
    sql = "DELETE FROM facts WHERE id = ? AND tenant = ?"
    params: list[object] = [req.record_id, tenant_key(req.tenant)]
    if req.user_identifier is not None:
        sql += " AND user_identifier = ?"
        params.append(req.user_identifier)
    return conn.execute(sql, params).rowcount > 0


def _filters(tenant: str, user: str | None, as_of: datetime | None) -> tuple[str, list[object]]:
    where = "r.tenant = ?"
    params: list[object] = [tenant]
    if user is not None:
        where += " AND r.user_identifier = ?"
        params.append(user)
    if as_of is not None:
        moment = to_micros(as_of)
        where += (
            " AND (r.valid_from IS NULL OR r.valid_from <= ?)"
            " AND (r.valid_until IS NULL OR r.valid_until > ?)"
        )
        params += [moment, moment]
    return where, params


def _micros(moment: datetime | None) -> int | None:
    return None if moment is None else to_micros(moment)


def _text(row: sqlite3.Row) -> str:
    return f"{row['subject']} {row['predicate']} {row['object']}"


def to_fact(row: sqlite3.Row) -> Fact:
    """A ``facts`` row."""
    return Fact(
        id=row["id"],
        subject=row["subject"],
        predicate=row["predicate"],
        object=row["object"],
        confidence=row["confidence"],
        valid_from=None if row["valid_from"] is None else from_micros(row["valid_from"]),
        valid_until=None if row["valid_until"] is None else from_micros(row["valid_until"]),
        source_message_id=row["source_message_id"],
        metadata=load_json(row["metadata"]),
        user_identifier=row["user_identifier"],
        created_at=from_micros(row["created_at"]),
    )
