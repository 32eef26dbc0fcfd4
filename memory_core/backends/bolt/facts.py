"""Facts on Neo4j, in the reference's graph shape.

``(:Fact {id, subject, predicate, object, confidence, embedding, valid_from, valid_until,
created_at, metadata})`` as neo4j-agent-memory 0.8.0 writes it, with ``valid_from`` and
``valid_until`` stored as Neo4j ``DateTime`` values (the reference writes ISO strings but
reads ``DateTime`` values only; strings another writer left are read as well). Our
additions, which the reference ignores: ``subject_key`` (the subject case-folded, for
:meth:`facts_about`), ``source_message_id``, ``user_identifier`` and, on a multi-tenant
store, ``tenant``. The reference links no user to a fact: the facts it wrote belong to
no user, and a fact it wrote (without ``subject_key``) is found by its exact subject.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from neo4j import AsyncManagedTransaction

from memory_core.store import Fact
from memory_core.store import requests as rq

from .cypher import NOW
from .long_term_search import Kind, Scope, load_ranked, ranked
from .records import dump_metadata, load_metadata, storable_embedding, to_datetime
from .schema import FACT_SEARCH
from .session import Connection

KIND = Kind(index=FACT_SEARCH, fields=("subject", "predicate", "object"))

# An ISO 8601 time as Python's ``isoformat`` writes it (what the reference stores); Cypher's
# ``datetime()`` reads it. Anything else another writer stored is no bound.
_ISO = (
    "[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    "(T([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9]([.][0-9]{1,9})?)?)?"
    "(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?"
)


def _instant(expr: str) -> str:
    """``expr`` as a zoned DateTime: as stored, or parsed from an ISO string; else null."""
    return (
        f"CASE WHEN {expr} IS :: ZONED DATETIME THEN {expr} "
        f"WHEN {expr} IS :: STRING AND {expr} =~ '{_ISO}' THEN datetime({expr}) END"
    )


_VALID = (
    f"($as_of IS NULL OR (coalesce({_instant('n.valid_from')} <= $as_of, true) "
    f"AND coalesce({_instant('n.valid_until')} > $as_of, true)))"
)
SCOPED = (
    "($tenant IS NULL OR n.tenant = $tenant) AND ($user IS NULL OR n.user_identifier = $user) "
    f"AND {_VALID}"
)
_THE_USERS = "MATCH (n:Fact {user_identifier: $user})\n"
_EVERYONES = "MATCH (n:Fact)\n"

PROJECTION = """n {.id, .subject, .predicate, .object, .confidence, .valid_from,
    .valid_until, .source_message_id, .metadata, .user_identifier, .created_at}"""

ADD = f"""
CREATE (n:Fact {{id: $id, subject: $subject, subject_key: $subject_key,
    predicate: $predicate, object: $object, confidence: $confidence, embedding: $embedding,
    valid_from: $valid_from, valid_until: $valid_until, source_message_id: $source,
    metadata: $metadata, created_at: {NOW}, user_identifier: $user, tenant: $tenant}})
RETURN {PROJECTION} AS fact
"""

# Ours by the case-folded subject; another writer's (no ``subject_key``) by the subject.
ABOUT = f"""
CALL () {{
    MATCH (n:Fact {{subject_key: $subject_key}}) RETURN n
  UNION
    MATCH (n:Fact {{subject: $subject}}) WHERE n.subject_key IS NULL RETURN n
}}
WITH n WHERE {SCOPED} AND ($predicate IS NULL OR n.predicate = $predicate)
RETURN {PROJECTION} AS fact
ORDER BY n.created_at DESC, n.id
LIMIT $limit
"""

LOAD = f"""
MATCH (n:Fact) WHERE n.id IN $ids
RETURN {PROJECTION} AS fact
"""

DELETE = f"""
MATCH (n:Fact {{id: $id}}) WHERE {SCOPED}
DETACH DELETE n
RETURN count(*) AS deleted
"""


async def add(conn: Connection, req: rq.AddFact) -> Fact:
    """The ``add_fact`` hook: one statement."""
    [row] = await conn.run_write(
        ADD,
        id=str(uuid4()),
        subject=req.subject,
        subject_key=req.subject.casefold(),
        predicate=req.predicate,
        object=req.object,
        confidence=req.confidence,
        embedding=storable_embedding(req.embedding),
        valid_from=req.valid_from,
        valid_until=req.valid_until,
        source=req.source_message_id,
        metadata=dump_metadata(req.metadata),
        user=req.user_identifier,
        tenant=req.tenant,
    )
    return to_fact(row["fact"])


async def about(conn: Connection, req: rq.FactsAbout) -> list[Fact]:
    """The ``facts_about`` hook: newest first."""
    found = await conn.run_read(
        ABOUT,
        subject=req.subject,
        subject_key=req.subject.casefold(),
        predicate=req.predicate,
        as_of=req.as_of,
        limit=req.limit,
        tenant=req.tenant,
        user=req.user_identifier,
    )
    return [to_fact(row["fact"]) for row in found]


async def search(conn: Connection, req: rq.SearchFacts) -> list[Fact]:
    """The ``search_facts`` hook (see :mod:`.long_term_search`)."""
    params = {"tenant": req.tenant, "user": req.user_identifier, "as_of": req.as_of}
    match = _EVERYONES if req.user_identifier is None else _THE_USERS
    scope = Scope(match=f"{match}WHERE {SCOPED}", keep=SCOPED, params=params)

    async def work(tx: AsyncManagedTransaction) -> list[Fact]:
        best = await ranked(tx, KIND, scope, req.query, req.query_embedding, req.limit)
        return await load_ranked(tx, best, LOAD, to_fact)

    return await conn.read(work)


async def delete(conn: Connection, req: rq.DeleteRecord) -> bool:
    """The ``delete_fact`` hook."""
    found = await conn.run_write(
        DELETE, id=req.record_id, tenant=req.tenant, user=req.user_identifier, as_of=None
    )
    return bool(found and found[0]["deleted"])


def to_fact(props: dict[str, Any]) -> Fact:
    """A projected fact; values another writer stored that are not text read as empty."""
    confidence = props.get("confidence")
    source = props.get("source_message_id")
    user = props.get("user_identifier")
    return Fact(
        id=str(props["id"]),
        subject=_text(props.get("subject")),
        predicate=_text(props.get("predicate")),
        object=_text(props.get("object")),
        confidence=float(confidence) if isinstance(confidence, int | float) else 1.0,
        valid_from=to_datetime(props.get("valid_from")),
        valid_until=to_datetime(props.get("valid_until")),
        source_message_id=None if source is None else str(source),
        metadata=load_metadata(props.get("metadata")),
        user_identifier=user if isinstance(user, str) else None,
        created_at=to_datetime(props.get("created_at")) or datetime.now(UTC),
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
