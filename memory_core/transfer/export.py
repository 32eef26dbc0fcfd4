"""Reading a backend into archive records (:func:`export_memory`, :func:`iter_records`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import IO, Any

from ..archive import records as rec
from ..archive.files import PathLike, dump_line, replacing
from ..archive.hooks import carried_kinds
from ..archive.records import Record
from ..archive.report import TransferReport
from ..backend import MemoryBackend
from ..errors import InvalidRequestError, MemoryCoreError
from ..models import Conversation, EntityType
from ..validation import check_optional_str
from .public_traces import public_traces

# Where a conversation's session name (and title) is kept on a target that issues its
# own conversation ids (NAMS), so that an export from there gives the names back.
SESSION_KEY = "memory_core_transfer"
LIST_PAGE = 500
ALL = 10**9


def check_users(users: Any) -> list[str] | None:
    """``users`` as a list of non-empty strings (or ``None``)."""
    if users is None:
        return None
    if isinstance(users, str) or not isinstance(users, list | tuple):
        raise InvalidRequestError("must be a list of user identifiers", argument="users")
    checked = [check_optional_str(u, "users") for u in users]
    if not all(checked):
        raise InvalidRequestError("user identifiers must be non-empty strings", argument="users")
    return [u for u in checked if u]


async def iter_records(
    backend: MemoryBackend,
    *,
    users: list[str] | None = None,
    session_prefix: str | None = None,
    report: TransferReport | None = None,
) -> AsyncIterator[Record]:
    """Every archive record of ``backend`` (header first, end last), streamed.

    Uses the backend's bulk hook when it has one, else the public contract.
    """
    chosen = check_users(users)
    prefix = check_optional_str(session_prefix, "session_prefix")
    report = report if report is not None else TransferReport()
    await backend.connect()
    hook = backend.store.bulk_transfer()
    if hook is not None:
        omitted = _not_carried_by(hook, backend)
    else:
        omitted = {} if prefix is not None else _not_listable(backend)
    report.unreadable.extend(unlisted(omitted))
    yield rec.header(
        backend.name,
        backend.describe(),
        backend.capabilities,
        backend.multi_tenant,
        chosen,
        prefix,
        omitted,
    )
    counts: Counter[str] = Counter()
    source = (
        hook.export_records(chosen, prefix, report)
        if hook is not None
        else _public_records(backend, chosen, prefix, report)
    )
    async for record in source:
        kind = record["record"]
        counts[kind] += 1
        report.copy(kind)
        yield record
    for kind in ("entity", "conversation", "message", "mention", *rec.LONG_TERM, *rec.REASONING):
        counts.setdefault(kind, 0)
    yield rec.end(counts, report.truncated, report.unreadable)


async def export_memory(
    backend: MemoryBackend,
    sink: PathLike | IO[str],
    *,
    users: list[str] | None = None,
    session_prefix: str | None = None,
    on_progress: Callable[[TransferReport], None] | None = None,
) -> TransferReport:
    """Write the memory of ``backend`` to ``sink`` as a JSON Lines archive and report.

    ``sink`` is a path (gzip-compressed when it ends in ``.gz``) or an open text stream.
    A path is replaced only once the whole archive is written and on disk: the export
    writes a temporary file beside it (``.<name>.<random>.partial``) and renames it over
    the path, so a failed, interrupted or killed export leaves the previous archive as
    it was (a killed one may leave the temporary file behind).
    ``users`` limits the export to those users (required for a multi-tenant backend
    without a bulk hook: the public API cannot list users); ``session_prefix`` to
    sessions whose name starts with it (then no relationship, preference or fact is
    exported: they belong to no session; traces of those sessions are). Without a bulk
    hook, facts and relationships cannot be listed: the header's ``not_exported`` and the
    report say so; traces are read with ``list_traces_page`` and ``get_trace``, without
    their embeddings (the report says so). Memory use is bounded by one page of records
    (one conversation, or one trace, when reading through the public API; the ids of a
    user's traces are held to put them in archive order).
    """
    report = TransferReport(on_progress=on_progress)
    report.started()
    if isinstance(sink, str | bytes) or hasattr(sink, "__fspath__"):
        with replacing(sink) as out:
            await _write(backend, out, users, session_prefix, report)
    else:
        await _write(backend, sink, users, session_prefix, report)
    return report


async def _write(
    backend: MemoryBackend,
    out: IO[str],
    users: list[str] | None,
    prefix: str | None,
    report: TransferReport,
) -> None:
    async for record in iter_records(backend, users=users, session_prefix=prefix, report=report):
        out.write(dump_line(record))


# ---------------------------------------------------------------------------- public path

# What the public API cannot list whole: the long-term kinds a source without a bulk hook
# holds but an export through the public API leaves out (named in the header and the
# report, never silently).
NOT_LISTABLE = {
    "relationship": "the public API lists relationships only per entity, and cannot list "
    "every entity",
    "fact": "the public API cannot list every fact (only those about a subject, or "
    "matching a query)",
}


# The capability flag a store needs to hold each long-term and reasoning kind.
FLAGS = {
    "relationship": "relationships",
    "preference": "preferences",
    "fact": "facts",
    "trace": "traces",
    "step": "traces",
    "tool_call": "traces",
}
HOOK_LACKS = "the {name} bulk transfer does not read them yet"
NO_TRACE_VECTORS = "the public API gives no embeddings"


def _not_carried_by(hook: object, backend: MemoryBackend) -> dict[str, str]:
    """The kinds the source holds (its flag) that its bulk transfer does not read."""
    carried = carried_kinds(hook)
    return {
        kind: HOOK_LACKS.format(name=backend.name)
        for kind, flag in FLAGS.items()
        if kind not in carried and backend.capabilities.supports(flag)
    }


def _not_listable(backend: MemoryBackend) -> dict[str, str]:
    return {
        kind: reason
        for kind, reason in NOT_LISTABLE.items()
        if backend.capabilities.supports(FLAGS[kind])
    }


def unlisted(omitted: dict[str, str]) -> list[str]:
    """The lines of a report's "not readable" for the kinds an archive leaves out."""
    return [f"{kind} records: {reason}" for kind, reason in omitted.items()]


async def _public_records(
    backend: MemoryBackend, users: list[str] | None, prefix: str | None, report: TransferReport
) -> AsyncIterator[Record]:
    caps = backend.capabilities
    if backend.multi_tenant and not users:
        raise InvalidRequestError(
            "a multi-tenant backend cannot list its users through the public API; pass users=[...]",
            argument="users",
        )
    if caps.entities:
        report.unreadable.append(
            "entities no message mentions (the public API cannot list entities)"
        )
    seen: set[str] = set()
    scopes: list[str | None] = list(users) if users else [None]
    for user in scopes:
        async for handle, owner in _handles(backend, user, prefix):
            # A backend may scope session names per user without being multi-tenant
            # (NAMS portable names): a handle is read as its owner's.
            scoped = user if backend.multi_tenant else None
            if scoped is None and caps.user_scoped_calls:
                scoped = owner
            async for record in _conversation_records(backend, handle, user, scoped, seen, report):
                yield record
        if prefix is None and caps.preferences:
            async for record in _preference_records(backend, user, seen):
                yield record
        if caps.traces:
            async for record in public_traces(backend, user, prefix, report):
                if record["record"] == "trace":  # the entities it links come before it
                    for entity_id in record["entity_ids"]:
                        if entity_id not in seen:
                            seen.add(entity_id)
                            yield await _entity_record(backend, entity_id, None, None, user)
                yield record


async def _handles(
    backend: MemoryBackend, user: str | None, prefix: str | None
) -> AsyncIterator[tuple[str, str | None]]:
    """Session handles in scope, each with the user it belongs to, by ``list_sessions``
    pages where the backend has it."""
    if backend.capabilities.list_sessions:
        offset = 0
        while True:
            page = await backend.list_sessions(
                prefix=prefix,
                limit=LIST_PAGE,
                offset=offset,
                order_by="session_id",
                order_dir="asc",
                user_identifier=user,
            )
            for row in page:
                yield row.session_id, row.user_identifier
            if len(page) < LIST_PAGE:
                return
            offset += len(page)
    headers = await backend.list_conversations(limit=ALL, user_identifier=user)
    for header in sorted(headers, key=lambda c: _named(c).session_id):
        if prefix is None or _named(header).session_id.startswith(prefix):
            yield header.session_id, header.user_identifier


def _named(conversation: Conversation) -> Conversation:
    """A conversation with the session name and title a transfer kept in its metadata
    (the name where the target issued the id, the title where it stores none)."""
    kept = conversation.metadata.get(SESSION_KEY)
    if not isinstance(kept, dict):
        return conversation
    name, title = kept.get("session_id"), kept.get("title")
    if not isinstance(name, str) and not isinstance(title, str):
        return conversation
    metadata = {k: v for k, v in conversation.metadata.items() if k != SESSION_KEY}
    return conversation.model_copy(
        update={
            "session_id": name if isinstance(name, str) else conversation.session_id,
            "title": title if isinstance(title, str) else conversation.title,
            "metadata": metadata,
        }
    )


async def _conversation_records(
    backend: MemoryBackend,
    handle: str,
    user: str | None,
    scoped: str | None,
    seen: set[str],
    report: TransferReport,
) -> AsyncIterator[Record]:
    caps = backend.capabilities
    cap = caps.max_messages_per_read
    conversation = await backend.get_conversation(handle, limit=cap or ALL, user_identifier=scoped)
    conversation = _named(conversation)
    messages = conversation.messages
    truncated = not caps.full_history and cap is not None and len(messages) >= cap
    if truncated:
        report.truncated.append(
            {
                "session_id": conversation.session_id,
                "conversation_id": str(conversation.id),
                "exported": len(messages),
            }
        )
    conv_id = str(conversation.id)
    yield rec.conversation(conversation, len(messages), truncated, user)
    for seq, message in enumerate(messages, start=1):
        for ref in message.mentions:
            if ref.id and ref.id not in seen:
                seen.add(ref.id)
                yield await _entity_record(backend, ref.id, ref.name, ref.type, user)
        yield rec.message(message, conv_id, seq)
        for position, ref in enumerate(message.mentions):
            if ref.id:
                yield rec.mention(str(message.id), ref.id, position)


async def _preference_records(
    backend: MemoryBackend, user: str | None, seen: set[str]
) -> AsyncIterator[Record]:
    """The user's preferences (every one of the store without a user), superseded ones
    too, oldest first, each after the entities it links that the archive does not hold
    yet. The public API gives no embedding: the records carry none."""
    found = await backend.list_preferences(limit=ALL, include_superseded=True, user_identifier=user)
    for preference in reversed(found):
        for entity_id in preference.linked_entities:
            if entity_id not in seen:
                seen.add(entity_id)
                yield await _entity_record(backend, entity_id, None, None, user)
        yield rec.preference(preference)


async def _entity_record(
    backend: MemoryBackend, entity_id: str, name: str | None, kind: str | None, user: str | None
) -> Record:
    scoped = user if backend.multi_tenant else None
    try:
        found = await backend.find_entities(entity_id, 1, user_identifier=scoped)
    except MemoryCoreError:
        found = []
    for entity in found:
        if entity.id == entity_id:
            return rec.entity(entity, scoped)
    # Not found: what the mention says of it (a valid record: a name, a known type).
    known = kind is not None and kind.upper() in EntityType.__members__
    return {
        "record": "entity",
        "id": entity_id,
        "user_identifier": scoped,
        "name": name or entity_id,
        "type": kind.upper() if kind is not None and known else EntityType.CUSTOM.value,
        "description": None,
        "created_at": None,
        "updated_at": None,
    }
