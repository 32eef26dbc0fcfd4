"""The one catalogue of deliberately broken backends: each breaks ONE documented promise
the way a real implementer might, and names the scenario(s) that must catch it.

Most classes subclass the embedded backend (``memory://``); a few subclass the example
backend :class:`~memory_core.conformance.example_backend.ToyStore` (``toy://``). Each changes
its base only through the hooks of :class:`~memory_core.interface.Store`
(``add_message``, ``get_conversation``, …), re-implementing the mistake in Python on top of
the correct result, so the catalogue survives refactors of the bases' internals
(:class:`SqliteOnLoop` alone reaches into the embedded store's internals).

:data:`CATALOGUE` is the one list of cases: the broken store, the scenarios that must fail on
it, and how the suite is run on it (``-k`` filter, throwaway or shared, what else must pass or
be n/a). :func:`register` registers every case's scheme (and ``toy://``).
:mod:`tests.conformance.test_catalogue` runs every case whose scenarios must fail (and the
honest base against the same scenarios, run the same way); the few cases that must NOT fail
(honest variants, declared differences) name the test that drives them in ``tested_by``.
"""

from __future__ import annotations

import fnmatch
import json
import re
import time
import unicodedata
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import anyio

from memory_core import (
    Conversation,
    ConversationPage,
    Entity,
    EntityRef,
    Fact,
    Message,
    NotFoundError,
    Preference,
    ReasoningStep,
    ReasoningTrace,
    Relationship,
    SessionInfo,
    ToolCall,
    ToolStats,
    TracePage,
    register_backend,
)
from memory_core import requests as rq
from memory_core.backends.embedded import EmbeddedStore
from memory_core.conformance.example_backend import ToyStore
from memory_core.conformance.scenarios import method_name_for
from memory_core.filters import matches, same_value
from memory_core.interface import Store
from memory_core.scoring import query_terms

ALL = 10**9


class _Memory(EmbeddedStore):
    """A private in-memory store whatever the URL says."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__("memory://", **options)


async def _everything(backend: EmbeddedStore, req: rq.GetConversation) -> Conversation:
    """The correct read of every message (``since`` applied), for re-doing the limit."""
    return await EmbeddedStore.get_conversation(backend, replace(req, limit=ALL))


def _with_messages(conversation: Conversation, messages: list[Message]) -> Conversation:
    return conversation.model_copy(update={"messages": messages})


# ---------------------------------------------------------------------------- ordering


class OrdersByTimestamp(_Memory):
    """Reads order by ``created_at`` (stable sort) instead of the sequence number."""

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        full = await _everything(self, req)
        ordered = sorted(full.messages, key=lambda m: m.created_at)
        return _with_messages(full, ordered[-req.limit :])


class OrdersByTimestampThenId(_Memory):
    """Reads order by ``(created_at, id)``: equal timestamps come in random order."""

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        full = await _everything(self, req)
        ordered = sorted(full.messages, key=lambda m: (m.created_at, str(m.id)))
        return _with_messages(full, ordered[-req.limit :])


class TimestampsInMilliseconds(_Memory):
    """Stores caller timestamps at millisecond resolution (a JavaScript-style clock)."""

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        def millis(when: datetime | None) -> datetime | None:
            return (
                None if when is None else when.replace(microsecond=when.microsecond // 1000 * 1000)
            )

        items = [replace(m, timestamp=millis(m.timestamp)) for m in req.messages]
        return await super().add_messages(replace(req, messages=items))


class ReadsNewestFirst(_Memory):
    """Returns the newest N in the order the index gives them: newest first."""

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        read = await super().get_conversation(req)
        return _with_messages(read, read.messages[::-1])


# ---------------------------------------------------------------------------- limits


class LimitKeepsOldest(_Memory):
    """``limit=N`` returns the oldest N messages."""

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        full = await _everything(self, req)
        return _with_messages(full, full.messages[: req.limit])


class SilentReadCap(_Memory):
    """Claims full history but never reads more than 500 messages (a page size)."""

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        return await super().get_conversation(replace(req, limit=min(req.limit, 500)))


class ListConversationsCap50(_Memory):
    """list_conversations never returns more than 50 (the NAMS default page)."""

    async def list_conversations(self, req: rq.ListConversations) -> ConversationPage:
        return await super().list_conversations(replace(req, limit=min(req.limit, 50)))


class SearchLimitIgnored(_Memory):
    """search_messages returns every hit whatever ``limit`` says."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        return await super().search_messages(replace(req, limit=ALL))


class SearchLimitBeforeRanking(_Memory):
    """Takes the first ``limit`` matches in storage order, then ranks them."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        hits = await super().search_messages(replace(req, limit=ALL))
        first = sorted(hits, key=lambda m: m.created_at)[: req.limit]
        return sorted(first, key=lambda m: -(m.score or 0.0))


# ---------------------------------------------------------------------------- since


class SinceInclusive(_Memory):
    """``since`` keeps messages at or after it (``>=``)."""

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        if req.since is None:
            return await super().get_conversation(req)
        earlier = req.since - timedelta(microseconds=1)
        return await super().get_conversation(replace(req, since=earlier))


class SinceAfterLimit(_Memory):
    """Reads the newest N, then drops those not after ``since`` (claims server-side)."""

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        page = await super().get_conversation(replace(req, since=None))
        if req.since is None:
            return page
        since = req.since
        return _with_messages(page, [m for m in page.messages if m.created_at > since])


class SinceInMilliseconds(_Memory):
    """Truncates ``since`` to milliseconds before comparing."""

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        if req.since is None:
            return await super().get_conversation(req)
        since = req.since.replace(microsecond=req.since.microsecond // 1000 * 1000)
        return await super().get_conversation(replace(req, since=since))


class IgnoresSince(_Memory):
    """Claims server_side_since but drops ``since`` (the contract then trusts the store and
    filters nothing; a store without the flag cannot break this: the contract filters)."""

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        return await super().get_conversation(replace(req, since=None))


# ---------------------------------------------------------------------------- search


class SearchIgnoresSession(_Memory):
    """Searches every session even when one is given (the reference's Bolt leak)."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        return await super().search_messages(replace(req, target=None))


class SearchSessionByPrefix(_Memory):
    """Scopes search with ``session_id LIKE :session || '%'``."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        target = req.target
        if target is None or target.session_id is None:
            return await super().search_messages(req)
        session = target.session_id
        hits = await super().search_messages(replace(req, target=None, limit=ALL))
        return [h for h in hits if (h.session_id or "").startswith(session)][: req.limit]


class SearchIgnoresConversationId(_Memory):
    """Scopes search by session name only: ``conversation_id`` alone searches everything."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        if req.target is not None and req.target.session_id is None:
            req = replace(req, target=None)
        return await super().search_messages(req)


class RawRankScores(_Memory):
    """Returns the engine's raw rank as the score (not scaled into 0..1)."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        hits = await super().search_messages(req)
        return [h.model_copy(update={"score": (h.score or 0.0) * 4}) for h in hits]


class HitsInStorageOrder(_Memory):
    """Returns hits in the order they were written, not best first."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        hits = await super().search_messages(req)
        return sorted(hits, key=lambda m: m.created_at)


class ScoresRelativeToBest(_Memory):
    """Divides every score by the best one, so the best hit always scores 1.0."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        hits = await super().search_messages(replace(req, threshold=None))
        best = max((h.score or 0.0 for h in hits), default=0.0) or 1.0
        scaled = [h.model_copy(update={"score": (h.score or 0.0) / best}) for h in hits]
        if req.threshold is not None:
            scaled = [h for h in scaled if (h.score or 0.0) >= req.threshold]
        return scaled


class CoverageOnlyScores(_Memory):
    """Scores a text hit by the share of the query's words it holds, ignoring repeats and
    length (a scale of its own, in 0..1 with the documented bands)."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        hits = await super().search_messages(replace(req, threshold=None, limit=ALL))
        terms = query_terms(req.query)

        def share(content: str) -> float:
            words = set(re.findall(r"\w+", content.casefold()))
            return sum(term in words for term in terms) / len(terms) if terms else 0.0

        scored = [h.model_copy(update={"score": share(h.content)}) for h in hits]
        scored.sort(key=lambda h: -(h.score or 0.0))
        if req.threshold is not None:
            scored = [h for h in scored if (h.score or 0.0) >= req.threshold]
        return scored[: req.limit]


class ThresholdExclusive(_Memory):
    """``threshold`` keeps hits scoring strictly above it."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        hits = await super().search_messages(replace(req, threshold=None))
        cut = req.threshold
        return hits if cut is None else [h for h in hits if (h.score or 0.0) > cut]


class ThresholdIgnored(_Memory):
    """Claims search_threshold but ignores it."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        return await super().search_messages(replace(req, threshold=None))


class IgnoresEmbedder(_Memory):
    """Claims vector search but searches text only."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        return await super().search_messages(replace(req, query_embedding=None))


# ---------------------------------------------------------------------------- filters


class _PythonFilter(_Memory):
    """Applies ``metadata_filters`` in Python with :meth:`keep`, before the limit."""

    def keep(self, metadata: dict[str, Any], filters: dict[str, Any]) -> bool:
        raise NotImplementedError

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        if not req.metadata_filters:
            return await super().search_messages(req)
        hits = await super().search_messages(replace(req, metadata_filters={}, limit=ALL))
        kept = [h for h in hits if self.keep(h.metadata, req.metadata_filters)]
        return kept[: req.limit]


class FilterPythonEquality(_PythonFilter):
    """Compares with ``==``: True equals 1 (and 1.0)."""

    def keep(self, metadata: dict[str, Any], filters: dict[str, Any]) -> bool:
        return all(k in metadata and metadata[k] == v for k, v in filters.items())


class FilterJsonSubstring(_PythonFilter):
    """The reference's filter: a substring of the metadata JSON (1 matches 10)."""

    def keep(self, metadata: dict[str, Any], filters: dict[str, Any]) -> bool:
        text = json.dumps(metadata)
        return all(f"{json.dumps(k)}: {json.dumps(v)}" in text for k, v in filters.items())


class FilterAsStrings(_PythonFilter):
    """Compares values as strings: 1 equals "1"."""

    def keep(self, metadata: dict[str, Any], filters: dict[str, Any]) -> bool:
        return all(k in metadata and str(metadata[k]) == str(v) for k, v in filters.items())


class FilterNullMatchesMissing(_PythonFilter):
    """``{key: None}`` also matches messages without the key (``.get`` returns None)."""

    def keep(self, metadata: dict[str, Any], filters: dict[str, Any]) -> bool:
        return all(same_value(metadata.get(k), v) for k, v in filters.items())


class FilterNumbersByType(_PythonFilter):
    """Compares numbers by type too: 1 does not equal 1.0."""

    def keep(self, metadata: dict[str, Any], filters: dict[str, Any]) -> bool:
        return all(
            k in metadata and type(metadata[k]) is type(v) and metadata[k] == v
            for k, v in filters.items()
        )


class FilterAfterLimit(_Memory):
    """Applies ``metadata_filters`` to the best ``limit`` hits (post-filtering)."""

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        hits = await super().search_messages(replace(req, metadata_filters={}))
        return [h for h in hits if matches(h.metadata, req.metadata_filters)]


# ---------------------------------------------------------------------------- fidelity


class _MapsContent(_Memory):
    """Stores ``self.transform(content)`` (and returns what it stored)."""

    def transform(self, content: str) -> str:
        raise NotImplementedError

    async def add_message(self, req: rq.AddMessage) -> Message:
        return await super().add_message(replace(req, content=self.transform(req.content)))

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        items = [replace(m, content=self.transform(m.content)) for m in req.messages]
        return await super().add_messages(replace(req, messages=items))


class StripsContent(_MapsContent):
    """Strips surrounding whitespace from content."""

    def transform(self, content: str) -> str:
        return content.strip()


class NormalizesContentNfc(_MapsContent):
    """Normalises content to NFC."""

    def transform(self, content: str) -> str:
        return unicodedata.normalize("NFC", content)


class Truncates64K(_MapsContent):
    """Keeps at most 65,535 characters (a TEXT column)."""

    def transform(self, content: str) -> str:
        return content[:65_535]


class _MapsMetadata(_Memory):
    """Stores ``self.transform(metadata)``."""

    def transform(self, metadata: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    async def add_message(self, req: rq.AddMessage) -> Message:
        return await super().add_message(replace(req, metadata=self.transform(req.metadata)))

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        items = [replace(m, metadata=self.transform(m.metadata)) for m in req.messages]
        return await super().add_messages(replace(req, messages=items))


def _deep(value: Any, leaf: Callable[[Any], Any]) -> Any:
    if isinstance(value, dict):
        return {leaf(k) if isinstance(k, str) else k: _deep(v, leaf) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep(v, leaf) for v in value]
    return leaf(value)


class NormalizesMetadataNfc(_MapsMetadata):
    """Normalises every metadata string (keys and values) to NFC."""

    def transform(self, metadata: dict[str, Any]) -> dict[str, Any]:
        nfc = lambda v: unicodedata.normalize("NFC", v) if isinstance(v, str) else v  # noqa: E731
        result: dict[str, Any] = _deep(metadata, nfc)
        return result


class DropsNullMetadata(_MapsMetadata):
    """Drops metadata keys whose value is None (``exclude_none``)."""

    def transform(self, metadata: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in metadata.items() if v is not None}


class IntsBecomeFloats(_MapsMetadata):
    """Stores every number as a float (JSON through a float-only parser)."""

    def transform(self, metadata: dict[str, Any]) -> dict[str, Any]:
        to_float = lambda v: float(v) if type(v) is int else v  # noqa: E731
        result: dict[str, Any] = _deep(metadata, to_float)
        return result


# ---------------------------------------------------------------------------- idempotency


class IdempotencyKeysGlobal(_Memory):
    """Idempotency keys are unique per store, not per conversation."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._by_key: dict[tuple[str | None, str], Message] = {}

    async def add_message(self, req: rq.AddMessage) -> Message:
        key = req.idempotency_key
        if key is not None and (req.target.tenant, key) in self._by_key:
            return self._by_key[(req.target.tenant, key)]
        stored = await super().add_message(req)
        if key is not None:
            self._by_key[(req.target.tenant, key)] = stored
        return stored


class IdempotencyCheckThenWrite(_Memory):
    """Looks the key up, then writes in a separate step: concurrent replays all write."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._by_key: dict[tuple[str, str], Message] = {}

    async def add_message(self, req: rq.AddMessage) -> Message:
        key = req.idempotency_key
        if key is None:
            return await super().add_message(req)
        slot = (req.target.handle, key)
        if slot in self._by_key:
            return self._by_key[slot]
        await anyio.sleep(0.005)  # the round trip between the check and the write
        stored = await super().add_message(replace(req, idempotency_key=None))
        self._by_key[slot] = stored
        return stored


class IdempotencyReturnsNewContent(_Memory):
    """A replay returns the stored id with the replayed content (an upsert's echo)."""

    async def add_message(self, req: rq.AddMessage) -> Message:
        stored = await super().add_message(req)
        return stored.model_copy(update={"content": req.content, "role": req.role})


# ---------------------------------------------------------------------------- deletes


class DeleteLeavesSearchIndex(_Memory):
    """Deletes hide the message from reads but the search index keeps it."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._written: set[UUID] = set()
        self._deleted: set[UUID] = set()

    async def add_message(self, req: rq.AddMessage) -> Message:
        stored = await super().add_message(req)
        self._written.add(stored.id)
        return stored

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        stored = await super().add_messages(req)
        self._written.update(m.id for m in stored)
        return stored

    async def delete_message(self, req: rq.DeleteMessage) -> bool:
        if req.message_id not in self._written or req.message_id in self._deleted:
            return False
        self._deleted.add(req.message_id)
        return True

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        full = await _everything(self, req)
        alive = [m for m in full.messages if m.id not in self._deleted]
        return _with_messages(full, alive[-req.limit :])


class DeleteAlwaysTrue(_Memory):
    """delete_message returns True whether or not a message was deleted."""

    async def delete_message(self, req: rq.DeleteMessage) -> bool:
        await super().delete_message(req)
        return True


class ClearAlwaysTrue(_Memory):
    """clear_session returns True also for a missing session."""

    async def clear_session(self, target: rq.Target) -> bool:
        await super().clear_session(target)
        return True


class StaleSessionCounts(_Memory):
    """list_sessions reports a message counter kept at write time, never decremented."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._counts: dict[UUID, int] = {}

    def _count(self, stored: list[Message]) -> None:
        for message in stored:
            if message.conversation_id is not None:
                key = message.conversation_id
                self._counts[key] = self._counts.get(key, 0) + 1

    async def add_message(self, req: rq.AddMessage) -> Message:
        stored = await super().add_message(req)
        self._count([stored])
        return stored

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        stored = await super().add_messages(req)
        self._count(stored)
        return stored

    async def list_sessions(self, req: rq.ListSessions) -> list[SessionInfo]:
        rows = await super().list_sessions(req)
        return [
            r.model_copy(update={"message_count": self._counts.get(r.conversation_id, 0)})
            for r in rows
        ]


# ---------------------------------------------------------------------------- sessions


class _ListsSessionsByPattern(_Memory):
    """Filters ``prefix`` in Python with :meth:`matches` (then pages)."""

    def matches(self, session_id: str, prefix: str) -> bool:
        raise NotImplementedError

    async def list_sessions(self, req: rq.ListSessions) -> list[SessionInfo]:
        if not req.prefix:
            return await super().list_sessions(req)
        rows = await super().list_sessions(replace(req, prefix=None, limit=ALL, offset=0))
        prefix = req.prefix
        kept = [r for r in rows if self.matches(r.session_id, prefix)]
        return kept[req.offset : req.offset + req.limit]


class PrefixAsLike(_ListsSessionsByPattern):
    """``session_id LIKE :prefix || '%'`` without escaping (SQLite LIKE: ASCII case folded)."""

    def matches(self, session_id: str, prefix: str) -> bool:
        pattern = "".join(
            ".*" if c == "%" else "." if c == "_" else re.escape(c) for c in prefix + "%"
        )
        return re.fullmatch(pattern, session_id, re.IGNORECASE | re.DOTALL) is not None


class PrefixAsGlob(_ListsSessionsByPattern):
    """``session_id GLOB :prefix || '*'`` without escaping."""

    def matches(self, session_id: str, prefix: str) -> bool:
        return fnmatch.fnmatchcase(session_id, prefix + "*")


class PrefixIgnoresCase(_ListsSessionsByPattern):
    """Compares the prefix ignoring case."""

    def matches(self, session_id: str, prefix: str) -> bool:
        return session_id.lower().startswith(prefix.lower())


class SessionTiesDescending(_Memory):
    """Breaks list_sessions ties by session_id in the sort direction, not ascending."""

    async def list_sessions(self, req: rq.ListSessions) -> list[SessionInfo]:
        rows = await super().list_sessions(replace(req, limit=ALL, offset=0))
        if req.order_by == "message_count":
            rows.sort(
                key=lambda r: (r.message_count, r.session_id), reverse=req.order_dir == "desc"
            )
        return rows[req.offset : req.offset + req.limit]


class _RewritesTargets(_Memory):
    """Rewrites the session and tenant of every call with :meth:`session` / :meth:`tenant`."""

    def session(self, session_id: str, tenant: str | None) -> str:
        return session_id

    def tenant(self, tenant: str | None) -> str | None:
        return tenant

    def _s(self, scope: rq.Scope) -> rq.Scope:
        return replace(scope, tenant=self.tenant(scope.tenant))

    def _t(self, target: rq.Target) -> rq.Target:
        session = target.session_id
        return replace(
            target,
            session_id=None if session is None else self.session(session, target.tenant),
            scope=self._s(target.scope),
        )

    async def add_message(self, req: rq.AddMessage) -> Message:
        return await super().add_message(replace(req, target=self._t(req.target)))

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        return await super().add_messages(replace(req, target=self._t(req.target)))

    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        return await super().create_conversation(replace(req, target=self._t(req.target)))

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        return await super().get_conversation(replace(req, target=self._t(req.target)))

    async def clear_session(self, target: rq.Target) -> bool:
        return await super().clear_session(self._t(target))

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        target = None if req.target is None else self._t(req.target)
        return await super().search_messages(replace(req, target=target, scope=self._s(req.scope)))

    async def list_conversations(self, req: rq.ListConversations) -> ConversationPage:
        return await super().list_conversations(replace(req, scope=self._s(req.scope)))

    async def list_sessions(self, req: rq.ListSessions) -> list[SessionInfo]:
        return await super().list_sessions(replace(req, scope=self._s(req.scope)))

    async def delete_message(self, req: rq.DeleteMessage) -> bool:
        return await super().delete_message(replace(req, scope=self._s(req.scope)))


class SessionIdsCaseFolded(_RewritesTargets):
    """Session names are compared ignoring case (a NOCASE column)."""

    def session(self, session_id: str, tenant: str | None) -> str:
        return session_id.casefold()


class SessionIdsStripped(_RewritesTargets):
    """Session names are stripped of surrounding whitespace."""

    def session(self, session_id: str, tenant: str | None) -> str:
        return session_id.strip()


class SessionIdsNfc(_RewritesTargets):
    """Session names are normalised to NFC."""

    def session(self, session_id: str, tenant: str | None) -> str:
        return unicodedata.normalize("NFC", session_id)


# ---------------------------------------------------------------------------- tenancy


class TenantIgnored(_RewritesTargets):
    """Requires user_identifier but stores and reads every user's data in one space."""

    def tenant(self, tenant: str | None) -> str | None:
        return None


class TenantCaseFolded(_RewritesTargets):
    """User identifiers are compared ignoring case."""

    def tenant(self, tenant: str | None) -> str | None:
        return None if tenant is None else tenant.casefold()


class TenantConcatenatedWithSession(_RewritesTargets):
    """Keys a conversation by ``user + session`` with no separator."""

    def session(self, session_id: str, tenant: str | None) -> str:
        return f"{tenant or ''}{session_id}"

    def tenant(self, tenant: str | None) -> str | None:
        return None


class ClearIgnoresTenant(_Memory):
    """clear_session clears the session name for every user that has it."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._tenants: dict[str, set[str | None]] = {}

    def _seen(self, target: rq.Target) -> None:
        if target.session_id is not None:
            self._tenants.setdefault(target.session_id, set()).add(target.tenant)

    async def add_message(self, req: rq.AddMessage) -> Message:
        self._seen(req.target)
        return await super().add_message(req)

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        self._seen(req.target)
        return await super().add_messages(req)

    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        self._seen(req.target)
        return await super().create_conversation(req)

    async def clear_session(self, target: rq.Target) -> bool:
        cleared = False
        for tenant in self._tenants.get(target.session_id or "", {target.tenant}):
            scope = replace(target.scope, tenant=tenant)
            cleared |= await super().clear_session(replace(target, scope=scope))
        return cleared


# ---------------------------------------------------------------------------- conversations


class RandomIdForMissingSession(_Memory):
    """An unknown session reads as an empty conversation with a new random id each time."""

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        read = await super().get_conversation(req)
        if read.messages or req.target.session_id is None:
            return read
        listed = await super().list_conversations(
            rq.ListConversations(limit=ALL, scope=req.target.scope)
        )
        if read.id in {c.id for c in listed.conversations}:
            return read
        return read.model_copy(update={"id": uuid4()})


class CreateOverwrites(_Memory):
    """A second create_conversation replaces the stored title and metadata."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._latest: dict[UUID, dict[str, Any]] = {}

    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        created = await super().create_conversation(req)
        update = {"title": req.title, "metadata": req.metadata}
        self._latest[created.id] = update
        return created.model_copy(update=update)

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        read = await super().get_conversation(req)
        return read.model_copy(update=self._latest.get(read.id, {}))


class CreateNeverFills(_Memory):
    """create_conversation on an existing conversation returns it untouched."""

    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        existing = await super().get_conversation(
            rq.GetConversation(target=req.target, limit=1, since=None)
        )
        if existing.messages:
            return existing.model_copy(update={"messages": []})
        return await super().create_conversation(req)


class ListsByCreation(_Memory):
    """list_conversations orders by created_at instead of updated_at."""

    async def list_conversations(self, req: rq.ListConversations) -> ConversationPage:
        listed = (await super().list_conversations(replace(req, limit=ALL))).conversations
        listed.sort(key=lambda c: c.created_at, reverse=True)
        return ConversationPage(conversations=listed[: req.limit])


class BulkDoesNotTouch(_Memory):
    """Only add_message and create_conversation move a conversation up the listing."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._touched: dict[UUID, float] = {}

    async def add_message(self, req: rq.AddMessage) -> Message:
        stored = await super().add_message(req)
        if stored.conversation_id is not None:
            self._touched[stored.conversation_id] = time.monotonic()
        return stored

    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        created = await super().create_conversation(req)
        self._touched.setdefault(created.id, time.monotonic())
        return created

    async def list_conversations(self, req: rq.ListConversations) -> ConversationPage:
        listed = (await super().list_conversations(replace(req, limit=ALL))).conversations
        listed.sort(key=lambda c: self._touched.get(c.id, 0.0), reverse=True)
        return ConversationPage(conversations=listed[: req.limit])


# ---------------------------------------------------------------------------- entities


class FindEntitiesAsciiCase(_Memory):
    """find_entities ignores case for ASCII letters only (SQLite NOCASE)."""

    async def find_entities(self, req: rq.FindEntities) -> list[Entity]:
        found = await super().find_entities(replace(req, limit=ALL))

        def fold(text: str) -> str:
            return "".join(c.lower() if c.isascii() else c for c in text)

        kept = [e for e in found if e.id == req.identifier or fold(e.name) == fold(req.identifier)]
        return kept[: req.limit]


class NameOnlyMentionCreates(_Memory):
    """A name-only EntityRef creates a CONCEPT entity when none exists."""

    async def add_message(self, req: rq.AddMessage) -> Message:
        refs = [
            EntityRef(name=r.name, type="CONCEPT") if r.id is None and r.type is None else r
            for r in req.mentions
        ]
        return await super().add_message(replace(req, mentions=refs))


class DeleteEntityKeepsMentions(_Memory):
    """delete_entity hides the entity from find_entities but leaves its mentions."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._gone: set[str] = set()

    async def delete_entity(self, req: rq.DeleteEntity) -> bool:
        found = await super().find_entities(
            rq.FindEntities(identifier=req.entity_id, limit=1, type=None, scope=req.scope)
        )
        if req.entity_id in self._gone or not any(e.id == req.entity_id for e in found):
            return False
        self._gone.add(req.entity_id)
        return True

    async def find_entities(self, req: rq.FindEntities) -> list[Entity]:
        return [e for e in await super().find_entities(req) if e.id not in self._gone]


class UnknownMentionIdSkipped(_Memory):
    """An EntityRef with an unknown id is silently skipped."""

    async def add_message(self, req: rq.AddMessage) -> Message:
        kept = []
        for ref in req.mentions:
            if ref.id is not None:
                found = await self.find_entities(
                    rq.FindEntities(identifier=ref.id, limit=1, type=None, scope=req.target.scope)
                )
                if not any(e.id == ref.id for e in found):
                    continue
            kept.append(ref)
        return await super().add_message(replace(req, mentions=kept))


class KeepsEntities(_Memory):
    """Entities work but cannot be deleted (as on NAMS): not a defect, so the entity
    scenarios must turn n/a on a shared store (they could not clean up) rather than fail."""

    capabilities = replace(EmbeddedStore.capabilities, delete_entity=False)


# ---------------------------------------------------------------------------- concurrency


class NonAtomicGetOrCreate(_Memory):
    """Get-or-create of a session's storage is check-then-insert across an await: the
    first concurrent writers each create their own, and all but the last are lost."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._storage: dict[str, str] = {}

    async def _key(self, target: rq.Target, create: bool) -> rq.Target:
        session = target.session_id
        if session is None:
            return target
        if session not in self._storage and create:
            await anyio.sleep(0.001)  # the round trip between the check and the insert
            self._storage[session] = f"{session}\x1f{uuid4().hex}"
        return replace(target, session_id=self._storage.get(session, session))

    async def add_message(self, req: rq.AddMessage) -> Message:
        return await super().add_message(replace(req, target=await self._key(req.target, True)))

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        target = await self._key(req.target, True)
        return await super().add_messages(replace(req, target=target))

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        target = await self._key(req.target, False)
        return await super().get_conversation(replace(req, target=target))

    async def clear_session(self, target: rq.Target) -> bool:
        return await super().clear_session(await self._key(target, False))


class UnknownConversationIdIsNoOp(_Memory):
    """Writing to an unknown conversation_id silently stores nothing (the reference)."""

    async def add_message(self, req: rq.AddMessage) -> Message:
        try:
            return await super().add_message(req)
        except NotFoundError:
            return Message(role=req.role, content=req.content, metadata=req.metadata)


# ---------------------------------------------------------------------------- context


_IN_CONTEXT: ContextVar[bool] = ContextVar("in_context", default=False)


class ContextSearchUnscoped(_Memory):
    """get_context adds relevant messages from every session, not just this one (the
    default get_context searches through :meth:`search_messages`, unscoped here)."""

    async def get_context(self, req: rq.GetContext) -> str:
        token = _IN_CONTEXT.set(True)
        try:
            return await super().get_context(req)
        finally:
            _IN_CONTEXT.reset(token)

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        if _IN_CONTEXT.get():
            req = replace(req, target=None)
        return await super().search_messages(req)


class ContextIgnoresMaxMessages(_Memory):
    """get_context shows every recent message whatever max_messages says."""

    async def get_context(self, req: rq.GetContext) -> str:
        return await super().get_context(replace(req, max_messages=1000))


class ContextIgnoresPerSession(_Memory):
    """get_context keeps the best max_hits relevant messages whatever per_session says."""

    async def get_context(self, req: rq.GetContext) -> str:
        return await super().get_context(replace(req, per_session=None))


class ContextIgnoresNeighbours(_Memory):
    """get_context is its own and leaves the hits' neighbours out."""

    async def get_context(self, req: rq.GetContext) -> str:
        return await super().get_context(replace(req, neighbours=0))


class ContextIgnoresRecency(_Memory):
    """get_context is its own and ranks the relevant messages without their age."""

    async def get_context(self, req: rq.GetContext) -> str:
        return await super().get_context(replace(req, recency_half_life=None))


class NeighboursBeforeOnly(_Memory):
    """message_neighbours returns the messages before each hit and none after it."""

    async def message_neighbours(self, req: rq.MessageNeighbours) -> list[list[Message]]:
        windows = await super().message_neighbours(req)
        return [
            window[: [m.id for m in window].index(hit) + 1] if window else window
            for hit, window in zip(req.message_ids, windows, strict=True)
        ]


# ---------------------------------------------------------------------------- blocking


class SqliteOnLoop(_Memory):
    """Runs its SQLite transactions directly on the event-loop thread (no worker thread)."""

    async def connect(self) -> None:
        await super().connect()
        store: Any = self._store

        async def call(work: Any, *, write: bool) -> Any:
            return store.run(work, write=write)  # blocking: holds the loop for the whole call

        store.call = call


class SleepingRateLimiter(_Memory):
    """Paces requests with ``time.sleep`` on the loop thread, in proportion to the size
    of each read or write (a synchronous client-side rate limiter)."""

    @staticmethod
    def _pace(count: int) -> None:
        time.sleep(0.0002 * count)

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        self._pace(len(req.messages))
        return await super().add_messages(req)

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        read = await super().get_conversation(req)
        self._pace(len(read.messages))
        return read


# ---------------------------------------------------------------------------- portability


class IgnoresLimit(_Memory):
    """Returns the whole conversation whatever ``limit`` says, without a warning."""

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        return await super().get_conversation(replace(req, limit=1000))


class LosesMetadata(_Memory):
    """Claims message_metadata but stores none, without a warning."""

    async def add_message(self, req: rq.AddMessage) -> Message:
        return await super().add_message(replace(req, metadata={}))


class NoMetadataDeclared(_Memory):
    """Declares message_metadata False: the contract drops it with a warning (honest, so
    the portability area must pass)."""

    capabilities = replace(EmbeddedStore.capabilities, message_metadata=False)


# ---------------------------------------------------------------------------- toy


class ToyIgnoresSessionInSearch(ToyStore):
    """Searches every session even when one is given (the reference's tenant leak)."""

    name = "toy-search-leak"

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        return await super().search_messages(replace(req, target=None))


class ToyDeleteRaises(ToyStore):
    """Claims delete_message but the hook blows up (the reference's ConstraintError)."""

    name = "toy-delete-raises"

    async def delete_message(self, req: rq.DeleteMessage) -> bool:
        raise RuntimeError("Node still has relationships")


class ToyKeepsOldest(ToyStore):
    """Returns the oldest N messages for limit=N instead of the newest."""

    name = "toy-keeps-oldest"

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        everything = rq.GetConversation(target=req.target, limit=ALL, since=req.since)
        conversation = await super().get_conversation(everything)
        return _with_messages(conversation, conversation.messages[: req.limit])


class ToyDropsMetadata(ToyStore):
    """Claims message_metadata but silently stores none."""

    name = "toy-drops-metadata"

    async def add_message(self, req: rq.AddMessage) -> Message:
        return await super().add_message(replace(req, metadata={}))


# ---------------------------------------------------------------------------- guards


class ClearByIdIgnoresTenant(_Memory):
    """clear_session by conversation_id alone clears that conversation whoever owns it."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._owners: dict[UUID, str | None] = {}

    async def add_message(self, req: rq.AddMessage) -> Message:
        stored = await super().add_message(req)
        if stored.conversation_id is not None:
            self._owners[stored.conversation_id] = req.target.tenant
        return stored

    async def clear_session(self, target: rq.Target) -> bool:
        owner = self._owners.get(target.conversation_id) if target.conversation_id else None
        if target.session_id is None and owner is not None:
            target = replace(target, scope=replace(target.scope, tenant=owner))
        return await super().clear_session(target)


class ReturnsItsOwnClock(_Memory):
    """add_message returns the time the call ended, not the instant it stored."""

    async def add_message(self, req: rq.AddMessage) -> Message:
        stored = await super().add_message(req)
        return stored.model_copy(update={"created_at": datetime.now(stored.created_at.tzinfo)})


class DeleteForgetsSequence(_Memory):
    """After a delete, the conversation reads in timestamp order, not its sequence."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._owner_of: dict[UUID, UUID | None] = {}
        self._unsequenced: set[UUID | None] = set()

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        stored = await super().add_messages(req)
        self._owner_of.update((m.id, m.conversation_id) for m in stored)
        return stored

    async def delete_message(self, req: rq.DeleteMessage) -> bool:
        deleted = await super().delete_message(req)
        if deleted:
            self._unsequenced.add(self._owner_of.get(req.message_id))
        return deleted

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        full = await _everything(self, req)
        if full.id not in self._unsequenced:
            return await super().get_conversation(req)
        ordered = sorted(full.messages, key=lambda m: (m.created_at, str(m.id)))
        return _with_messages(full, ordered[-req.limit :])


# ---------------------------------------------------------------------------- entity updates


class UpdateClearsUnset(_Memory):
    """update_entity writes every field: aliases and attributes not given become empty."""

    async def update_entity(self, req: rq.UpdateEntity) -> Entity:
        whole = replace(req, aliases=req.aliases or [], attributes=req.attributes or {})
        return await super().update_entity(whole)


class ByNameIgnoresAliases(_Memory):
    """get_entity_by_name matches canonical names only."""

    async def get_entity_by_name(self, req: rq.GetEntityByName) -> Entity | None:
        found = await super().get_entity_by_name(req)
        if found is None or found.name.casefold() != req.name.casefold():
            return None
        return found


class MergeMakesSelfLoops(_Memory):
    """merge_entities turns a relationship between the two into one of the target with
    itself instead of dropping it."""

    async def merge_entities(self, req: rq.MergeEntities) -> Entity:
        listed = rq.ListRelationships(
            entity_id=req.source_id, direction="both", type=None, limit=ALL, scope=req.scope
        )
        between = [
            r
            for r in await super().list_relationships(listed)
            if req.target_id in (r.source_id, r.target_id)
        ]
        merged = await super().merge_entities(req)
        for edge in between:
            loop = rq.AddRelationship(
                source_id=merged.id,
                target_id=merged.id,
                type=edge.type,
                properties=edge.properties,
                confidence=edge.confidence,
                valid_from=edge.valid_from,
                valid_until=edge.valid_until,
                scope=req.scope,
            )
            await super().add_relationship(loop)
        return merged


class MergeLeavesFacts(_Memory):
    """merge_entities moves links but leaves the facts about the source's names as they
    were (facts_about the target misses them)."""

    async def merge_entities(self, req: rq.MergeEntities) -> Entity:
        source = await super().get_entity(rq.GetEntity(entity_id=req.source_id, scope=req.scope))
        names = [] if source is None else [source.name, *source.aliases]
        before: dict[str, str] = {}
        for name in names:
            about = rq.FactsAbout(
                subject=name, predicate=None, as_of=None, limit=ALL, scope=req.scope
            )
            before.update((f.id, f.subject) for f in await super().facts_about(about))
        merged = await super().merge_entities(req)
        about = rq.FactsAbout(
            subject=merged.name, predicate=None, as_of=None, limit=ALL, scope=req.scope
        )
        for fact in await super().facts_about(about):
            if fact.id in before:
                await self._restore(fact, before[fact.id], req.scope)
        return merged

    async def _restore(self, fact: Any, name: str, scope: rq.Scope) -> None:
        await super().delete_fact(rq.DeleteRecord(record_id=fact.id, scope=scope))
        again = rq.AddFact(
            subject=name,
            predicate=fact.predicate,
            object=fact.object,
            confidence=fact.confidence,
            valid_from=fact.valid_from,
            valid_until=fact.valid_until,
            source_message_id=fact.source_message_id,
            metadata=fact.metadata,
            embedding=None,
            scope=rq.Scope(user_identifier=fact.user_identifier, tenant=scope.tenant),
        )
        await super().add_fact(again)


# ---------------------------------------------------------------------------- the table


ENTITY_SCENARIOS = (
    "entities.add_and_find",
    "entities.add_is_idempotent",
    "entities.find_limit_and_type",
    "entities.mention_by_id",
    "entities.mention_typed",
    "entities.mention_name_only",
    "entities.extractor",
    "tenancy.entities_isolated",
    "tenancy.mentions_isolated",
)  # the scenarios that write entities, so need delete_entity to clean up on a shared store


# ---------------------------------------------------------------------------- long-term


class SupersededStillListed(_Memory):
    """Lists superseded preferences as if ``include_superseded`` were always true."""

    async def list_preferences(self, req: rq.ListPreferences) -> list[Preference]:
        return await super().list_preferences(replace(req, include_superseded=True))


class PreferencesOfEveryUser(_Memory):
    """Searches every user's preferences (the reference's long-term reads: its #137)."""

    async def search_preferences(self, req: rq.SearchPreferences) -> list[Preference]:
        return await super().search_preferences(replace(req, scope=rq.UNSCOPED))


def _valid_inclusive(fact: Fact, moment: datetime) -> bool:
    after_start = fact.valid_from is None or fact.valid_from <= moment
    return after_start and (fact.valid_until is None or moment <= fact.valid_until)


class ValidUntilInclusive(_Memory):
    """Keeps a fact valid at its ``valid_until`` instant too (``<=``, where the contract
    says ``<``), in ``facts_about`` and ``search_facts`` alike."""

    async def facts_about(self, req: rq.FactsAbout) -> list[Fact]:
        if req.as_of is None:
            return await super().facts_about(req)
        every = await super().facts_about(replace(req, as_of=None, limit=ALL))
        moment = req.as_of
        return [f for f in every if _valid_inclusive(f, moment)][: req.limit]

    async def search_facts(self, req: rq.SearchFacts) -> list[Fact]:
        if req.as_of is None:
            return await super().search_facts(req)
        every = await super().search_facts(replace(req, as_of=None, limit=ALL))
        moment = req.as_of
        return [f for f in every if _valid_inclusive(f, moment)][: req.limit]


class FactsAboutCaseSensitive(_Memory):
    """Matches a fact's subject exactly, case included."""

    async def facts_about(self, req: rq.FactsAbout) -> list[Fact]:
        return [f for f in await super().facts_about(req) if f.subject == req.subject]


class TraversalOneStepTooFar(_Memory):
    """Walks one relationship further than ``depth`` asks (the start counted as depth 0
    by one part of the code and 1 by another)."""

    async def related_entities(self, req: rq.RelatedEntities) -> list[Entity]:
        return await super().related_entities(replace(req, depth=min(req.depth + 1, 3)))


class RelationshipsEitherDirection(_Memory):
    """Lists an entity's relationships both ways whatever ``direction`` says."""

    async def list_relationships(self, req: rq.ListRelationships) -> list[Relationship]:
        return await super().list_relationships(replace(req, direction="both"))


# ---------------------------------------------------------------------------- reasoning


class StepNumbersByCount(_Memory):
    """Numbers a step by counting the trace's steps, then inserting (two transactions:
    concurrent appends read the same count)."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._numbers: dict[str, int] = {}

    async def add_step(self, req: rq.AddStep) -> ReasoningStep:
        trace = await self.get_trace(rq.GetTrace(trace_id=req.trace_id, scope=req.scope))
        count = 0 if trace is None else len(trace.steps)
        await anyio.sleep(0)
        step = await super().add_step(req)
        self._numbers[step.id] = count + 1
        return step.model_copy(update={"step_number": count + 1})

    async def get_trace(self, req: rq.GetTrace) -> ReasoningTrace | None:
        trace = await super().get_trace(req)
        if trace is None:
            return None
        steps = [
            s.model_copy(update={"step_number": self._numbers.get(s.id, s.step_number)})
            for s in trace.steps
        ]
        return trace.model_copy(update={"steps": steps})


class CompleteOverwrites(_Memory):
    """Completing a completed trace overwrites its outcome, success and time."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._latest: dict[str, dict[str, Any]] = {}

    async def complete_trace(self, req: rq.CompleteTrace) -> ReasoningTrace:
        done = await super().complete_trace(req)
        update = {"outcome": req.outcome, "success": req.success, "completed_at": datetime.now(UTC)}
        self._latest[done.id] = update
        return done.model_copy(update=update)

    async def get_trace(self, req: rq.GetTrace) -> ReasoningTrace | None:
        trace = await super().get_trace(req)
        if trace is None or trace.id not in self._latest:
            return trace
        return trace.model_copy(update=self._latest[trace.id])


class StatsTimeoutAsSuccess(_Memory):
    """Counts a timed-out call as a success in the statistics (it returned, after all)."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__(url, **options)
        self._timeouts: dict[tuple[str | None, str], int] = {}

    async def record_tool_call(self, req: rq.RecordToolCall) -> ToolCall:
        call = await super().record_tool_call(req)
        if req.status == "timeout":
            key = (req.user_identifier, req.tool_name)
            self._timeouts[key] = self._timeouts.get(key, 0) + 1
        return call

    async def tool_stats(self, req: rq.ToolStatsQuery) -> list[ToolStats]:
        found = []
        for stats in await super().tool_stats(req):
            late = self._timeouts.get((req.user_identifier, stats.name), 0)
            good = stats.successful_calls + late
            found.append(
                stats.model_copy(
                    update={
                        "successful_calls": good,
                        "failed_calls": stats.failed_calls - late,
                        "success_rate": good / stats.total_calls,
                    }
                )
            )
        return found


class TracesOldestFirst(_Memory):
    """Lists traces oldest first (each page reversed)."""

    async def list_traces(self, req: rq.ListTraces) -> TracePage:
        page = await super().list_traces(req)
        return page.model_copy(update={"traces": list(reversed(page.traces))})


class SimilarTracesOfAnyOutcome(_Memory):
    """Returns failed and unfinished traces as similar even when only successful ones
    are asked for."""

    async def similar_traces(self, req: rq.SimilarTraces) -> list[ReasoningTrace]:
        return await super().similar_traces(replace(req, success_only=False))


class TracesOfEveryUser(_Memory):
    """Reads a trace by id whoever asks (its id is unguessable, after all)."""

    async def get_trace(self, req: rq.GetTrace) -> ReasoningTrace | None:
        return await super().get_trace(replace(req, scope=rq.UNSCOPED))


class ClearKeepsTraces(_Memory):
    """clear_session deletes the conversation and leaves its session's traces (they are
    read before the clear and written back after it, under new ids)."""

    async def clear_session(self, target: rq.Target) -> bool:
        session = await self._session_of(target)
        tenant = rq.Scope(tenant=target.tenant)
        kept: list[ReasoningTrace] = []
        if session is not None:
            page = await self.list_traces(
                rq.ListTraces(
                    session_id=session, success=None, limit=ALL, cursor=None, scope=tenant
                )
            )
            for header in page.traces:
                full = await self.get_trace(rq.GetTrace(trace_id=header.id, scope=tenant))
                kept += [] if full is None else [full]
        cleared = await super().clear_session(target)
        for trace in kept:
            await self._write_back(
                trace, rq.Scope(user_identifier=trace.user_identifier, tenant=target.tenant)
            )
        return cleared

    async def _session_of(self, target: rq.Target) -> str | None:
        if target.session_id is not None:
            return target.session_id
        try:
            found = await self.get_conversation(
                rq.GetConversation(target=target, limit=1, since=None)
            )
        except NotFoundError:
            return None
        return found.session_id

    async def _write_back(self, trace: ReasoningTrace, scope: rq.Scope) -> None:
        made = await self.start_trace(
            rq.StartTrace(
                session_id=trace.session_id,
                task=trace.task,
                metadata=trace.metadata,
                triggered_by_message_id=None,
                embedding=None,
                scope=scope,
            )
        )
        for step in trace.steps:
            again = await self.add_step(
                rq.AddStep(
                    trace_id=made.id,
                    thought=step.thought,
                    action=step.action,
                    observation=step.observation,
                    metadata=step.metadata,
                    embedding=None,
                    scope=scope,
                )
            )
            for call in step.tool_calls:
                await self.record_tool_call(
                    rq.RecordToolCall(
                        step_id=again.id,
                        tool_name=call.tool_name,
                        arguments=call.arguments,
                        result=call.result,
                        status=call.status.value,
                        duration_ms=call.duration_ms,
                        error=call.error,
                        scope=scope,
                    )
                )


@dataclass(frozen=True)
class Case:
    """A broken store, the scenarios that must fail on it, and how the suite runs on it.

    ``fails`` is one scenario id or several; none marks a store the suite must NOT fail (an
    honest difference), driven by the test ``tested_by`` names (``module::function`` in
    this package). The run is :func:`memory_core.conformance.runner.run` on :attr:`url`
    with ``throwaway`` and the ``-k`` filter :attr:`run_keyword`: ``keyword``, by default the
    methods of every scenario the case names; ``whole_suite`` runs every scenario. In that
    run each failure message holds every word of ``says``, the scenarios of ``passes`` pass,
    those of ``not_applicable`` are n/a, and at least ``min_passed`` scenarios pass (the
    defect breaks nothing unrelated).
    """

    backend: type[Store]
    fails: str | tuple[str, ...]
    promise: str
    keyword: str | None = None
    whole_suite: bool = False
    throwaway: bool = True
    says: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()
    not_applicable: tuple[str, ...] = ()
    min_passed: int = 0
    tested_by: str | None = None

    @property
    def failing(self) -> tuple[str, ...]:
        """The scenario ids that must fail, as a tuple."""
        return (self.fails,) if isinstance(self.fails, str) else self.fails

    @property
    def named(self) -> tuple[str, ...]:
        """Every scenario id the case names."""
        return (*self.failing, *self.passes, *self.not_applicable)

    @property
    def base(self) -> str:
        """The correct store the broken one derives from: ``"embedded"`` or ``"toy"``."""
        if issubclass(self.backend, ToyStore):
            return "toy"
        if issubclass(self.backend, EmbeddedStore):
            return "embedded"
        raise TypeError(f"{self.backend.__name__} derives from neither base store")

    @property
    def honest_url(self) -> str:
        """The URL of the correct base store, to run the same scenarios on."""
        return {"embedded": "memory://", "toy": "toy://"}[self.base]

    @property
    def scheme(self) -> str:
        return "cfbroken-" + re.sub(r"(?<!^)(?=[A-Z])", "-", self.backend.__name__).lower()

    @property
    def url(self) -> str:
        return f"{self.scheme}://"

    @property
    def run_keyword(self) -> str | None:
        """The ``-k`` filter of the run on this case (None: the whole suite)."""
        if self.whole_suite:
            return None
        return self.keyword or " or ".join(method_name_for(s) for s in self.named)


CATALOGUE: list[Case] = [
    Case(OrdersByTimestamp, "writes.caller_timestamps", "order is a sequence number"),
    Case(OrdersByTimestampThenId, "writes.caller_timestamps", "order is a sequence number"),
    Case(TimestampsInMilliseconds, "writes.caller_timestamps", "caller timestamps kept"),
    Case(ReadsNewestFirst, "reads.oldest_first", "oldest first"),
    Case(LimitKeepsOldest, "reads.limit_keeps_newest", "limit keeps the newest N"),
    Case(SilentReadCap, "limits.full_history", "full history"),
    Case(ListConversationsCap50, "limits.list_conversations_default", "list default 100"),
    Case(SearchLimitIgnored, "search.limit", "search limit"),
    Case(SearchLimitBeforeRanking, "search.limit_keeps_best", "search limit keeps the best"),
    Case(SinceInclusive, "since.strictly_after", "since is strict"),
    Case(SinceAfterLimit, "since.before_limit", "since before limit"),
    Case(SinceInMilliseconds, "since.microseconds", "since resolution"),
    Case(
        IgnoresSince,
        "since.server_side",
        "server_side_since filters",
        keyword="since_server_side",
        throwaway=False,
        says=("early", "late"),
    ),
    Case(SearchIgnoresSession, "search.session_scoping", "search honours session_id"),
    Case(SearchSessionByPrefix, "search.session_scoping", "search honours session_id"),
    Case(SearchIgnoresConversationId, "search.conversation_id_scoping", "conversation_id"),
    Case(RawRankScores, "search.scores", "scores in 0..1"),
    Case(HitsInStorageOrder, "search.scores", "hits best first"),
    Case(ScoresRelativeToBest, "search.score_scale", "one score scale"),
    Case(CoverageOnlyScores, "search.reference_scores", "scores on the shared scale"),
    Case(ThresholdExclusive, "search.threshold", "threshold is inclusive"),
    Case(ThresholdIgnored, "search.threshold", "threshold applies"),
    Case(
        IgnoresEmbedder,
        "search.vector",
        "vector search uses the embedding",
        keyword="search_vector",
        throwaway=False,
    ),
    Case(FilterPythonEquality, "search.metadata_filters", "True != 1"),
    Case(FilterJsonSubstring, "search.metadata_filters", "1 does not match 10"),
    Case(FilterAsStrings, "search.metadata_filters", "1 != '1'"),
    Case(FilterNullMatchesMissing, "search.metadata_filters", "None matches only null"),
    Case(FilterNumbersByType, "search.metadata_filters", "1 == 1.0"),
    Case(FilterAfterLimit, "search.filters_before_limit", "filters before limit"),
    Case(StripsContent, "fidelity.content_whitespace", "content exact"),
    Case(NormalizesContentNfc, "fidelity.content_unicode", "content exact"),
    Case(Truncates64K, "fidelity.content_huge", "content exact at size"),
    Case(NormalizesMetadataNfc, "fidelity.metadata_types", "metadata exact"),
    Case(DropsNullMetadata, "fidelity.metadata_types", "metadata exact"),
    Case(IntsBecomeFloats, "fidelity.metadata_types", "metadata types exact"),
    Case(IdempotencyKeysGlobal, "idempotency.scoped_to_conversation", "keys per conversation"),
    Case(IdempotencyCheckThenWrite, "idempotency.concurrent_replays", "replays race-free"),
    Case(IdempotencyReturnsNewContent, "idempotency.replay_keeps_original", "replay keeps"),
    Case(DeleteLeavesSearchIndex, "delete.search_forgets", "delete really deletes"),
    Case(DeleteAlwaysTrue, "delete.unknown_is_false", "unknown id is False"),
    Case(ClearAlwaysTrue, "clear.idempotent", "clear is idempotent"),
    Case(StaleSessionCounts, "sessions.count_after_delete", "counts after delete"),
    Case(PrefixAsLike, "sessions.prefix", "prefix is literal"),
    Case(PrefixAsGlob, "sessions.prefix", "prefix is literal"),
    Case(PrefixIgnoresCase, "sessions.prefix", "prefix is case-sensitive"),
    Case(SessionTiesDescending, "sessions.order_and_offset", "ties by session_id ascending"),
    Case(SessionIdsCaseFolded, "conversations.session_names_exact", "session names exact"),
    Case(SessionIdsStripped, "conversations.session_names_exact", "session names exact"),
    Case(SessionIdsNfc, "conversations.session_names_exact", "session names exact"),
    Case(RandomIdForMissingSession, "conversations.missing_session_stable_id", "stable id"),
    Case(CreateOverwrites, "conversations.create_is_idempotent", "create keeps"),
    Case(CreateNeverFills, "conversations.create_is_idempotent", "create fills"),
    Case(ListsByCreation, "conversations.list_newest_updated_first", "newest updated first"),
    Case(BulkDoesNotTouch, "conversations.list_newest_updated_first", "bulk touches"),
    Case(FindEntitiesAsciiCase, "entities.add_and_find", "any case, beyond ASCII"),
    Case(NameOnlyMentionCreates, "entities.mention_name_only", "name alone never creates"),
    Case(DeleteEntityKeepsMentions, "entities.delete", "mentions go with the entity"),
    Case(UnknownMentionIdSkipped, "entities.mention_unknown_id", "unknown id raises"),
    Case(
        KeepsEntities,
        (),
        "entity scenarios n/a (not failed) where entities cannot be deleted",
        keyword="entities or tenancy",
        throwaway=False,
        not_applicable=(*ENTITY_SCENARIOS, "entities.delete"),
        tested_by=(
            "test_suite_catches::test_entity_scenarios_are_na_where_entities_cannot_be_deleted"
        ),
    ),
    Case(TenantIgnored, "tenancy.reads_isolated", "reads scoped by user"),
    Case(TenantCaseFolded, "tenancy.user_keys_exact", "users exact"),
    Case(TenantConcatenatedWithSession, "tenancy.user_keys_exact", "no key collisions"),
    Case(ClearIgnoresTenant, "tenancy.deletes_isolated", "clear scoped by user"),
    Case(ClearByIdIgnoresTenant, "tenancy.lesser_paths_isolated", "clear by id scoped by user"),
    Case(ReturnsItsOwnClock, "writes.created_at_is_write_time", "returned as stored"),
    Case(DeleteForgetsSequence, "delete.sequence_order_kept", "order stays the sequence"),
    Case(NonAtomicGetOrCreate, "writes.concurrent_writers", "one conversation per session"),
    Case(UnknownConversationIdIsNoOp, "aliasing.unknown_conversation_id", "unknown id raises"),
    Case(ContextSearchUnscoped, "context.scoped_to_session", "context scoped"),
    Case(ContextIgnoresMaxMessages, "context.max_messages", "max_messages"),
    Case(ContextIgnoresPerSession, "context.per_session", "best hit alone"),
    Case(ContextIgnoresNeighbours, "context.neighbours", "one each side"),
    Case(ContextIgnoresRecency, "search.recency", "context not weighed"),
    Case(NeighboursBeforeOnly, "context.neighbours", "one each side"),
    Case(SqliteOnLoop, "runtime.responsive", "no blocking I/O on the loop"),
    Case(SleepingRateLimiter, "runtime.responsive", "no blocking I/O on the loop"),
    Case(
        IgnoresLimit,
        "portability.scripted_app",
        "limit honoured, or the difference announced",
        keyword="portability",
        throwaway=False,
        says=("read newest 3",),
        passes=("portability.readme_snippet",),
    ),
    Case(
        LosesMetadata,
        "portability.scripted_app",
        "metadata kept, or the difference announced",
        keyword="portability",
        throwaway=False,
        says=("metadata and idempotency",),
    ),
    Case(
        NoMetadataDeclared,
        (),
        "a declared and announced difference passes",
        keyword="portability",
        throwaway=False,
        tested_by="test_portability_catches::test_declared_and_announced_differences_pass",
    ),
    Case(UpdateClearsUnset, "entity_updates.partial", "only what is given changes"),
    Case(ByNameIgnoresAliases, "entity_updates.by_name", "aliases find the entity"),
    Case(MergeMakesSelfLoops, "entity_updates.merge_between", "no self-loop after a merge"),
    Case(MergeLeavesFacts, "entity_updates.merge_moves_once", "facts follow the merge"),
    # the example backend's broken variants run the whole suite: the defect stays local
    Case(
        ToyIgnoresSessionInSearch,
        "search.session_scoping",
        "search honours session_id",
        whole_suite=True,
        throwaway=False,
        min_passed=81,
    ),
    Case(
        ToyDeleteRaises,
        "delete.first_middle_last",
        "claimed deletes work",
        whole_suite=True,
        throwaway=False,
        min_passed=81,
    ),
    Case(
        ToyKeepsOldest,
        "reads.limit_keeps_newest",
        "limit keeps the newest N",
        whole_suite=True,
        throwaway=False,
        min_passed=81,
    ),
    Case(
        ToyDropsMetadata,
        "fidelity.metadata_types",
        "metadata kept",
        whole_suite=True,
        throwaway=False,
        min_passed=81,
    ),
    Case(SupersededStillListed, "preferences.supersede", "superseded leave lists"),
    Case(PreferencesOfEveryUser, "preferences.user_scoped", "preferences per user"),
    Case(ValidUntilInclusive, "facts.validity", "valid_until excluded"),
    Case(FactsAboutCaseSensitive, "facts.round_trip", "subject ignoring case"),
    Case(TraversalOneStepTooFar, "relationships.traversal", "depth as asked"),
    Case(RelationshipsEitherDirection, "relationships.add_and_list", "direction honoured"),
    Case(StepNumbersByCount, "traces.step_numbers", "step numbers atomic"),
    Case(CompleteOverwrites, "traces.complete_once", "completion once"),
    Case(StatsTimeoutAsSuccess, "tool_stats.exact", "a timeout is a failure"),
    Case(TracesOldestFirst, "traces.list", "traces newest first"),
    Case(SimilarTracesOfAnyOutcome, "similar_traces.ranking", "successful only by default"),
    Case(
        TracesOfEveryUser,
        ("traces.user_scoped", "traces.multi_tenant"),
        "traces per user",
    ),
    Case(
        ClearKeepsTraces,
        ("traces.clear_session", "traces.clear_session_by_id"),
        "clear_session deletes the session's traces",
    ),
]


def case_for(backend: type[Store]) -> Case:
    """The case of one broken store."""
    return next(c for c in CATALOGUE if c.backend is backend)


def register() -> None:
    """Register ``toy://`` and every case's scheme (again: harmless)."""
    register_backend("toy", f"{ToyStore.__module__}:{ToyStore.__qualname__}")
    for case in CATALOGUE:
        register_backend(case.scheme, f"{case.backend.__module__}:{case.backend.__qualname__}")
