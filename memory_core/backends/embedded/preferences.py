"""Preferences: one row each, the entities they link in ``preference_entities``, their
words in ``long_term_words``. A user's preferences are the rows of the tenant that name
that user (``user_identifier``); without a user a read covers the whole tenant."""

from __future__ import annotations

import sqlite3
from uuid import uuid4

from memory_core.store import NotFoundError, Preference, candidate_pool, query_terms
from memory_core.store import requests as rq

from . import ranking, words
from .codec import dump_json, from_micros, load_json, now_micros, pack_vector, sql_int
from .conversations import tenant_key


def add(conn: sqlite3.Connection, req: rq.AddPreference) -> Preference:
    """The ``add_preference`` hook."""
    tenant = tenant_key(req.tenant)
    check_entities(conn, tenant, req.linked_entities, "linked_entities")
    ident = str(uuid4())
    conn.execute(
        "INSERT INTO preferences (id, tenant, user_identifier, category, preference, context, "
        "confidence, metadata, embedding, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            ident,
            tenant,
            req.user_identifier,
            req.category,
            req.preference,
            req.context,
            req.confidence,
            dump_json(req.metadata),
            pack_vector(req.embedding),
            now_micros(),
        ),
    )
    conn.executemany(
        "INSERT INTO preference_entities (preference_id, entity_id, position) VALUES (?, ?, ?)",
        [(ident, entity, i) for i, entity in enumerate(req.linked_entities)],
    )
    words.index(conn, words.PREFERENCE, tenant, ident, (req.category, req.preference, req.context))
    return _load(conn, [_one(conn, ident)])[0]


def check_entities(conn: sqlite3.Connection, tenant: str, ids: list[str], argument: str) -> None:
    """Every id names an entity of ``tenant``, else ``NotFoundError`` naming the first
    that does not."""
    for entity in ids:
        row = conn.execute(
            "SELECT 1 FROM entities WHERE id = ? AND tenant = ?", (entity, tenant)
        ).fetchone()
        if row is None:
            raise NotFoundError.missing("embedded", "entity", entity, argument=argument)


def search(conn: sqlite3.Connection, req: rq.SearchPreferences) -> list[Preference]:
    """The ``search_preferences`` hook."""
    tenant = tenant_key(req.tenant)
    where, params = _filters(tenant, req.user_identifier, req.category, req.include_superseded)
    terms = query_terms(req.query)
    found: dict[str, tuple[sqlite3.Row, float]] = {}
    if terms:
        sql, args = words.matching(words.PREFERENCE, "preferences", tenant, terms, where, params)
        rows = conn.execute(sql, [*args, candidate_pool(req.limit)])
        found = ranking.by_text(rows, terms, _text)
    if req.query_embedding is not None:
        rows = conn.execute(
            f"SELECT * FROM preferences r WHERE {where} AND r.embedding IS NOT NULL", params
        )
        ranking.add_vector_hits(found, rows, req.query_embedding)
    ranked = ranking.best(found, req.limit)
    loaded = _load(conn, [row for row, _ in ranked])
    for preference, (_, score) in zip(loaded, ranked, strict=True):
        preference.__dict__["score"] = score
    return loaded


def list_preferences(conn: sqlite3.Connection, req: rq.ListPreferences) -> list[Preference]:
    """The ``list_preferences`` hook."""
    where, params = _filters(
        tenant_key(req.tenant), req.user_identifier, req.category, req.include_superseded
    )
    rows = conn.execute(
        f"SELECT * FROM preferences r WHERE {where} ORDER BY r.created_at DESC, r.id LIMIT ?",
        [*params, sql_int(req.limit)],
    ).fetchall()
    return _load(conn, rows)


def supersede(conn: sqlite3.Connection, req: rq.SupersedePreference) -> Preference:
    """The ``supersede_preference`` hook."""
    tenant = tenant_key(req.tenant)
    old = _owned(conn, tenant, req.user_identifier, req.old_id, "old_id")
    _owned(conn, tenant, req.user_identifier, req.new_id, "new_id")
    if old["superseded_at"] is None:
        conn.execute(
            "UPDATE preferences SET superseded_at = ?, superseded_by = ? WHERE id = ?",
            (now_micros(), req.new_id, req.old_id),
        )
    return _load(conn, [_one(conn, req.old_id)])[0]


def delete(conn: sqlite3.Connection, req: rq.DeleteRecord) -> bool:
    """The ``delete_preference`` hook: the ones it superseded keep ``superseded_at`` and
    lose ``superseded_by``."""
    tenant = tenant_key(req.tenant)
    sql = "DELETE FROM preferences WHERE id = ? AND tenant = ?"
    params: list[object] = [req.record_id, tenant]
    if req.user_identifier is not None:
        sql += " AND user_identifier = ?"
        params.append(req.user_identifier)
    if conn.execute(sql, params).rowcount == 0:
        return False
    conn.execute(
        "UPDATE preferences SET superseded_by = NULL WHERE superseded_by = ? AND tenant = ?",
        (req.record_id, tenant),
    )
    return True


def _filters(
    tenant: str, user: str | None, category: str | None, superseded: bool
) -> tuple[str, list[object]]:
    where = "r.tenant = ?"
    params: list[object] = [tenant]
    if user is not None:
        where += " AND r.user_identifier = ?"
        params.append(user)
    if category is not None:
        where += " AND r.category = ?"
        params.append(category)
    if not superseded:
        where += " AND r.superseded_at IS NULL"
    return where, params


def _owned(
    conn: sqlite3.Connection, tenant: str, user: str | None, ident: str, argument: str
) -> sqlite3.Row:
    sql = "SELECT * FROM preferences WHERE id = ? AND tenant = ?"
    params: list[object] = [ident, tenant]
    if user is not None:
        sql += " AND user_identifier = ?"
        params.append(user)
    row: sqlite3.Row | None = conn.execute(sql, params).fetchone()
    if row is None:
        raise NotFoundError.missing("embedded", "preference", ident, argument=argument)
    return row


def _one(conn: sqlite3.Connection, ident: str) -> sqlite3.Row:
    row: sqlite3.Row = conn.execute("SELECT * FROM preferences WHERE id = ?", (ident,)).fetchone()
    return row


def _text(row: sqlite3.Row) -> str:
    return " ".join(part for part in (row["category"], row["preference"], row["context"]) if part)


def _load(conn: sqlite3.Connection, rows: list[sqlite3.Row]) -> list[Preference]:
    linked = _linked(conn, [row["id"] for row in rows])
    return [
        Preference(
            id=row["id"],
            category=row["category"],
            preference=row["preference"],
            context=row["context"],
            confidence=row["confidence"],
            linked_entities=linked.get(row["id"], []),
            metadata=load_json(row["metadata"]),
            user_identifier=row["user_identifier"],
            created_at=from_micros(row["created_at"]),
            superseded_at=None
            if row["superseded_at"] is None
            else from_micros(row["superseded_at"]),
            superseded_by=row["superseded_by"],
        )
        for row in rows
    ]


def _linked(conn: sqlite3.Connection, ids: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            "SELECT preference_id, entity_id FROM preference_entities "
            f"WHERE preference_id IN ({marks}) ORDER BY preference_id, position",
            chunk,
        )
        for row in rows:
            found.setdefault(row[0], []).append(row[1])
    return found
