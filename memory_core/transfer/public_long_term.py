"""Importing relationships, preferences and facts through the public contract.

Used by :class:`~memory_core.transfer.public_writer.PublicWriter` (targets without a bulk
hook, and ``on_conflict="new-ids"``). The target issues the ids and sets the timestamps:
both are counted as not carried, as for messages. A preference the archive marks
superseded is marked again once both it and its successor are written (the successor
may come later in the archive); the time of it is the target's. A relationship links
the entities the run wrote (its ends are mapped like a mention's). Each record written
is noted in the checkpoint, so a re-run does not write it twice.
"""

from __future__ import annotations

from datetime import datetime

from ..archive.hooks import LINK_LOST, TENANT_LOST, ImportState
from ..archive.records import Record, parse_stamp
from ..backend import MemoryBackend
from ..errors import InvalidRequestError, NotFoundError, NotSupportedError
from .checkpoint import Checkpoint

NO_IDS = "the target issues ids (no bulk hook, or on_conflict='new-ids')"
SET_BY_TARGET = "the public API sets it"
NO_SUCCESSOR = "the preference that superseded it was not carried"
ORPHANED = "the public API marks a preference superseded only by another (its successor is gone)"
NO_VECTORS = "the public API takes no embeddings (the target's embedder makes its own)"
OLD_SOURCE = "written as the archive names it, but the target issued new message ids"


class LongTermWriter:
    """Writes one long-term record at a time (see the module doc)."""

    def __init__(self, backend: MemoryBackend, state: ImportState, checkpoint: Checkpoint):
        self.backend = backend
        self.state = state
        self.report = state.report
        self.checkpoint = checkpoint
        self.preferences: dict[str, str] = {}  # archive id -> target id
        # (archive id, its successor's archive id, user): marked once both are written
        self.supersedes: list[tuple[str, str, str | None]] = []

    async def add(self, record: Record) -> None:
        kind = record["record"]
        user = record["user_identifier"]
        if self.backend.multi_tenant and user is None:
            self.report.skip(kind, "no user_identifier and the target is multi-tenant")
            return
        target = self.checkpoint.target_of(kind, record["id"])
        if target is not None:
            self.report.skip(kind, "already copied (checkpoint)")
        else:
            try:
                target = await self._write(record, user)
            except (InvalidRequestError, NotFoundError, NotSupportedError) as exc:
                self.report.skip(kind, f"refused by the target: {exc}")
                return
            if target is None:
                return
            self.checkpoint.wrote(kind, record["id"], target)
            self._losses(record)
            self.report.copy(kind)
        if kind == "preference":
            self.preferences[record["id"]] = target
            await self._note_superseded(record, user)

    async def finish(self) -> None:
        """Mark the superseded preferences whose successor is now written; the others'
        successor was not carried (counted)."""
        pending, self.supersedes = self.supersedes, []
        for old, new, user in pending:
            if not await self._supersede(old, new, user):
                self.report.lose("preference.superseded_by", NO_SUCCESSOR)

    # ------------------------------------------------------------------ one kind each

    async def _write(self, record: Record, user: str | None) -> str | None:
        """Write the record; its id in the target, ``None`` when it was skipped."""
        kind = record["record"]
        if kind == "preference":
            return await self._preference(record, user)
        if kind == "fact":
            return await self._fact(record, user)
        return await self._relationship(record, user)

    async def _preference(self, record: Record, user: str | None) -> str | None:
        made = await self.backend.add_preference(
            record["category"],
            record["preference"],
            context=record.get("context"),
            confidence=record["confidence"],
            linked_entities=self._entities(record["linked_entities"], "preference"),
            metadata=record["metadata"],
            user_identifier=user,
        )
        return made.id

    async def _fact(self, record: Record, user: str | None) -> str | None:
        made = await self.backend.add_fact(
            record["subject"],
            record["predicate"],
            record["object"],
            confidence=record["confidence"],
            valid_from=_moment(record.get("valid_from")),
            valid_until=_moment(record.get("valid_until")),
            source_message_id=record.get("source_message_id"),
            metadata=record["metadata"],
            user_identifier=user,
        )
        if record.get("source_message_id") is not None:
            self.report.lose("fact.source_message_id", OLD_SOURCE)
        return made.id

    async def _relationship(self, record: Record, user: str | None) -> str | None:
        source = self.state.entities.get(record["source_id"])
        target = self.state.entities.get(record["target_id"])
        if source is None or target is None:
            self.report.skip("relationship", LINK_LOST)
            return None
        made = await self.backend.add_relationship(
            source,
            target,
            record["type"],
            properties=record["properties"],
            confidence=record["confidence"],
            valid_from=_moment(record.get("valid_from")),
            valid_until=_moment(record.get("valid_until")),
            user_identifier=user if self.backend.multi_tenant else None,
        )
        if not self.backend.multi_tenant and user is not None:
            self.report.lose("relationship.user_identifier", TENANT_LOST)
        return made.id

    # ------------------------------------------------------------------ helpers

    def _entities(self, archive_ids: list[str], kind: str) -> list[str]:
        """The target ids of the entities a record links; those not carried are counted."""
        mapped = [self.state.entities.get(ident) for ident in archive_ids]
        kept = [ident for ident in mapped if ident is not None]
        if len(kept) < len(mapped):
            self.report.lose(f"{kind}.linked_entities", LINK_LOST, len(mapped) - len(kept))
        return list(dict.fromkeys(kept))

    async def _note_superseded(self, record: Record, user: str | None) -> None:
        successor = record.get("superseded_by")
        if successor is None:
            return
        if not await self._supersede(record["id"], successor, user):
            self.supersedes.append((record["id"], successor, user))
        # A successor written before its predecessor: the predecessor is marked now.
        waiting = [item for item in self.supersedes if item[1] == record["id"]]
        for item in waiting:
            if await self._supersede(*item):
                self.supersedes.remove(item)

    async def _supersede(self, old: str, new: str, user: str | None) -> bool:
        """Mark ``old`` superseded by ``new`` (archive ids) once both are written; a
        second call changes nothing in the target, so a re-run may repeat it."""
        old_id, new_id = self.preferences.get(old), self.preferences.get(new)
        if old_id is None or new_id is None:
            return False
        await self.backend.supersede_preference(old_id, new_id, user_identifier=user)
        return True

    def _losses(self, record: Record) -> None:
        kind, report = record["record"], self.report
        report.lose(f"{kind}.id", NO_IDS)
        report.lose(f"{kind}.created_at", SET_BY_TARGET)
        if kind == "preference" and record.get("superseded_at") is not None:
            orphaned = record.get("superseded_by") is None
            report.lose("preference.superseded_at", ORPHANED if orphaned else SET_BY_TARGET)
        if record.get("embedding") is not None:
            report.lose(f"{kind}.embedding", NO_VECTORS)


def _moment(value: str | None) -> datetime | None:
    return None if value is None else parse_stamp(value)
