"""``forget_user`` on Neo4j: bounded write transactions, one conversation at a time.

A conversation belongs to a user by its ``user_identifier`` property (the tenant of a
multi-tenant backend, the recorded user otherwise). First go the user's reasoning traces
(their tool calls, then steps, then the traces, with every link; the running totals of
the ``Tool`` nodes those calls were of are recomputed from the calls left, and a Tool
left with none goes), preferences and facts (and, multi-tenant, the relationships of
the tenant's entities). Then each
transaction deletes at most ``batch_size`` of one conversation's messages (``DETACH
DELETE``: their mentions and chain links go with them) or, once it has none, the
conversation. An entity left with no relationship but ``RELATED_TO`` edges in that
transaction goes too, with those edges (single-tenant entities are shared: one another
message still mentions, or another user's preference links, stays). Then the tenant's
entities (multi-tenant) and the ``(:User)`` node once nothing is attached to it. Each
statement is a managed transaction the driver may retry, so counts come from the
committed attempt.

One call erases what the user has when it starts: the conversations then listed, their
messages numbered below their ``next_seq`` of then (and those another library wrote
without a ``seq``, in as many batches as the conversation had messages), the tenant's
entities created by then. What the user's writers add meanwhile is left to the next call
(``Erased.remaining``), so a call ends even while they keep writing.
"""

from __future__ import annotations

from typing import Any

from neo4j import AsyncManagedTransaction

from memory_core.store import Erased
from memory_core.store import requests as rq

from .cypher import DROP_TOOL, RECOUNT_TOOL
from .session import Connection

CONVERSATIONS = """
MATCH (c:Conversation {user_identifier: $user})
RETURN c.id AS id, coalesce(c.next_seq, 0) AS cut, COUNT { (c)-[:HAS_MESSAGE]->() } AS messages
"""

DELETE_MESSAGES = """
MATCH (:Conversation {id: $conversation})-[:HAS_MESSAGE]->(m:Message)
WHERE m.seq IS NULL OR m.seq < $cut
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
    WITH e WHERE NOT EXISTS { (e)-[x]-() WHERE type(x) <> 'RELATED_TO' }
    WITH collect(e) AS orphans
    WITH orphans, size(COLLECT {
        UNWIND orphans AS e
        MATCH (e)-[r:RELATED_TO]-()
        RETURN DISTINCT r
    }) AS relations
    CALL (orphans) {
        UNWIND orphans AS e
        DETACH DELETE e
    }
    RETURN size(orphans) AS orphans, relations
}
RETURN size(batch) AS messages, mentions, keys, orphans, relations
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

TENANT_ENTITIES = """
RETURN COUNT { MATCH (:Entity {tenant: $user}) } AS entities, datetime.realtime() AS now
"""

DELETE_TENANT_ENTITIES = """
MATCH (e:Entity {tenant: $user})
WHERE e.created_at IS NULL OR e.created_at <= $cut
WITH e LIMIT $batch
DETACH DELETE e
RETURN count(*) AS deleted
"""

REMAINING = """
RETURN EXISTS { MATCH (:Conversation {user_identifier: $user}) }
    OR EXISTS { MATCH (:ReasoningTrace {user_identifier: $user}) }
    OR EXISTS { MATCH (:User {identifier: $user})-[:HAS_TRACE]->(:ReasoningTrace) }
    OR EXISTS { MATCH (:Preference {user_identifier: $user}) }
    OR EXISTS { MATCH (:User {identifier: $user})-[:HAS_PREFERENCE]->(:Preference) }
    OR EXISTS { MATCH (:Fact {user_identifier: $user}) }
    OR ($tenant AND EXISTS { MATCH (:Entity {tenant: $user}) }) AS remaining
"""

# The user's long-term records (see :mod:`.preferences`: a preference another library
# wrote is the user's through their ``(:User)`` link), and the relationships of a
# tenant's entities. The counts bound the batches one call deletes.
LONG_TERM = """
RETURN COUNT { MATCH (:Preference {user_identifier: $user}) }
       + COUNT { MATCH (:User {identifier: $user})-[:HAS_PREFERENCE]->(n:Preference)
                 WHERE n.user_identifier IS NULL } AS preferences,
       COUNT { MATCH (:Fact {user_identifier: $user}) } AS facts,
       CASE WHEN $tenant THEN COUNT { MATCH (:Entity {tenant: $user})-[:RELATED_TO]-() }
            ELSE 0 END AS relationships
"""

DELETE_LONG_TERM = {
    "relationships": """
MATCH (:Entity {tenant: $user})-[r:RELATED_TO]-()
WITH DISTINCT r LIMIT $batch
DELETE r
RETURN count(*) AS deleted
""",
    "preferences": """
CALL () {
    MATCH (n:Preference {user_identifier: $user}) RETURN n
  UNION
    MATCH (:User {identifier: $user})-[:HAS_PREFERENCE]->(n:Preference)
    WHERE n.user_identifier IS NULL
    RETURN n
}
WITH n LIMIT $batch
DETACH DELETE n
RETURN count(*) AS deleted
""",
    "facts": """
MATCH (n:Fact {user_identifier: $user})
WITH n LIMIT $batch
DETACH DELETE n
RETURN count(*) AS deleted
""",
}

# The user's traces: theirs by ``user_identifier``, or by the ``(:User)`` link alone.
_THE_USERS_TRACES = """
CALL () {
    MATCH (t:ReasoningTrace {user_identifier: $user}) RETURN t
  UNION
    MATCH (:User {identifier: $user})-[:HAS_TRACE]->(t:ReasoningTrace) RETURN t
}
"""

REASONING = f"""
{_THE_USERS_TRACES}
RETURN count(t) AS traces,
       sum(COUNT {{ (t)-[:HAS_STEP]->(:ReasoningStep) }}) AS steps,
       sum(COUNT {{ (t)-[:HAS_STEP]->(:ReasoningStep)-[:USES_TOOL]->(:ToolCall) }}) AS tool_calls
"""

# Tool calls first, then steps, then traces (DETACH DELETE takes their links). The Tool
# nodes a batch touched get their running totals recomputed from the calls left (the
# reference's rule, see :mod:`.reasoning`); one left with no call and no other link goes.
DELETE_REASONING = {
    "tool_calls": f"""
{_THE_USERS_TRACES}
MATCH (t)-[:HAS_STEP]->(:ReasoningStep)-[:USES_TOOL]->(c:ToolCall)
WITH DISTINCT c LIMIT $batch
OPTIONAL MATCH (c)-[:INSTANCE_OF]->(tool:Tool)
WITH collect(c) AS calls, collect(DISTINCT tool) AS tools
CALL (calls) {{
    UNWIND calls AS c
    DETACH DELETE c
}}
CALL (tools) {{
    UNWIND tools AS tool
{RECOUNT_TOOL}{DROP_TOOL}}}
RETURN size(calls) AS deleted
""",
    "steps": f"""
{_THE_USERS_TRACES}
MATCH (t)-[:HAS_STEP]->(s:ReasoningStep)
WITH DISTINCT s LIMIT $batch
DETACH DELETE s
RETURN count(*) AS deleted
""",
    "traces": f"""
{_THE_USERS_TRACES}
WITH t LIMIT $batch
DETACH DELETE t
RETURN count(*) AS deleted
""",
}

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
    await _long_term(conn, req, erased)
    for row in await conn.run_read(CONVERSATIONS, user=user):
        await _conversation(conn, row["id"], row["cut"], row["messages"], req, erased)
    if req.tenant is not None:
        await _tenant_entities(conn, req, erased)
    await conn.run_write(DELETE_USER_NODE, user=user)
    rows = await conn.run_read(REMAINING, user=user, tenant=req.tenant is not None)
    erased.remaining = bool(rows and rows[0]["remaining"])
    return erased


async def _conversation(
    conn: Connection, conversation: str, cut: int, messages: int, req: rq.ForgetUser, erased: Erased
) -> None:
    """The conversation's messages numbered below ``cut`` (at most ``messages`` of them),
    in batches, then the conversation if it holds no message."""
    for _ in range(-(-messages // req.batch_size)):

        async def step(tx: AsyncManagedTransaction) -> dict[str, int] | None:
            return await _step(tx, conversation, cut, req.batch_size)

        counts = await conn.write(step)
        if counts is None:
            break
        for kind, count in counts.items():
            erased.add(kind, count)
    done = await conn.run_write(DELETE_CONVERSATION, conversation=conversation)
    erased.add("conversations", done[0]["deleted"] if done else 0)


async def _step(
    tx: AsyncManagedTransaction, conversation: str, cut: int, batch: int
) -> dict[str, int] | None:
    """One transaction: a batch of the conversation's messages numbered below ``cut``.
    ``None`` when none is left."""
    row: Any = await (
        await tx.run(DELETE_MESSAGES, conversation=conversation, cut=cut, batch=batch)
    ).single()
    if row is None or not row["messages"]:
        return None
    return {
        "messages": row["messages"],
        "mentions": row["mentions"],
        "idempotency_keys": row["keys"],
        "entities": row["orphans"],
        "relationships": row["relations"],
    }


async def _long_term(conn: Connection, req: rq.ForgetUser, erased: Erased) -> None:
    """The user's reasoning traces (tool calls, steps, traces), preferences and facts
    and (multi-tenant) the relationships of the tenant's entities, first: an entity the
    user's traces or preferences link is then one only the user's messages hold when
    they go."""
    user = req.user_identifier
    [row] = await conn.run_read(REASONING, user=user)
    for kind, statement in DELETE_REASONING.items():
        await _batches(conn, statement, row[kind], kind, req, erased, user=user)
    tenant = req.tenant is not None
    [row] = await conn.run_read(LONG_TERM, user=user, tenant=tenant)
    for kind, statement in DELETE_LONG_TERM.items():
        await _batches(conn, statement, row[kind], kind, req, erased, user=user)


async def _tenant_entities(conn: Connection, req: rq.ForgetUser, erased: Erased) -> None:
    """The tenant's entities created by the time this starts."""
    [row] = await conn.run_read(TENANT_ENTITIES, user=req.tenant)
    await _batches(
        conn,
        DELETE_TENANT_ENTITIES,
        row["entities"],
        "entities",
        req,
        erased,
        user=req.tenant,
        cut=row["now"],
    )


async def _batches(
    conn: Connection,
    statement: str,
    count: int,
    kind: str,
    req: rq.ForgetUser,
    erased: Erased,
    **params: Any,
) -> None:
    """Run ``statement`` (deleting at most ``$batch`` records of ``kind``) until it
    deletes nothing, or as many times as ``count`` records take, at most."""
    for _ in range(-(-count // req.batch_size)):
        rows = await conn.run_write(statement, batch=req.batch_size, **params)
        if not rows or not rows[0]["deleted"]:
            return
        erased.add(kind, rows[0]["deleted"])
