"""Writing the reasoning records of the Bolt bulk transfer: traces, steps and tool calls
(see :mod:`.transfer`; :mod:`.transfer_traces` exports them).

They are written in the batch's write transaction by the shared rules
(:class:`~memory_core.archive.rules.TraceRules`), in the graph the backend's own writes
make (:mod:`.reasoning`, the reference's shape): ``(:User)-[:HAS_TRACE]->(:ReasoningTrace)``
with ``task_embedding``, ``-[:HAS_STEP {order}]->(:ReasoningStep)`` with ``trace_id``,
``-[:USES_TOOL]->(:ToolCall)-[:INSTANCE_OF]->(:Tool)``, metadata and arguments as JSON
text (null when empty), a result as JSON text, times as DateTime values. Each imported
call adds to its Tool node's running totals by the reference's rule (its latest call's
time kept as ``last_used_at``), so neo4j-agent-memory's ``get_tool_stats`` counts it; a
call an overwrite replaces leaves them recomputed from the calls left, as erasure does.
The full-text indexes of ``similar_traces`` and ``search_steps`` follow every write by
themselves. A trace's links (``message_ids``, ``entity_ids``) become ``TOUCHED`` edges
in their order (``position``; the message that started it is not told apart in the
archive, so no ``INITIATED_BY`` edge is made). A multi-tenant store's traces carry
``tenant``; steps and tool calls belong to their trace's.
"""

from __future__ import annotations

import json
from typing import Any

from neo4j import AsyncManagedTransaction

from memory_core.store import ImportState, Record, TraceRules, candidates, parse_stamp

from .cypher import RECOUNT_TOOL
from .records import dump_metadata
from .session import rows

# Who holds each id (a step's and a call's tenant is their trace's).
HOLDERS = {
    "trace": """
UNWIND $ids AS id
MATCH (t:ReasoningTrace {id: id})
RETURN t.id AS id, t.tenant AS tenant
""",
    "step": """
UNWIND $ids AS id
MATCH (s:ReasoningStep {id: id})
RETURN s.id AS id, head(COLLECT { MATCH (t:ReasoningTrace)-[:HAS_STEP]->(s) RETURN t.tenant })
    AS tenant
""",
    "tool_call": """
UNWIND $ids AS id
MATCH (c:ToolCall {id: id})
RETURN c.id AS id, head(COLLECT {
    MATCH (t:ReasoningTrace)-[:HAS_STEP]->()-[:USES_TOOL]->(c) RETURN t.tenant
}) AS tenant
""",
}

# What an overwrite deletes: the node, and under it its steps and calls (``nodes``,
# ``calls``); then the Tool nodes of those calls get their totals from the calls left.
_DELETE_TAIL = (
    """
CALL (calls) {
    UNWIND calls AS c
    OPTIONAL MATCH (c)-[:INSTANCE_OF]->(tool:Tool)
    RETURN collect(DISTINCT tool) AS tools
}
CALL (calls, nodes) {
    UNWIND calls + nodes AS x
    DETACH DELETE x
}
CALL (tools) {
    UNWIND tools AS tool
"""
    + RECOUNT_TOOL
    + """}
"""
)
DELETE = {
    "trace": """
MATCH (n:ReasoningTrace {id: $id})
OPTIONAL MATCH (n)-[:HAS_STEP]->(s:ReasoningStep)
OPTIONAL MATCH (s)-[:USES_TOOL]->(c:ToolCall)
WITH n, collect(DISTINCT s) AS steps, collect(DISTINCT c) AS calls
WITH [n] + steps AS nodes, calls
"""
    + _DELETE_TAIL,
    "step": """
MATCH (n:ReasoningStep {id: $id})
OPTIONAL MATCH (n)-[:USES_TOOL]->(c:ToolCall)
WITH [n] AS nodes, collect(c) AS calls
"""
    + _DELETE_TAIL,
    "tool_call": """
MATCH (c:ToolCall {id: $id})
WITH [] AS nodes, [c] AS calls
"""
    + _DELETE_TAIL,
}

WRITE_TRACE = """
CREATE (t:ReasoningTrace {id: $id, session_id: $session_id, task: $task,
    task_embedding: $embedding, outcome: $outcome, success: $success,
    started_at: $started_at, completed_at: $completed_at, metadata: $metadata,
    user_identifier: $user, tenant: $tenant})
WITH t
CALL (t) {
    WITH t WHERE $user IS NOT NULL
    MERGE (u:User {identifier: $user})
    ON CREATE SET u.id = $user, u.created_at = t.started_at
    CREATE (u)-[:HAS_TRACE]->(t)
}
CALL (t) {
    UNWIND range(0, size($messages) - 1) AS i
    MATCH (m:Message {id: $messages[i]})
    CREATE (t)-[:TOUCHED {recorded_at: t.started_at, position: i}]->(m)
}
CALL (t) {
    UNWIND range(0, size($entities) - 1) AS i
    MATCH (e:Entity {id: $entities[i]})
    CREATE (t)-[:TOUCHED {recorded_at: t.started_at, position: i}]->(e)
}
"""

LINKED_MESSAGES = """
UNWIND $ids AS id
MATCH (m:Message {id: id})
RETURN m.id AS id, head(COLLECT {
    MATCH (c:Conversation)-[:HAS_MESSAGE]->(m) RETURN c.user_identifier
}) AS tenant
"""
LINKED_ENTITIES = """
UNWIND $ids AS id
MATCH (e:Entity {id: id})
RETURN e.id AS id, e.tenant AS tenant
"""

STEP_NUMBER = """
MATCH (:ReasoningTrace {id: $trace_id})-[:HAS_STEP]->(s:ReasoningStep {step_number: $number})
RETURN s.id AS id
"""
WRITE_STEP = """
MATCH (t:ReasoningTrace {id: $trace_id})
CREATE (s:ReasoningStep {id: $id, step_number: $number, thought: $thought, action: $action,
    observation: $observation, embedding: $embedding, timestamp: $created_at,
    metadata: $metadata, trace_id: t.id})
CREATE (t)-[:HAS_STEP {order: $number}]->(s)
"""
# As record_tool_call writes a call (see .reasoning), at the archive's time.
WRITE_CALL = """
MATCH (s:ReasoningStep {id: $step_id})
MERGE (tool:Tool {name: $tool_name})
ON CREATE SET tool.created_at = $created_at, tool.total_calls = 0, tool.successful_calls = 0,
    tool.failed_calls = 0, tool.total_duration_ms = 0
CREATE (c:ToolCall {id: $id, tool_name: $tool_name, arguments: $arguments, result: $result,
    status: $status, duration_ms: $duration_ms, error: $error, timestamp: $created_at})
CREATE (s)-[:USES_TOOL]->(c)
CREATE (c)-[:INSTANCE_OF]->(tool)
SET tool.total_calls = coalesce(tool.total_calls, 0) + 1,
    tool.successful_calls = coalesce(tool.successful_calls, 0)
        + CASE WHEN c.status = 'success' THEN 1 ELSE 0 END,
    tool.failed_calls = coalesce(tool.failed_calls, 0)
        + CASE WHEN c.status IN ['error', 'timeout'] THEN 1 ELSE 0 END,
    tool.total_duration_ms = coalesce(tool.total_duration_ms, 0) + coalesce(c.duration_ms, 0),
    tool.last_used_at = CASE WHEN tool.last_used_at IS NULL OR tool.last_used_at < c.timestamp
        THEN c.timestamp ELSE tool.last_used_at END
"""


def _vector(values: list[float] | None) -> list[float] | None:
    """Embeddings are kept as given, zero vectors too (see :mod:`.transfer`)."""
    return None if values is None else [float(x) for x in values]


class TraceWriter:
    """The reasoning records of one batch (one attempt of its transaction), on a state of
    the attempt's own (``state``: its maps are copies, published once committed)."""

    def __init__(self, state: ImportState, rules: TraceRules, multi_tenant: bool) -> None:
        self.state = state
        self.rules = rules
        self.multi_tenant = multi_tenant

    async def run(self, tx: AsyncManagedTransaction, records: list[Record]) -> None:
        """Write the batch's traces, steps and tool calls, in archive order."""
        for record in records:
            kind = record["record"]
            if kind == "trace":
                await self.trace(tx, record)
            else:
                await self.child(tx, record)

    async def holders(
        self, tx: AsyncManagedTransaction, kind: str, archive_id: str, tenant: str | None
    ) -> dict[str, str | None]:
        """Who holds the ids a record may take (:func:`candidates`): id -> tenant."""
        ids = list(candidates(kind, archive_id, tenant))
        return {r["id"]: r["tenant"] for r in await rows(tx, HOLDERS[kind], ids=ids)}

    def ours(self, holder: str | None, tenant: str | None) -> bool:
        """Whether a record of tenant ``holder`` may be linked from one of ``tenant``."""
        return not self.multi_tenant or holder == tenant

    async def trace(self, tx: AsyncManagedTransaction, record: Record) -> None:
        tenant = self.rules.tenant(record, None)
        if self.multi_tenant and tenant is None:
            self.state.start_trace(record["id"], None, None)
            return
        found = await self.holders(tx, "trace", record["id"], tenant)
        ident, present = self.rules.trace(record, tenant, found)
        if ident is None:
            return
        if present:
            await rows(tx, DELETE["trace"], id=ident)
        messages, entities = await self.links(tx, record, tenant)
        await rows(
            tx,
            WRITE_TRACE,
            id=ident,
            session_id=record["session_id"],
            task=record["task"],
            embedding=_vector(record.get("embedding")),
            outcome=record.get("outcome"),
            success=record.get("success"),
            started_at=parse_stamp(record["started_at"]),
            completed_at=_when(record.get("completed_at")),
            metadata=dump_metadata(record["metadata"]),
            user=record["user_identifier"],
            tenant=tenant if self.multi_tenant else None,
            messages=messages,
            entities=entities,
        )
        self.rules.copied(record, ident)

    async def links(
        self, tx: AsyncManagedTransaction, record: Record, tenant: str | None
    ) -> tuple[list[str], list[str]]:
        """The messages and entities the trace is to touch, each in order, only records
        of its tenant (the rest counted)."""
        wanted = self.rules.message_candidates(record["message_ids"])
        found = await rows(tx, LINKED_MESSAGES, ids=wanted)
        messages = self.rules.messages(
            record["message_ids"], {r["id"]: self.ours(r["tenant"], tenant) for r in found}
        )
        mapped = [e for e in map(self.state.entities.get, record["entity_ids"]) if e is not None]
        held = {
            r["id"]
            for r in await rows(tx, LINKED_ENTITIES, ids=mapped)
            if self.ours(r["tenant"], tenant)
        }
        entities = self.rules.entities_of(
            record["entity_ids"],
            lambda a: e if (e := self.state.entities.get(a)) in held else None,
        )
        return messages, entities

    async def child(self, tx: AsyncManagedTransaction, record: Record) -> None:
        """A step under its trace, or a tool call under its step."""
        parent = self.rules.parent(record)
        if parent is None:
            return
        kind = record["record"]
        found = await self.holders(tx, kind, record["id"], self.state.trace_tenant)
        ident, present = self.rules.child(record, found)
        if ident is None:
            return
        if kind == "step":
            taken = await rows(tx, STEP_NUMBER, trace_id=parent, number=record["step_number"])
            if any(r["id"] != ident for r in taken):
                self.rules.number_taken(record)
                return
        if present:
            await rows(tx, DELETE[kind], id=ident)
        if kind == "step":
            await self.step(tx, record, ident, parent)
        else:
            await self.call(tx, record, ident, parent)
        self.rules.copied(record, ident)

    async def step(
        self, tx: AsyncManagedTransaction, record: Record, ident: str, trace_id: str
    ) -> None:
        await rows(
            tx,
            WRITE_STEP,
            trace_id=trace_id,
            id=ident,
            number=record["step_number"],
            thought=record.get("thought"),
            action=record.get("action"),
            observation=record.get("observation"),
            embedding=_vector(record.get("embedding")),
            created_at=parse_stamp(record["created_at"]),
            metadata=dump_metadata(record["metadata"]),
        )

    async def call(
        self, tx: AsyncManagedTransaction, record: Record, ident: str, step_id: str
    ) -> None:
        result = record.get("result")
        await rows(
            tx,
            WRITE_CALL,
            step_id=step_id,
            id=ident,
            tool_name=record["tool_name"],
            arguments=dump_metadata(record["arguments"]),
            result=None if result is None else json.dumps(result),
            status=record["status"],
            duration_ms=record.get("duration_ms"),
            error=record.get("error"),
            created_at=parse_stamp(record["created_at"]),
        )


def _when(value: str | None) -> Any:
    return None if value is None else parse_stamp(value)
