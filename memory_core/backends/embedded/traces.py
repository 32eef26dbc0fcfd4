"""Reasoning traces: one row each in ``traces``, their steps in ``steps`` (numbered from
the trace's ``next_step`` inside the writing transaction, so concurrent appends get
distinct, gapless numbers), the steps' tool calls in ``tool_calls`` (``num`` keeps their
order) and the links in ``trace_messages`` and ``trace_entities``. A user's traces are
the rows of the tenant that name that user; without a user a call covers the tenant.
Steps and tool calls repeat the trace's tenant and user so a search or the statistics
read one table."""

from __future__ import annotations

import json
import sqlite3
from typing import Any
from uuid import uuid4

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
    parse_uuid,
)
from memory_core.store import requests as rq

from . import words
from .codec import SQL_INT_MAX, dump_json, from_micros, load_json, now_micros, pack_vector
from .conversations import tenant_key

TRACE = "t"
STEP = "s"
CURSOR_KIND = "embedded-traces"


def start(conn: sqlite3.Connection, req: rq.StartTrace) -> ReasoningTrace:
    """The ``start_trace`` hook."""
    tenant = tenant_key(req.tenant)
    trigger = None
    if req.triggered_by_message_id is not None:
        trigger = known_messages(
            conn, tenant, [req.triggered_by_message_id], "triggered_by_message_id"
        )[0]
    ident = str(uuid4())
    conn.execute(
        "INSERT INTO traces (id, tenant, user_identifier, session_id, task, metadata, "
        "triggered_by, embedding, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            ident,
            tenant,
            req.user_identifier,
            req.session_id,
            req.task,
            dump_json(req.metadata),
            trigger,
            pack_vector(req.embedding),
            now_micros(),
        ),
    )
    if trigger is not None:
        _link(conn, "trace_messages", "message_id", ident, [trigger])
    words.index(conn, TRACE, tenant, ident, (req.task,))
    return load(conn, owned(conn, req.scope, ident))


def add_step(conn: sqlite3.Connection, req: rq.AddStep) -> ReasoningStep:
    """The ``add_step`` hook: the number is taken and advanced in this transaction, by
    the statement that finds the trace in scope; the step is built from what is
    inserted (a new step has no tool calls)."""
    where, params = filters(tenant_key(req.tenant), req.user_identifier)
    trace = conn.execute(
        f"UPDATE traces AS r SET next_step = next_step + 1 WHERE r.id = ? AND {where} "
        "RETURNING next_step - 1, tenant, user_identifier",
        [req.trace_id, *params],
    ).fetchone()
    if trace is None:
        raise NotFoundError.missing("embedded", "trace", req.trace_id, argument="trace_id")
    number, tenant, user = trace
    ident, metadata, created = str(uuid4()), dump_json(req.metadata), now_micros()
    conn.execute(
        "INSERT INTO steps (id, trace_id, tenant, user_identifier, step_number, thought, "
        "action, observation, metadata, embedding, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            ident,
            req.trace_id,
            tenant,
            user,
            number,
            req.thought,
            req.action,
            req.observation,
            metadata,
            pack_vector(req.embedding),
            created,
        ),
    )
    words.index(conn, STEP, tenant, ident, (req.thought, req.action, req.observation))
    return ReasoningStep(
        id=ident,
        trace_id=req.trace_id,
        step_number=number,
        thought=req.thought,
        action=req.action,
        observation=req.observation,
        metadata=load_json(metadata),
        tool_calls=[],
        created_at=from_micros(created),
    )


def record_tool_call(conn: sqlite3.Connection, req: rq.RecordToolCall) -> ToolCall:
    """The ``record_tool_call`` hook: one ``INSERT ... SELECT`` from the step in scope
    (no row inserted: the step is not one); the call is built from what is inserted."""
    where, params = filters(tenant_key(req.tenant), req.user_identifier)
    ident, created = str(uuid4()), now_micros()
    arguments, result = dump_json(req.arguments), dump_value(req.result)
    values = (req.tool_name, arguments, result, req.status, req.duration_ms, req.error)
    inserted = conn.execute(
        "INSERT INTO tool_calls (id, step_id, tenant, user_identifier, tool_name, arguments, "
        "result, status, duration_ms, error, created_at) "
        "SELECT ?, r.id, r.tenant, r.user_identifier, ?, ?, ?, ?, ?, ?, ? "
        f"FROM steps r WHERE r.id = ? AND {where}",
        [ident, *values, created, req.step_id, *params],
    )
    if inserted.rowcount != 1:
        raise NotFoundError.missing("embedded", "step", req.step_id, argument="step_id")
    return ToolCall(
        id=ident,
        step_id=req.step_id,
        tool_name=req.tool_name,
        arguments=load_json(arguments),
        result=json.loads(result),
        status=ToolCallStatus(req.status),
        duration_ms=req.duration_ms,
        error=req.error,
        created_at=from_micros(created),
    )


def complete(conn: sqlite3.Connection, req: rq.CompleteTrace) -> ReasoningTrace:
    """The ``complete_trace`` hook: only an open trace changes."""
    trace = owned(conn, req.scope, req.trace_id)
    if trace["completed_at"] is None:
        success = None if req.success is None else int(req.success)
        conn.execute(
            "UPDATE traces SET outcome = ?, success = ?, completed_at = ? WHERE id = ?",
            (req.outcome, success, max(now_micros(), trace["created_at"]), trace["id"]),
        )
    return load(conn, owned(conn, req.scope, req.trace_id))


def get(conn: sqlite3.Connection, req: rq.GetTrace) -> ReasoningTrace | None:
    """The ``get_trace`` hook."""
    row = _find(conn, req.scope, req.trace_id)
    return None if row is None else load(conn, row)


def link(conn: sqlite3.Connection, req: rq.LinkTrace) -> ReasoningTrace:
    """The ``link_trace`` hook: every id is checked before anything is linked."""
    tenant = tenant_key(req.tenant)
    trace = owned(conn, req.scope, req.trace_id)
    messages = known_messages(conn, tenant, list(req.message_ids), "message_ids")
    _known_entities(conn, tenant, req.entity_ids)
    _link(conn, "trace_messages", "message_id", trace["id"], messages)
    _link(conn, "trace_entities", "entity_id", trace["id"], list(req.entity_ids))
    return load(conn, trace)


def list_traces(conn: sqlite3.Connection, req: rq.ListTraces) -> TracePage:
    """The ``list_traces`` hook: a seek on ``traces_by_session`` or ``traces_by_recency``
    reading ``limit + 1`` rows, the last only to tell whether another page follows."""
    where, params = filters(tenant_key(req.tenant), req.user_identifier)
    if req.session_id is not None:
        where += " AND r.session_id = ?"
        params.append(req.session_id)
    if req.success is not None:
        where += " AND r.completed_at IS NOT NULL AND r.success = ?"
        params.append(int(req.success))
    if req.cursor is not None:
        where += " AND (r.created_at, r.id) < (?, ?)"
        params += _after(req.cursor)
    limit = min(req.limit, SQL_INT_MAX - 1)
    rows = conn.execute(
        f"SELECT * FROM traces r WHERE {where} ORDER BY r.created_at DESC, r.id DESC LIMIT ?",
        [*params, limit + 1],
    ).fetchall()
    page = rows[:limit]
    after = None
    if len(rows) > limit:
        after = encode_cursor(CURSOR_KIND, [page[-1]["created_at"], page[-1]["id"]])
    return TracePage(traces=headers(conn, page), next_cursor=after)


def filters(tenant: str, user: str | None) -> tuple[str, list[object]]:
    """The ``WHERE`` of a table aliased ``r`` with ``tenant`` and ``user_identifier``."""
    where = "r.tenant = ?"
    params: list[object] = [tenant]
    if user is not None:
        where += " AND r.user_identifier = ?"
        params.append(user)
    return where, params


def owned(conn: sqlite3.Connection, scope: rq.Scope, ident: str) -> sqlite3.Row:
    """The trace ``ident`` of the request's scope, else ``NotFoundError`` naming
    ``trace_id``."""
    row = _find(conn, scope, ident)
    if row is None:
        raise NotFoundError.missing("embedded", "trace", ident, argument="trace_id")
    return row


def _find(conn: sqlite3.Connection, scope: rq.Scope, ident: str) -> sqlite3.Row | None:
    where, params = filters(tenant_key(scope.tenant), scope.user_identifier)
    row: sqlite3.Row | None = conn.execute(
        f"SELECT * FROM traces r WHERE r.id = ? AND {where}", [ident, *params]
    ).fetchone()
    return row


def known_messages(
    conn: sqlite3.Connection, tenant: str, ids: list[str], argument: str
) -> list[str]:
    """The stored ids of messages of ``tenant``, else ``NotFoundError`` naming the
    first that is not one."""
    found: list[str] = []
    for given in ids:
        uuid = parse_uuid(given)
        row = None
        if uuid is not None:
            row = conn.execute(
                "SELECT m.id FROM messages m JOIN conversations c ON c.id = m.conversation_id "
                "WHERE m.id = ? AND c.tenant = ?",
                (str(uuid), tenant),
            ).fetchone()
        if row is None:
            raise NotFoundError.missing("embedded", "message", given, argument=argument)
        found.append(row[0])
    return list(dict.fromkeys(found))


def _known_entities(conn: sqlite3.Connection, tenant: str, ids: tuple[str, ...]) -> None:
    for entity in ids:
        row = conn.execute(
            "SELECT 1 FROM entities WHERE id = ? AND tenant = ?", (entity, tenant)
        ).fetchone()
        if row is None:
            raise NotFoundError.missing("embedded", "entity", entity, argument="entity_ids")


def _link(conn: sqlite3.Connection, table: str, column: str, trace: str, ids: list[str]) -> None:
    """Add the links ``trace`` lacks, after the ones it has (a link kept once)."""
    start = conn.execute(
        f"SELECT COALESCE(MAX(position), -1) + 1 FROM {table} WHERE trace_id = ?", (trace,)
    ).fetchone()[0]
    conn.executemany(
        f"INSERT OR IGNORE INTO {table} (trace_id, {column}, position) VALUES (?, ?, ?)",
        [(trace, ident, start + i) for i, ident in enumerate(ids)],
    )


def _after(cursor: str) -> list[object]:
    """The (started_at, id) a trace cursor of this store holds; ``cursor_error``
    otherwise."""
    value = decode_cursor(CURSOR_KIND, cursor)
    if not (isinstance(value, list) and len(value) == 2):
        raise cursor_error()
    micros, ident = value
    if isinstance(micros, bool) or not isinstance(micros, int) or abs(micros) > SQL_INT_MAX:
        raise cursor_error()
    if not isinstance(ident, str):
        raise cursor_error()
    return [micros, ident]


# ---------------------------------------------------------------------- loading


def load(conn: sqlite3.Connection, row: sqlite3.Row) -> ReasoningTrace:
    """The trace of ``row`` with its steps, their tool calls and its links."""
    trace = headers(conn, [row])[0]
    steps = conn.execute(
        "SELECT * FROM steps WHERE trace_id = ? ORDER BY step_number", (row["id"],)
    ).fetchall()
    trace.steps.extend(load_steps(conn, steps))
    return trace


def headers(conn: sqlite3.Connection, rows: list[sqlite3.Row]) -> list[ReasoningTrace]:
    """The traces of ``rows`` with their links, without steps."""
    ids = [row["id"] for row in rows]
    messages = _links(conn, "trace_messages", "message_id", ids)
    entities = _links(conn, "trace_entities", "entity_id", ids)
    return [
        ReasoningTrace(
            id=row["id"],
            session_id=row["session_id"],
            task=row["task"],
            outcome=row["outcome"],
            success=None if row["success"] is None else bool(row["success"]),
            metadata=load_json(row["metadata"]),
            user_identifier=row["user_identifier"],
            started_at=from_micros(row["created_at"]),
            completed_at=None if row["completed_at"] is None else from_micros(row["completed_at"]),
            message_ids=messages.get(row["id"], []),
            entity_ids=entities.get(row["id"], []),
        )
        for row in rows
    ]


def load_steps(conn: sqlite3.Connection, rows: list[sqlite3.Row]) -> list[ReasoningStep]:
    """The steps of ``rows``, each with its tool calls, oldest first."""
    calls: dict[str, list[ToolCall]] = {}
    for chunk in _chunks([row["id"] for row in rows]):
        marks = ",".join("?" * len(chunk))
        found = conn.execute(
            f"SELECT * FROM tool_calls WHERE step_id IN ({marks}) ORDER BY num", chunk
        )
        for call in found:
            calls.setdefault(call["step_id"], []).append(_tool_call(call))
    return [
        ReasoningStep(
            id=row["id"],
            trace_id=row["trace_id"],
            step_number=row["step_number"],
            thought=row["thought"],
            action=row["action"],
            observation=row["observation"],
            metadata=load_json(row["metadata"]),
            tool_calls=calls.get(row["id"], []),
            created_at=from_micros(row["created_at"]),
        )
        for row in rows
    ]


def _tool_call(row: sqlite3.Row) -> ToolCall:
    return ToolCall(
        id=row["id"],
        step_id=row["step_id"],
        tool_name=row["tool_name"],
        arguments=load_json(row["arguments"]),
        result=json.loads(row["result"]),
        status=ToolCallStatus(row["status"]),
        duration_ms=row["duration_ms"],
        error=row["error"],
        created_at=from_micros(row["created_at"]),
    )


def _links(
    conn: sqlite3.Connection, table: str, column: str, ids: list[str]
) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for chunk in _chunks(ids):
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT trace_id, {column} FROM {table} WHERE trace_id IN ({marks}) "
            "ORDER BY trace_id, position",
            chunk,
        )
        for row in rows:
            found.setdefault(row[0], []).append(row[1])
    return found


def _chunks(ids: list[str]) -> list[list[str]]:
    return [ids[start : start + 500] for start in range(0, len(ids), 500)]


def dump_value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
