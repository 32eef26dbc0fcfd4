"""Searching long-term records (preferences, facts, entities) on Neo4j.

The same rules as message search (:mod:`memory_core.backends.bolt.search`) and as the
embedded store: a full-text index picks candidates, the best
:func:`~memory_core.scoring.candidate_pool` of the scope by Lucene's rank; each is scored
in Python by :func:`~memory_core.scoring.text_score` over its searchable properties
joined by spaces (a score of 0 is no hit). With a query vector, the scope's records with
an embedding of its size are scored by their cosine (computed here, as the embedded store
does), and a record keeps the higher of its two scores. Then best first, newest first
among equals, then by id.

The Lucene query asks for :func:`~memory_core.scoring.engine_terms` (the query's
whitespace-separated terms, and the words of a term that is more than one), each a quoted
phrase (so no character of the query is a Lucene operator), in every property of the
index: Lucene's standard analyzer keeps ``Ada's`` and ``3.5`` as one token, and the score
counts ``ada``, so both forms are asked for.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from neo4j import AsyncManagedTransaction

from memory_core.store import candidate_pool, engine_terms, query_terms, text_score

from .records import to_datetime
from .scoring import MAX_CLAUSES, lucene_phrase
from .session import rows

T = TypeVar("T")
TEXT_K_MAX = 2**31 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Kind:
    """A searchable label's full-text index and the properties scored (in order);
    ``vector`` holds its embedding, ``created`` its creation time (the tie-break)."""

    index: str
    fields: tuple[str, ...]
    vector: str = "embedding"
    created: str = "created_at"


@dataclass(frozen=True)
class Scope:
    """Which ``n`` of the kind a search may return: ``match``, Cypher binding ``n`` to
    each record of the scope (index-backed where it can be); ``keep``, the same as a
    predicate on an ``n`` the full-text index yielded; ``params``, their parameters."""

    match: str
    keep: str
    params: dict[str, Any] = field(default_factory=dict)


def lucene_queries(text: str, fields: int) -> list[str]:
    """Lucene queries that together match any term of ``text`` (``engine_terms``) in any
    of ``fields`` properties (none: it has no word). A long query is cut into several,
    each within Lucene's limit of :data:`MAX_CLAUSES` clauses (a phrase searched in
    ``fields`` properties counts ``1 + 2 * fields``)."""
    if not query_terms(text):
        return []
    phrases = [lucene_phrase(term) for term in engine_terms(text)]
    size = max(1, MAX_CLAUSES // (1 + 2 * fields))
    return [" OR ".join(phrases[i : i + size]) for i in range(0, len(phrases), size)]


def _text_statement(kind: Kind, scope: Scope) -> str:
    values = ", ".join(f"n.{name}" for name in kind.fields)
    return f"""
CALL db.index.fulltext.queryNodes($index, $lucene, {{limit: $k}}) YIELD node AS n
WITH n, n.id IS NOT NULL AND {scope.keep} AS kept
RETURN count(*) AS seen,
       collect(CASE WHEN kept THEN [n.id, [{values}], n.{kind.created}] END) AS hits
"""


def _vector_statement(kind: Kind, scope: Scope) -> str:
    # Cosine in Cypher only picks the candidates (a zero vector or another size would
    # make it fail, so they are left out first); the score is computed in Python.
    return f"""
{scope.match}
WITH n, n.{kind.vector} AS stored
WHERE n.id IS NOT NULL AND stored IS :: LIST<FLOAT NOT NULL>
  AND size(stored) = size($vector) AND any(x IN stored WHERE x <> 0.0)
WITH n, stored, vector.similarity.cosine(stored, $vector) AS similarity
ORDER BY similarity DESC LIMIT $k
RETURN n.id AS id, stored AS embedding, n.{kind.created} AS created_at
"""


# id -> (score, created_at in microseconds)
Found = dict[str, tuple[float, int]]


async def ranked(
    tx: AsyncManagedTransaction,
    kind: Kind,
    scope: Scope,
    query: str,
    vector: Sequence[float] | None,
    limit: int,
) -> list[tuple[str, float]]:
    """The ids of the best ``limit`` records of ``scope`` for ``query`` (and ``vector``),
    each with its score, best first."""
    found = await _text_hits(tx, kind, scope, query, limit)
    if vector is not None:
        await vector_hits(tx, kind, scope, vector, limit, found)
    ordered = sorted(found.items(), key=lambda hit: (-hit[1][0], -hit[1][1], hit[0]))
    return [(ident, score) for ident, (score, _) in ordered[:limit]]


async def _text_hits(
    tx: AsyncManagedTransaction, kind: Kind, scope: Scope, query: str, limit: int
) -> Found:
    statement = _text_statement(kind, scope)
    pool = candidate_pool(limit)
    terms = query_terms(query)
    found: Found = {}
    for lucene in lucene_queries(query, len(kind.fields)):
        for ident, values, created in await _candidates(tx, statement, scope, kind, lucene, pool):
            text = " ".join(value for value in values if isinstance(value, str))
            score = text_score(terms, text)
            if score > 0:
                found[str(ident)] = (score, micros(created))
    return found


async def _candidates(
    tx: AsyncManagedTransaction, statement: str, scope: Scope, kind: Kind, lucene: str, pool: int
) -> list[list[Any]]:
    """The best ``pool`` matches of ``lucene`` in scope, by Lucene's rank: the index is
    asked for four times as many whenever those held fewer while more may exist."""
    k = pool
    while True:
        params = {**scope.params, "index": kind.index, "lucene": lucene, "k": k}
        [row] = await rows(tx, statement, **params)
        hits: list[list[Any]] = row["hits"]
        if len(hits) >= pool or row["seen"] < k or k >= TEXT_K_MAX:
            return hits[:pool]
        k = min(k * 4, TEXT_K_MAX)


async def vector_hits(
    tx: AsyncManagedTransaction,
    kind: Kind,
    scope: Scope,
    vector: Sequence[float],
    limit: int,
    found: Found,
) -> None:
    """Raise each record's score to its cosine with ``vector`` when that is higher and
    positive (the embedded store's rule)."""
    norm = math.sqrt(sum(x * x for x in vector))
    if not norm:
        return
    params = {**scope.params, "vector": list(vector), "k": candidate_pool(limit)}
    for row in await rows(tx, _vector_statement(kind, scope), **params):
        stored: list[float] = row["embedding"]
        length = math.sqrt(sum(x * x for x in stored))
        if not length:
            continue
        similarity = min(
            sum(a * b for a, b in zip(stored, vector, strict=True)) / (length * norm), 1.0
        )
        ident = str(row["id"])
        before = found.get(ident)
        if similarity > 0 and (before is None or before[0] < similarity):
            found[ident] = (similarity, micros(row["created_at"]))


def micros(value: Any) -> int:
    """A creation time as microseconds since 1970 (one that cannot be read: the oldest)."""
    moment = to_datetime(value)
    if moment is None:
        return -(2**63)
    return (moment - _EPOCH) // timedelta(microseconds=1)


async def load_ranked(
    tx: AsyncManagedTransaction,
    best: list[tuple[str, float]],
    statement: str,
    convert: Callable[[dict[str, Any]], T],
    **params: Any,
) -> list[T]:
    """The records ``best`` names, read by ``statement`` (``$ids``; one column), as
    models in that order, each with its ``score`` (one deleted meanwhile is left out)."""
    if not best:
        return []
    loaded = await rows(tx, statement, ids=[ident for ident, _ in best], **params)
    by_id = {str(props["id"]): props for row in loaded for props in row.values()}
    hits = []
    for ident, score in best:
        if ident in by_id:
            model = convert(by_id[ident])
            model.__dict__["score"] = score
            hits.append(model)
    return hits
