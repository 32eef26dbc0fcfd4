"""Exporting the reasoning records of the Bolt bulk transfer: traces, steps and tool
calls (see :mod:`.transfer`; :mod:`.transfer_traces_import` writes them).

A tenant's traces come by ``started_at``, then id, each followed by its steps by
number (then id: another writer may repeat a number), each step by its tool calls by
``timestamp``, then id, as the backend reads them (:mod:`.reasoning`): what
neo4j-agent-memory wrote exports as memory-core reads it, with the stored embeddings
(``task_embedding``, a step's ``embedding``). Three keyset streams are read side by
side (traces, their steps, the steps' calls, each in that one order, in pages of their
own read transaction), so memory stays bounded by a page whatever a trace holds; a step
or call whose trace was not read (written meanwhile) is passed over. A trace without a
DateTime ``started_at`` (another writer's) is not listed by the backend, nor exported.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from typing import Any

from memory_core.store import Record
from memory_core.store import transfer_records as rec

from .reasoning import CALL_PROJECTION, HEADER, LINKS, to_call, to_step, to_trace
from .session import Connection

Row = dict[str, Any]
Key = tuple[Any, ...]

# Instants as (epoch seconds, nanosecond): exact, and comparable in Python too.
_TRACE_SCOPE = """
MATCH (t:ReasoningTrace)
WHERE ($tenant IS NULL OR t.tenant = $tenant) AND ($users IS NULL OR t.user_identifier IN $users)
  AND ($prefix IS NULL OR t.session_id STARTS WITH $prefix)
  AND t.started_at IS :: ZONED DATETIME NOT NULL
WITH t, t.started_at.epochSeconds AS ts, t.started_at.nanosecond AS tn
"""
_STEP_SCOPE = """
MATCH (t)-[:HAS_STEP]->(s:ReasoningStep)
WITH t, ts, tn, s,
     CASE WHEN s.step_number IS :: INTEGER NOT NULL THEN s.step_number ELSE 0 END AS n
"""
_CALL_SCOPE = """
MATCH (s)-[:USES_TOOL]->(c:ToolCall)
WITH t, ts, tn, s, n, c, CASE WHEN c.timestamp IS :: ZONED DATETIME NOT NULL
    THEN c.timestamp ELSE datetime({epochSeconds: 0}) END AS at
WITH t, ts, tn, s, n, c, at.epochSeconds AS cs, at.nanosecond AS cn
"""
_TRACE_KEY = ("ts", "tn", "t.id")
_STEP_KEY = (*_TRACE_KEY, "n", "s.id")
_CALL_KEY = (*_STEP_KEY, "cs", "cn", "c.id")


def after(columns: tuple[str, ...]) -> str:
    """Cypher true for a row whose key (``columns``) comes after ``$after`` (a list of as
    many values), or for every row when ``$after`` is null."""
    condition = f"{columns[-1]} > $after[{len(columns) - 1}]"
    for i in range(len(columns) - 2, -1, -1):
        condition = f"{columns[i]} > $after[{i}] OR ({columns[i]} = $after[{i}] AND ({condition}))"
    return f"$after IS NULL OR {condition}"


def _page(scope: str, key: tuple[str, ...], projection: str) -> str:
    order = ", ".join(key)
    return f"""{scope}
WITH * WHERE {after(key)}
WITH * ORDER BY {order} LIMIT $limit
RETURN {projection} AS item, [{order}] AS key
"""


TRACE_PAGE = _page(
    _TRACE_SCOPE,
    _TRACE_KEY,
    f"{HEADER[:-1]}, {LINKS}, embedding: t.task_embedding}}",
)
STEP_PAGE = _page(
    _TRACE_SCOPE + _STEP_SCOPE,
    _STEP_KEY,
    """s {.id, .thought, .action, .observation, .metadata, .embedding, step_number: n,
    created_at: s.timestamp, trace_id: t.id}""",
)
CALL_PAGE = _page(
    _TRACE_SCOPE + _STEP_SCOPE + _CALL_SCOPE,
    _CALL_KEY,
    CALL_PROJECTION[:-1] + ", step_id: s.id}",
)


class _Peek:
    """An async stream of rows (each with its ``key``), one row ahead."""

    def __init__(self, rows: AsyncIterator[Row]) -> None:
        self.rows = rows
        self.head: Row | None = None
        self.done = False

    async def take(self, owner: Key) -> AsyncIterator[Row]:
        """The rows whose owner key (the first ``len(owner)`` parts of their key) is
        ``owner``, passing over those before it."""
        size = len(owner)
        while True:
            if self.head is None and not self.done:
                self.head = await anext(self.rows, None)
                self.done = self.head is None
            if self.head is None:
                return
            found = tuple(self.head["key"][:size])
            if found > owner:
                return
            row, self.head = self.head, None
            if found == owner:
                yield row


async def _paged(
    conn: Connection, statement: str, params: dict[str, Any], limit: int
) -> AsyncIterator[Row]:
    """Every row of a keyset statement of :func:`_page`, page by page."""
    last: list[Any] | None = None
    while True:
        found = await conn.run_read(statement, **params, after=last, limit=limit)
        for row in found:
            yield row
        if len(found) < limit:
            return
        last = found[-1]["key"]


def embedding_of(value: Any) -> list[float] | None:
    """A stored vector as the archive takes it (another writer's value that is not a
    list of finite numbers: none)."""
    if not isinstance(value, list):
        return None
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in value):
        return None
    values = [float(x) for x in value]
    return values if all(math.isfinite(x) for x in values) else None


def _trace(item: Row) -> Record:
    return rec.trace_record(to_trace(item), embedding_of(item.get("embedding")))


def _step(item: Row) -> Record:
    step = to_step(item, str(item["trace_id"]))
    return rec.step_record(step, embedding_of(item.get("embedding")))


async def export_traces(
    conn: Connection,
    tenant: str | None,
    prefix: str | None,
    users: list[str] | None,
    limit: int,
) -> AsyncIterator[Record]:
    """A tenant's traces in scope (``tenant`` None: every one of a single-tenant store),
    each followed by its steps, each step by its tool calls, in pages of ``limit``."""
    params = {"tenant": tenant, "users": users, "prefix": prefix or None}
    steps = _Peek(_paged(conn, STEP_PAGE, params, limit))
    calls = _Peek(_paged(conn, CALL_PAGE, params, limit))
    async for trace in _paged(conn, TRACE_PAGE, params, limit):
        yield _trace(trace["item"])
        async for step in steps.take(tuple(trace["key"])):
            yield _step(step["item"])
            async for call in calls.take(tuple(step["key"])):
                item = call["item"]
                yield rec.tool_call_record(to_call(item, str(item["step_id"])))
