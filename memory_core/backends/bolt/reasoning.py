"""Reasoning memory on Neo4j, in the reference's graph shape.

As neo4j-agent-memory 0.8.0 writes it: ``(:ReasoningTrace {id, session_id, task,
task_embedding, outcome, success, started_at, completed_at, metadata})``, its steps
``-[:HAS_STEP {order}]->(:ReasoningStep {id, step_number, thought, action, observation,
embedding, timestamp, metadata})``, each step's calls ``-[:USES_TOOL]->(:ToolCall {id,
tool_name, arguments, result, status, duration_ms, error, timestamp})`` and each call
``-[:INSTANCE_OF]->(:Tool {name})``, whose running totals (``total_calls``,
``successful_calls``, ``failed_calls``, ``total_duration_ms``, ``last_used_at``) every
call updates by the reference's rule. ``metadata``, ``arguments`` and ``result`` are
JSON text (metadata and arguments null when empty), times Neo4j DateTime values. The
trace's user: ``user_identifier`` on the trace and ``(:User)-[:HAS_TRACE]->``, as the
reference links them; the message that started it: ``-[:INITIATED_BY]->(:Message)``.

Our additions, which the reference ignores: ``tenant`` on a multi-tenant store's traces,
``trace_id`` on steps, and the links of :func:`link` as ``(trace)-[:TOUCHED {recorded_at,
position}]->`` a Message or an Entity. A trace's entities are those it touched and those
its steps touched (the reference's ``(:ReasoningStep)-[:TOUCHED]->(:Entity)``); its
messages, the one that initiated it and those it touched. Each id is listed once, in
the order linked.

A trace belongs to user ``U`` when its ``user_identifier`` is ``U`` (a multi-tenant
store's also carries ``tenant``); steps and tool calls belong to their trace's user.
Steps are numbered under the trace's write lock (a property set and removed first), so
concurrent appends get distinct, gapless numbers; completion takes the same lock.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from neo4j import AsyncManagedTransaction

from memory_core.store import (
    NotFoundError,
    ReasoningStep,
    ReasoningTrace,
    ToolCall,
    ToolCallStatus,
    TracePage,
    cursor_error,
    decode_cursor,
    encode_cursor,
)
from memory_core.store import requests as rq

from .cypher import NOW
from .records import dump_metadata, load_metadata, storable_embedding, to_datetime
from .session import Connection, rows

CURSOR_KIND = "bolt-trace"


def owned(var: str) -> str:
    """A predicate: trace ``var`` is in ``$tenant`` (when set) and ``$user``'s (when set)."""
    return (
        f"($tenant IS NULL OR {var}.tenant = $tenant) "
        f"AND ($user IS NULL OR {var}.user_identifier = $user)"
    )


OWNED = owned("t")
# A message or an entity the scope may link: any, or the tenant's.
_KNOWN_MESSAGE = (
    "EXISTS { MATCH (m:Message {id: mid}) WHERE $tenant IS NULL "
    "OR EXISTS { (:Conversation {user_identifier: $tenant})-[:HAS_MESSAGE]->(m) } }"
)
_KNOWN_ENTITY = "EXISTS { MATCH (e:Entity {id: eid}) WHERE $tenant IS NULL OR e.tenant = $tenant }"

CALL_PROJECTION = """c {.id, .tool_name, .arguments, .result, .status, .duration_ms, .error,
    created_at: c.timestamp}"""
STEP_FIELDS = f""".id, .step_number, .thought, .action, .observation, .metadata,
    created_at: s.timestamp,
    calls: COLLECT {{
        MATCH (s)-[:USES_TOOL]->(c:ToolCall)
        RETURN {CALL_PROJECTION} AS call ORDER BY c.timestamp, c.id
    }}"""
STEP_PROJECTION = f"s {{{STEP_FIELDS}}}"
HEADER = """t {.id, .session_id, .task, .outcome, .success, .metadata, .user_identifier,
    .started_at, .completed_at}"""
# A trace's linked ids, in the order linked (a projection's fields).
LINKS = """message_ids: COLLECT {
        MATCH (t)-[r:INITIATED_BY|TOUCHED]->(m:Message)
        RETURN m.id AS id ORDER BY type(r) = 'TOUCHED', r.recorded_at, r.position, id
    },
    entity_ids: COLLECT {
        CALL (t) {
            MATCH (t)-[r:TOUCHED]->(e:Entity)
            RETURN e.id AS id, [0, r.recorded_at, r.position] AS key
          UNION
            MATCH (t)-[:HAS_STEP]->(s:ReasoningStep)-[r:TOUCHED]->(e:Entity)
            RETURN e.id AS id, [1, s.step_number, r.recorded_at] AS key
        }
        RETURN id ORDER BY key, id
    }"""
FULL = f"""t {{.id, .session_id, .task, .outcome, .success, .metadata, .user_identifier,
    .started_at, .completed_at,
    steps: COLLECT {{
        MATCH (t)-[:HAS_STEP]->(s:ReasoningStep)
        RETURN {STEP_PROJECTION} AS step ORDER BY s.step_number, s.id
    }},
    {LINKS}}}"""

START = f"""
WITH CASE WHEN $trigger IS NULL OR any(mid IN [$trigger] WHERE {_KNOWN_MESSAGE})
     THEN false ELSE true END AS missing
OPTIONAL CALL (missing) {{
    WITH missing WHERE NOT missing
    CREATE (t:ReasoningTrace {{id: $id, session_id: $session_id, task: $task,
        task_embedding: $embedding, started_at: {NOW}, metadata: $metadata,
        user_identifier: $user, tenant: $tenant}})
    WITH t
    CALL (t) {{
        WITH t WHERE $user IS NOT NULL
        MERGE (u:User {{identifier: $user}})
        ON CREATE SET u.id = $user, u.created_at = t.started_at
        CREATE (u)-[:HAS_TRACE]->(t)
    }}
    CALL (t) {{
        MATCH (m:Message {{id: $trigger}})
        CREATE (t)-[:INITIATED_BY]->(m)
    }}
    RETURN t
}}
RETURN missing, CASE WHEN t IS NULL THEN null ELSE {FULL} END AS trace
"""

# The SET/REMOVE takes the trace's write lock before its last number is read.
ADD_STEP = f"""
OPTIONAL MATCH (t:ReasoningTrace {{id: $trace_id}}) WHERE {OWNED}
OPTIONAL CALL (t) {{
    WITH t WHERE t IS NOT NULL
    SET t.memory_core_lock = true
    REMOVE t.memory_core_lock
    WITH t, coalesce(head(COLLECT {{
        MATCH (t)-[:HAS_STEP]->(x:ReasoningStep) WHERE x.step_number IS :: INTEGER NOT NULL
        RETURN x.step_number AS n ORDER BY n DESC LIMIT 1
    }}), 0) + 1 AS number
    CREATE (s:ReasoningStep {{id: $id, step_number: number, thought: $thought,
        action: $action, observation: $observation, embedding: $embedding,
        timestamp: {NOW}, metadata: $metadata, trace_id: t.id}})
    CREATE (t)-[:HAS_STEP {{order: number}}]->(s)
    RETURN s
}}
RETURN t IS NOT NULL AS found, t.id AS trace_id,
       CASE WHEN s IS NULL THEN null ELSE {STEP_PROJECTION} END AS step
"""

RECORD_CALL = f"""
OPTIONAL MATCH (t:ReasoningTrace)-[:HAS_STEP]->(s:ReasoningStep {{id: $step_id}})
WHERE {OWNED}
OPTIONAL CALL (s) {{
    WITH s WHERE s IS NOT NULL
    MERGE (tool:Tool {{name: $tool_name}})
    ON CREATE SET tool.created_at = {NOW}, tool.total_calls = 0, tool.successful_calls = 0,
        tool.failed_calls = 0, tool.total_duration_ms = 0
    CREATE (c:ToolCall {{id: $id, tool_name: $tool_name, arguments: $arguments,
        result: $result, status: $status, duration_ms: $duration_ms, error: $error,
        timestamp: {NOW}}})
    CREATE (s)-[:USES_TOOL]->(c)
    CREATE (c)-[:INSTANCE_OF]->(tool)
    SET tool.total_calls = coalesce(tool.total_calls, 0) + 1,
        tool.successful_calls = coalesce(tool.successful_calls, 0)
            + CASE WHEN c.status = 'success' THEN 1 ELSE 0 END,
        tool.failed_calls = coalesce(tool.failed_calls, 0)
            + CASE WHEN c.status IN ['error', 'timeout'] THEN 1 ELSE 0 END,
        tool.total_duration_ms = coalesce(tool.total_duration_ms, 0)
            + coalesce(c.duration_ms, 0),
        tool.last_used_at = c.timestamp
    RETURN c
}}
RETURN s IS NOT NULL AS found, CASE WHEN c IS NULL THEN null ELSE {CALL_PROJECTION} END AS call
"""

COMPLETE = f"""
OPTIONAL MATCH (t:ReasoningTrace {{id: $trace_id}}) WHERE {OWNED}
CALL (t) {{
    WITH t WHERE t IS NOT NULL
    SET t.memory_core_lock = true
    REMOVE t.memory_core_lock
    WITH t WHERE t.completed_at IS NULL
    SET t.outcome = $outcome, t.success = $success, t.completed_at = {NOW}
}}
RETURN CASE WHEN t IS NULL THEN null ELSE {HEADER} END AS trace
"""

GET = f"""
MATCH (t:ReasoningTrace {{id: $trace_id}}) WHERE {OWNED}
RETURN {FULL} AS trace
"""

LINK = f"""
OPTIONAL MATCH (t:ReasoningTrace {{id: $trace_id}}) WHERE {OWNED}
WITH t, [mid IN $message_ids WHERE NOT {_KNOWN_MESSAGE}] AS messages,
     [eid IN $entity_ids WHERE NOT {_KNOWN_ENTITY}] AS entities
CALL (t, messages, entities) {{
    WITH t, {NOW} AS now WHERE t IS NOT NULL AND messages = [] AND entities = []
    CALL (t, now) {{
        UNWIND range(0, size($message_ids) - 1) AS i
        MATCH (m:Message {{id: $message_ids[i]}})
        MERGE (t)-[r:TOUCHED]->(m)
        ON CREATE SET r.recorded_at = now, r.position = i
    }}
    CALL (t, now) {{
        UNWIND range(0, size($entity_ids) - 1) AS i
        MATCH (e:Entity {{id: $entity_ids[i]}})
        MERGE (t)-[r:TOUCHED]->(e)
        ON CREATE SET r.recorded_at = now, r.position = i
    }}
}}
RETURN t IS NOT NULL AS found, messages, entities
"""


# LINK's columns of unknown ids: (column, kind, argument).
_UNKNOWN = (("messages", "message", "message_ids"), ("entities", "entity", "entity_ids"))


def _scope(req: Any) -> dict[str, Any]:
    return {"tenant": req.tenant, "user": req.user_identifier}


async def start(conn: Connection, req: rq.StartTrace) -> ReasoningTrace:
    """The ``start_trace`` hook: one statement (an unknown trigger writes nothing)."""
    [row] = await conn.run_write(
        START,
        id=str(uuid4()),
        session_id=req.session_id,
        task=req.task,
        embedding=storable_embedding(req.embedding),
        metadata=dump_metadata(req.metadata),
        trigger=req.triggered_by_message_id,
        **_scope(req),
    )
    if row["missing"]:
        raise NotFoundError.missing(
            "bolt", "message", req.triggered_by_message_id, argument="triggered_by_message_id"
        )
    return to_trace(row["trace"])


async def add_step(conn: Connection, req: rq.AddStep) -> ReasoningStep:
    """The ``add_step`` hook: numbered under the trace's lock."""
    [row] = await conn.run_write(
        ADD_STEP,
        trace_id=req.trace_id,
        id=str(uuid4()),
        thought=req.thought,
        action=req.action,
        observation=req.observation,
        embedding=storable_embedding(req.embedding),
        metadata=dump_metadata(req.metadata),
        **_scope(req),
    )
    if not row["found"]:
        raise NotFoundError.missing("bolt", "trace", req.trace_id, argument="trace_id")
    return to_step(row["step"], str(row["trace_id"]))


async def record_tool_call(conn: Connection, req: rq.RecordToolCall) -> ToolCall:
    """The ``record_tool_call`` hook: the call and its tool's running totals, at once."""
    [row] = await conn.run_write(
        RECORD_CALL,
        step_id=req.step_id,
        id=str(uuid4()),
        tool_name=req.tool_name,
        arguments=dump_metadata(req.arguments),
        result=None if req.result is None else json.dumps(req.result),
        status=str(req.status),
        duration_ms=req.duration_ms,
        error=req.error,
        **_scope(req),
    )
    if not row["found"]:
        raise NotFoundError.missing("bolt", "step", req.step_id, argument="step_id")
    return to_call(row["call"], req.step_id)


async def complete(conn: Connection, req: rq.CompleteTrace) -> ReasoningTrace:
    """The ``complete_trace`` hook: once, under the trace's lock."""
    [row] = await conn.run_write(
        COMPLETE,
        trace_id=req.trace_id,
        outcome=req.outcome,
        success=req.success,
        **_scope(req),
    )
    if row["trace"] is None:
        raise NotFoundError.missing("bolt", "trace", req.trace_id, argument="trace_id")
    return to_trace(row["trace"])


async def get(conn: Connection, req: rq.GetTrace) -> ReasoningTrace | None:
    """The ``get_trace`` hook."""
    found = await conn.run_read(GET, trace_id=req.trace_id, **_scope(req))
    return to_trace(found[0]["trace"]) if found else None


async def link(conn: Connection, req: rq.LinkTrace) -> ReasoningTrace:
    """The ``link_trace`` hook: every link or none, then the trace, in one transaction."""
    params = {
        "trace_id": req.trace_id,
        "message_ids": list(req.message_ids),
        "entity_ids": list(req.entity_ids),
        **_scope(req),
    }

    async def work(tx: AsyncManagedTransaction) -> ReasoningTrace:
        [row] = await rows(tx, LINK, **params)
        if not row["found"]:
            raise NotFoundError.missing("bolt", "trace", req.trace_id, argument="trace_id")
        for column, kind, argument in _UNKNOWN:
            if row[column]:
                raise NotFoundError.missing("bolt", kind, row[column][0], argument=argument)
        [found] = await rows(tx, GET, **params)
        return to_trace(found["trace"])

    return await conn.write(work)


# ------------------------------------------------------------------ listing


def _list_statement(req: rq.ListTraces) -> str:
    """The page's statement: an index seek on the session or the user when given."""
    if req.session_id is not None:
        match = "MATCH (t:ReasoningTrace {session_id: $session_id})"
    elif req.user_identifier is not None:
        match = "MATCH (t:ReasoningTrace {user_identifier: $user})"
    else:
        match = "MATCH (t:ReasoningTrace)"
    return f"""
{match}
WHERE {OWNED} AND ($session_id IS NULL OR t.session_id = $session_id)
  AND ($success IS NULL OR (t.completed_at IS NOT NULL AND t.success = $success))
  AND t.started_at IS :: ZONED DATETIME NOT NULL
WITH t, CASE WHEN $seconds IS NOT NULL
    THEN datetime({{epochSeconds: $seconds, nanosecond: $nanosecond}}) END AS after
WHERE $seconds IS NULL OR t.started_at < after OR (t.started_at = after AND t.id < $after_id)
RETURN {HEADER} AS trace, t.started_at.epochSeconds AS seconds,
       t.started_at.nanosecond AS nanosecond
ORDER BY t.started_at DESC, t.id DESC
LIMIT $limit
"""


async def list_traces(conn: Connection, req: rq.ListTraces) -> TracePage:
    """The ``list_traces`` hook: a keyset page, newest first (``started_at``, then id,
    both descending); a trace another writer left without a DateTime ``started_at`` is
    not listed."""
    seconds, nanosecond, after_id = _after(req.cursor)
    limit = min(req.limit, 2**62)
    found = await conn.run_read(
        _list_statement(req),
        session_id=req.session_id,
        success=req.success,
        seconds=seconds,
        nanosecond=nanosecond,
        after_id=after_id,
        limit=limit + 1,
        **_scope(req),
    )
    page = found[:limit]
    traces = [to_trace(row["trace"]) for row in page]
    if len(found) <= limit:
        return TracePage(traces=traces, next_cursor=None)
    last = page[-1]
    cursor = encode_cursor(
        CURSOR_KIND, [last["seconds"], last["nanosecond"], str(last["trace"]["id"])]
    )
    return TracePage(traces=traces, next_cursor=cursor)


def _after(cursor: str | None) -> tuple[int | None, int | None, str | None]:
    """(epoch seconds, nanosecond, id) of the last trace listed before the page."""
    if cursor is None:
        return None, None, None
    value = decode_cursor(CURSOR_KIND, cursor)
    if not isinstance(value, list) or len(value) != 3:
        raise cursor_error()
    seconds, nanosecond, ident = value
    if not all(type(x) is int for x in (seconds, nanosecond)) or not isinstance(ident, str):
        raise cursor_error()
    if abs(seconds) > 10**12 or not 0 <= nanosecond < 10**9:
        raise cursor_error()
    return seconds, nanosecond, ident


# ------------------------------------------------------------------ reading


def to_trace(props: dict[str, Any]) -> ReasoningTrace:
    """A projected trace (see :data:`FULL`, :data:`HEADER`)."""
    ident = str(props["id"])
    success = props.get("success")
    user = props.get("user_identifier")
    steps = [to_step(step, ident) for step in props.get("steps") or []]
    return ReasoningTrace(
        id=ident,
        session_id=_text(props.get("session_id")),
        task=_text(props.get("task")),
        outcome=_optional_text(props.get("outcome")),
        success=success if isinstance(success, bool) else None,
        metadata=load_metadata(props.get("metadata")),
        user_identifier=user if isinstance(user, str) else None,
        started_at=to_datetime(props.get("started_at")) or datetime.now(UTC),
        completed_at=to_datetime(props.get("completed_at")),
        steps=steps,
        message_ids=_once(props.get("message_ids")),
        entity_ids=_once(props.get("entity_ids")),
    )


def to_step(props: dict[str, Any], trace_id: str) -> ReasoningStep:
    """A projected step (see :data:`STEP_PROJECTION`) of trace ``trace_id``."""
    ident = str(props["id"])
    number = props.get("step_number")
    return ReasoningStep(
        id=ident,
        trace_id=trace_id,
        step_number=number if type(number) is int else 0,
        thought=_optional_text(props.get("thought")),
        action=_optional_text(props.get("action")),
        observation=_optional_text(props.get("observation")),
        metadata=load_metadata(props.get("metadata")),
        tool_calls=[to_call(call, ident) for call in props.get("calls") or []],
        created_at=to_datetime(props.get("created_at")) or datetime.now(UTC),
    )


def to_call(props: dict[str, Any], step_id: str) -> ToolCall:
    """A projected tool call (see :data:`CALL_PROJECTION`) of step ``step_id``."""
    duration = props.get("duration_ms")
    return ToolCall(
        id=str(props["id"]),
        step_id=step_id,
        tool_name=_text(props.get("tool_name")),
        arguments=load_metadata(props.get("arguments")),
        result=_json(props.get("result")),
        status=_status(props.get("status")),
        duration_ms=duration if type(duration) is int else None,
        error=_optional_text(props.get("error")),
        created_at=to_datetime(props.get("created_at")) or datetime.now(UTC),
    )


def _once(ids: Any) -> list[str]:
    """Linked ids in the order read, each once (a link may be read twice: a message
    both initiated and touched, an entity touched by the trace and by a step)."""
    return list(dict.fromkeys(str(x) for x in ids or [] if x is not None))


def _json(text: Any) -> Any:
    """A stored result: JSON text read back (text that is not JSON, as it is)."""
    if not isinstance(text, str):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def _status(value: Any) -> ToolCallStatus:
    try:
        return ToolCallStatus(value)
    except ValueError:
        return ToolCallStatus.PENDING


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _optional_text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
