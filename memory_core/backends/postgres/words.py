"""The words of long-term records, and how a search ranks them.

Entities, preferences and facts keep their distinct words in a ``words`` column
(``text[]``, GIN-indexed): the words :func:`memory_core.scoring.query_terms` finds in the
record's text, each as :func:`~.codec.lexeme` indexes it. A search reads the records in
scope sharing a word with the query, those sharing most first (then the newest), at most
:func:`~memory_core.scoring.candidate_pool` of them, and scores each in Python with
:func:`~memory_core.scoring.text_score` from its text alone: the same candidates and
scores as the embedded store's word index. With a query embedding, the records of
positive cosine similarity join (the larger of the two scores); where the store uses
pgvector, its ``<=>`` picks the nearest candidates in SQL (:func:`.vector.nearest_cast`),
else every embedding in scope is compared here.

Rows of every kind start with the record's id and creation time (:func:`best` orders by
them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import psycopg
from psycopg import AsyncConnection

from memory_core.store import candidate_pool, query_terms, text_score

from . import vector as vector_module
from .codec import lexeme, load_optional, load_text, micros
from .tx import Tx

Row = tuple[Any, ...]
Found = dict[str, tuple[Row, float]]
# Entities whose words one statement of index_entities fills.
_BATCH = 1000


def of(*texts: str | None) -> list[str]:
    """The distinct words of ``texts`` (joined by spaces), as the index holds them."""
    return [lexeme(word) for word in query_terms(" ".join(t for t in texts if t))]


def wanted(terms: Sequence[str]) -> list[str]:
    """Query words as the index holds them."""
    return [lexeme(term) for term in terms]


def matching(columns: str, table: str, where: str, alias: str = "r") -> str:
    """SQL selecting ``columns`` of the rows of ``table`` (as ``alias``) meeting ``where``
    that hold a word of the query, most shared words first, then the newest. Parameters:
    the query words (:func:`wanted`), ``where``'s, the query words again, the pool."""
    return (
        f"SELECT {columns} FROM {{s}}.{table} {alias} "
        f"WHERE {alias}.words && %s::text[] AND {where} ORDER BY (SELECT count(*) "
        f"FROM unnest({alias}.words) w WHERE w = ANY(%s::text[])) DESC, "
        f"{alias}.created_at DESC, {alias}.id LIMIT %s"
    )


def by_text(rows: Iterable[Row], terms: list[str], text_of: Callable[[Row], str]) -> Found:
    """Each row (by id) with its text score; rows scoring 0 are left out."""
    found: Found = {}
    for row in rows:
        score = text_score(terms, text_of(row))
        if score > 0:
            found[row[0]] = (row, score)
    return found


def add_vector_hits(found: Found, rows: Iterable[Row], vector: Sequence[float]) -> None:
    """Raise each row's score to its cosine with ``vector`` (the row's last column holds
    its embedding) when that is higher and positive; embeddings of another length (another
    model) are skipped."""
    norm = math.sqrt(sum(x * x for x in vector))
    if not norm:
        return
    for row in rows:
        stored = row[-1]
        if stored is None or len(stored) != len(vector):
            continue
        length = math.sqrt(sum(x * x for x in stored))
        if not length:
            continue
        dot = sum(a * b for a, b in zip(stored, vector, strict=True))
        similarity = min(dot / (length * norm), 1.0)
        before = found.get(row[0])
        if similarity > 0 and (before is None or before[1] < similarity):
            found[row[0]] = (row[:-1], similarity)


async def vector_hits(
    tx: Tx,
    columns: str,
    table: str,
    scope: tuple[str, list[object]],
    vector: Sequence[float],
    limit: int,
    found: Found,
) -> None:
    """Add the rows of ``table`` (alias ``r``) in ``scope`` (a condition and its
    parameters) whose embedding is close to ``vector`` (see :func:`add_vector_hits`)."""
    where, params = scope
    columns += ", r.embedding"
    if tx.vector_schema is not None:
        query = vector_module.literal(vector)
        if query is None:
            return  # not finite: no similarity is positive
        pool = candidate_pool(limit)
        rows = await vector_module.nearest_cast(tx, columns, table, where, params, query, pool)
    else:
        rows = await tx.rows(
            f"SELECT {columns} FROM {{s}}.{table} r WHERE r.embedding IS NOT NULL AND {where}",
            params,
        )
    add_vector_hits(found, rows, vector)


def best(found: Found, limit: int) -> list[tuple[Row, float]]:
    """The ``limit`` best, then the newest, then by id."""
    return sorted(found.values(), key=lambda hit: (-hit[1], -micros(hit[0][1]), hit[0][0]))[:limit]


def joined(*parts: str | None) -> str:
    """Stored (escaped) text columns as one text to score, as given, the missing ones
    left out."""
    return " ".join(load_text(part) for part in parts if part is not None)


async def index_entities(conn: AsyncConnection[Any], schema: str) -> None:
    """Fill the words of every entity that has none (a store from before version 3, a
    schema applied as SQL, rows another program wrote), in batches, inside the caller's
    transaction. A role that may not update entities leaves them as they are."""
    try:
        async with conn.transaction():  # a savepoint: a refusal keeps the migrations
            while await _index_batch(conn, schema):
                pass
    except psycopg.errors.InsufficientPrivilege:
        return


async def _index_batch(conn: AsyncConnection[Any], schema: str) -> int:
    cursor = await conn.execute(
        f"SELECT id, name, description FROM {schema}.entities WHERE words IS NULL LIMIT %s",
        (_BATCH,),
    )
    rows = await cursor.fetchall()
    if rows:
        await cursor.executemany(
            f"UPDATE {schema}.entities SET words = %s::text[] WHERE id = %s",
            [(of(load_text(name), load_optional(text)), ident) for ident, name, text in rows],
        )
    return len(rows)
