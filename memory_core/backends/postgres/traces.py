"""Reasoning traces: start, steps, tool calls, completion, links, reads and listings.

A trace records the caller's ``user_identifier`` in its tenant; a call whose scope has a
user reaches only that user's traces, a call without one every trace of the tenant (see
:func:`scope`). Steps and tool calls repeat their trace's tenant and user. A step and a
tool call are each one statement outside a transaction block, returning what it wrote
(its id is chosen before the first attempt: a replay after a lost connection finds the
row it wrote). A step's statement raises its trace's ``last_step`` and inserts the step,
so concurrent appends get distinct, gapless numbers (the row lock orders them). A start
(the trigger checked, the trace, its link) is one transaction.

A message is known to a scope when its conversation is in the scope's tenant, an entity
when it is the tenant's, as for the entities a preference links. The message a trace was
``triggered_by`` must be known too: it is linked, and kept on the trace
(``triggered_by``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import uuid4

from psycopg import errors as pg_errors

from memory_core.store import (
    NotFoundError,
    ReasoningStep,
    ReasoningTrace,
    ToolCall,
    ToolCallStatus,
    TracePage,
    canonical_uuid,
    cursor_error,
    decode_cursor,
    encode_cursor,
)
from memory_core.store import requests as rq

from . import words
from .codec import SQL_INT_MAX, store_metadata, store_optional, store_text
from .conversations import BACKEND, tenant_key
from .trace_rows import (
    CALL_COLUMNS,
    TRACE_COLUMNS,
    dump_json,
    to_call,
    to_step,
    to_trace,
    with_steps,
)
from .tx import Tx

CURSOR_KIND = "postgres-traces"

_START = (
    "INSERT INTO {s}.traces (id, tenant, user_identifier, session_id, task, metadata, "
    "triggered_by, embedding, words, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, "
    "%s::float8[], %s::text[], %s)"
)


def scope(alias: str, req: rq.Scope) -> tuple[str, list[object]]:
    """The condition (on rows of ``alias``) and parameters selecting ``req``'s records."""
    where = f"{alias}.tenant = %s"
    params: list[object] = [tenant_key(req.tenant)]
    if req.user_identifier is not None:
        where += f" AND {alias}.user_identifier = %s"
        params.append(req.user_identifier)
    return where, params


async def start(tx: Tx, req: rq.StartTrace, now: datetime) -> ReasoningTrace:
    """The ``start_trace`` hook (in a transaction): the trigger checked, then the trace
    and its link to the trigger."""
    tenant = tenant_key(req.tenant)
    trigger = req.triggered_by_message_id
    linked: list[Any] = []
    if trigger is not None:
        linked = await _known_messages(tx, tenant, (trigger,), "triggered_by_message_id")
    ident = str(uuid4())
    await tx.run(
        _START,
        (
            ident,
            tenant,
            req.user_identifier,
            store_text(req.session_id),
            store_text(req.task),
            store_metadata(req.metadata)[0],
            None if trigger is None else str(linked[0]),
            req.embedding,
            words.of(req.task),
            now,
        ),
    )
    if linked:
        await _link_messages(tx, ident, linked, "triggered_by_message_id")
    return await _trace(tx, ident)


_ADD_STEP = (
    "WITH t AS (UPDATE {{s}}.traces r SET last_step = r.last_step + 1 WHERE r.id = %s AND "
    "{where} RETURNING r.id, r.last_step, r.tenant, r.user_identifier) "
    "INSERT INTO {{s}}.steps (id, trace_id, tenant, user_identifier, step_number, thought, "
    "action, observation, metadata, embedding, words, created_at) SELECT %s, t.id, t.tenant, "
    "t.user_identifier, t.last_step, %s, %s, %s, %s, %s::float8[], %s::text[], %s FROM t "
    "RETURNING step_number"
)


async def add_step(tx: Tx, req: rq.AddStep, ident: str, now: datetime) -> ReasoningStep:
    """The ``add_step`` hook, one statement (``ident`` and ``now`` chosen once): the
    trace's next number and the step. The trace's row lock orders concurrent appends; a
    replay after a lost connection finds the step the first attempt wrote."""
    where, params = scope("r", req.scope)
    metadata = store_metadata(req.metadata)[0]
    texts = (
        store_optional(req.thought),
        store_optional(req.action),
        store_optional(req.observation),
    )
    step_words = words.of(req.thought, req.action, req.observation)
    values = [*texts, metadata, req.embedding, step_words, now]
    try:
        row = await tx.row(_ADD_STEP.format(where=where), [req.trace_id, *params, ident, *values])
    except pg_errors.UniqueViolation as exc:
        if exc.diag.constraint_name != "steps_pkey":
            raise
        row = await tx.row(  # a replay: the first attempt wrote it
            "SELECT step_number FROM {s}.steps WHERE id = %s", (ident,)
        )
    if row is None:
        raise NotFoundError.missing(BACKEND, "trace", req.trace_id, argument="trace_id")
    return to_step((ident, now, req.trace_id, row[0], *texts, metadata), [])


async def record_call(tx: Tx, req: rq.RecordToolCall, ident: str, now: datetime) -> ToolCall:
    """The ``record_tool_call`` hook, one statement: ``ident`` and ``now`` chosen once."""
    where, params = scope("r", req.scope)
    values = [
        ident,
        store_text(req.tool_name),
        store_metadata(req.arguments)[0],
        dump_json(req.result),
        ToolCallStatus(req.status).value,
        req.duration_ms,
        store_optional(req.error),
        now,
    ]
    try:
        row = await tx.row(
            "INSERT INTO {s}.tool_calls AS tc (id, step_id, tenant, user_identifier, "
            "tool_name, arguments, result, status, duration_ms, error, created_at) SELECT %s, "
            "r.id, r.tenant, r.user_identifier, %s, %s, %s, %s, %s, %s, %s FROM {s}.steps r "
            f"WHERE r.id = %s AND {where} RETURNING {CALL_COLUMNS}",
            [*values, req.step_id, *params],
        )
    except pg_errors.UniqueViolation as exc:
        if exc.diag.constraint_name != "tool_calls_pkey":
            raise
        row = await tx.row(  # a replay: the first attempt wrote it
            f"SELECT {CALL_COLUMNS} FROM {{s}}.tool_calls tc WHERE tc.id = %s", (ident,)
        )
    except pg_errors.ForeignKeyViolation:  # the step deleted meanwhile
        row = None
    if row is None:
        raise NotFoundError.missing(BACKEND, "step", req.step_id, argument="step_id")
    return to_call(row)


async def complete(tx: Tx, req: rq.CompleteTrace, now: datetime) -> ReasoningTrace:
    """The ``complete_trace`` hook (in a transaction): only the first call completes."""
    where, params = scope("r", req.scope)
    await tx.run(
        f"UPDATE {{s}}.traces r SET outcome = %s, success = %s, completed_at = %s "
        f"WHERE r.id = %s AND r.completed_at IS NULL AND {where}",
        [store_optional(req.outcome), req.success, now, req.trace_id, *params],
    )
    found = await get(tx, rq.GetTrace(trace_id=req.trace_id, scope=req.scope))
    if found is None:
        raise NotFoundError.missing(BACKEND, "trace", req.trace_id, argument="trace_id")
    return found


async def get(tx: Tx, req: rq.GetTrace) -> ReasoningTrace | None:
    """The ``get_trace`` hook: the trace with its steps and their tool calls."""
    where, params = scope("r", req.scope)
    row = await tx.row(
        f"SELECT {TRACE_COLUMNS} FROM {{s}}.traces r WHERE r.id = %s AND {where}",
        [req.trace_id, *params],
    )
    return None if row is None else await with_steps(tx, row)


async def _trace(tx: Tx, ident: str) -> ReasoningTrace:
    row = await tx.row(f"SELECT {TRACE_COLUMNS} FROM {{s}}.traces r WHERE r.id = %s", (ident,))
    assert row is not None
    return to_trace(row)


async def list_traces(tx: Tx, req: rq.ListTraces) -> TracePage:
    """The ``list_traces`` hook: newest first (start time, then id, both descending),
    keyset pages."""
    where, params = scope("r", req.scope)
    if req.session_id is not None:
        where += " AND r.session_id = %s"
        params.append(store_text(req.session_id))
    if req.success is not None:
        where += " AND r.success = %s"
        params.append(req.success)
    if req.cursor is not None:
        where += " AND (r.created_at, r.id) < (%s, %s)"
        params += _after(req.cursor)
    limit = min(req.limit, SQL_INT_MAX - 1)
    rows = await tx.rows(
        f"SELECT {TRACE_COLUMNS} FROM {{s}}.traces r WHERE {where} "
        "ORDER BY r.created_at DESC, r.id DESC LIMIT %s",
        [*params, limit + 1],
    )
    traces = [to_trace(row) for row in rows[:limit]]
    after = None
    if len(rows) > limit:
        last = traces[-1]
        after = encode_cursor(CURSOR_KIND, [last.started_at.isoformat(), last.id])
    return TracePage(traces=traces, next_cursor=after)


def _after(cursor: str) -> list[object]:
    value = decode_cursor(CURSOR_KIND, cursor)
    if not (isinstance(value, list) and len(value) == 2):
        raise cursor_error()
    moment, ident = value
    if not (isinstance(moment, str) and isinstance(ident, str)):
        raise cursor_error()
    try:
        when = datetime.fromisoformat(moment)
    except ValueError:
        raise cursor_error() from None
    if when.tzinfo is None:
        raise cursor_error()
    return [when, ident]


async def link(tx: Tx, req: rq.LinkTrace) -> ReasoningTrace:
    """The ``link_trace`` hook (in a transaction): the trace held (``FOR KEY SHARE``: not
    deleted meanwhile) and every id checked first, then each link made once; nothing is
    linked when one is unknown."""
    where, params = scope("r", req.scope)
    held = await tx.row(
        f"SELECT 1 FROM {{s}}.traces r WHERE r.id = %s AND {where} FOR KEY SHARE",
        [req.trace_id, *params],
    )
    if held is None:
        raise NotFoundError.missing(BACKEND, "trace", req.trace_id, argument="trace_id")
    tenant = tenant_key(req.tenant)
    messages: list[Any] = []
    if req.message_ids:
        messages = await _known_messages(tx, tenant, req.message_ids, "message_ids")
    if req.entity_ids:
        await _known_entities(tx, tenant, req.entity_ids)
    if messages:
        await _link_messages(tx, req.trace_id, messages, "message_ids")
    if req.entity_ids:
        await _link_entities(tx, req.trace_id, req.entity_ids)
    found = await get(tx, rq.GetTrace(trace_id=req.trace_id, scope=req.scope))
    assert found is not None
    return found


async def _link_entities(tx: Tx, trace: str, entities: tuple[str, ...]) -> None:
    """Link ``trace`` to the ``entities`` it lacks, in order."""
    try:
        await tx.run(
            "INSERT INTO {s}.trace_entities (trace_id, entity_id) SELECT %s, x.id "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS x (id, n) ORDER BY x.n "
            "ON CONFLICT DO NOTHING",
            (trace, list(entities)),
        )
    except pg_errors.ForeignKeyViolation:  # deleted meanwhile: nothing linked
        raise _gone("entity", entities, "entity_ids") from None


async def _known_messages(tx: Tx, tenant: str, ids: tuple[str, ...], argument: str) -> list[Any]:
    """``ids`` as UUIDs, each a message of ``tenant``, else the error naming
    ``argument`` and the first that is not."""
    parsed = [canonical_uuid(ident) for ident in ids]
    rows = await tx.rows(
        "SELECT m.id FROM {s}.messages m JOIN {s}.conversations c ON c.id = m.conversation_id "
        "WHERE m.id = ANY(%s::uuid[]) AND c.tenant = %s",
        ([p for p in parsed if p is not None], tenant),
    )
    there = {row[0] for row in rows}
    for ident, value in zip(ids, parsed, strict=True):
        if value is None or value not in there:
            raise NotFoundError.missing(BACKEND, "message", ident, argument=argument)
    return parsed


async def _link_messages(tx: Tx, trace: str, messages: list[Any], argument: str) -> None:
    """Link ``trace`` to the ``messages`` it lacks, in order (checked: one deleted
    meanwhile is the error naming ``argument``)."""
    try:
        await tx.run(
            "INSERT INTO {s}.trace_messages (trace_id, message_id) SELECT %s, x.id "
            "FROM unnest(%s::uuid[]) WITH ORDINALITY AS x (id, n) ORDER BY x.n "
            "ON CONFLICT DO NOTHING",
            (trace, messages),
        )
    except pg_errors.ForeignKeyViolation:
        raise _gone("message", [str(m) for m in messages], argument) from None


async def _known_entities(tx: Tx, tenant: str, ids: tuple[str, ...]) -> None:
    rows = await tx.rows(
        "SELECT id FROM {s}.entities WHERE tenant = %s AND id = ANY(%s::text[])",
        (tenant, list(ids)),
    )
    there = {row[0] for row in rows}
    for ident in ids:
        if ident not in there:
            raise NotFoundError.missing(BACKEND, "entity", ident, argument="entity_ids")


def _gone(kind: str, ids: Sequence[str], argument: str) -> NotFoundError:
    """The error for a link whose other side was deleted after it was checked."""
    return NotFoundError.missing(BACKEND, kind, ids[0], argument=argument)
