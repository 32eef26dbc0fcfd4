"""Traces, steps and tool calls through the public contract (format version 3).

Export (:func:`public_traces`): a user's traces are listed with ``list_traces_page`` (only
their ids and start times are held), put in archive order (``started_at``, then id), and
each is read whole with ``get_trace``. The public models carry no embedding: the records
have none, and the report counts each as not carried.

Import (:class:`TraceWriter`, for targets without a bulk hook and
``on_conflict="new-ids"``): ``start_trace``, ``add_step``, ``record_tool_call``, then,
once the trace's records are written, ``complete_trace`` and ``link_trace``. The target
issues the ids, numbers the steps and sets every timestamp to the time of the import:
each is counted as not carried. A trace's message links are not carried either (the
target gave the messages new ids); its entity links follow the entities the run wrote.
Each record written is noted in the checkpoint, so a re-run writes none twice.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime

from ..archive import records as rec
from ..archive.hooks import LINK_LOST, NO_USER, STEP_LOST, TRACE_LOST, ImportState
from ..archive.records import Record
from ..archive.report import TransferReport
from ..backend import MemoryBackend
from ..errors import InvalidRequestError, NotFoundError, NotSupportedError
from ..models import ReasoningTrace
from .checkpoint import Checkpoint
from .public_long_term import NO_IDS, NO_VECTORS

TRACE_PAGE = 500
UNREADABLE_VECTORS = "the public API gives no embeddings"
IMPORT_TIME = "the target sets it to the time of the import"
RENUMBERED = "the target numbers a trace's steps in the order they are added"
NEW_MESSAGE_IDS = "the target issued new message ids"
DONE = "already copied (checkpoint)"
# The checkpoint kind noting a trace whose completion and links were written.
FINISHED = "trace-finished"

REFUSED = (InvalidRequestError, NotFoundError, NotSupportedError)


async def public_traces(
    backend: MemoryBackend, user: str | None, prefix: str | None, report: TransferReport
) -> AsyncIterator[Record]:
    """The traces of ``user`` (every one of the store without a user) whose session
    starts with ``prefix``, in archive order, each followed by its steps and their tool
    calls."""
    starts: list[tuple[datetime, str]] = []
    cursor: str | None = None
    while True:
        page = await backend.list_traces_page(limit=TRACE_PAGE, cursor=cursor, user_identifier=user)
        starts += [
            (t.started_at, t.id)
            for t in page.traces
            if prefix is None or t.session_id.startswith(prefix)
        ]
        cursor = page.next_cursor
        if cursor is None:
            break
    for _, ident in sorted(starts):
        trace = await backend.get_trace(ident, user_identifier=user)
        if trace is not None:  # deleted while the export ran: nothing to carry
            for record in _trace_records(trace, user, report):
                yield record


def _trace_records(trace: ReasoningTrace, user: str | None, report: TransferReport) -> list[Record]:
    record = rec.trace_record(trace)
    if record["user_identifier"] is None:
        record["user_identifier"] = user
    found = [record]
    report.lose("trace.embedding", UNREADABLE_VECTORS)
    for step in trace.steps:
        found.append(rec.step_record(step))
        report.lose("step.embedding", UNREADABLE_VECTORS)
        calls = sorted(step.tool_calls, key=lambda call: (call.created_at, call.id))
        found.extend(rec.tool_call_record(call) for call in calls)
    return found


@dataclass
class _Open:
    """The trace being written: its archive record and the target's id (``None``: not
    carried), the user every call names, and its steps' ids in the target."""

    record: Record
    target: str | None
    user: str | None = None
    steps: dict[str, str | None] = field(default_factory=dict)


class TraceWriter:
    """Writes traces, steps and tool calls one at a time (see the module doc)."""

    def __init__(self, backend: MemoryBackend, state: ImportState, checkpoint: Checkpoint):
        self.backend = backend
        self.state = state
        self.report = state.report
        self.checkpoint = checkpoint
        self.current: _Open | None = None

    async def add(self, record: Record) -> None:
        kind = record["record"]
        if kind == "trace":
            await self.finish()
            self.current = await self._start(record)
        elif kind == "step":
            await self._step(record)
        else:
            await self._tool_call(record)

    async def finish(self) -> None:
        """Complete and link the trace being written, once its records are in."""
        current, self.current = self.current, None
        if current is None or current.target is None:
            return
        record = current.record
        if self.checkpoint.target_of(FINISHED, record["id"]) is not None:
            return
        if record.get("completed_at") is not None:
            try:
                await self.backend.complete_trace(
                    current.target,
                    outcome=record.get("outcome"),
                    success=record.get("success"),
                    user_identifier=current.user,
                )
                self.report.lose("trace.completed_at", IMPORT_TIME)
            except REFUSED as exc:
                self.report.lose("trace.completed_at", f"refused by the target: {exc}")
        try:
            await self._link(current)
        except REFUSED as exc:
            self.report.lose("trace.entity_ids", f"refused by the target: {exc}")
        self.checkpoint.wrote(FINISHED, record["id"], current.target)

    async def _start(self, record: Record) -> _Open:
        user = record["user_identifier"]
        if self.backend.multi_tenant and user is None:
            self.report.skip("trace", NO_USER)
            return _Open(record, None)
        target = self.checkpoint.target_of("trace", record["id"])
        if target is not None:
            self.report.skip("trace", DONE)
            return _Open(record, target, user)
        try:
            made = await self.backend.start_trace(
                record["session_id"],
                record["task"],
                metadata=record["metadata"],
                user_identifier=user,
            )
        except REFUSED as exc:
            self.report.skip("trace", f"refused by the target: {exc}")
            return _Open(record, None)
        self.checkpoint.wrote("trace", record["id"], made.id)
        self._copied(record, "started_at")
        return _Open(record, made.id, user)

    async def _step(self, record: Record) -> None:
        current = self.current
        if current is None or current.target is None:
            self.report.skip("step", TRACE_LOST)
            return
        target = self.checkpoint.target_of("step", record["id"])
        if target is not None:
            self.report.skip("step", DONE)
            current.steps[record["id"]] = target
            return
        try:
            made = await self.backend.add_step(
                current.target,
                thought=record.get("thought"),
                action=record.get("action"),
                observation=record.get("observation"),
                metadata=record["metadata"],
                user_identifier=current.user,
            )
        except REFUSED as exc:
            self.report.skip("step", f"refused by the target: {exc}")
            current.steps[record["id"]] = None
            return
        current.steps[record["id"]] = made.id
        self.checkpoint.wrote("step", record["id"], made.id)
        if made.step_number != record["step_number"]:
            self.report.lose("step.step_number", RENUMBERED)
        self._copied(record, "created_at")

    async def _tool_call(self, record: Record) -> None:
        current = self.current
        step = None if current is None else current.steps.get(record["step_id"])
        if current is None or step is None:
            self.report.skip("tool_call", STEP_LOST)
            return
        if self.checkpoint.target_of("tool_call", record["id"]) is not None:
            self.report.skip("tool_call", DONE)
            return
        try:
            made = await self.backend.record_tool_call(
                step,
                record["tool_name"],
                record["arguments"],
                result=record.get("result"),
                status=record["status"],
                duration_ms=record.get("duration_ms"),
                error=record.get("error"),
                user_identifier=current.user,
            )
        except REFUSED as exc:
            self.report.skip("tool_call", f"refused by the target: {exc}")
            return
        self.checkpoint.wrote("tool_call", record["id"], made.id)
        self._copied(record, "created_at")

    async def _link(self, current: _Open) -> None:
        """Link the trace to the entities the run wrote; message links are counted as
        not carried (the target gave the messages new ids)."""
        record, report = current.record, self.report
        if record["message_ids"]:
            report.lose("trace.message_ids", NEW_MESSAGE_IDS, len(record["message_ids"]))
        mapped = [self.state.entities.get(ident) for ident in record["entity_ids"]]
        kept = list(dict.fromkeys(ident for ident in mapped if ident is not None))
        if len(kept) < len(mapped):
            report.lose("trace.entity_ids", LINK_LOST, len(mapped) - len(kept))
        if not kept:
            return
        if not self.backend.capabilities.trace_links:
            why = f"{self.backend.name} stores no trace links (capability 'trace_links' is False)"
            report.lose("trace.entity_ids", why, len(kept))
            return
        assert current.target is not None
        await self.backend.link_trace(current.target, entity_ids=kept, user_identifier=current.user)

    def _copied(self, record: Record, stamp: str) -> None:
        """Count ``record`` as written, and what the target set in its place."""
        kind, report = record["record"], self.report
        report.lose(f"{kind}.id", NO_IDS)
        report.lose(f"{kind}.{stamp}", IMPORT_TIME)
        if record.get("embedding") is not None:
            report.lose(f"{kind}.embedding", NO_VECTORS)
        report.copy(kind)
