"""Search: FTS5 full text, plus brute-force vector similarity when an embedder is set.

Text score: :func:`memory_core.scoring.text_score`, a function of the query and the content
alone, so ``threshold`` means the same on every backend. FTS5 only picks the candidates:
the best :func:`~memory_core.scoring.candidate_pool` matches in scope by bm25 (whose
statistics cover the whole index) are scored, and the rest are not considered.

With a query embedding the search is *hybrid*: candidates are the text matches plus every
message in scope whose stored embedding has a positive cosine similarity with the query;
each candidate scores ``max(text score, max(cosine, 0))``. Messages stored without an
embedding are still found by text, and unrelated messages (cosine <= 0) are not returned.
Scope (tenant, conversation) and metadata filters are applied in SQL before ranking, and
``threshold`` and ``limit`` after it.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence

from memory_core import Message
from memory_core import requests as rq
from memory_core.scoring import candidate_pool, query_terms, text_score

from . import conversations, messages
from .codec import unpack_vector
from .fts import fts_query

FROM_SCOPE = "FROM messages m JOIN conversations c ON c.id = m.conversation_id"


def search(conn: sqlite3.Connection, req: rq.SearchMessages) -> list[Message]:
    """The ``search_messages`` hook (best first, each with ``score``)."""
    scope = _scope(conn, req)
    if scope is None:
        return []
    query = fts_query(req.query)
    pool = candidate_pool(req.limit)
    if req.query_embedding is None:
        if query is None:
            return []
        ranked = _text_hits(conn, query, req.query, scope, pool)
    else:
        scored = _hybrid_hits(conn, query, req.query, req.query_embedding, scope, pool)
        ranked = sorted(scored.items(), key=lambda hit: (-hit[1], hit[0]))
    if req.threshold is not None:
        ranked = [hit for hit in ranked if hit[1] >= req.threshold]
    return _load(conn, ranked[: req.limit])


# Where, its parameters, and for one conversation how many messages it has had (its
# ``next_seq - 1``, read with its row: an upper bound on its count), else ``None``.
Scope = tuple[str, list[object], int | None]

# Measured on SQLite 3.40 (files of 10k and 100k messages): looking one message up in
# the FTS5 index costs 13 to 22 times what one store-wide match costs, per query term
# (more as the index gains segments). A conversation is searched message by message only
# when the store holds more matches than this many per message and term.
LOOKUPS_PER_MATCH = 20


def _scope(conn: sqlite3.Connection, req: rq.SearchMessages) -> Scope | None:
    """SQL conditions for the tenant, conversation and metadata filters; ``None`` when the
    session has no conversation (an unknown ``conversation_id`` raises NotFoundError)."""
    where = "c.tenant = ?"
    params: list[object] = [conversations.tenant_key(req.tenant)]
    size: int | None = None
    if req.target is not None:
        row = conversations.require(conn, req.target)
        if row is None:
            return None
        where += " AND m.conversation_id = ?"
        params.append(row["id"])
        size = row["next_seq"] - 1
    if req.metadata_filters:
        where += " AND meta_match(m.metadata, ?)"
        params.append(json.dumps(req.metadata_filters))
    return where, params, size


# FTS drives the query: the MATERIALIZED CTE runs the MATCH once (with bm25), and each
# hit then finds its message by primary key. Written as a plain join, SQLite's planner
# may put the FTS table in the inner loop and run the MATCH once per message. bm25 only
# picks the candidates (the best ``?`` in scope, in C); their scores are computed from
# their content alone, in Python.
_TEXT_CANDIDATES = """
WITH hits AS MATERIALIZED (
    SELECT rowid AS num, bm25(messages_fts) AS rank FROM messages_fts
    WHERE messages_fts MATCH ?
)
SELECT m.num, m.content
FROM hits CROSS JOIN messages m ON m.num = hits.num
JOIN conversations c ON c.id = m.conversation_id
WHERE {where}
ORDER BY hits.rank ASC, m.num ASC
LIMIT ?
"""

# One conversation: its messages (by the UNIQUE (conversation_id, seq) index) come
# first, and each is looked up in the FTS5 index by rowid, so the cost follows the
# session, not the store's matches. CROSS JOIN keeps that order; bm25's statistics still
# cover the whole index, so ranks (and ties, by num) are those of the plan above.
_SESSION_CANDIDATES = """
SELECT m.num, m.content
FROM messages m CROSS JOIN messages_fts ON messages_fts.rowid = m.num
JOIN conversations c ON c.id = m.conversation_id
WHERE {where} AND messages_fts MATCH ?
ORDER BY bm25(messages_fts) ASC, m.num ASC
LIMIT ?
"""

_COUNT_MATCHES = """
SELECT count(*) FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? LIMIT ?)
"""


def _text_hits(
    conn: sqlite3.Connection,
    query: str,
    text: str,
    scope: Scope,
    pool: int,
) -> list[tuple[int, float]]:
    """The best ``pool`` matches in scope by bm25, scored on the shared scale, best first
    (equal scores in bm25 order); matches that score 0 (no query word is a word of the
    message, e.g. FTS5 folded a diacritic) are not hits."""
    terms = query_terms(text)
    cursor = conn.cursor()
    cursor.row_factory = None
    where, params, size = scope
    if size is not None and _many_matches(conn, query, size):
        sql, args = _SESSION_CANDIDATES, [*params, query, pool]
    else:
        sql, args = _TEXT_CANDIDATES, [query, *params, pool]
    rows = cursor.execute(sql.replace("{where}", where), args)
    scored = [
        (score, position, num)
        for position, (num, content) in enumerate(rows)
        if (score := text_score(terms, content)) > 0.0
    ]
    cursor.close()
    scored.sort(key=lambda hit: (-hit[0], hit[1]))
    return [(num, score) for score, _, num in scored]


def _many_matches(conn: sqlite3.Connection, query: str, size: int) -> bool:
    """Whether the whole store holds more matches of ``query`` than looking up a
    conversation of ``size`` messages one by one would cost; counting rowids stops at the
    bound, so it costs a small part of the lookups at most, never the store's matches."""
    bound = LOOKUPS_PER_MATCH * size * (query.count(" OR ") + 1)
    row = conn.execute(_COUNT_MATCHES, (query, bound + 1)).fetchone()
    return bool(row[0] > bound)


def _hybrid_hits(
    conn: sqlite3.Connection,
    query: str | None,
    text: str,
    vector: Sequence[float],
    scope: Scope,
    pool: int,
) -> dict[int, float]:
    scored = {} if query is None else dict(_text_hits(conn, query, text, scope, pool))
    where, params, _ = scope
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
