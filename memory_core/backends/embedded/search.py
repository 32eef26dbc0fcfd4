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
``threshold`` and ``limit`` after it. Equal scores rank the message written last first.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence

from memory_core.store import Message, candidate_pool, query_terms, text_score
from memory_core.store import requests as rq

from . import conversations, messages
from .codec import unpack_vector
from .fts import conversation_token, fts_query, tenant_token

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
        ranked = sorted(scored.items(), key=lambda hit: (-hit[1], -hit[0]))
    if req.threshold is not None:
        ranked = [hit for hit in ranked if hit[1] >= req.threshold]
    return _load(conn, ranked[: req.limit])


# Where, its parameters, and the FTS5 ``scope`` token to AND with the words: the
# conversation's, or across a multi-tenant store's sessions the tenant's (None: neither).
Scope = tuple[str, list[object], str | None]


def _scope(conn: sqlite3.Connection, req: rq.SearchMessages) -> Scope | None:
    """SQL conditions for the tenant, conversation and metadata filters; ``None`` when the
    session has no conversation (an unknown ``conversation_id`` raises NotFoundError)."""
    where = "c.tenant = ?"
    params: list[object] = [conversations.tenant_key(req.tenant)]
    token = None if not req.tenant else tenant_token(req.tenant)
    if req.target is not None:
        row = conversations.require(conn, req.target)
        if row is None:
            return None
        where += " AND m.conversation_id = ?"
        token = conversation_token(row["id"])
        params.append(row["id"])
    if req.metadata_filters:
        where += " AND meta_match(m.metadata, ?)"
        params.append(json.dumps(req.metadata_filters))
    return where, params, token


# FTS drives the query: the MATERIALIZED CTE runs the MATCH once (with bm25), and each
# hit then finds its message by primary key. Written as a plain join, SQLite's planner
# may put the FTS table in the inner loop and run the MATCH once per message. bm25 only
# picks the candidates (the best ``?`` in scope, in C); their scores are computed from
# their content alone, in Python. The ``scope`` column (the conversation's token) weighs
# nothing in bm25, so a conversation's ranks are those of a store-wide search.
_TEXT_CANDIDATES = """
WITH hits AS MATERIALIZED (
    SELECT rowid AS num, bm25(messages_fts, 1.0, 0.0) AS rank FROM messages_fts
    WHERE messages_fts MATCH ?
)
SELECT m.num, m.content
FROM hits CROSS JOIN messages m ON m.num = hits.num
JOIN conversations c ON c.id = m.conversation_id
WHERE {where}
ORDER BY hits.rank ASC, m.num ASC
LIMIT ?
"""


def match_expression(query: str, token: str | None) -> str:
    """The FTS5 expression: ``query``'s words in the text column; within one conversation
    or one tenant, AND its ``scope`` token (:mod:`.fts`), so FTS5 reads that scope's
    entries of each word's doclist (seeking through the rest), not every match in the
    store."""
    words = f"content : ({query})"
    if token is None:
        return words
    return f'scope : "{token}" AND {words}'


def _text_hits(
    conn: sqlite3.Connection,
    query: str,
    text: str,
    scope: Scope,
    pool: int,
) -> list[tuple[int, float]]:
    """The best ``pool`` matches in scope by bm25, scored on the shared scale, best first
    (equal scores: the message written last first); matches that score 0 (no query word
    is a word of the message, e.g. FTS5 folded a diacritic) are not hits."""
    terms = query_terms(text)
    cursor = conn.cursor()
    cursor.row_factory = None
    where, params, conversation = scope
    args = [match_expression(query, conversation), *params, pool]
    rows = cursor.execute(_TEXT_CANDIDATES.replace("{where}", where), args)
    scored = [(score, num) for num, content in rows if (score := text_score(terms, content)) > 0.0]
    cursor.close()
    scored.sort(key=lambda hit: (-hit[0], -hit[1]))
    return [(num, score) for score, num in scored]


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
