"""Retention: :meth:`memory_core.MemoryBackend.expire_conversations`.

Built on the public contract only (``list_conversations_page``, ``get_conversation``,
``clear_session``), so it works on every backend. A run walks the conversations in
scope one page of ``batch_size`` at a time; those whose last activity is before the
cut-off are expired. Last activity is ``updated_at`` (else ``created_at``) by default, or
with ``by="last_message"`` the time of the conversation's newest message (one read of one
message per conversation; an empty conversation goes by ``updated_at``). With an
archive, every expired conversation is first written to it in the transfer format (the
archive is complete and on disk before anything is deleted); then each is deleted with
``clear_session``, one conversation per call, so no store is locked for long. One audit
record per run.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from os import PathLike
from pathlib import Path
from typing import Any, Literal, Protocol
from uuid import UUID

import anyio
from pydantic import BaseModel, ConfigDict

from .capabilities import Capabilities
from .erasure import audit
from .errors import InvalidArgumentTypeError, InvalidRequestError, NotFoundError, StoreError
from .models import (
    Conversation,
    ConversationPage,
    Entity,
    EntityRef,
    EntityType,
    ReasoningTrace,
    TracePage,
)

_ALL = 10**9
_TRACE_PAGE = 500
#: Conversations an expiry deletes at once.
DELETING_AT_ONCE = 8
#: What "last active" means: the conversation's ``updated_at``, or its newest message.
EXPIRE_BY = ("updated_at", "last_message")
ExpireBy = Literal["updated_at", "last_message"]


class Expiring(Protocol):
    """What an expiry uses of :class:`memory_core.MemoryBackend`, which calls this module
    (named here, not imported: the two would import each other)."""

    @property
    def name(self) -> str: ...
    @property
    def capabilities(self) -> Capabilities: ...
    @property
    def multi_tenant(self) -> bool: ...
    def describe(self) -> str: ...
    async def list_conversations_page(
        self, *, limit: int = ..., cursor: str | None = ..., user_identifier: str | None = ...
    ) -> ConversationPage: ...
    async def get_conversation(
        self,
        session_id: str | UUID | None = ...,
        *,
        conversation_id: Any = ...,
        limit: int | None = ...,
        since: datetime | None = ...,
        user_identifier: str | None = ...,
    ) -> Conversation: ...
    async def clear_session(
        self,
        session_id: str | UUID | None = ...,
        *,
        conversation_id: Any = ...,
        user_identifier: str | None = ...,
    ) -> bool: ...
    async def find_entities(
        self,
        identifier: str,
        limit: int = ...,
        *,
        type: str | None = ...,
        user_identifier: str | None = ...,
    ) -> list[Entity]: ...
    async def list_traces_page(
        self,
        *,
        session_id: str | None = ...,
        limit: int = ...,
        cursor: str | None = ...,
        user_identifier: str | None = ...,
    ) -> TracePage: ...
    async def get_trace(
        self, trace_id: str, *, user_identifier: str | None = ...
    ) -> ReasoningTrace | None: ...


class ExpiryReport(BaseModel):
    """The result of :meth:`memory_core.MemoryBackend.expire_conversations`.

    ``cutoff``: conversations last active before it were expired. ``conversations``:
    how many were deleted (or, with ``dry_run``, would be). ``messages``: how many
    messages they held where the run read them (with an archive), else ``None``.
    ``archive``: the archive written, if any. ``session_ids``: the expired sessions.
    ``by``: what last activity was read from (``updated_at`` or ``last_message``).
    """

    model_config = ConfigDict(frozen=True)

    backend: str
    cutoff: datetime
    user_identifier: str | None
    dry_run: bool
    conversations: int
    messages: int | None
    archive: str | None
    session_ids: list[str]
    duration_seconds: float
    by: ExpireBy = "updated_at"


def cutoff_of(older_than: object, now: datetime | None = None) -> datetime:
    """The cut-off: ``now - older_than`` for a positive ``timedelta``, or an aware
    ``datetime`` as given (in UTC)."""
    moment = now or datetime.now(UTC)
    if isinstance(older_than, timedelta):
        if older_than <= timedelta(0):
            raise InvalidRequestError("must be a positive duration", argument="older_than")
        try:
            return moment - older_than
        except OverflowError:
            raise InvalidRequestError(
                "is longer than the calendar goes back (the cut-off would be before year 1)",
                argument="older_than",
            ) from None
    if isinstance(older_than, datetime):
        if older_than.tzinfo is None:
            raise InvalidRequestError("needs a UTC offset", argument="older_than")
        try:
            return older_than.astimezone(UTC)
        except OverflowError:
            raise InvalidRequestError(
                "is outside the calendar in UTC", argument="older_than"
            ) from None
    raise InvalidArgumentTypeError(
        f"must be a timedelta or datetime, got {type(older_than).__name__}",
        argument="older_than",
    )


def check_archive(archive: object) -> None:
    """An archive path a run may write: never a file that exists (an archive is never
    replaced: it may be the only copy of what an earlier run deleted). A path that exists
    and is not a regular file (``/dev/stdout``, a pipe) is written in place."""
    if archive is None:
        return
    if not isinstance(archive, str | PathLike):
        raise InvalidArgumentTypeError(
            f"must be a path, got {type(archive).__name__}", argument="archive"
        )
    if Path(archive).is_file():
        raise InvalidRequestError(
            f"{os.fspath(archive)!r} exists: an archive is never replaced (it may hold the "
            "only copy of what an earlier run deleted); name a new file, with the date say",
            argument="archive",
        )


def check_by(by: object) -> ExpireBy:
    """``by`` as given when it is one of :data:`EXPIRE_BY`."""
    if not isinstance(by, str):
        raise InvalidArgumentTypeError(f"must be a str, got {type(by).__name__}", argument="by")
    if by == "updated_at":
        return "updated_at"
    if by == "last_message":
        return "last_message"
    raise InvalidRequestError(f"must be one of {', '.join(EXPIRE_BY)}, got {by!r}", argument="by")


def last_active(conversation: Conversation) -> datetime:
    """When the conversation was last written to."""
    return conversation.updated_at or conversation.created_at


async def expired(
    backend: Expiring, cutoff: datetime, user: str | None, batch_size: int, by: ExpireBy
) -> list[Conversation]:
    """Every conversation in scope last active before ``cutoff`` (headers only), read one
    page of ``batch_size`` at a time."""
    found: list[Conversation] = []
    cursor: str | None = None
    while True:
        page = await backend.list_conversations_page(
            limit=batch_size, cursor=cursor, user_identifier=user
        )
        if by == "last_message":
            found += await _by_last_message(backend, page.conversations, cutoff, user)
        else:
            found += [c for c in page.conversations if last_active(c) < cutoff]
        cursor = page.next_cursor
        if cursor is None or not page.conversations:
            return found


async def _by_last_message(
    backend: Expiring, conversations: list[Conversation], cutoff: datetime, user: str | None
) -> list[Conversation]:
    """Those of ``conversations`` whose newest message is before ``cutoff`` (an empty one:
    its ``updated_at``), reading the newest message of up to :data:`DELETING_AT_ONCE` at
    once. One deleted meanwhile is not expired (there is nothing left to expire)."""
    scoped = user if backend.capabilities.user_scoped_calls else None
    limiter = anyio.CapacityLimiter(DELETING_AT_ONCE)
    newest: dict[UUID, datetime] = {}

    async def read(conversation: Conversation) -> None:
        owner = scoped or (conversation.user_identifier if backend.multi_tenant else None)
        async with limiter:
            try:
                found = await backend.get_conversation(
                    conversation_id=conversation.id, limit=1, user_identifier=owner
                )
            except NotFoundError:
                return
        messages = found.messages
        newest[conversation.id] = messages[-1].created_at if messages else last_active(found)

    try:
        async with anyio.create_task_group() as group:
            for conversation in conversations:
                group.start_soon(read, conversation)
    except ExceptionGroup as failed:
        raise _first(failed) from None
    return [c for c in conversations if c.id in newest and newest[c.id] < cutoff]


async def expire(
    backend: Expiring,
    cutoff: datetime,
    user: str | None,
    batch_size: int,
    archive: str | PathLike[str] | None,
    dry_run: bool,
    by: ExpireBy = "updated_at",
) -> ExpiryReport:
    """Run one expiry (arguments already checked); see the module docstring."""
    started = time.perf_counter()
    doomed = await expired(backend, cutoff, user, batch_size, by)
    messages = None
    written = archive is not None and not dry_run and bool(doomed)
    if written:
        assert archive is not None
        messages = await archive_conversations(backend, archive, doomed, user)
    if not dry_run:
        await _delete(backend, doomed, user)
    report = ExpiryReport(
        backend=backend.name,
        cutoff=cutoff,
        user_identifier=user,
        dry_run=dry_run,
        conversations=len(doomed),
        messages=messages,
        archive=str(archive) if written else None,
        session_ids=[c.session_id for c in doomed],
        duration_seconds=round(time.perf_counter() - started, 6),
        by=by,
    )
    audit(
        "expire_conversations",
        user,
        {
            "backend": report.backend,
            "scope": "user" if user is not None else "all",
            "cutoff": report.cutoff.isoformat(),
            "dry_run": dry_run,
            "by": by,
            "counts": {"conversations": report.conversations, "messages": messages},
            "archived": written,
            "duration_seconds": report.duration_seconds,
        },
    )
    return report


async def _delete(backend: Expiring, doomed: list[Conversation], user: str | None) -> None:
    """``clear_session`` each conversation, up to :data:`DELETING_AT_ONCE` at a time: a
    store that tidies up after each delete (the embedded full-text purge) shares that
    work between the deletes in flight. The first failure stops the rest."""
    scoped = user if backend.capabilities.user_scoped_calls else None
    limiter = anyio.CapacityLimiter(DELETING_AT_ONCE)

    async def clear(conversation: Conversation) -> None:
        owner = scoped or (conversation.user_identifier if backend.multi_tenant else None)
        async with limiter:
            await backend.clear_session(conversation_id=conversation.id, user_identifier=owner)

    try:
        async with anyio.create_task_group() as group:
            for conversation in doomed:
                group.start_soon(clear, conversation)
    except ExceptionGroup as failed:  # the caller gets the store's own typed error
        raise _first(failed) from None


def _first(group: BaseExceptionGroup[Exception]) -> Exception:
    found = group.exceptions[0]
    return _first(found) if isinstance(found, BaseExceptionGroup) else found


async def archive_conversations(
    backend: Expiring,
    path: str | PathLike[str],
    conversations: list[Conversation],
    user: str | None,
) -> int:
    """Write ``conversations`` (with their messages, mentions and mentioned entities) to
    the archive at ``path`` in the transfer format, replacing it only once complete;
    return how many messages it holds. It never replaces a file: one that appeared since
    :func:`check_archive` looked is an error, as is a write that fails (a full disk);
    either way nothing was deleted yet."""
    try:
        return await _write_archive(backend, path, conversations, user)
    except OSError as exc:
        reason = "it exists" if isinstance(exc, FileExistsError) else exc.strerror or str(exc)
        raise StoreError(
            f"the archive {os.fspath(path)!r} could not be written ({reason}): nothing was deleted"
        ) from None


async def _write_archive(
    backend: Expiring,
    path: str | PathLike[str],
    conversations: list[Conversation],
    user: str | None,
) -> int:
    from .archive import records as rec
    from .archive.files import dump_line, replacing

    counts = dict.fromkeys(("entity", "conversation", "message", "mention"), 0)
    if backend.capabilities.traces:
        counts |= dict.fromkeys(("trace", "step", "tool_call"), 0)
    truncated: list[dict[str, object]] = []
    seen: set[str] = set()
    with replacing(path, replace=False) as out:
        header = rec.header(
            backend.name,
            backend.describe(),
            backend.capabilities,
            backend.multi_tenant,
            None if user is None else [user],
            None,
        )
        out.write(dump_line(header))
        for conversation in conversations:
            async for record in _records(backend, conversation, user, seen, truncated):
                counts[record["record"]] += 1
                out.write(dump_line(record))
        if backend.capabilities.traces:
            async for record in _trace_records(backend, conversations, user):
                counts[record["record"]] += 1
                out.write(dump_line(record))
        out.write(dump_line(rec.end(counts, truncated, [])))
    return counts["message"]


async def _records(
    backend: Expiring,
    header: Conversation,
    user: str | None,
    seen: set[str],
    truncated: list[dict[str, object]],
) -> AsyncIterator[dict[str, Any]]:
    """One conversation's archive records: the conversation, then each message preceded
    by the entities it first mentions and followed by its mentions."""
    from .archive import records as rec

    caps = backend.capabilities
    owner = user or header.user_identifier
    scoped = owner if caps.user_scoped_calls else None
    cap = caps.max_messages_per_read
    read = await backend.get_conversation(
        conversation_id=header.id, limit=cap or _ALL, user_identifier=scoped
    )
    clipped = not caps.full_history and cap is not None and len(read.messages) >= cap
    if clipped:
        truncated.append({"session_id": read.session_id, "conversation_id": str(read.id)})
    yield rec.conversation(read, len(read.messages), clipped, owner)
    entity_owner = owner if backend.multi_tenant else None
    for seq, message in enumerate(read.messages, start=1):
        for ref in message.mentions:
            if ref.id and ref.id not in seen:
                seen.add(ref.id)
                yield await _entity(backend, ref, entity_owner)
        yield rec.message(message, str(read.id), seq)
        for position, ref in enumerate(message.mentions):
            if ref.id:
                yield rec.mention(str(message.id), ref.id, position)


async def _trace_records(
    backend: Expiring, conversations: list[Conversation], user: str | None
) -> AsyncIterator[dict[str, Any]]:
    """The traces ``clear_session`` deletes with ``conversations`` (those of their
    sessions: on a multi-tenant backend the owner's, otherwise every user's), oldest
    first, each followed by its steps and their tool calls."""
    from .archive import records as rec

    found: dict[str, tuple[datetime, str | None]] = {}
    for conversation in conversations:
        scope = (user or conversation.user_identifier) if backend.multi_tenant else None
        cursor: str | None = None
        while True:
            page = await backend.list_traces_page(
                session_id=conversation.session_id,
                limit=_TRACE_PAGE,
                cursor=cursor,
                user_identifier=scope,
            )
            found |= {t.id: (t.started_at, scope) for t in page.traces}
            cursor = page.next_cursor
            if cursor is None:
                break
    for ident, (_, scope) in sorted(found.items(), key=lambda item: (item[1][0], item[0])):
        trace = await backend.get_trace(ident, user_identifier=scope)
        if trace is None:
            continue
        yield rec.trace_record(trace)
        for step in trace.steps:
            yield rec.step_record(step)
            for call in sorted(step.tool_calls, key=lambda c: (c.created_at, c.id)):
                yield rec.tool_call_record(call)


async def _entity(backend: Expiring, ref: EntityRef, owner: str | None) -> dict[str, Any]:
    """The entity record of a mention: the stored entity where it can be found, else what
    the mention says of it."""
    from .archive import records as rec

    assert ref.id is not None
    found = (
        await backend.find_entities(ref.id, 1, user_identifier=owner)
        if backend.capabilities.entities
        else []
    )
    for entity in found:
        if entity.id == ref.id:
            return rec.entity(entity, owner)
    kind = (ref.type or "").upper()
    return {
        "record": "entity",
        "id": ref.id,
        "user_identifier": owner,
        "name": ref.name or ref.id,
        "type": kind if kind in EntityType.__members__ else EntityType.CUSTOM.value,
        "description": None,
        "created_at": None,
        "updated_at": None,
    }
