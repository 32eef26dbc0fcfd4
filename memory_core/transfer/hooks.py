"""The optional bulk path a backend may offer to :mod:`memory_core.transfer`.

A backend returns an object with this shape from ``Store.bulk_transfer()`` when
it can read and write archive records directly, ids and all. Without one, transfers go
through the public contract (ids are then issued by the target).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Literal, Protocol

from .records import Record
from .report import TransferReport

OnConflict = Literal["skip", "overwrite", "new-ids"]


@dataclass
class ImportState:
    """Shared by the batches of one import: the policy, the report and the id maps.

    ``conversations`` maps an archive conversation id to the target's id (``None``: the
    conversation was not carried, so neither are its messages); ``entities`` likewise.
    ``reasons`` says, for a conversation mapped to ``None``, why its messages are skipped
    (when it is not simply "its conversation was not carried").
    """

    on_conflict: OnConflict
    report: TransferReport
    conversations: dict[str, str | None] = field(default_factory=dict)
    entities: dict[str, str | None] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def message_reason(self, archive_conversation: str) -> str:
        """Why the messages of a conversation that was not carried are skipped."""
        return self.reasons.get(archive_conversation, NOT_CARRIED)


NOT_CARRIED = "its conversation was not carried"
SAME_SESSION = "its session is already in the target, under another conversation id"
SAME_SESSION_MESSAGES = "their session is already in the target"
TENANT_LOST = "the target is not multi-tenant: its entities are shared by every user"


class BulkTransfer(Protocol):
    """What ``Store.bulk_transfer()`` returns (see the module doc)."""

    def export_records(
        self, users: list[str] | None, session_prefix: str | None, report: TransferReport
    ) -> AsyncIterator[Record]:
        """Every entity, conversation, message and mention in scope, in archive order:
        per tenant, entities first, then each conversation followed by its messages (seq
        order), each message followed by its mentions. Bounded memory: read in pages."""
        ...

    async def import_records(self, records: list[Record], state: ImportState) -> None:
        """Write a batch of records in one transaction, keeping ids, sequence numbers and
        timestamps. Records already present (same id) are skipped under ``skip``, replaced
        under ``overwrite``; every outcome is counted in ``state.report``."""
        ...
