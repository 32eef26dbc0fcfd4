"""Exporting the reasoning records of the PostgreSQL bulk transfer: traces, steps and
tool calls (see :mod:`.transfer`; :mod:`.transfer_traces_import` writes them).

A tenant's traces come by start time, then id (in byte order, as the embedded export
sorts them), each followed by its steps by number, each step by its tool calls by
creation time, then id. Three keyset streams are read side by side (traces, the steps
of those traces, the calls of those steps, each in that one order and in pages of their
own short transaction), so memory stays bounded by a page whatever a trace holds; a step
or call whose trace was not read (written meanwhile) is passed over.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

from memory_core.store import Record
from memory_core.store import transfer_records as rec

from .codec import store_text
from .trace_rows import CALL_COLUMNS, STEP_COLUMNS, TRACE_COLUMNS, to_call, to_step, to_trace
from .transfer_long_term import BYTES, PAGE, Reader, Row

# The smallest key: before every stored start time and id.
_FIRST: tuple[Any, ...] = (datetime(1, 1, 1, tzinfo=UTC), "")
_TRACE_KEY = f"t.created_at, t.id {BYTES}"
_STEP_KEY = f"{_TRACE_KEY}, r.step_number"
_CALL_KEY = f"{_STEP_KEY}, tc.created_at, tc.id {BYTES}"

# The traces are ``r`` here, as TRACE_COLUMNS reads them.
_TRACES = (
    f"SELECT {TRACE_COLUMNS}, r.embedding FROM {{s}}.traces r "
    f"WHERE {{where}} AND ({_TRACE_KEY.replace('t.', 'r.')}) > (%s, %s) "
    f"ORDER BY {_TRACE_KEY.replace('t.', 'r.')} LIMIT %s"
)
_STEPS = (
    f"SELECT {STEP_COLUMNS}, r.embedding, t.created_at, t.id FROM {{s}}.steps r "
    "JOIN {s}.traces t ON t.id = r.trace_id "
    f"WHERE {{where}} AND ({_STEP_KEY}) > (%s, %s, %s) ORDER BY {_STEP_KEY} LIMIT %s"
)
_CALLS = (
    f"SELECT {CALL_COLUMNS}, t.created_at, t.id, r.step_number FROM {{s}}.tool_calls tc "
    "JOIN {s}.steps r ON r.id = tc.step_id JOIN {s}.traces t ON t.id = r.trace_id "
    f"WHERE {{where}} AND ({_CALL_KEY}) > (%s, %s, %s, %s, %s) ORDER BY {_CALL_KEY} LIMIT %s"
)


def trace_scope(
    alias: str, tenant: str, prefix: str | None, users: list[str] | None
) -> tuple[str, list[object]]:
    """The condition (on traces ``alias``) of a tenant's traces in an export's scope: of
    the sessions starting with ``prefix``, of ``users`` (a single-tenant store)."""
    t = alias
    where = f"{t}.tenant = %s"
    params: list[object] = [tenant]
    if prefix:
        stored = store_text(prefix)
        where += f" AND substr({t}.session_id, 1, %s) = %s"
        params += [len(stored), stored]
    if users is not None:
        where += f" AND {t}.user_identifier = ANY(%s::text[])"
        params.append(users)
    return where, params


async def _paged(
    read: Reader,
    sql: str,
    params: list[object],
    after: tuple[Any, ...],
    key: Callable[[Row], tuple[Any, ...]],
) -> AsyncIterator[Row]:
    """Every row of a keyset query (its last parameters: the key after which to read,
    first ``after``, then the page size), page by page."""
    while True:
        rows = await read(sql, [*params, *after, PAGE])
        for row in rows:
            yield row
        if len(rows) < PAGE:
            return
        after = key(rows[-1])


class _Peek:
    """An async stream of rows, one row ahead."""

    def __init__(self, rows: AsyncIterator[Row], key: Callable[[Row], tuple[Any, ...]]) -> None:
        self.rows = rows
        self.key = key
        self.head: Row | None = None
        self.done = False

    async def take(self, owner: tuple[Any, ...]) -> AsyncIterator[Row]:
        """The rows whose owner key (the first ``len(owner)`` parts of their key) is
        ``owner``, passing over those before it."""
        size = len(owner)
        while True:
            if self.head is None and not self.done:
                self.head = await anext(self.rows, None)
                self.done = self.head is None
            if self.head is None:
                return
            found = self.key(self.head)[:size]
            if found > owner:
                return
            row, self.head = self.head, None
            if found == owner:
                yield row


def _trace_key(row: Row) -> tuple[Any, ...]:
    return (row[1], row[0])


def _step_key(row: Row) -> tuple[Any, ...]:
    return (row[9], row[10], row[3])


def _call_key(row: Row) -> tuple[Any, ...]:
    return (row[9], row[10], row[11], row[8], row[0])


async def export_traces(
    read: Reader, tenant: str, prefix: str | None, users: list[str] | None
) -> AsyncIterator[Record]:
    """A tenant's traces in scope, each followed by its steps, each step by its calls."""
    where, params = trace_scope("t", tenant, prefix, users)
    steps, calls = (sql.replace("{where}", where) for sql in (_STEPS, _CALLS))
    traces = _TRACES.replace("{where}", trace_scope("r", tenant, prefix, users)[0])
    step_rows = _Peek(_paged(read, steps, params, (*_FIRST, -1), _step_key), _step_key)
    call_rows = _Peek(_paged(read, calls, params, (*_FIRST, -1, *_FIRST), _call_key), _call_key)
    async for row in _paged(read, traces, params, _FIRST, _trace_key):
        yield rec.trace_record(to_trace(row[:11]), _floats(row[11]))
        async for step in step_rows.take(_trace_key(row)):
            yield rec.step_record(to_step(step[:8], []), _floats(step[8]))
            async for call in call_rows.take(_step_key(step)):
                yield rec.tool_call_record(to_call(call[:9]))


def _floats(stored: list[float] | None) -> list[float] | None:
    return None if stored is None else [float(x) for x in stored]
