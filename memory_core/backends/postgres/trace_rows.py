"""Rows of reasoning memory → models: traces, steps and tool calls.

Free text (session, task, outcome, thought, action, observation, tool name, error) is
stored as :func:`~.codec.store_text` escapes it; metadata, arguments and results as their
exact JSON text.
"""

from __future__ import annotations

import json
from typing import Any

from memory_core.store import ReasoningStep, ReasoningTrace, ToolCall, ToolCallStatus

from .codec import load_metadata, load_optional, load_text, utc
from .rows import metadata_text
from .tx import Tx

Row = tuple[Any, ...]

# Every read of a trace selects these, in this order (see to_trace): id and start time
# first, as words.best reads them.
TRACE_COLUMNS = (
    "r.id, r.created_at, r.session_id, r.task, r.outcome, r.success, r.metadata, "
    "r.user_identifier, r.completed_at, (SELECT coalesce(array_agg(tm.message_id::text "
    "ORDER BY tm.num), '{}') FROM {s}.trace_messages tm WHERE tm.trace_id = r.id), "
    "(SELECT coalesce(array_agg(te.entity_id ORDER BY te.num), '{}') "
    "FROM {s}.trace_entities te WHERE te.trace_id = r.id)"
)
# A step's (alias r): id and creation time first, as words.best reads them.
STEP_COLUMNS = (
    "r.id, r.created_at, r.trace_id, r.step_number, r.thought, r.action, r.observation, r.metadata"
)
CALL_COLUMNS = (
    "tc.id, tc.step_id, tc.tool_name, tc.arguments, tc.result, tc.status, tc.duration_ms, "
    "tc.error, tc.created_at"
)


def dump_json(value: Any) -> str:
    """A JSON value as its exact text (as metadata is stored)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def to_trace(row: Row, score: float | None = None) -> ReasoningTrace:
    """A row of :data:`TRACE_COLUMNS` (no steps: see :func:`with_steps`)."""
    completed = row[8]
    return ReasoningTrace(
        id=row[0],
        session_id=load_text(row[2]),
        task=load_text(row[3]),
        outcome=load_optional(row[4]),
        success=row[5],
        metadata=load_metadata(metadata_text(row[6], "trace", row[0])),
        user_identifier=row[7],
        started_at=utc(row[1]),
        completed_at=None if completed is None else utc(completed),
        message_ids=list(row[9]),
        entity_ids=list(row[10]),
        score=score,
    )


def to_step(row: Row, calls: list[ToolCall], score: float | None = None) -> ReasoningStep:
    """A row of :data:`STEP_COLUMNS` with its tool calls."""
    return ReasoningStep(
        id=row[0],
        trace_id=row[2],
        step_number=row[3],
        thought=load_optional(row[4]),
        action=load_optional(row[5]),
        observation=load_optional(row[6]),
        metadata=load_metadata(metadata_text(row[7], "step", row[0])),
        tool_calls=calls,
        created_at=utc(row[1]),
        score=score,
    )


def to_call(row: Row) -> ToolCall:
    """A row of :data:`CALL_COLUMNS`."""
    return ToolCall(
        id=row[0],
        step_id=row[1],
        tool_name=load_text(row[2]),
        arguments=load_metadata(metadata_text(row[3], "tool call", row[0])),
        result=json.loads(row[4]),
        status=ToolCallStatus(row[5]),
        duration_ms=row[6],
        error=load_optional(row[7]),
        created_at=utc(row[8]),
    )


async def calls_of(tx: Tx, where: str, params: list[object]) -> dict[str, list[ToolCall]]:
    """The tool calls meeting ``where`` (alias ``tc``) by step, oldest first."""
    rows = await tx.rows(
        f"SELECT {CALL_COLUMNS} FROM {{s}}.tool_calls tc WHERE {where} "
        "ORDER BY tc.step_id, tc.created_at, tc.num",
        params,
    )
    found: dict[str, list[ToolCall]] = {}
    for row in rows:
        found.setdefault(row[1], []).append(to_call(row))
    return found


async def with_steps(tx: Tx, row: Row) -> ReasoningTrace:
    """The trace of ``row`` (of :data:`TRACE_COLUMNS`) with its steps by number, each
    with its tool calls."""
    trace = to_trace(row)
    steps = await tx.rows(
        f"SELECT {STEP_COLUMNS} FROM {{s}}.steps r WHERE r.trace_id = %s ORDER BY r.step_number",
        (trace.id,),
    )
    if steps:
        calls = await calls_of(
            tx, "tc.step_id IN (SELECT id FROM {s}.steps WHERE trace_id = %s)", [trace.id]
        )
        trace.steps = [to_step(step, calls.get(step[0], [])) for step in steps]
    return trace
