"""``search_messages`` on Neo4j: full-text hits plus, with an embedder, vector hits.

Everything runs in one read transaction: resolve the session (if any), collect text
hits from the full-text index and vector hits (an exact cosine scan of the one
conversation, or the vector index for a search across sessions), merge them (the higher
score wins), filter metadata exactly in Python, apply the threshold and limit, then load
the chosen messages. Scope (conversation, tenant) is applied in Cypher.

Why the union of the top-``limit`` of each list is enough: a message whose final score
comes from, say, its vector score would be beaten by every message with a higher vector
score, so it must itself be among the top ``limit`` vector hits.
"""

from __future__ import annotations

from typing import Any

from neo4j import AsyncManagedTransaction

from memory_core import Message, NotFoundError
from memory_core import requests as rq
from memory_core.scoring import query_terms, text_score

from . import cypher
from .records import session_uuid, to_message
from .schema import FULLTEXT_INDEX
from .scoring import lucene_query, metadata_matches
from .session import rows

VECTOR_K_START = 50
VECTOR_K_MAX = 100_000


async def search(
    tx: AsyncManagedTransaction, req: rq.SearchMessages, vector_index: str | None
) -> list[Message]:
    """The ranked messages for ``req`` (best first, each with ``score``)."""
    conversation_id: str | None = None
    if req.target is not None:
        conversation_id = await _resolve(tx, req.target)
        if conversation_id is None:
            return []
    hits = await _text_hits(tx, req, conversation_id)
    vector = req.query_embedding
    if vector is not None and any(vector):
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


async def _text_hits(
    tx: AsyncManagedTransaction, req: rq.SearchMessages, conversation_id: str | None
) -> dict[str, float]:
    query = lucene_query(req.query)
    hits: dict[str, float] = {}
    if query is None:
        return hits
    # Every hit is scored: the shared scale weighs query-word coverage, so Lucene's order
    # is not the final order and a LIMIT here could drop a better hit.
    found = await rows(
        tx,
        cypher.TEXT_HITS,
        index=FULLTEXT_INDEX,
        lucene=query,
        conversation_id=conversation_id,
        tenant=req.tenant,
    )
    terms = query_terms(req.query)
    for row in found:
        if metadata_matches(row["metadata"], req.metadata_filters):
            score = text_score(terms, row["content"], float(row["score"]))
            hits[row["id"]] = max(hits.get(row["id"], 0.0), score)
    return hits


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
