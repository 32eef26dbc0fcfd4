"""Preferences on Neo4j, in the reference's graph shape.

``(:Preference {id, category, preference, context, confidence, embedding, metadata,
created_at, valid_from})``, as neo4j-agent-memory 0.8.0 writes it (metadata a JSON string,
null when empty); its user is linked as the reference links one,
``(:User {identifier})-[:HAS_PREFERENCE]->``, and the entities it is about as
``-[:APPLIES_TO {position}]->(:Entity)``. Superseding is the reference's too: a
``SUPERSEDED_BY`` edge to the newer one and ``valid_until`` set on the older one, which
memory-core reads as ``superseded_at``. Our additions are properties the reference
ignores: ``user_identifier`` and, on a multi-tenant store, ``tenant``.

A preference belongs to user ``U`` when its ``user_identifier`` is ``U``, or when it has
none (the reference wrote it) and ``U``'s ``(:User)`` links it. Deleting the last
preference (or anything) linked to a ``(:User)`` node removes that node, as
``clear_session`` does.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from neo4j import AsyncManagedTransaction

from memory_core.store import NotFoundError, Preference
from memory_core.store import requests as rq

from .cypher import NOW
from .long_term_search import Kind, Scope, load_ranked, ranked
from .records import dump_metadata, load_metadata, storable_embedding, to_datetime
from .schema import PREFERENCE_SEARCH
from .session import Connection

KIND = Kind(index=PREFERENCE_SEARCH, fields=("category", "preference", "context"))


def owned(var: str) -> str:
    """A predicate: the preference ``var`` is in ``$tenant`` (when set) and is the user's
    (when ``$user`` is set; see the module docstring)."""
    return (
        f"({var}.tenant = $tenant OR $tenant IS NULL) AND ($user IS NULL "
        f"OR {var}.user_identifier = $user OR ({var}.user_identifier IS NULL "
        f"AND EXISTS {{ (:User {{identifier: $user}})-[:HAS_PREFERENCE]->({var}) }}))"
    )


OWNED = owned("n")
_FILTERS = (
    "($category IS NULL OR n.category = $category) AND ($superseded OR n.valid_until IS NULL)"
)
# Binds ``n`` to each of the user's preferences (the reference's by their User link).
_THE_USERS = """
CALL () {
    MATCH (n:Preference {user_identifier: $user}) RETURN n
  UNION
    MATCH (:User {identifier: $user})-[:HAS_PREFERENCE]->(n:Preference)
    WHERE n.user_identifier IS NULL
    RETURN n
}
"""
_EVERYONES = "MATCH (n:Preference)\n"

PROJECTION = """n {.id, .category, .preference, .context, .confidence, .metadata, .created_at,
    superseded_at: n.valid_until,
    owner: coalesce(n.user_identifier, $user, head(COLLECT {
        MATCH (u:User)-[:HAS_PREFERENCE]->(n) RETURN u.identifier AS who ORDER BY who LIMIT 1
    })),
    superseded_by: head(COLLECT {
        MATCH (n)-[:SUPERSEDED_BY]->(s:Preference) RETURN s.id AS id ORDER BY s.created_at, id
    }),
    linked: COLLECT {
        MATCH (n)-[a:APPLIES_TO]->(e:Entity) RETURN e.id AS id ORDER BY a.position, id
    }}"""

ADD = f"""
WITH [eid IN $linked WHERE NOT EXISTS {{
    MATCH (e:Entity {{id: eid}}) WHERE $tenant IS NULL OR e.tenant = $tenant
}}] AS missing
OPTIONAL CALL (missing) {{
    WITH missing, {NOW} AS now WHERE missing = []
    CREATE (n:Preference {{id: $id, category: $category, preference: $preference,
        context: $context, confidence: $confidence, embedding: $embedding,
        metadata: $metadata, created_at: now, valid_from: now, user_identifier: $user,
        tenant: $tenant}})
    WITH n
    CALL (n) {{
        UNWIND range(0, size($linked) - 1) AS i
        MATCH (e:Entity {{id: $linked[i]}})
        CREATE (n)-[:APPLIES_TO {{position: i}}]->(e)
    }}
    CALL (n) {{
        WITH n WHERE $user IS NOT NULL
        MERGE (u:User {{identifier: $user}})
        ON CREATE SET u.id = $user, u.created_at = n.created_at
        CREATE (u)-[:HAS_PREFERENCE]->(n)
    }}
    RETURN n
}}
RETURN missing, CASE WHEN n IS NULL THEN null ELSE {PROJECTION} END AS preference
"""

_ORDERED = f"""
RETURN {PROJECTION} AS preference
ORDER BY n.created_at DESC, n.id
LIMIT $limit
"""
LIST_USER = f"{_THE_USERS}WITH n WHERE {OWNED} AND {_FILTERS}{_ORDERED}"
LIST_ALL = f"{_EVERYONES}WHERE {OWNED} AND {_FILTERS}{_ORDERED}"

LOAD = f"""
MATCH (n:Preference) WHERE n.id IN $ids
RETURN {PROJECTION} AS preference
"""

# The SET/REMOVE takes the old one's write lock before ``valid_until`` is read, so two
# calls at once supersede it once.
SUPERSEDE = f"""
OPTIONAL MATCH (n:Preference {{id: $old_id}}) WHERE {OWNED}
OPTIONAL MATCH (next:Preference {{id: $new_id}}) WHERE {owned("next")}
CALL (n, next) {{
    WITH n, next WHERE n IS NOT NULL AND next IS NOT NULL
    SET n.memory_core_lock = true
    REMOVE n.memory_core_lock
    WITH n, next WHERE n.valid_until IS NULL
    SET n.valid_until = {NOW}
    MERGE (n)-[:SUPERSEDED_BY]->(next)
}}
RETURN n IS NOT NULL AS old_found, next IS NOT NULL AS new_found,
       CASE WHEN n IS NULL THEN null ELSE {PROJECTION} END AS preference
"""

DELETE = f"""
OPTIONAL MATCH (n:Preference {{id: $id}}) WHERE {OWNED}
WITH n, n IS NOT NULL AS found,
     COLLECT {{ MATCH (u:User)-[:HAS_PREFERENCE]->(n) RETURN u }} AS users
CALL (n) {{
    WITH n WHERE n IS NOT NULL
    DETACH DELETE n
}}
CALL (users) {{
    UNWIND users AS u
    WITH u WHERE NOT EXISTS {{ (u)--() }}
    DELETE u
}}
RETURN found
"""


def _scope(req: rq.SearchPreferences | rq.ListPreferences) -> dict[str, Any]:
    return {
        "tenant": req.tenant,
        "user": req.user_identifier,
        "category": req.category,
        "superseded": req.include_superseded,
    }


async def add(conn: Connection, req: rq.AddPreference) -> Preference:
    """The ``add_preference`` hook: one statement."""
    [row] = await conn.run_write(
        ADD,
        id=str(uuid4()),
        category=req.category,
        preference=req.preference,
        context=req.context,
        confidence=req.confidence,
        embedding=storable_embedding(req.embedding),
        metadata=dump_metadata(req.metadata),
        linked=req.linked_entities,
        user=req.user_identifier,
        tenant=req.tenant,
    )
    if row["missing"]:
        unknown = row["missing"][0]
        raise NotFoundError.missing("bolt", "entity", unknown, argument="linked_entities")
    return to_preference(row["preference"])


async def list_preferences(conn: Connection, req: rq.ListPreferences) -> list[Preference]:
    """The ``list_preferences`` hook: newest first."""
    query = LIST_ALL if req.user_identifier is None else LIST_USER
    found = await conn.run_read(query, **_scope(req), limit=req.limit)
    return [to_preference(row["preference"]) for row in found]


async def search(conn: Connection, req: rq.SearchPreferences) -> list[Preference]:
    """The ``search_preferences`` hook (see :mod:`.long_term_search`)."""
    params = _scope(req)
    match = _EVERYONES if req.user_identifier is None else _THE_USERS
    keep = f"{OWNED} AND {_FILTERS}"
    scope = Scope(match=f"{match}WITH n WHERE {keep}", keep=keep, params=params)

    async def work(tx: AsyncManagedTransaction) -> list[Preference]:
        best = await ranked(tx, KIND, scope, req.query, req.query_embedding, req.limit)
        return await load_ranked(tx, best, LOAD, to_preference, user=req.user_identifier)

    return await conn.read(work)


async def supersede(conn: Connection, req: rq.SupersedePreference) -> Preference:
    """The ``supersede_preference`` hook."""
    [row] = await conn.run_write(
        SUPERSEDE,
        old_id=req.old_id,
        new_id=req.new_id,
        tenant=req.tenant,
        user=req.user_identifier,
    )
    if not row["old_found"]:
        raise NotFoundError.missing("bolt", "preference", req.old_id, argument="old_id")
    if not row["new_found"]:
        raise NotFoundError.missing("bolt", "preference", req.new_id, argument="new_id")
    return to_preference(row["preference"])


async def delete(conn: Connection, req: rq.DeleteRecord) -> bool:
    """The ``delete_preference`` hook (a ``(:User)`` left with nothing goes too)."""
    found = await conn.run_write(
        DELETE, id=req.record_id, tenant=req.tenant, user=req.user_identifier
    )
    return bool(found and found[0]["found"])


def to_preference(props: dict[str, Any]) -> Preference:
    """A projected preference (see :data:`PROJECTION`); values another writer stored that
    are not text read as empty."""
    confidence = props.get("confidence")
    owner = props.get("owner")
    successor = props.get("superseded_by")
    return Preference(
        id=str(props["id"]),
        category=_text(props.get("category")),
        preference=_text(props.get("preference")),
        context=props["context"] if isinstance(props.get("context"), str) else None,
        confidence=float(confidence) if isinstance(confidence, int | float) else 1.0,
        linked_entities=[str(ident) for ident in props.get("linked") or [] if ident is not None],
        metadata=load_metadata(props.get("metadata")),
        user_identifier=owner if isinstance(owner, str) else None,
        created_at=to_datetime(props.get("created_at")) or datetime.now(UTC),
        superseded_at=to_datetime(props.get("superseded_at")),
        superseded_by=None if successor is None else str(successor),
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
