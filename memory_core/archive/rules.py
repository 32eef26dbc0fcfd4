"""The decisions every bulk importer of long-term and reasoning records takes the same
way, whatever it stores in: where a record goes (its tenant, its id), whether it is
written, which links it keeps, and how each outcome is counted. Pure decisions: the
lookups they need (who holds an id, which entity a link names in the target) are made
by the importer, in its own query language, and handed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from .hooks import (
    FOREIGN_ID,
    FOREIGN_LINK,
    FOREIGN_MESSAGE,
    LINK_LOST,
    MESSAGE_LOST,
    NO_USER,
    PRESENT,
    RENAMED,
    SAME_TRIPLE,
    STEP_LOST,
    STEP_NUMBER_TAKEN,
    TENANT_LOST,
    TRACE_LOST,
    ImportState,
    OnConflict,
    own_id,
)
from .records import Record
from .report import TransferReport

# Where an id is held in the target: id -> the holder's tenant (absent: the id is free).
Holders = Mapping[str, str | None]
Placed = tuple[str | None, bool]


def candidates(kind: str, archive_id: str, tenant: str | None) -> tuple[str, str]:
    """The ids a record may take in ``tenant``, in order of preference: its archive id,
    then one derived from the tenant (which a re-run finds again)."""
    return archive_id, own_id(tenant or "", kind, archive_id)


def choose_id(
    kind: str, archive_id: str, tenant: str | None, holders: Holders, multi_tenant: bool
) -> Placed:
    """The id a record takes in ``tenant`` and whether the tenant already has it: the
    first of :func:`candidates` no other tenant holds; ``(None, False)`` when both are
    another tenant's. In a single-tenant store every holder is the record's own."""
    for ident in candidates(kind, archive_id, tenant):
        if ident not in holders:
            return ident, False
        if not multi_tenant or holders[ident] == tenant:
            return ident, True
    return None, False


class ImportRules:
    """The rules of one batch: ``on_conflict``, the counts (``tally``), the archive ->
    target entity map of the run, and whether the target is multi-tenant."""

    def __init__(
        self,
        tally: TransferReport,
        on_conflict: OnConflict | str,
        entities: Mapping[str, str | None],
        multi_tenant: bool,
    ) -> None:
        self.tally = tally
        self.overwrite = on_conflict == "overwrite"
        self.entities = entities
        self.multi_tenant = multi_tenant

    def tenant(self, record: Record, single: str | None = "") -> str | None:
        """The stored tenant of ``record``: its user in a multi-tenant store (``None``,
        counted as skipped, when it names none), else ``single``."""
        if not self.multi_tenant:
            return single
        user = record["user_identifier"]
        if isinstance(user, str) and user:
            return user
        self.tally.skip(record["record"], NO_USER)
        return None

    def place(self, record: Record, tenant: str | None, holders: Holders) -> str | None:
        """The id ``record`` is written under, or ``None`` (counted as skipped): its id is
        another tenant's even in derived form, or the target has it and the import does
        not overwrite. ``holders`` covers the record's :func:`candidates`."""
        kind = record["record"]
        ident, present = choose_id(kind, record["id"], tenant, holders, self.multi_tenant)
        return self.admit(kind, ident, present)

    def admit(self, kind: str, ident: str | None, present: bool) -> str | None:
        """``ident`` when a record placed there is written, else ``None`` (counted)."""
        if ident is None:
            self.tally.skip(kind, FOREIGN_ID)
            return None
        if present and not self.overwrite:
            self.tally.skip(kind, PRESENT)
            return None
        return ident

    def copied(self, record: Record, ident: str) -> None:
        """Count ``record`` as written under ``ident`` (and what it lost on the way)."""
        kind = record["record"]
        if ident != record["id"]:
            self.tally.lose(f"{kind}.id", RENAMED)
        if kind == "relationship" and not self.multi_tenant and record["user_identifier"]:
            self.tally.lose("relationship.user_identifier", TENANT_LOST)
        self.tally.copy(kind)

    def ends(self, record: Record, entity: Callable[[str], str | None]) -> tuple[str, str] | None:
        """A relationship's source and target in the target (``entity`` maps an archive
        entity to its id in the record's tenant, ``None`` when it has none); ``None``,
        counted as skipped, when one was not carried or is another tenant's."""
        names = (record["source_id"], record["target_id"])
        source, target = (entity(name) for name in names)
        if source is None or target is None:
            lost = any(self.entities.get(name) is None for name in names)
            self.tally.skip("relationship", LINK_LOST if lost else FOREIGN_LINK)
            return None
        return source, target

    def keeps_triple(self) -> bool:
        """Whether a relationship whose source, type and target the target already holds
        (under another id) replaces it; if not, it is counted as skipped."""
        if not self.overwrite:
            self.tally.skip("relationship", SAME_TRIPLE)
        return self.overwrite

    def linked(
        self, archive_ids: Iterable[str], entity: Callable[[str], str | None], name: str
    ) -> list[str]:
        """The entities a record links, in the target, in order, each once; a link to an
        entity not carried, or of another tenant, is dropped and counted under ``name``
        (``preference.linked_entities``)."""
        kept: list[str] = []
        for archive_id in archive_ids:
            found = entity(archive_id)
            if found is None:
                carried = self.entities.get(archive_id) is not None
                self.tally.lose(name, FOREIGN_LINK if carried else LINK_LOST)
            elif found not in kept:
                kept.append(found)
        return kept


# Where a placed reasoning record goes: the id to write it under (``None``: it is not
# written, counted), and whether a record of the tenant already holds that id (it is
# replaced: the import overwrites).
Decision = tuple[str | None, bool]


class TraceRules(ImportRules):
    """The rules of traces, steps and tool calls (format version 3). A trace is placed
    like a preference and noted in ``state`` (:meth:`ImportState.start_trace`), with
    its tenant; its steps and tool calls follow it, each placed under its mapped parent.
    Under ``skip`` a trace or step the target already has is still mapped, so that the
    steps and tool calls it lacks are written (an interrupted import resumes)."""

    def __init__(self, state: ImportState, tally: TransferReport, multi_tenant: bool) -> None:
        super().__init__(tally, state.on_conflict, state.entities, multi_tenant)
        self.state = state

    def trace(self, record: Record, tenant: str | None, holders: Holders) -> Decision:
        """Where a trace goes (see the class doc)."""
        ident, present = choose_id("trace", record["id"], tenant, holders, self.multi_tenant)
        self.state.start_trace(record["id"], ident, tenant)
        return self._decide("trace", ident, present)

    def parent(self, record: Record) -> str | None:
        """The target id of a step's trace or a tool call's step; ``None`` (counted as
        skipped, and noted for a step's tool calls) when it was not carried."""
        if record["record"] == "step":
            found = self.state.traces.get(record["trace_id"])
            if found is None:
                self.tally.skip("step", TRACE_LOST)
                self.state.steps[record["id"]] = None
            return found
        found = self.state.steps.get(record["step_id"])
        if found is None:
            self.tally.skip("tool_call", STEP_LOST)
        return found

    def child(self, record: Record, holders: Holders) -> Decision:
        """Where a step or tool call whose parent was carried goes, in the tenant of the
        current trace (a step is noted for its tool calls)."""
        kind = record["record"]
        tenant = self.state.trace_tenant
        ident, present = choose_id(kind, record["id"], tenant, holders, self.multi_tenant)
        if kind == "step":
            self.state.steps[record["id"]] = ident
        return self._decide(kind, ident, present)

    def number_taken(self, record: Record) -> None:
        """A step whose number another step of its trace holds in the target: skipped
        (and its tool calls with it)."""
        self.state.steps[record["id"]] = None
        self.tally.skip("step", STEP_NUMBER_TAKEN)

    def _decide(self, kind: str, ident: str | None, present: bool) -> Decision:
        if ident is None:
            self.tally.skip(kind, FOREIGN_ID)
            return None, False
        if present and not self.overwrite:
            self.tally.skip(kind, PRESENT)
            return None, False
        return ident, present

    def message_candidates(self, archive_ids: Iterable[str]) -> list[str]:
        """The target ids to look up for a trace's ``message_ids``: each message's id in
        the target (mapped when it did not keep its archive id; none when not carried)."""
        mapped = (self.state.messages.get(a, a) for a in archive_ids)
        return [m for m in mapped if m is not None]

    def messages(self, archive_ids: Iterable[str], ours: Mapping[str, bool]) -> list[str]:
        """A trace's message links in the target, in order: ``ours[target id]`` says
        whether that message is of the trace's tenant (absent: not in the target).
        A link to a message not carried, or of another tenant, is dropped (counted)."""
        kept: list[str] = []
        for archive_id in archive_ids:
            target = self.state.messages.get(archive_id, archive_id)
            mine = None if target is None else ours.get(target)
            if target is None or not mine:
                reason = FOREIGN_MESSAGE if mine is False else MESSAGE_LOST
                self.tally.lose("trace.message_ids", reason)
            elif target not in kept:
                kept.append(target)
        return kept

    def entities_of(
        self, archive_ids: Iterable[str], entity: Callable[[str], str | None]
    ) -> list[str]:
        """A trace's entity links in the target (see :meth:`ImportRules.linked`)."""
        return self.linked(archive_ids, entity, "trace.entity_ids")
