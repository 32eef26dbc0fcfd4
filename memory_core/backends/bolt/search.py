"""``search_messages`` on Neo4j: full-text hits plus, with an embedder, vector hits.

Everything runs in one read transaction: resolve the session (if any), then stream the
scope's full-text hits, best Lucene score first, scoring each on the shared
scale (and matching metadata filters exactly) in Python, and stop reading as soon as no
later hit can enter the best ``limit`` (see :func:`_text_top`).

With a query vector, vector hits (an exact cosine scan of the one conversation, or the
vector index for a search across sessions) are merged in (the higher score wins), then
the threshold and limit apply and the chosen messages are loaded. Scope (conversation,
tenant) is applied in Cypher.

Why the union of the top-``limit`` of each list is enough: a message whose final score
comes from, say, its vector score would be beaten by every message with a higher vector
score, so it must itself be among the top ``limit`` vector hits.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

from neo4j import AsyncManagedTransaction

from memory_core import Message, NotFoundError
from memory_core import requests as rq
from memory_core.scoring import query_terms, text_score

from . import cypher
from .records import session_uuid, to_message
from .schema import FULLTEXT_INDEX
from .scoring import lucene_query, metadata_matches
from .session import plain, rows

VECTOR_K_START = 50
VECTOR_K_MAX = 100_000


async def search(
    tx: AsyncManagedTransaction, req: rq.SearchMessages, vector_index: str | None
) -> list[Message]:
    """The ranked messages for ``req`` (best first, each with ``score``)."""
    vector = req.query_embedding
    with_vector = vector is not None and any(vector)
    target = req.target
    if not with_vector and target is not None and target.session_id is not None:
        # Text only, in a session: resolving the session is part of the one statement.
        return await _text_top(tx, req, None, session=target)
    conversation_id: str | None = None
    if target is not None:
        conversation_id = await _resolve(tx, target)
        if conversation_id is None:
            return []
    top = await _text_top(tx, req, conversation_id)
    if not with_vector:
        return top
    hits = {str(m.id): m.score or 0.0 for m in top}
    if conversation_id is not None:
        found = await rows(
            tx, cypher.VECTOR_HITS_CONVERSATION, conversation_id=conversation_id, vector=vector
        )
        _merge(hits, found, req.metadata_filters)
    elif vector_index is not None:
        await _index_hits(tx, req, vector_index, hits)
    ranked = sorted(hits.items(), key=lambda hit: (-hit[1], hit[0]))
    if req.threshold is not None:
        ranked = [hit for hit in ranked if hit[1] >= req.threshold]
    return await _load(tx, ranked[: req.limit])


TEXT_K_MAX = 2**31 - 1


def fetch_size(limit: int) -> int:
    """The first number of index hits asked for, and the records per network fetch of a
    text-only search: a little more than ``limit``, since the text stream usually stops
    just after its first ``limit`` rows."""
    return min(limit + 4, 1000)


def _ceiling(raw: float) -> float:
    """The best score any hit with Lucene score ``raw`` can get (full coverage)."""
    return 0.5 + 0.5 * raw / (1.0 + raw)


async def _text_top(
    tx: AsyncManagedTransaction,
    req: rq.SearchMessages,
    conversation_id: str | None,
    *,
    session: rq.Target | None = None,
) -> list[Message]:
    """The best ``limit`` text hits on the shared scale, best first.

    Hits stream in descending Lucene score ``s``, and no hit can score above
    ``0.5 + 0.5 * s / (1 + s)``; so once ``limit`` hits are kept and the worst of them
    reaches that ceiling for the next row, no later row can enter (ties keep Lucene's
    order) and the rest of the stream is discarded on the server. The index is asked for
    its best ``k`` hits, and for four times as many whenever those ran out first (hits
    of other conversations, filtered or low-coverage hits). Metadata filters are applied
    (exactly, in Python) before a hit counts.
    """
    query = lucene_query(req.query)
    if query is None:
        return []
    params: dict[str, Any] = {"index": FULLTEXT_INDEX, "lucene": query, "tenant": req.tenant}
    if session is not None:
        statement = cypher.TEXT_STREAM_SESSION
        params["session_id"] = session.session_id
        params["own_id"] = str(session_uuid(session.tenant, session.handle))
    else:
        statement = cypher.TEXT_STREAM
        params["conversation_id"] = conversation_id
    k = fetch_size(req.limit)
    while True:
        kept, complete = await _scan(tx, req, statement, {**params, "k": k})
        if complete or k >= TEXT_K_MAX:
            break
        k *= 4
    kept.sort(key=lambda entry: (-entry[0], -entry[1]))
    return [
        to_message(
            row["message"],
            conversation_id=row["conversation_id"],
            session_id=row["session_id"],
            score=score,
        )
        for score, _, row in kept
    ]


Kept = list[tuple[float, int, dict[str, Any]]]


async def _scan(
    tx: AsyncManagedTransaction, req: rq.SearchMessages, statement: str, params: dict[str, Any]
) -> tuple[Kept, bool]:
    """One pass over the best ``k`` hits: the kept ones (a min-heap of (score,
    -position, row)), and whether they are final (stopped early, or the index has no
    more than ``k`` hits)."""
    terms = query_terms(req.query)
    filters, threshold = req.metadata_filters, req.threshold
    result = await tx.run(statement, params)
    kept: Kept = []
    seen = 0
    previous = math.inf
    in_order = True
    stopped = False
    async for record in result:
        seen += 1
        raw = max(float(record["score"]), 0.0)
        in_order = in_order and raw <= previous
        previous = raw
        ceiling = _ceiling(raw)
        if in_order and (
            (len(kept) >= req.limit and kept[0][0] >= ceiling)
            or (threshold is not None and ceiling < threshold)
        ):
            stopped = True
            break
        props = record["message"]
        if props is None or (filters and not metadata_matches(props.get("metadata"), filters)):
            continue
        score = text_score(terms, props.get("content") or "", raw)
        if threshold is not None and score < threshold:
            continue
        entry = (score, -seen, plain(record))
        if len(kept) < req.limit:
            heapq.heappush(kept, entry)
        elif entry[:2] > kept[0][:2]:
            heapq.heapreplace(kept, entry)
    await result.consume()
    return kept, stopped or seen < params["k"]


async def _resolve(tx: AsyncManagedTransaction, target: rq.Target) -> str | None:
    if target.session_id is not None:
        own = str(session_uuid(target.tenant, target.session_id))
        found = await rows(
            tx,
            cypher.RESOLVE_SESSION_ID,
            session_id=target.session_id,
            own_id=own,
            tenant=target.tenant,
        )
        return found[0]["id"] if found else None
    found = await rows(
        tx, cypher.RESOLVE_ID_ID, conversation_id=str(target.conversation_id), tenant=target.tenant
    )
    if not found or found[0]["id"] is None:
        raise NotFoundError(f"conversation {target.conversation_id} does not exist")
    return str(found[0]["id"])


async def _index_hits(
    tx: AsyncManagedTransaction, req: rq.SearchMessages, index: str, hits: dict[str, float]
) -> None:
    """Ask the vector index for more neighbours until ``limit`` of them are in scope and
    pass the filters, or the index has nothing closer to give."""
    k = max(VECTOR_K_START, req.limit * 4)
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
        exhausted = len(found) < k or k >= VECTOR_K_MAX or (found and found[-1]["score"] <= 0)
        if len(kept) >= req.limit or exhausted:
            _merge(hits, kept, {})
            return
        k *= 4


def _merge(hits: dict[str, float], found: list[dict[str, Any]], filters: dict[str, Any]) -> None:
    for row in found:
        if row["score"] > 0 and metadata_matches(row["metadata"], filters):
            score = min(float(row["score"]), 1.0)
            hits[row["id"]] = max(hits.get(row["id"], 0.0), score)


async def _load(tx: AsyncManagedTransaction, ranked: list[tuple[str, float]]) -> list[Message]:
    if not ranked:
        return []
    found = await rows(tx, cypher.LOAD_MESSAGES, ids=[message_id for message_id, _ in ranked])
    by_id = {str(row["message"]["id"]): row for row in found}
    messages: list[Message] = []
    for message_id, score in ranked:
        row = by_id.get(message_id)
        if row is not None:
            messages.append(
                to_message(
                    row["message"],
                    conversation_id=row["conversation_id"],
                    session_id=row["session_id"],
                    score=score,
                )
            )
    return messages
