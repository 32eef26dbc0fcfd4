"""``forget_user`` on Neo4j: bounded write transactions, one conversation at a time.

A conversation belongs to a user by its ``user_identifier`` property (the tenant of a
multi-tenant backend, the recorded user otherwise). Each transaction deletes at most
``batch_size`` of one conversation's messages (``DETACH DELETE``: their mentions and
chain links go with them) or, once it has none, the conversation. An entity left with no
relationship at all in that transaction goes too (single-tenant entities are shared: one
another message still mentions stays). Then the tenant's entities (multi-tenant) and the
``(:User)`` node once nothing is attached to it. Each statement is a managed transaction
the driver may retry, so counts come from the committed attempt.
"""

from __future__ import annotations

from typing import Any

from neo4j import AsyncManagedTransaction

from memory_core.store import Erased
from memory_core.store import requests as rq

from .session import Connection

NEXT_CONVERSATION = """
MATCH (c:Conversation {user_identifier: $user})
RETURN c.id AS id
LIMIT 1
"""

DELETE_MESSAGES = """
MATCH (:Conversation {id: $conversation})-[:HAS_MESSAGE]->(m:Message)
WITH m LIMIT $batch
OPTIONAL MATCH (m)-[r:MENTIONS]->(e:Entity)
WITH m, count(r) AS links, collect(e) AS entities
WITH collect(m) AS batch, sum(links) AS mentions,
     reduce(all = [], each IN collect(entities) | all + each) AS linked
WITH batch, mentions, linked,
     size([m IN batch WHERE m.idempotency_key IS NOT NULL]) AS keys
CALL (batch) {
    UNWIND batch AS m
    DETACH DELETE m
}
CALL (linked) {
    UNWIND linked AS e
    WITH DISTINCT e
    WITH e WHERE NOT EXISTS { (e)--() }
    DELETE e
    RETURN count(*) AS orphans
}
RETURN size(batch) AS messages, mentions, keys, orphans
"""

# Only once it has no message, checked under the conversation's write lock (the lock an
# append takes first): a message appended after the batch above was read would otherwise
# lose its HAS_MESSAGE link and stay, orphaned.
DELETE_CONVERSATION = """
MATCH (c:Conversation {id: $conversation})
SET c.erasing = true
REMOVE c.erasing
WITH c
WHERE NOT EXISTS { (c)-[:HAS_MESSAGE]->(:Message) }
DETACH DELETE c
RETURN count(*) AS deleted
"""

DELETE_TENANT_ENTITIES = """
MATCH (e:Entity {tenant: $user})
WITH e LIMIT $batch
DETACH DELETE e
RETURN count(*) AS deleted
"""

DELETE_USER_NODE = """
MATCH (u:User {identifier: $user})
WHERE NOT EXISTS { (u)--() }
DELETE u
RETURN count(*) AS deleted
"""


async def forget_user(conn: Connection, req: rq.ForgetUser) -> Erased:
    """Erase ``req``'s user (see the module docstring)."""
    erased = Erased()
    user = req.user_identifier
    while True:

        async def step(tx: AsyncManagedTransaction) -> dict[str, int] | None:
            return await _step(tx, user, req.batch_size)

        counts = await conn.write(step)
        if counts is None:
            break
        for kind, count in counts.items():
            erased.add(kind, count)
    if req.tenant is not None:
        while rows := await conn.run_write(
            DELETE_TENANT_ENTITIES, user=req.tenant, batch=req.batch_size
        ):
            if not rows[0]["deleted"]:
                break
            erased.add("entities", rows[0]["deleted"])
    await conn.run_write(DELETE_USER_NODE, user=user)
    return erased


async def _step(tx: AsyncManagedTransaction, user: str | None, batch: int) -> dict[str, int] | None:
    """One transaction: a batch of one conversation's messages, or the conversation once
    it has none. ``None`` when the user has no conversation left."""
    found = await (await tx.run(NEXT_CONVERSATION, user=user)).single()
    if found is None:
        return None
    conversation = found["id"]
    row: Any = await (
        await tx.run(DELETE_MESSAGES, conversation=conversation, batch=batch)
    ).single()
    if row is None or not row["messages"]:
        done: Any = await (await tx.run(DELETE_CONVERSATION, conversation=conversation)).single()
        return {"conversations": done["deleted"] if done is not None else 0}
    return {
        "messages": row["messages"],
        "mentions": row["mentions"],
        "idempotency_keys": row["keys"],
        "entities": row["orphans"],
    }
