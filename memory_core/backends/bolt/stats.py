"""``stats`` on Neo4j: aggregate Cypher queries, no size.

A conversation belongs to a user by its ``user_identifier`` property (the tenant of a
multi-tenant backend, the recorded user otherwise), and its messages are counted by the
degree of its ``HAS_MESSAGE`` relationships. Entities: a multi-tenant store's by their
``tenant``; a single-tenant store's by the one user whose messages (and traces or their
steps) alone are linked to them, the rule ``forget_user`` deletes them by (an entity with
any other relationship stays). Preferences belong to their ``user_identifier``, or to the user whose
``(:User)`` links them (the reference's), facts to their ``user_identifier`` (a
multi-tenant store's both to their ``tenant``); relationships by their source entity's
tenant on a multi-tenant store, in the total only otherwise. Reasoning traces belong to
their user as ``forget_user`` finds them: by ``user_identifier``, or by the ``(:User)``
that links them (``HAS_TRACE``; a multi-tenant store's to their ``tenant``). Neo4j does
not say how many bytes one database takes: ``size_bytes`` is None.
A ``user_identifier`` (or ``tenant``) another program stored as something other than a
string names no user: its conversations count under ``None``.
"""

from __future__ import annotations

from memory_core.store import LongTermCounts, StatsTotal, StoreStats, merge_counts, only_user
from memory_core.store import requests as rq

from .session import Connection

CONVERSATIONS = """
MATCH (c:Conversation)
WHERE ($user IS NULL OR c.user_identifier = $user)
  AND (NOT $tenants OR c.user_identifier IS NOT NULL)
RETURN CASE WHEN c.user_identifier IS :: STRING THEN c.user_identifier END AS user,
       count(c) AS conversations,
       sum(COUNT { (c)-[:HAS_MESSAGE]->() }) AS messages
"""

TENANT_ENTITIES = """
MATCH (e:Entity)
WHERE e.tenant IS NOT NULL AND ($user IS NULL OR e.tenant = $user)
RETURN CASE WHEN e.tenant IS :: STRING THEN e.tenant END AS user, count(e) AS entities
"""

# Entities linked only by MENTIONS from the messages of one user's conversations and by
# that user's own traces, steps and preferences, which forget_user deletes first
# (RELATED_TO edges go with the entity): what forget_user deletes with that user.
SOLE_ENTITIES = """
MATCH (e:Entity)<-[:MENTIONS]-(:Message)<-[:HAS_MESSAGE]-(c:Conversation)
WHERE c.user_identifier IS NOT NULL AND ($user IS NULL OR c.user_identifier = $user)
WITH DISTINCT e
MATCH (e)-[r]-(x) WHERE type(r) <> 'RELATED_TO'
OPTIONAL MATCH (x)<-[:HAS_MESSAGE]-(owner:Conversation)
WITH e, r, x, owner, CASE type(r) = 'TOUCHED' AND x:ReasoningStep
    WHEN true THEN head(COLLECT {
        MATCH (t:ReasoningTrace)-[:HAS_STEP]->(x) RETURN t.user_identifier AS who
    }) END AS stepper, CASE type(r) = 'APPLIES_TO' AND x:Preference
    WHEN true THEN coalesce(x.user_identifier, head(COLLECT {
        MATCH (u:User)-[:HAS_PREFERENCE]->(x) RETURN u.identifier AS who ORDER BY who LIMIT 1
    })) END AS preferrer
WITH e, collect(CASE
        WHEN type(r) = 'MENTIONS' THEN owner.user_identifier
        WHEN type(r) = 'TOUCHED' AND x:ReasoningTrace THEN x.user_identifier
        WHEN type(r) = 'TOUCHED' THEN stepper
        WHEN type(r) = 'APPLIES_TO' THEN preferrer
     END) AS owners,
     count(r) AS links
WITH e, owners WHERE size(owners) = links AND size(owners) > 0
  AND all(o IN owners WHERE o = owners[0]) AND owners[0] IS :: STRING
RETURN owners[0] AS user, count(e) AS entities
"""

# Every user's preferences, facts and (multi-tenant) relationships: (user, count) rows.
PREFERENCES = """
MATCH (n:Preference) WHERE NOT $tenants OR n.tenant IS NOT NULL
WITH n, CASE WHEN $tenants THEN n.tenant ELSE coalesce(n.user_identifier, head(COLLECT {
    MATCH (u:User)-[:HAS_PREFERENCE]->(n) RETURN u.identifier AS who ORDER BY who LIMIT 1
})) END AS owner
RETURN CASE WHEN owner IS :: STRING THEN owner END AS user, count(n) AS count
"""

FACTS = """
MATCH (n:Fact) WHERE NOT $tenants OR n.tenant IS NOT NULL
WITH n, CASE WHEN $tenants THEN n.tenant ELSE n.user_identifier END AS owner
RETURN CASE WHEN owner IS :: STRING THEN owner END AS user, count(n) AS count
"""

RELATIONSHIPS = """
MATCH (s:Entity)-[r:RELATED_TO]->(:Entity) WHERE s.tenant IS NOT NULL
RETURN CASE WHEN s.tenant IS :: STRING THEN s.tenant END AS user, count(r) AS count
"""

# One user's, by the indexes on user_identifier (a tenant's records carry it too) and
# the tenant's entities.
USER_PREFERENCES = """
CALL () {
    MATCH (n:Preference {user_identifier: $user})
    WHERE NOT $tenants OR n.tenant = $user
    RETURN n
  UNION
    MATCH (:User {identifier: $user})-[:HAS_PREFERENCE]->(n:Preference)
    WHERE NOT $tenants AND n.user_identifier IS NULL
    RETURN n
}
RETURN $user AS user, count(n) AS count
"""

USER_FACTS = """
MATCH (n:Fact {user_identifier: $user}) WHERE NOT $tenants OR n.tenant = $user
RETURN $user AS user, count(n) AS count
"""

TRACES = """
MATCH (t:ReasoningTrace) WHERE NOT $tenants OR t.tenant IS NOT NULL
WITH t, CASE WHEN $tenants THEN t.tenant ELSE coalesce(t.user_identifier, head(COLLECT {
    MATCH (u:User)-[:HAS_TRACE]->(t) RETURN u.identifier AS who ORDER BY who LIMIT 1
})) END AS owner
RETURN CASE WHEN owner IS :: STRING THEN owner END AS user, count(t) AS count
"""

USER_TRACES = """
CALL () {
    MATCH (t:ReasoningTrace {user_identifier: $user})
    WHERE NOT $tenants OR t.tenant = $user
    RETURN t
  UNION
    MATCH (:User {identifier: $user})-[:HAS_TRACE]->(t:ReasoningTrace)
    WHERE NOT $tenants AND t.user_identifier IS NULL
    RETURN t
}
RETURN $user AS user, count(t) AS count
"""

USER_RELATIONSHIPS = """
MATCH (s:Entity {tenant: $user})-[r:RELATED_TO]->(:Entity)
RETURN $user AS user, count(r) AS count
"""

TOTAL = """
CALL () {
    MATCH (c:Conversation) WHERE NOT $tenants OR c.user_identifier IS NOT NULL
    RETURN count(c) AS conversations, sum(COUNT { (c)-[:HAS_MESSAGE]->() }) AS messages
}
CALL () {
    MATCH (e:Entity) WHERE NOT $tenants OR e.tenant IS NOT NULL
    RETURN count(e) AS entities
}
CALL () {
    MATCH (n:Preference) WHERE NOT $tenants OR n.tenant IS NOT NULL
    RETURN count(n) AS preferences
}
CALL () {
    MATCH (n:Fact) WHERE NOT $tenants OR n.tenant IS NOT NULL
    RETURN count(n) AS facts
}
CALL () {
    MATCH (s:Entity)-[r:RELATED_TO]->(:Entity) WHERE NOT $tenants OR s.tenant IS NOT NULL
    RETURN count(r) AS relationships
}
CALL () {
    MATCH (t:ReasoningTrace) WHERE NOT $tenants OR t.tenant IS NOT NULL
    RETURN count(t) AS traces
}
RETURN conversations, messages, entities, preferences, facts, relationships, traces
"""


async def stats(
    conn: Connection, req: rq.Stats, multi_tenant: bool, name: str, traces: bool
) -> StoreStats:
    """The counts of ``req``; ``traces``: whether the store claims the flag (its traces
    are counted, else ``None``)."""
    found = await conn.run_read(CONVERSATIONS, user=req.user, tenants=multi_tenant)
    conversations: dict[str | None, tuple[int, int | None]] = {
        row["user"]: (int(row["conversations"]), int(row["messages"] or 0)) for row in found
    }
    query = TENANT_ENTITIES if multi_tenant else SOLE_ENTITIES
    entities = {
        row["user"]: int(row["entities"]) for row in await conn.run_read(query, user=req.user)
    }
    long_term = await _long_term(conn, req.user, multi_tenant, traces)
    rows = merge_counts(conversations, entities, long_term)
    if req.user is not None:
        rows = only_user(rows, req.user, long_term)
    total = None
    if req.user is None:
        [row] = await conn.run_read(TOTAL, tenants=multi_tenant)
        total = StatsTotal(
            conversations=int(row["conversations"]),
            messages=int(row["messages"] or 0),
            entities=int(row["entities"]),
            preferences=int(row["preferences"]),
            facts=int(row["facts"]),
            relationships=int(row["relationships"]),
            traces=int(row["traces"]) if traces else None,
        )
    return StoreStats(
        backend=name,
        scope="tenant" if multi_tenant else "user",
        users=rows,
        total=total,
        size_bytes=None,
    )


async def _long_term(
    conn: Connection, user: str | None, multi_tenant: bool, traces: bool
) -> LongTermCounts:
    """{kind: {user: count}} of preferences and facts, traces (with ``traces``), and a
    multi-tenant store's relationships."""
    if user is None:
        queries = {
            "preferences": PREFERENCES,
            "facts": FACTS,
            "relationships": RELATIONSHIPS,
            "traces": TRACES,
        }
    else:
        queries = {
            "preferences": USER_PREFERENCES,
            "facts": USER_FACTS,
            "relationships": USER_RELATIONSHIPS,
            "traces": USER_TRACES,
        }
    if not multi_tenant:
        del queries["relationships"]
    if not traces:
        del queries["traces"]
    counts: LongTermCounts = {}
    for kind, query in queries.items():
        found = await conn.run_read(query, user=user, tenants=multi_tenant)
        counts[kind] = {row["user"]: int(row["count"]) for row in found if row["count"]}
    return counts
