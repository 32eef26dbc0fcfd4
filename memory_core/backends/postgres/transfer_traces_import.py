"""Writing the reasoning records of the PostgreSQL bulk transfer: traces, steps and tool
calls (see :mod:`.transfer_import`; :mod:`.transfer_traces` exports them).

They are written in the batch's transaction by the shared rules
(:class:`~memory_core.archive.rules.TraceRules`), keeping ids, step numbers, timestamps,
metadata and JSON as their exact text, statuses, durations and embeddings, with the
``words`` that ``similar_traces`` and ``search_steps`` read; ``tool_stats`` adds up the
``tool_calls`` rows themselves, so imported calls count at once. Steps and tool calls
repeat their trace's tenant and user, as the backend's own writes do; a trace's
``last_step`` follows its highest step, so a step added later is numbered after the
imported ones. A tool call is inserted after those before it in the archive, which
orders the calls of one step recorded in the same microsecond as the archive does. The
message a trace was started by is not kept apart (the archive has only the links, in
order): ``triggered_by`` stays null.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory_core.store import (
    ImportState,
    Record,
    TraceRules,
    candidates,
    canonical_uuid,
    parse_stamp,
)

from . import words
from .codec import store_metadata, store_optional, store_text
from .trace_rows import dump_json
from .tx import Tx

_INSERT_TRACE = (
    "INSERT INTO {s}.traces (id, tenant, user_identifier, session_id, task, outcome, "
    "success, metadata, embedding, words, last_step, created_at, completed_at) VALUES "
    "(%s, %s, %s, %s, %s, %s, %s, %s, %s::float8[], %s::text[], 0, %s, %s)"
)
# The step takes its trace's tenant and user; the trace's last_step follows it.
_INSERT_STEP = (
    "WITH s AS (INSERT INTO {s}.steps (id, trace_id, tenant, user_identifier, step_number, "
    "thought, action, observation, metadata, embedding, words, created_at) SELECT %s, t.id, "
    "t.tenant, t.user_identifier, %s, %s, %s, %s, %s, %s::float8[], %s::text[], %s "
    "FROM {s}.traces t WHERE t.id = %s RETURNING trace_id, step_number) "
    "UPDATE {s}.traces t SET last_step = greatest(t.last_step, s.step_number) FROM s "
    "WHERE t.id = s.trace_id"
)
_INSERT_CALL = (
    "INSERT INTO {s}.tool_calls (id, step_id, tenant, user_identifier, tool_name, arguments, "
    "result, status, duration_ms, error, created_at) SELECT %s, s.id, s.tenant, "
    "s.user_identifier, %s, %s, %s, %s, %s, %s, %s FROM {s}.steps s WHERE s.id = %s"
)


def _when(value: str | None) -> datetime | None:
    return None if value is None else parse_stamp(value)


def _vector(values: list[float] | None) -> list[float] | None:
    """An embedding as a float8[] parameter, kept as given (integers as floats)."""
    return None if values is None else [float(x) for x in values]


async def _holders(tx: Tx, table: str, kind: str, archive_id: str, tenant: str) -> dict[str, Any]:
    """Who holds the ids a record may take (:func:`candidates`): id -> tenant."""
    ids = list(candidates(kind, archive_id, tenant))
    rows = await tx.rows(f"SELECT id, tenant FROM {{s}}.{table} WHERE id = ANY(%s)", (ids,))
    return {row[0]: row[1] for row in rows}


class TraceImporter:
    """The reasoning records of one batch, written in its transaction, on the batch's
    copy of the import's state (``state``), by the shared rules (``rules``)."""

    def __init__(self, state: ImportState, rules: TraceRules) -> None:
        self.state = state
        self.rules = rules

    async def write(self, tx: Tx, record: Record) -> None:
        """Write one trace, step or tool call (or count why not)."""
        kind = record["record"]
        if kind == "trace":
            await self._trace(tx, record)
        elif kind == "step":
            await self._step(tx, record)
        else:
            await self._call(tx, record)

    async def _trace(self, tx: Tx, record: Record) -> None:
        tenant = self.rules.tenant(record)
        if tenant is None:
            self.state.start_trace(record["id"], None, None)
            return
        found = await _holders(tx, "traces", "trace", record["id"], tenant)
        ident, present = self.rules.trace(record, tenant, found)
        if ident is None:
            return
        if present:  # its steps, tool calls and links go with it
            await tx.run("DELETE FROM {s}.traces WHERE id = %s", (ident,))
        await tx.run(
            _INSERT_TRACE,
            (
                ident,
                tenant,
                record["user_identifier"],
                store_text(record["session_id"]),
                store_text(record["task"]),
                store_optional(record.get("outcome")),
                record.get("success"),
                store_metadata(record["metadata"])[0],
                _vector(record.get("embedding")),
                words.of(record["task"]),
                parse_stamp(record["started_at"]),
                _when(record.get("completed_at")),
            ),
        )
        await self._links(tx, record, ident, tenant)
        self.rules.copied(record, ident)

    async def _links(self, tx: Tx, record: Record, ident: str, tenant: str) -> None:
        """The trace's links to messages and entities of its tenant, in order."""
        wanted = {
            ident: str(parsed)
            for ident in self.rules.message_candidates(record["message_ids"])
            if (parsed := canonical_uuid(ident)) is not None
        }
        rows = await tx.rows(
            "SELECT m.id::text, c.tenant = %s FROM {s}.messages m JOIN {s}.conversations c "
            "ON c.id = m.conversation_id WHERE m.id = ANY(%s::uuid[])",
            (tenant, sorted(set(wanted.values()))),
        )
        held = {row[0]: row[1] for row in rows}
        ours = {ident: held[uuid] for ident, uuid in wanted.items() if uuid in held}
        messages = [wanted[m] for m in self.rules.messages(record["message_ids"], ours)]
        mapped = [e for e in map(self.state.entities.get, record["entity_ids"]) if e is not None]
        rows = await tx.rows(
            "SELECT id FROM {s}.entities WHERE tenant = %s AND id = ANY(%s::text[])",
            (tenant, mapped),
        )
        tenants = {r[0] for r in rows}
        entities = self.rules.entities_of(
            record["entity_ids"],
            lambda a: e if (e := self.state.entities.get(a)) in tenants else None,
        )
        for table, column, cast, ids in (
            ("trace_messages", "message_id", "uuid", messages),
            ("trace_entities", "entity_id", "text", entities),
        ):
            if ids:
                await tx.run(
                    f"INSERT INTO {{s}}.{table} (trace_id, {column}) SELECT %s, x.id "
                    f"FROM unnest(%s::{cast}[]) WITH ORDINALITY AS x (id, n) ORDER BY x.n",
                    (ident, ids),
                )

    async def _step(self, tx: Tx, record: Record) -> None:
        trace_id = self.rules.parent(record)
        if trace_id is None:
            return
        tenant = self.state.trace_tenant or ""
        found = await _holders(tx, "steps", "step", record["id"], tenant)
        ident, present = self.rules.child(record, found)
        if ident is None:
            return
        number = record["step_number"]
        taken = await tx.row(
            "SELECT id FROM {s}.steps WHERE trace_id = %s AND step_number = %s",
            (trace_id, number),
        )
        if taken is not None and taken[0] != ident:
            self.rules.number_taken(record)
            return
        if present:  # its tool calls go with it
            await tx.run("DELETE FROM {s}.steps WHERE id = %s", (ident,))
        texts = (record.get("thought"), record.get("action"), record.get("observation"))
        await tx.run(
            _INSERT_STEP,
            (
                ident,
                number,
                *(store_optional(text) for text in texts),
                store_metadata(record["metadata"])[0],
                _vector(record.get("embedding")),
                words.of(*texts),
                parse_stamp(record["created_at"]),
                trace_id,
            ),
        )
        self.rules.copied(record, ident)

    async def _call(self, tx: Tx, record: Record) -> None:
        step_id = self.rules.parent(record)
        if step_id is None:
            return
        tenant = self.state.trace_tenant or ""
        found = await _holders(tx, "tool_calls", "tool_call", record["id"], tenant)
        ident, present = self.rules.child(record, found)
        if ident is None:
            return
        if present:
            await tx.run("DELETE FROM {s}.tool_calls WHERE id = %s", (ident,))
        await tx.run(
            _INSERT_CALL,
            (
                ident,
                store_text(record["tool_name"]),
                store_metadata(record["arguments"])[0],
                dump_json(record.get("result")),
                record["status"],
                record.get("duration_ms"),
                store_optional(record.get("error")),
                parse_stamp(record["created_at"]),
                step_id,
            ),
        )
        self.rules.copied(record, ident)
