"""``stats`` on Neo4j: aggregate Cypher queries, no size.

A conversation belongs to a user by its ``user_identifier`` property (the tenant of a
multi-tenant backend, the recorded user otherwise), and its messages are counted by the
degree of its ``HAS_MESSAGE`` relationships. Entities: a multi-tenant store's by their
``tenant``; a single-tenant store's by the one user whose messages alone are linked to
them, the rule ``forget_user`` deletes them by (an entity with any other relationship
stays). Neo4j does not say how many bytes one database takes: ``size_bytes`` is None.
A ``user_identifier`` (or ``tenant``) another program stored as something other than a
string names no user: its conversations count under ``None``.
"""

from __future__ import annotations

from memory_core.store import StatsTotal, StoreStats, merge_counts
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

# Entities linked only by MENTIONS from the messages of one user's conversations.
SOLE_ENTITIES = """
MATCH (e:Entity)<-[:MENTIONS]-(:Message)<-[:HAS_MESSAGE]-(c:Conversation)
WHERE c.user_identifier IS NOT NULL AND ($user IS NULL OR c.user_identifier = $user)
WITH DISTINCT e
MATCH (e)-[r]-(x)
OPTIONAL MATCH (x)<-[:HAS_MESSAGE]-(owner:Conversation)
WITH e, collect(CASE WHEN type(r) = 'MENTIONS' THEN owner.user_identifier END) AS owners,
     count(r) AS links
WITH e, owners WHERE size(owners) = links AND size(owners) > 0
  AND all(o IN owners WHERE o = owners[0]) AND owners[0] IS :: STRING
RETURN owners[0] AS user, count(e) AS entities
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
RETURN conversations, messages, entities
"""


async def stats(conn: Connection, req: rq.Stats, multi_tenant: bool, name: str) -> StoreStats:
    """The counts of ``req``."""
    found = await conn.run_read(CONVERSATIONS, user=req.user, tenants=multi_tenant)
    conversations: dict[str | None, tuple[int, int | None]] = {
        row["user"]: (int(row["conversations"]), int(row["messages"] or 0)) for row in found
    }
    query = TENANT_ENTITIES if multi_tenant else SOLE_ENTITIES
    entities = {
        row["user"]: int(row["entities"]) for row in await conn.run_read(query, user=req.user)
    }
    rows = merge_counts(conversations, entities)
    if req.user is not None:
        rows = [r for r in rows if r.user_identifier == req.user] or merge_counts(
            {req.user: (0, 0)}, {}
        )
    total = None
    if req.user is None:
        [row] = await conn.run_read(TOTAL, tenants=multi_tenant)
        total = StatsTotal(
            conversations=int(row["conversations"]),
            messages=int(row["messages"] or 0),
            entities=int(row["entities"]),
        )
    return StoreStats(
        backend=name,
        scope="tenant" if multi_tenant else "user",
        users=rows,
        total=total,
        size_bytes=None,
    )
