"""The optional bulk path a backend may offer to :mod:`memory_core.transfer`.

A backend returns an object with this shape from ``Store.bulk_transfer()`` when
it can read and write archive records directly, ids and all. Without one, transfers go
through the public contract (ids are then issued by the target).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal, Protocol
from uuid import NAMESPACE_URL, UUID, uuid5

from .records import KINDS, REASONING, Record
from .report import TransferReport

OnConflict = Literal["skip", "overwrite", "new-ids"]


@dataclass
class ImportState:
    """Shared by the batches of one import: the policy, the report and the id maps.

    ``conversations`` maps an archive conversation id to the target's id (``None``: the
    conversation was not carried, so neither are its messages; kept by the bulk hooks, as
    the public writer follows one conversation at a time); ``entities`` likewise (kept by
    both).
    ``reasons`` says, for a conversation mapped to ``None``, why its messages are skipped
    (when it is not simply "its conversation was not carried").

    Tenancy (a hook touches only the tenant each record names): ``current`` is the
    archive conversation whose messages and mentions are being read (a mention may only
    link a message of it to an entity of the same tenant); ``renamed`` maps the messages
    of that conversation that could not keep their archive id (it belongs to another
    tenant) to the id they got (``None``: not carried). It is emptied at each
    conversation. ``messages`` keeps, for the whole import, every message that did not
    keep its archive id (the id it got; ``None``: not carried), so that a trace's
    ``message_ids`` can be mapped (a message not in it is looked up by its archive id).

    Reasoning: ``traces`` maps an archive trace id to the target's (``None``: not carried,
    so neither are its steps); ``steps`` does the same for the steps of the current trace
    (tool calls follow their step), and is emptied at each trace; ``trace_tenant`` is the
    tenant the current trace went to (as the importer stores tenants).
    """

    on_conflict: OnConflict
    report: TransferReport
    conversations: dict[str, str | None] = field(default_factory=dict)
    entities: dict[str, str | None] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    current: str | None = None
    renamed: dict[str, str | None] = field(default_factory=dict)
    messages: dict[str, str | None] = field(default_factory=dict)
    traces: dict[str, str | None] = field(default_factory=dict)
    steps: dict[str, str | None] = field(default_factory=dict)
    trace_tenant: str | None = None

    def rename_message(self, archive_id: str, target_id: str | None) -> None:
        """Note a message of the current conversation that did not keep its archive id
        (``None``: not carried)."""
        self.renamed[archive_id] = target_id
        self.messages[archive_id] = target_id

    def start_trace(self, archive_id: str, target_id: str | None, tenant: str | None) -> None:
        """Note where an archive trace went (``None``: not carried) and its tenant; its
        steps follow."""
        self.traces[archive_id] = target_id
        self.trace_tenant = tenant
        self.steps = {}

    def message_reason(self, archive_conversation: str) -> str:
        """Why the messages of a conversation that was not carried are skipped."""
        return self.reasons.get(archive_conversation, NOT_CARRIED)


NOT_CARRIED = "its conversation was not carried"
SAME_SESSION = "its session is already in the target, under another conversation id"
SAME_SESSION_MESSAGES = "their session is already in the target"
TENANT_LOST = "the target is not multi-tenant: its entities are shared by every user"
# Tenancy: an import never writes over, deletes or links to another tenant's records.
FOREIGN_ID = "its id belongs to another tenant in the target"
FOREIGN_ENTITY = "its entity belongs to another tenant than its message"
RENAMED = "its id belongs to another tenant in the target: it got an id of its own tenant"
DERIVED_ID = "a derived (version-5) id not of its own tenant and session: it got the target's"
LINK_LOST = "its entity was not carried"
FOREIGN_LINK = "its entity belongs to another tenant"
SAME_TRIPLE = "a relationship with this source, type and target is already in the target"
NO_USER = "no user_identifier and the target is multi-tenant"
PRESENT = "already in the target"
# Reasoning records (format version 3).
TRACE_LOST = "its trace was not carried"
STEP_LOST = "its step was not carried"
MESSAGE_LOST = "its message was not carried"
FOREIGN_MESSAGE = "its message belongs to another tenant"
STEP_NUMBER_TAKEN = "its trace already has a step with this number in the target"


# The namespace of the ids :func:`own_id` derives.
OWN_IDS = uuid5(NAMESPACE_URL, "https://memory-core.invalid/transfer/own-id")


def own_id(scope: str, kind: str, archive_id: str) -> str:
    """The id a record gets when its archive id belongs to another tenant in the target:
    derived from ``scope`` (its tenant, or for a message its conversation's id in the
    target) and the archive id, so that a re-run finds it again (it resumes by id)."""
    return str(uuid5(OWN_IDS, f"{kind}\x00{scope}\x00{archive_id}"))


def keeps_id(conversation_id: str, own_ids: tuple[str, ...]) -> bool:
    """Whether an archive conversation may keep its id in the target. Not a version-5
    UUID (the kind of id a store derives from a tenant and a session name) unless it is
    one of ``own_ids``: the derived id of the record's own session, for the tenant it
    goes to (or, in a single-tenant target, for the user the record names). Any other
    derived id could be another tenant's session, or another session's: the
    conversation takes the target's own id instead, so no archive can claim, block or
    probe a session by its id."""
    try:
        derived = UUID(conversation_id).version == 5
    except ValueError:
        return False
    return not derived or conversation_id in own_ids


# Every kind a record of an archive body may be, and those a bulk transfer written before
# format version 3 carries (one without a ``kinds`` attribute).
ALL_KINDS = frozenset(k for k in KINDS if k not in ("header", "end"))
BEFORE_REASONING = ALL_KINDS - frozenset(REASONING)


def carried_kinds(hook: object) -> frozenset[str]:
    """The record kinds a bulk transfer reads and writes: its ``kinds`` attribute, or
    every kind before the reasoning records when it has none."""
    kinds = getattr(hook, "kinds", None)
    return frozenset(kinds) if kinds is not None else BEFORE_REASONING


class BulkTransfer(Protocol):
    """What ``Store.bulk_transfer()`` returns (see the module doc).

    It may say which record kinds it carries in a ``kinds`` attribute (a frozenset of
    kind names, :data:`ALL_KINDS` for all of them); without it, it is taken to carry
    every kind but the reasoning ones (:func:`carried_kinds`). A kind it does not carry
    is named in an export's header and report, and skipped (counted) on import."""

    def export_records(
        self, users: list[str] | None, session_prefix: str | None, report: TransferReport
    ) -> AsyncIterator[Record]:
        """Every record in scope, in archive order: per tenant, entities first (by id),
        then each conversation (by session id) followed by its messages (seq order), each
        message followed by its mentions (position order); then, where the store has
        them and no ``session_prefix`` is given, the tenant's relationships, preferences
        (superseded ones too, each with its ``linked_entities`` in order) and facts, each
        kind by id, every stored field kept (embeddings too). Then (format version 3)
        the tenant's traces by ``(started_at, id)``, each followed by its steps by
        ``step_number``, each step by its tool calls by ``(created_at, id)``, with
        their stored embeddings and the trace's ``message_ids`` and ``entity_ids`` in
        link order; with ``session_prefix``, only the traces whose session id starts
        with it. On a single-tenant store narrowed to ``users``: those users'
        preferences, facts and traces, the entities they link, and the relationships
        between exported entities. Bounded memory: read in pages."""
        ...

    async def import_records(self, records: list[Record], state: ImportState) -> None:
        """Write a batch of records in one transaction, keeping ids, sequence numbers,
        timestamps, supersede links and embeddings, and indexing what the store searches
        (a search finds an imported entity, preference or fact). Records already present
        (same id) are skipped under ``skip``, replaced under ``overwrite``; every outcome
        is counted in ``state.report`` (each relationship, preference and fact once, as
        copied or skipped: the importer names any it did not see counted). The records
        were checked (:func:`~memory_core.transfer.check_record`) against the target's
        limits. In a multi-tenant store a record touches only the tenant it names: every
        id is looked up with it, another tenant's record is never written over, deleted or
        linked to (:func:`own_id`, :func:`keeps_id`; see :class:`ImportState`).

        Reasoning records keep ids, step numbers, timestamps, embeddings, statuses and
        the order of a step's tool calls, and are indexed so that ``search_steps`` and
        ``similar_traces`` find them and ``tool_stats`` counts them. A trace is placed
        like a preference (an id of another tenant: :func:`own_id`; noted with
        :meth:`ImportState.start_trace`); its steps and tool calls follow it, each
        placed the same way under its mapped parent (``ImportState.steps``), skipped
        when the parent was not carried (:data:`TRACE_LOST`, :data:`STEP_LOST`). A
        ``message_ids``/``entity_ids`` entry is linked only to a record of the trace's
        tenant in the target (mapped through ``ImportState.messages`` and
        ``entities``), else dropped and counted as ``trace.message_ids`` or
        ``trace.entity_ids`` not carried. Each trace, step and tool call is counted once,
        copied or skipped."""
        ...
