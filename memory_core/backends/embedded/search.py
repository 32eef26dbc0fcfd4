"""Search: FTS5 full text, plus brute-force vector similarity when an embedder is set.

Text score: :func:`memory_core.scoring.text_score` with ``s = -bm25`` — the share of query
words found, scaled into 0.5..1 by bm25 — so ``threshold`` means the same on every backend
even though bm25's statistics cover the whole index.

With a query embedding the search is *hybrid*: candidates are the text matches plus every
message in scope whose stored embedding has a positive cosine similarity with the query;
each candidate scores ``max(text score, max(cosine, 0))``. Messages stored without an
embedding are still found by text, and unrelated messages (cosine <= 0) are not returned.
Scope (tenant, conversation) and metadata filters are applied in SQL before ranking, and
``threshold`` and ``limit`` after it.
"""

from __future__ import annotations

import heapq
import json
import math
import sqlite3
from collections.abc import Sequence

from memory_core import Message
from memory_core import requests as rq
from memory_core.scoring import query_terms, text_score

from . import conversations, messages
from .codec import unpack_vector
from .fts import fts_query

FROM_SCOPE = "FROM messages m JOIN conversations c ON c.id = m.conversation_id"


def search(conn: sqlite3.Connection, req: rq.SearchMessages) -> list[Message]:
    """The ``search_messages`` hook (best first, each with ``score``)."""
    scope = _scope(conn, req)
    if scope is None:
        return []
    where, params = scope
    query = fts_query(req.query)
    if req.query_embedding is None:
        if query is None:
            return []
        ranked = _ranked_text_hits(conn, query, req, where, params)
    else:
        scored = _hybrid_hits(conn, query, req.query, req.query_embedding, where, params)
        ranked = sorted(scored.items(), key=lambda hit: (-hit[1], hit[0]))
        if req.threshold is not None:
            ranked = [hit for hit in ranked if hit[1] >= req.threshold]
    return _load(conn, ranked[: req.limit])


def _scope(conn: sqlite3.Connection, req: rq.SearchMessages) -> tuple[str, list[object]] | None:
    """SQL conditions for the tenant, conversation and metadata filters; ``None`` when the
    session has no conversation (an unknown ``conversation_id`` raises NotFoundError)."""
    where = "c.tenant = ?"
    params: list[object] = [conversations.tenant_key(req.tenant)]
    if req.target is not None:
        row = conversations.require(conn, req.target)
        if row is None:
            return None
        where += " AND m.conversation_id = ?"
        params.append(row["id"])
    if req.metadata_filters:
        where += " AND meta_match(m.metadata, ?)"
        params.append(json.dumps(req.metadata_filters))
    return where, params


# FTS drives the query: the MATERIALIZED CTE runs the MATCH once (with bm25), and each
# hit then finds its message by primary key. Written as a plain join, SQLite's planner
# may put the FTS table in the inner loop and run the MATCH once per message. Every hit
# is scored in SQL (coverage can rank a lower-bm25 hit above a higher one, so a LIMIT
# on bm25 order alone could drop a better hit), then threshold, order and limit apply.
_TEXT_HITS = """
WITH hits AS MATERIALIZED (
    SELECT rowid AS num, bm25(messages_fts) AS rank FROM messages_fts
    WHERE messages_fts MATCH ?
), scored AS (
    SELECT m.num AS num, mc_text_score(m.content, -hits.rank) AS score
    FROM hits CROSS JOIN messages m ON m.num = hits.num
    JOIN conversations c ON c.id = m.conversation_id
    WHERE {where}
)
SELECT num, score FROM scored WHERE ? IS NULL OR score >= ?
ORDER BY score DESC, num ASC LIMIT ?
"""


# Text-only search streams the hits in bm25 order (best first; ties by ``num``) and
# stops reading once no later hit can enter the top ``limit``: a hit with raw relevance
# s scores at most 0.5 + 0.5 * s / (1 + s) (full coverage). SQLite still ranks every
# match by bm25 in C, but only the hits read are scored in Python.
_TEXT_STREAM = """
WITH hits AS MATERIALIZED (
    SELECT rowid AS num, bm25(messages_fts) AS rank FROM messages_fts
    WHERE messages_fts MATCH ?
)
SELECT m.num, m.content, -hits.rank AS raw
FROM hits CROSS JOIN messages m ON m.num = hits.num
JOIN conversations c ON c.id = m.conversation_id
WHERE {where}
ORDER BY hits.rank ASC, m.num ASC
"""


def _ranked_text_hits(
    conn: sqlite3.Connection,
    query: str,
    req: rq.SearchMessages,
    where: str,
    params: list[object],
) -> list[tuple[int, float]]:
    """The best ``req.limit`` text hits at or above the threshold, best first (equal
    scores in bm25 order)."""
    terms = query_terms(req.query)
    threshold = req.threshold
    kept: list[tuple[float, int, int]] = []  # a min-heap of (score, -position, num)
    cursor = conn.cursor()
    cursor.row_factory = None
    rows = cursor.execute(_TEXT_STREAM.replace("{where}", where), [query, *params])
    for position, (num, content, raw) in enumerate(rows):
        strength = max(raw, 0.0)
        ceiling = 0.5 + 0.5 * strength / (1.0 + strength)
        if (len(kept) >= req.limit and kept[0][0] >= ceiling) or (
            threshold is not None and ceiling < threshold
        ):
            break
        score = text_score(terms, content, raw)
        if threshold is not None and score < threshold:
            continue
        entry = (score, -position, num)
        if len(kept) < req.limit:
            heapq.heappush(kept, entry)
        elif entry[:2] > kept[0][:2]:
            heapq.heapreplace(kept, entry)
    cursor.close()
    kept.sort(key=lambda entry: (-entry[0], -entry[1]))
    return [(num, score) for score, _, num in kept]


def _text_hits(
    conn: sqlite3.Connection, query: str, text: str, where: str, params: list[object]
) -> dict[int, float]:
    """Every text hit in scope with its score (for hybrid ranking)."""
    _score_function(conn, text)
    sql = _TEXT_HITS.replace("{where}", where)
    found = conn.execute(sql, [query, *params, None, None, -1])
    return {row[0]: row[1] for row in found}


def _score_function(conn: sqlite3.Connection, text: str) -> None:
    """Register ``mc_text_score(content, raw)`` for this query's words on ``conn`` (the
    connection serves one call at a time, so the registration is this call's)."""
    terms = query_terms(text)
    conn.create_function(
        "mc_text_score", 2, lambda content, raw: text_score(terms, content, raw), deterministic=True
    )


def _hybrid_hits(
    conn: sqlite3.Connection,
    query: str | None,
    text: str,
    vector: Sequence[float],
    where: str,
    params: list[object],
) -> dict[int, float]:
    scored = {} if query is None else _text_hits(conn, query, text, where, params)
    norm = math.sqrt(sum(x * x for x in vector))
    if not norm:
        return scored
    sql = f"SELECT m.num, m.embedding {FROM_SCOPE} WHERE m.embedding IS NOT NULL AND {where}"
    for row in conn.execute(sql, params):
        stored = unpack_vector(row["embedding"])
        if stored is None or len(stored) != len(vector):
            continue  # embedded by a different model: not comparable
        similarity = _cosine(stored, vector, norm)
        if similarity > 0:
            scored[row["num"]] = max(scored.get(row["num"], 0.0), similarity)
    return scored


def _cosine(stored: Sequence[float], query: Sequence[float], query_norm: float) -> float:
    norm = math.sqrt(sum(x * x for x in stored))
    if not norm:
        return 0.0
    dot = sum(a * b for a, b in zip(stored, query, strict=True))
    return min(dot / (norm * query_norm), 1.0)


def _load(conn: sqlite3.Connection, ranked: list[tuple[int, float]]) -> list[Message]:
    by_num: dict[int, Message] = {}
    chunk = 500
    for start in range(0, len(ranked), chunk):
        nums = [num for num, _ in ranked[start : start + chunk]]
        marks = ",".join("?" * len(nums))
        sql = f"{messages.SELECT_MESSAGES} WHERE m.num IN ({marks})"
        rows = messages.fetch(conn, sql, nums)
        by_num.update(zip((r[0] for r in rows), messages.load(conn, rows), strict=True))
    found = []
    for num, score in ranked:
        message = by_num[num]
        message.__dict__["score"] = score  # built for this call only: set, not copied
        found.append(message)
    return found
