"""``search_messages`` on Neo4j: full-text hits plus, with an embedder, vector hits.

Everything runs in one read transaction: resolve the session (if any) and read the
scope's best full-text matches by Lucene score, the candidate pool
(:func:`memory_core.scoring.candidate_pool`; metadata filters matched exactly, in
Python), as one row; score each candidate on the shared scale from its content alone
(see :func:`_text_hits`), then load the messages kept. Lucene's score only picks the
candidates: it follows index-wide statistics, which every write anywhere in the database
moves.

With a query vector, vector hits (an exact cosine scan of the one conversation, or the
vector index for a search across sessions) are merged in (the higher score wins), then
the threshold and limit apply and the chosen messages are loaded. Equal scores rank the
message written last first, as on the embedded and PostgreSQL backends. Scope
(conversation, tenant) is applied in Cypher.

Why the union of the top-``limit`` of each list is enough: a message whose final score
comes from, say, its vector score would be beaten by every message with a higher vector
score, so it must itself be among the top ``limit`` vector hits.
"""

from __future__ import annotations

from typing import Any

from neo4j import AsyncManagedTransaction

from memory_core.store import Message, NotFoundError, candidate_pool, query_terms, text_score
from memory_core.store import requests as rq

from . import cypher
from .records import read_message, session_params
from .schema import FULLTEXT_INDEX
from .scoring import lucene_queries, metadata_matches
from .session import rows

VECTOR_K_START = 50
VECTOR_K_MAX = 100_000


async def search(
    tx: AsyncManagedTransaction, req: rq.SearchMessages, vector_index: str | None
) -> list[Message]:
    """The ranked messages for ``req`` (best first, each with ``score``)."""
    vector = req.query_embedding
    with_vector = vector is not None and any(vector)
    target = req.target
    written: Written = {}
    if not with_vector and target is not None and target.session_id is not None:
        # Text only, in a session: resolving the session is part of the one statement.
        text = await _text_hits(tx, req, None, written, session=target)
        return await _load(tx, _best(text, req, written))
    conversation_id: str | None = None
    if target is not None:
        conversation_id = await _resolve(tx, target)
        if conversation_id is None:
            return []
    text = await _text_hits(tx, req, conversation_id, written)
    if not with_vector:
        return await _load(tx, _best(text, req, written))
    hits = dict(text)
    if conversation_id is not None:
        found = await rows(
            tx, cypher.VECTOR_HITS_CONVERSATION, conversation_id=conversation_id, vector=vector
        )
        _merge(hits, found, req.metadata_filters, written)
    elif vector_index is not None:
        await _index_hits(tx, req, vector_index, hits, written)
    return await _load(tx, _best(list(hits.items()), req, written))


TEXT_K_MAX = 2**31 - 1
Written = dict[str, tuple[int, int]]
"""Message id → when it was written (:data:`.cypher.WRITTEN`), for ranking equal scores."""


async def _text_hits(
    tx: AsyncManagedTransaction,
    req: rq.SearchMessages,
    conversation_id: str | None,
    written: Written,
    *,
    session: rq.Target | None = None,
) -> list[tuple[str, float]]:
    """Every text hit among the candidates as (message id, score), best first (equal
    scores in Lucene's order), each one's write order put in ``written``; ``threshold``
    and ``limit`` are the caller's.

    The candidates are the best :func:`~memory_core.scoring.candidate_pool` matches in
    scope that pass the metadata filters (applied exactly, in Python), by Lucene score;
    the Lucene score only picks them (it follows index-wide statistics), each is scored
    from its content alone. The index is asked for its best ``k`` matches, and for four
    times as many whenever those held fewer candidates than the pool while more matches
    may exist (matches of other conversations, filtered ones). A query of more words than
    one Lucene query holds is asked in parts; a message several parts find keeps its best
    Lucene score.
    """
    queries = lucene_queries(req.query)
    if not queries:
        return []
    params: dict[str, Any] = {"index": FULLTEXT_INDEX, "tenant": req.tenant}
    if session is not None:
        statement = cypher.TEXT_CANDIDATES_SESSION
        params.update(session_params(session))
    else:
        statement = cypher.TEXT_CANDIDATES
        params["conversation_id"] = conversation_id
    pool = candidate_pool(req.limit)
    found: dict[str, list[Any]] = {}
    for query in queries:
        for hit in await _pool_hits(tx, statement, {**params, "lucene": query}, req, pool):
            kept = found.setdefault(str(hit[0]), hit)
            if float(hit[3]) > float(kept[3]):
                found[str(hit[0])] = hit
    hits = list(found.values())
    # Lucene's order, made explicit (a stable sort: equal Lucene scores keep their order).
    hits.sort(key=lambda hit: -float(hit[3]))
    terms = query_terms(req.query)
    scored: list[tuple[float, int, str]] = []
    for position, (message_id, content, _, _, when) in enumerate(hits[:pool]):
        score = text_score(terms, content if isinstance(content, str) else "")
        if score > 0.0:
            scored.append((score, position, str(message_id)))
            written[str(message_id)] = (int(when[0]), int(when[1]))
    scored.sort(key=lambda entry: (-entry[0], entry[1]))
    return [(message_id, score) for score, _, message_id in scored]


async def _pool_hits(
    tx: AsyncManagedTransaction,
    statement: str,
    params: dict[str, Any],
    req: rq.SearchMessages,
    pool: int,
) -> list[list[Any]]:
    """The candidates of one Lucene query: its best ``pool`` matches in scope that pass
    the metadata filters, asking the index for four times as many while it may hold
    more."""
    filters = req.metadata_filters
    k = pool
    while True:
        seen, hits = await _candidates(tx, statement, {**params, "k": k})
        if filters:
            hits = [hit for hit in hits if metadata_matches(hit[2], filters)]
        if len(hits) >= pool or seen < k or k >= TEXT_K_MAX:
            return hits
        k = min(k * 4, TEXT_K_MAX)


async def _candidates(
    tx: AsyncManagedTransaction, statement: str, params: dict[str, Any]
) -> tuple[int, list[list[Any]]]:
    """One candidate statement: how many matches the index yielded, and those in scope
    as ``[id, content, metadata, Lucene score, written]`` (see :data:`.cypher.WRITTEN`)."""
    [row] = await rows(tx, statement, **params)
    return int(row["seen"]), list(row["hits"])


def _best(
    hits: list[tuple[str, float]], req: rq.SearchMessages, written: Written
) -> list[tuple[str, float]]:
    """The first ``limit`` of ``hits`` at or above the threshold, best first; equal scores
    rank the message written last first, as on the other backends (by its time, then its
    place in its conversation)."""
    if req.threshold is not None:
        hits = [hit for hit in hits if hit[1] >= req.threshold]

    def rank(hit: tuple[str, float]) -> tuple[float, int, int]:
        when = written.get(hit[0], (0, -1))
        return (-hit[1], -when[0], -when[1])

    return sorted(hits, key=rank)[: req.limit]


async def _resolve(tx: AsyncManagedTransaction, target: rq.Target) -> str | None:
    if target.session_id is not None:
        found = await rows(tx, cypher.RESOLVE_SESSION_ID, **session_params(target))
        return found[0]["id"] if found else None
    found = await rows(
        tx, cypher.RESOLVE_ID_ID, conversation_id=str(target.conversation_id), tenant=target.tenant
    )
    if not found or found[0]["id"] is None:
        raise NotFoundError.missing(
            "bolt", "conversation", target.conversation_id, argument="conversation_id"
        )
    return str(found[0]["id"])


async def _index_hits(
    tx: AsyncManagedTransaction,
    req: rq.SearchMessages,
    index: str,
    hits: dict[str, float],
    written: Written,
) -> None:
    """Ask the vector index for more neighbours until ``limit`` of them are in scope and
    pass the filters, or the index has nothing closer to give."""
    k = max(VECTOR_K_START, candidate_pool(req.limit))
    while True:
        found = await rows(
            tx,
            cypher.VECTOR_HITS_INDEX,
            index=index,
            k=k,
            vector=req.query_embedding,
            tenant=req.tenant,
        )
        filters = req.metadata_filters
        kept = [r for r in found if r["keep"] and metadata_matches(r["metadata"], filters)]
        exhausted = len(found) < k or k >= VECTOR_K_MAX or (found and found[-1]["near"] <= 0)
        if len(kept) >= req.limit or exhausted:
            _merge(hits, kept, {}, written)
            return
        k *= 4


def _merge(
    hits: dict[str, float], found: list[dict[str, Any]], filters: dict[str, Any], written: Written
) -> None:
    for row in found:
        if row["score"] > 0 and metadata_matches(row["metadata"], filters):
            score = min(float(row["score"]), 1.0)
            hits[row["id"]] = max(hits.get(row["id"], 0.0), score)
            when = row["written"]
            written[row["id"]] = (int(when[0]), int(when[1]))


async def _load(tx: AsyncManagedTransaction, ranked: list[tuple[str, float]]) -> list[Message]:
    if not ranked:
        return []
    found = await rows(tx, cypher.LOAD_MESSAGES, ids=[message_id for message_id, _ in ranked])
    by_id = {str(row["message"]["id"]): row for row in found}
    messages: list[Message] = []
    for message_id, score in ranked:
        row = by_id.get(message_id)
        if row is None:
            continue
        message = read_message(
            row["message"],
            conversation_id=row["conversation_id"],
            session_id=row["session_id"],
            score=score,
        )
        if message is not None:
            messages.append(message)
    return messages
