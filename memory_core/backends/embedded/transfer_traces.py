"""The reasoning records of the embedded bulk transfer: traces, steps and tool calls (see
:mod:`.transfer`).

Export reads a tenant's traces by ``(started_at, id)`` in keyset pages, each trace's
steps by number in pages of their own, each step with its tool calls by ``(created_at,
id)``, every read its own short transaction, with every stored field: ids, numbers,
timestamps, statuses, embeddings, the trace's links in order. Import writes them in the
batch's transaction by the shared rules (:class:`~memory_core.archive.rules.TraceRules`),
keeping all of it, and indexes the words of tasks and steps so that ``similar_traces``
and ``search_steps`` find them; the statistics read the tool calls as written.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import TypeVar

from memory_core.store import ImportState, Record, TraceRules, parse_stamp
from memory_core.store import transfer_records as rec

from . import traces, words
from .codec import SQL_INT_MAX, dump_json, pack_vector, to_micros, unpack_vector
from .transfer_long_term import entity_of, holders, micros

TRACE_PAGE = 200
STEP_PAGE = 500
T = TypeVar("T")
Reader = Callable[[Callable[[sqlite3.Connection], T]], Awaitable[T]]
Trace = tuple[Record, list[str]]  # a trace record and its step ids


# ---------------------------------------------------------------------------- export


async def export_traces(
    read: Reader[list[Record]], tenant: str, prefix: str | None, users: list[str] | None
) -> AsyncIterator[Record]:
    """The tenant's traces in archive order, each followed by its steps and their tool
    calls; of sessions starting with ``prefix`` and of ``users`` when given."""
    after: tuple[int, str] = (-SQL_INT_MAX - 1, "")
    while True:
        page = await read(
            partial(_trace_page, tenant=tenant, prefix=prefix, users=users, after=after)
        )
        for trace in page:
            yield trace
            async for record in _steps(read, trace["id"]):
                yield record
        if len(page) < TRACE_PAGE:
            return
        last = page[-1]
        after = (to_micros(parse_stamp(last["started_at"])), last["id"])


def _trace_page(
    conn: sqlite3.Connection,
    *,
    tenant: str,
    prefix: str | None,
    users: list[str] | None,
    after: tuple[int, str],
) -> list[Record]:
    sql = "SELECT * FROM traces r WHERE r.tenant = ? AND (r.created_at, r.id) > (?, ?)"
    params: list[object] = [tenant, *after]
    if prefix:
        sql += " AND substr(r.session_id, 1, ?) = ?"
        params += [len(prefix), prefix]
    if users is not None:
        sql += f" AND r.user_identifier IN ({','.join('?' * len(users))})"
        params += users
    rows = conn.execute(sql + " ORDER BY r.created_at, r.id LIMIT ?", [*params, TRACE_PAGE])
    found = rows.fetchall()
    loaded = traces.headers(conn, found)
    return [
        rec.trace_record(trace, unpack_vector(row["embedding"]))
        for trace, row in zip(loaded, found, strict=True)
    ]


async def _steps(read: Reader[list[Record]], trace_id: str) -> AsyncIterator[Record]:
    after = 0
    while True:
        page = await read(partial(_step_page, trace_id=trace_id, after=after))
        for record in page:
            yield record
        numbers = [r["step_number"] for r in page if r["record"] == "step"]
        if len(numbers) < STEP_PAGE:
            return
        after = numbers[-1]


def _step_page(conn: sqlite3.Connection, *, trace_id: str, after: int) -> list[Record]:
    """A page of a trace's steps, each followed by its tool calls."""
    rows = conn.execute(
        "SELECT * FROM steps WHERE trace_id = ? AND step_number > ? ORDER BY step_number LIMIT ?",
        (trace_id, after, STEP_PAGE),
    ).fetchall()
    found: list[Record] = []
    for step, row in zip(traces.load_steps(conn, rows), rows, strict=True):
        found.append(rec.step_record(step, unpack_vector(row["embedding"])))
        calls = sorted(step.tool_calls, key=lambda call: (call.created_at, call.id))
        found.extend(rec.tool_call_record(call) for call in calls)
    return found


# ---------------------------------------------------------------------------- import


class TraceImporter:
    """The reasoning records of one batch, written in its transaction (the store's
    worker thread), by the shared rules (``rules``)."""

    def __init__(self, state: ImportState, rules: TraceRules) -> None:
        self.state = state
        self.rules = rules

    def write(self, conn: sqlite3.Connection, record: Record) -> None:
        kind = record["record"]
        if kind == "trace":
            self._trace(conn, record)
            return
        parent = self.rules.parent(record)
        if parent is None:
            return
        table = "steps" if kind == "step" else "tool_calls"
        tenant = self.state.trace_tenant or ""
        ident, replace = self.rules.child(record, holders(conn, table, kind, record["id"], tenant))
        if ident is None:
            return
        if replace:
            conn.execute(f"DELETE FROM {table} WHERE id = ?", (ident,))
        if kind == "step":
            if not self._step(conn, record, ident, parent):
                return
        else:
            self._tool_call(conn, record, ident, parent)
        self.rules.copied(record, ident)

    def _trace(self, conn: sqlite3.Connection, record: Record) -> None:
        tenant = self.rules.tenant(record)
        if tenant is None:
            self.state.start_trace(record["id"], None, None)
            return
        found = holders(conn, "traces", "trace", record["id"], tenant)
        ident, replace = self.rules.trace(record, tenant, found)
        if ident is None:
            return
        if replace:  # its steps, tool calls, links and words go with it
            conn.execute("DELETE FROM traces WHERE id = ?", (ident,))
        success = record.get("success")
        conn.execute(
            "INSERT INTO traces (id, tenant, user_identifier, session_id, task, outcome, "
            "success, metadata, embedding, created_at, completed_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                ident,
                tenant,
                record["user_identifier"],
                record["session_id"],
                record["task"],
                record.get("outcome"),
                None if success is None else int(success),
                dump_json(record["metadata"]),
                pack_vector(record.get("embedding")),
                micros(record["started_at"]),
                micros(record.get("completed_at")),
            ),
        )
        self._links(conn, record, ident, tenant)
        words.index(conn, traces.TRACE, tenant, ident, (record["task"],))
        self.rules.copied(record, ident)

    def _links(self, conn: sqlite3.Connection, record: Record, ident: str, tenant: str) -> None:
        """The trace's links to messages and entities of its tenant, in archive order."""
        wanted = self.rules.message_candidates(record["message_ids"])
        ours: dict[str, bool] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            for row in conn.execute(
                "SELECT m.id, c.tenant FROM messages m JOIN conversations c "
                f"ON c.id = m.conversation_id WHERE m.id IN ({','.join('?' * len(chunk))})",
                chunk,
            ):
                ours[row[0]] = row[1] == tenant
        messages = self.rules.messages(record["message_ids"], ours)
        entities = self.rules.entities_of(
            record["entity_ids"], lambda a: entity_of(conn, self.state, a, tenant)
        )
        for table, column, ids in (
            ("trace_messages", "message_id", messages),
            ("trace_entities", "entity_id", entities),
        ):
            conn.executemany(
                f"INSERT INTO {table} (trace_id, {column}, position) VALUES (?, ?, ?)",
                [(ident, linked, position) for position, linked in enumerate(ids)],
            )

    def _step(self, conn: sqlite3.Connection, record: Record, ident: str, trace_id: str) -> bool:
        """Write a step under ``trace_id``; ``False`` (counted) when its number is taken."""
        number = record["step_number"]
        taken = conn.execute(
            "SELECT 1 FROM steps WHERE trace_id = ? AND step_number = ?", (trace_id, number)
        ).fetchone()
        if taken is not None:
            self.rules.number_taken(record)
            return False
        trace = conn.execute(
            "SELECT tenant, user_identifier FROM traces WHERE id = ?", (trace_id,)
        ).fetchone()
        texts = (record.get("thought"), record.get("action"), record.get("observation"))
        conn.execute(
            "INSERT INTO steps (id, trace_id, tenant, user_identifier, step_number, thought, "
            "action, observation, metadata, embedding, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                ident,
                trace_id,
                trace["tenant"],
                trace["user_identifier"],
                number,
                *texts,
                dump_json(record["metadata"]),
                pack_vector(record.get("embedding")),
                micros(record["created_at"]),
            ),
        )
        conn.execute(
            "UPDATE traces SET next_step = MAX(next_step, ?) WHERE id = ?", (number + 1, trace_id)
        )
        words.index(conn, traces.STEP, trace["tenant"], ident, texts)
        return True

    def _tool_call(
        self, conn: sqlite3.Connection, record: Record, ident: str, step_id: str
    ) -> None:
        step = conn.execute(
            "SELECT tenant, user_identifier FROM steps WHERE id = ?", (step_id,)
        ).fetchone()
        conn.execute(
            "INSERT INTO tool_calls (id, step_id, tenant, user_identifier, tool_name, arguments, "
            "result, status, duration_ms, error, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                ident,
                step_id,
                step["tenant"],
                step["user_identifier"],
                record["tool_name"],
                dump_json(record["arguments"]),
                traces.dump_value(record.get("result")),
                record["status"],
                record.get("duration_ms"),
                record.get("error"),
                micros(record["created_at"]),
            ),
        )
