"""Search: PostgreSQL full text picks candidates, the shared scale scores them.

Each message's ``words`` column is a tsvector of its words split exactly as
:mod:`memory_core.scoring` splits them, so the GIN index finds precisely the messages that
contain a query word. The best :func:`~memory_core.scoring.candidate_pool` of them in
scope (by ``ts_rank``) are scored with :func:`~memory_core.scoring.text_score` from the
query and the content alone, best first, equal scores the message written last first (as
on the embedded backend); ``threshold`` and ``limit`` apply after scoring.

With a query embedding the search is hybrid, as on the embedded backend: candidates are
the text matches plus the messages in scope with a stored embedding of positive cosine
similarity; each scores ``max(text, cosine)``, the cosine computed here from the exact
stored values. Where the store has the pgvector column (see :mod:`.vector`), pgvector's
``<=>`` picks the nearest :func:`~memory_core.scoring.candidate_pool` of them in SQL;
otherwise every embedding in scope is read and compared here (brute force).

A message whose words fill more than one tsvector keeps the rest in ``message_words``
(see :func:`~.codec.word_parts`): those rows find it too, after the messages the main
index ranks.

Metadata filters are applied in SQL on the JSONB column, key by key with JSONB equality
(which is the library's type-exact rule), and checked again on the exact stored metadata.
A document with a NUL is stored escaped in a one-element array (see
:func:`~.codec.store_metadata`): a filter compares it with its key and value escaped the
same way, so every message is filtered in SQL and no candidate is taken only to be
dropped after it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from psycopg.types.json import Jsonb

from memory_core.store import Message, candidate_pool, matches, query_terms, text_score
from memory_core.store import requests as rq

from . import conversations
from . import vector as vector_module
from .codec import holds_nul, load_metadata, sql_int, store_json, store_text, tsquery
from .messages import FROM
from .rows import MESSAGE_COLUMNS, read_messages, safe_content
from .tx import Tx


async def search(tx: Tx, req: rq.SearchMessages) -> list[Message]:
    """The ``search_messages`` hook (best first, each with ``score``)."""
    scope = await _scope(tx, req)
    if scope is None:
        return []
    where, params = scope
    terms = query_terms(req.query)
    pool = candidate_pool(req.limit)
    scored: dict[int, tuple[float, tuple[Any, ...]]] = {}
    if terms:
        query = tsquery(terms)
        rows = await tx.rows(
            _TEXT.replace("{where}", where),
            [query, query, *params, sql_int(pool), query, query, *params, sql_int(pool)],
        )
        for row in rows:
            score = text_score(terms, safe_content(row[3], row[4]))
            if score > 0.0 and _kept(row, req):
                scored[row[10]] = (score, row)
    if req.query_embedding is not None:
        await _vector_hits(tx, req, req.query_embedding, where, params, scored)
    # equal scores: the message written last first, as on the embedded backend
    ranked = sorted(scored.items(), key=lambda hit: (-hit[1][0], -hit[0]))
    if req.threshold is not None:
        ranked = [hit for hit in ranked if hit[1][0] >= req.threshold]
    kept = ranked[: req.limit]
    return read_messages([row for _, (_, row) in kept], [score for _, (score, _) in kept])


def _kept(row: tuple[Any, ...], req: rq.SearchMessages) -> bool:
    if not req.metadata_filters:
        return True
    try:
        metadata = load_metadata(row[5])
    except ValueError:  # another program's (see rows.checked_fields): matches nothing
        return False
    return matches(metadata, req.metadata_filters)


# The best of the main index by rank, then those only message_words finds.
_TEXT = (
    f"(SELECT {MESSAGE_COLUMNS}, 0 AS arm, ts_rank(m.words, %s::tsquery) AS rank {FROM} "
    "WHERE m.words @@ %s::tsquery AND {where} ORDER BY rank DESC, m.num ASC LIMIT %s) "
    f"UNION ALL (SELECT {MESSAGE_COLUMNS}, 1, 0 {FROM} WHERE m.id IN (SELECT w.message_id "
    "FROM {s}.message_words w WHERE w.words @@ %s::tsquery) AND NOT m.words @@ %s::tsquery "
    "AND {where} ORDER BY m.num ASC LIMIT %s) ORDER BY arm, rank DESC, num"
)


async def _scope(tx: Tx, req: rq.SearchMessages) -> tuple[str, list[object]] | None:
    where = "c.tenant = %s"
    params: list[object] = [conversations.tenant_key(req.tenant)]
    if req.target is not None:
        row = await conversations.require(tx, req.target)
        if row is None:
            return None
        where += " AND m.conversation_id = %s"
        params.append(row[0])
    for key, value in req.metadata_filters.items():
        escaped = [store_text(key), Jsonb(store_json(value))]
        if holds_nul(key) or holds_nul(value):  # only an escaped document holds one
            where += " AND m.metadata_doc -> 0 -> %s = %s"
            params += escaped
        else:
            where += " AND (m.metadata_doc -> %s = %s OR m.metadata_doc -> 0 -> %s = %s)"
            params += [key, Jsonb(value), *escaped]
    return where, params


async def _vector_hits(
    tx: Tx,
    req: rq.SearchMessages,
    vector: Sequence[float],
    where: str,
    params: list[object],
    scored: dict[int, tuple[float, tuple[Any, ...]]],
) -> None:
    norm = math.sqrt(sum(x * x for x in vector))
    if not norm:
        return
    if tx.vector_schema is not None:
        query = vector_module.literal(vector)
        if query is None:
            return  # not finite: no similarity is positive
        pool = candidate_pool(req.limit)
        rows = await vector_module.nearest(tx, MESSAGE_COLUMNS, FROM, where, params, query, pool)
    else:
        rows = await tx.rows(
            f"SELECT {MESSAGE_COLUMNS} {FROM} WHERE m.embedding IS NOT NULL AND {where}", params
        )
    for row in rows:
        stored = row[7]
        if stored is None or len(stored) != len(vector) or not _kept(row, req):
            continue
        similarity = _cosine(stored, vector, norm)
        if similarity > 0:
            best = max(scored.get(row[10], (0.0, row))[0], similarity)
            scored[row[10]] = (best, row)


def _cosine(stored: Sequence[float], query: Sequence[float], query_norm: float) -> float:
    norm = math.sqrt(sum(x * x for x in stored))
    if not norm:
        return 0.0
    dot = sum(a * b for a, b in zip(stored, query, strict=True))
    return min(dot / (norm * query_norm), 1.0)
