"""Importing through the public contract: any backend, ids issued by the target.

Used for targets without a bulk hook (NAMS, third-party backends) and for
``on_conflict="new-ids"``. Traces, steps and tool calls go through
:mod:`.public_traces`. Messages go in batches (``add_messages_batch``, which keeps
caller timestamps where the target can) except those carrying an idempotency key or
mentions the target can store, which go one by one through ``add_message`` (the only
call that takes them; their timestamp is then the target's). Everything the target
cannot hold is counted per field in the report.

Resuming: a checkpoint line is appended after every acknowledged write. On a re-run the
handled messages of a conversation are skipped, and the target's newest messages are
compared with the archive to find a batch that was written just before the process died
but not yet noted (it is skipped, not written twice).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..archive.files import PathLike
from ..archive.hooks import TENANT_LOST, ImportState
from ..archive.records import REASONING, Record, parse_stamp
from ..backend import MemoryBackend
from ..errors import InvalidRequestError, NotFoundError, NotSupportedError
from ..models import EntityRef, Message
from .checkpoint import Checkpoint, Progress
from .export import SESSION_KEY
from .public_long_term import NO_IDS, LongTermWriter
from .public_traces import TraceWriter

MAX_CHUNK = 100


@dataclass
class _Pending:
    record: Record
    mentions: list[str] = field(default_factory=list)


@dataclass
class _Current:
    archive_id: str
    handle: str | None
    user: str | None = None
    done: int = 0
    base: int = 0
    to_skip: int = 0
    resumed: bool = False
    reason: str = ""
    pending: list[_Pending] = field(default_factory=list)
    recent: deque[Record] = field(default_factory=lambda: deque(maxlen=MAX_CHUNK))


class PublicWriter:
    """Writes records one conversation at a time (see the module doc)."""

    def __init__(self, backend: MemoryBackend, state: ImportState, checkpoint: PathLike | None):
        self.backend = backend
        self.caps = backend.capabilities
        self.state = state
        self.report = state.report
        self.checkpoint = Checkpoint(checkpoint)
        self.chunk = min(self.caps.max_bulk_messages or MAX_CHUNK, MAX_CHUNK)
        self.current: _Current | None = None
        self.long_term = LongTermWriter(backend, state, self.checkpoint)
        self.traces = TraceWriter(backend, state, self.checkpoint)

    def close(self) -> None:
        self.checkpoint.close()

    async def finish(self) -> None:
        await self._flush()
        await self.long_term.finish()
        await self.traces.finish()

    async def add(self, record: Record) -> None:
        kind = record["record"]
        if kind == "conversation":
            await self._flush()
            self.current = await self._open(record)
        elif kind == "message":
            await self._message(record)
        elif kind == "mention":
            self._mention(record)
        elif kind == "entity":
            await self._entity(record)
        elif kind in REASONING:
            await self._flush()
            await self.traces.add(record)
        else:
            await self._flush()  # the conversation before it is written whole first
            await self.long_term.add(record)

    # ------------------------------------------------------------------ conversations

    async def _open(self, record: Record) -> _Current:
        backend, report = self.backend, self.report
        archive_id = record["id"]
        user = record["user_identifier"]
        if backend.multi_tenant and user is None:
            report.skip("conversation", "no user_identifier and the target is multi-tenant")
            return _Current(archive_id, None, reason="its conversation was not carried")
        # Every call names the record's user where the target takes one: a target may
        # scope session names per user without being multi-tenant (NAMS portable names).
        scoped = user if self.caps.user_scoped_calls else None
        progress = self.checkpoint.get(archive_id)
        if progress is not None and not await self._holds(progress, scoped):
            # The target lost what the checkpoint says was written (a session cleared or
            # deleted since): the target wins, the conversation is copied again.
            self.checkpoint.forget(archive_id)
            progress = None
        if progress is not None:
            report.skip("conversation", "already created (checkpoint)")
            return _Current(
                archive_id,
                progress.target,
                scoped,
                done=progress.done,
                base=progress.base,
                to_skip=progress.done,
                resumed=True,
            )
        base = 0
        if self.caps.client_chosen_ids:
            handle = record["session_id"]
            if self.state.on_conflict == "new-ids":
                base = await self._count(handle, scoped)
            else:
                existing = await backend.get_conversation(handle, limit=1, user_identifier=scoped)
                if existing.messages and self.state.on_conflict == "skip":
                    report.skip("conversation", "the session already has messages in the target")
                    return _Current(
                        archive_id, None, reason="its session was already in the target"
                    )
                if existing.messages:
                    await backend.clear_session(handle, user_identifier=scoped)
            title, metadata = record.get("title"), record["metadata"]
            if title is not None and not self.caps.conversation_titles:
                # Kept where an export from the target finds it (as for issued ids below).
                metadata = {**metadata, SESSION_KEY: {"title": title}}
                title = None
            created = await backend.create_conversation(
                handle, title=title, metadata=metadata, user_identifier=user
            )
            if str(created.id) != archive_id:
                report.lose("conversation.id", "the target chose its own id for the session")
        else:
            kept = {"session_id": record["session_id"], "title": record.get("title")}
            created = await backend.create_conversation(
                record["session_id"],
                metadata={**record["metadata"], SESSION_KEY: kept},
                user_identifier=user,
            )
            handle = str(created.id)
            report.lose(
                "conversation.id",
                f"the target issues conversation ids (session name kept in metadata key "
                f"{SESSION_KEY!r})",
            )
        for name in ("created_at", "updated_at"):
            if record.get(name) is not None:
                report.lose(f"conversation.{name}", "the public API sets it")
        report.copy("conversation")
        self.checkpoint.record(archive_id, handle, 0, base)
        return _Current(archive_id, handle, scoped, base=base)

    async def _holds(self, progress: Progress, user: str | None) -> bool:
        """Whether the target still holds what the checkpoint says was written to it:
        its conversation exists and has at least that many messages (as many as can be
        read, where the target caps a read)."""
        cap = self.caps.max_messages_per_read
        expected = progress.base + progress.done
        needed = expected if cap is None else min(expected, cap)
        try:
            found = await self.backend.get_conversation(
                progress.target, limit=max(needed, 1), user_identifier=user
            )
        except NotFoundError:
            return False
        return len(found.messages) >= needed

    async def _count(self, handle: str, user: str | None) -> int:
        """Messages the target conversation holds (as many as can be read)."""
        cap = self.caps.max_messages_per_read
        found = await self.backend.get_conversation(
            handle, limit=cap or 10**9, user_identifier=user
        )
        return len(found.messages)

    # ------------------------------------------------------------------ messages

    async def _message(self, record: Record) -> None:
        current = self.current
        if current is None or current.handle is None:
            reason = current.reason if current is not None else "no conversation"
            self.report.skip("message", reason)
            return
        if current.to_skip > 0:
            current.to_skip -= 1
            current.recent.append(record)
            self.report.skip("message", "already copied (checkpoint)")
            return
        if len(current.pending) >= self.chunk:
            await self._flush()
        current.pending.append(_Pending(record))

    def _mention(self, record: Record) -> None:
        current = self.current
        pending = current.pending[-1] if current is not None and current.pending else None
        if pending is None or pending.record["id"] != record["message_id"]:
            self.report.skip("mention", "its message was not written in this run")
            return
        target = self.state.entities.get(record["entity_id"])
        if target is None:
            self.report.lose("mention", "its entity was not carried")
            return
        pending.mentions.append(target)

    def _single(self, item: _Pending) -> bool:
        caps = self.caps
        keyed = caps.idempotency_keys and item.record.get("idempotency_key") is not None
        return keyed or (caps.explicit_mentions and bool(item.mentions))

    async def _flush(self) -> None:
        current = self.current
        if current is None or current.handle is None or not current.pending:
            return
        pending, current.pending = current.pending, []
        if current.resumed:
            pending = await self._reconcile(current, pending)
            current.resumed = False
        batch: list[_Pending] = []
        for item in pending:
            if self._single(item):
                await self._write_batch(current, batch)
                batch = []
                await self._write_one(current, item)
            else:
                batch.append(item)
        await self._write_batch(current, batch)

    async def _reconcile(self, current: _Current, pending: list[_Pending]) -> list[_Pending]:
        """Skip the leading archive messages the target already has: written by the run
        that died before it could note them. Counted exactly when the whole conversation
        can be read; otherwise the target's newest messages must equal the archive's last
        noted ones followed by those (role and content)."""
        assert current.handle is not None
        limit = min(self.caps.max_messages_per_read or 1000, 1000)
        tail = (
            await self.backend.get_conversation(
                current.handle, limit=limit, user_identifier=current.user
            )
        ).messages
        if len(tail) < limit:
            extra = len(tail) - current.base - current.done
            if 0 < extra <= len(pending):
                self.report.skip("message", "already in the target (found on resume)", extra)
                self._done(current, extra)
                return pending[extra:]
            return pending
        before = list(current.recent)
        for k in range(min(len(pending), len(tail)), 0, -1):
            expected = before + [p.record for p in pending[:k]]
            size = min(len(expected), len(tail))
            if _same(tail[-size:], expected[-size:]):
                self.report.skip("message", "already in the target (found on resume)", k)
                self._done(current, k)
                return pending[k:]
        return pending

    def _done(self, current: _Current, count: int) -> None:
        assert current.handle is not None
        current.done += count
        self.checkpoint.record(current.archive_id, current.handle, current.done, current.base)

    async def _write_one(self, current: _Current, item: _Pending) -> None:
        record = item.record
        caps = self.caps
        refs = [EntityRef(id=i) for i in item.mentions] if caps.explicit_mentions else []
        await self.backend.add_message(
            current.handle,
            record["role"],
            record["content"],
            metadata=record["metadata"] if caps.message_metadata else None,
            idempotency_key=record.get("idempotency_key") if caps.idempotency_keys else None,
            extraction_mode="explicit" if refs else "skip",
            explicit_mentions=refs or None,
            user_identifier=current.user,
        )
        self._losses([item], timestamps=False)
        self.report.copy("mention", len(refs))
        self.report.copy("message")
        self._done(current, 1)

    async def _write_batch(self, current: _Current, items: list[_Pending]) -> None:
        if not items:
            return
        caps = self.caps
        batch: list[dict[str, Any]] = []
        for item in items:
            record = item.record
            entry: dict[str, Any] = {"role": record["role"], "content": record["content"]}
            if caps.message_metadata and record["metadata"]:
                entry["metadata"] = record["metadata"]
            if caps.caller_timestamps:
                entry["timestamp"] = parse_stamp(record["created_at"])
            batch.append(entry)
        await self.backend.add_messages_batch(
            current.handle,
            batch,
            batch_size=self.chunk,
            extract_entities=False,
            user_identifier=current.user,
        )
        self._losses(items, timestamps=caps.caller_timestamps)
        self.report.copy("message", len(items))
        self._done(current, len(items))

    def _losses(self, items: list[_Pending], *, timestamps: bool) -> None:
        caps, report = self.caps, self.report
        name = self.backend.name
        for item in items:
            record = item.record
            report.lose("message.id", NO_IDS)
            if not timestamps:
                report.lose("message.created_at", f"{name} sets message timestamps here")
            if record["metadata"] and not caps.message_metadata:
                report.lose("message.metadata", f"{name} stores no message metadata")
            if record.get("idempotency_key") is not None and not caps.idempotency_keys:
                report.lose("message.idempotency_key", f"{name} stores no idempotency keys")
            if record.get("embedding") is not None:
                report.lose("message.embedding", "the public API takes no embeddings")
            if item.mentions and not caps.explicit_mentions:
                report.lose("mention", f"{name} stores no mentions", len(item.mentions))

    # ------------------------------------------------------------------ entities

    async def _entity(self, record: Record) -> None:
        archive_id = record["id"]
        if not self.caps.entities:
            self.report.lose("entity", f"{self.backend.name} stores no entities")
            self.state.entities[archive_id] = None
            return
        user = record["user_identifier"]
        if self.backend.multi_tenant and user is None:
            self.report.skip("entity", "no user_identifier and the target is multi-tenant")
            self.state.entities[archive_id] = None
            return
        try:
            made = await self.backend.add_entity(
                record["name"],
                record["type"],
                description=record.get("description"),
                user_identifier=user if self.backend.multi_tenant else None,
            )
        except (InvalidRequestError, NotSupportedError) as exc:
            self.report.lose("entity", f"refused by the target: {exc}")
            self.state.entities[archive_id] = None
            return
        self.state.entities[archive_id] = made.id
        await self._entity_extras(record, made.id, user)
        if made.id != archive_id:
            self.report.lose("entity.id", NO_IDS)
        if not self.backend.multi_tenant and user is not None:
            self.report.lose("entity.user_identifier", TENANT_LOST)
        for name, moment in (("created_at", made.created_at), ("updated_at", made.updated_at)):
            given = record.get(name)
            if given is not None and (moment is None or parse_stamp(given) != moment):
                self.report.lose(f"entity.{name}", "the public API sets it")
        self.report.copy("entity")

    async def _entity_extras(self, record: Record, entity_id: str, user: str | None) -> None:
        """The record's aliases and attributes, through ``update_entity`` where the
        target has ``entity_updates`` (else reported lost)."""
        given = {k: record[k] for k in ("aliases", "attributes") if record.get(k)}
        if not given:
            return
        if not self.caps.entity_updates:
            for name in given:
                self.report.lose(f"entity.{name}", f"{self.backend.name} has no update_entity")
            return
        scope = user if self.backend.multi_tenant else None
        try:
            await self.backend.update_entity(entity_id, user_identifier=scope, **given)
        except (InvalidRequestError, NotSupportedError) as exc:
            for name in given:
                self.report.lose(f"entity.{name}", f"refused by the target: {exc}")


def _same(stored: list[Message], records: list[Record]) -> bool:
    return all(
        m.role.value == r["role"] and m.content == r["content"]
        for m, r in zip(stored, records, strict=True)
    )
