"""A small, correct, pure-Python in-memory backend: the example of a new backend that
passes the conformance suite.

A backend is one :class:`~memory_core.interface.Store` subclass: ``name``,
``capabilities`` and the hooks, storage logic only. :class:`~memory_core.MemoryBackend`
does the argument checks, aliases, defaults and capability rules before a hook runs.
This store claims fewer capabilities than the real backends (no list_sessions, no
entities, no metadata filters), so the suite verifies those refusals and reports the
scenarios as not applicable. Register and run it::

    from memory_core import register_backend
    register_backend("toy", "memory_core.conformance.example_backend:ToyStore")
    # memory-core conformance toy://
    # pytest -p memory_core.conformance.plugin --pyargs memory_core.conformance --backend-url toy://
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar
from uuid import NAMESPACE_URL, UUID, uuid5

import anyio.lowlevel

from memory_core.store import (
    Capabilities,
    Conversation,
    ConversationPage,
    Message,
    NotFoundError,
    Store,
    cursor_error,
    decode_cursor,
    encode_cursor,
    query_terms,
    text_score,
)
from memory_core.store import requests as rq

T = TypeVar("T")


async def _cooperatively(items: Iterable[T]) -> AsyncIterator[T]:
    """Iterate, letting other tasks run every 20 items: the work is plain CPU on the
    event loop, so a long loop must not hold it (scenario runtime.responsive)."""
    for n, item in enumerate(items):
        if n % 20 == 0:
            await anyio.lowlevel.checkpoint()
        yield item


@dataclass
class _Conversation:
    id: UUID
    session_id: str
    tenant: str | None
    user: str | None = None  # the first user_identifier a call gave (listings filter on it)
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    updated_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    messages: list[Message] = field(default_factory=list)

    def header(self, messages: Iterable[Message] = ()) -> Conversation:
        return Conversation(
            id=self.id,
            session_id=self.session_id,
            title=self.title,
            metadata=dict(self.metadata),
            created_at=self.created_at,
            updated_at=self.updated_at,
            messages=[m.model_copy(deep=True) for m in messages],
            user_identifier=self.user,
        )

    def key(self) -> tuple[datetime, str]:
        """Where the conversation sorts in a listing (newest first: the largest key)."""
        return (self.updated_at, str(self.id))


CURSOR_KIND = "toy"


def _after(cursor: str) -> tuple[datetime, str]:
    """The key a cursor of this store holds (``cursor_error`` for anything else)."""
    value = decode_cursor(CURSOR_KIND, cursor)
    try:
        when, conversation_id = value
        moment = datetime.fromisoformat(when)
        if moment.tzinfo is None:
            raise ValueError("naive")
        return moment, str(UUID(conversation_id))
    except (TypeError, ValueError):
        raise cursor_error() from None


def _stable_id(target: rq.Target) -> UUID:
    """A missing session reads as an empty conversation whose id never changes."""
    return uuid5(NAMESPACE_URL, f"toy:{target.tenant or ''}:{target.session_id}")


class ToyStore(Store):
    """Conversations in a dict, one per (tenant, session); ``toy://`` URLs."""

    name = "toy"
    capabilities = Capabilities(
        delete_message=True,
        conversation_summary=True,
        conversation_titles=True,
        message_metadata=True,
        idempotency_keys=True,
        client_chosen_ids=True,
        auto_create_conversation=True,
        full_history=True,
        server_side_since=True,
        search_global=True,
        search_threshold=True,
        multi_tenant=True,
        trio=True,
        max_bulk_messages=50,
    )

    def __init__(self, url: str = "toy://", **shared: Any) -> None:
        super().__init__(**shared)
        self._data: dict[tuple[str | None, str], _Conversation] = {}

    async def connect(self) -> None:
        pass

    async def close(self) -> None:
        self._data.clear()

    def _find(self, target: rq.Target) -> _Conversation | None:
        # A session name that is the canonical string of a conversation id of the tenant
        # names that conversation (Target.id_alias); any other is a name.
        wanted = target.id_alias if target.session_id is not None else target.conversation_id
        for c in self._data.values() if wanted is not None else ():
            if c.id == wanted and c.tenant == target.tenant:
                return c
        if target.session_id is not None:
            return self._data.get((target.tenant, target.session_id))
        return None

    def _unknown(self, target: rq.Target) -> NotFoundError:
        # One wording on every store, with the details as fields (err.backend, err.kind …)
        return NotFoundError.missing(
            self.name, "conversation", target.conversation_id, argument="conversation_id"
        )

    def _get_or_create(self, target: rq.Target) -> _Conversation:
        found = self._find(target)
        if found is not None:
            found.user = found.user or target.user_identifier
            return found
        if target.session_id is None:
            raise self._unknown(target)
        new = _Conversation(
            _stable_id(target), target.session_id, target.tenant, user=target.user_identifier
        )
        return self._data.setdefault((target.tenant, target.session_id), new)

    @staticmethod
    def _append(c: _Conversation, new: rq.NewMessage | rq.AddMessage, key: str | None) -> Message:
        now = datetime.now(UTC)
        if c.messages:  # timestamps never decrease
            now = max(now, c.messages[-1].created_at)
        message = Message(
            role=new.role,
            content=new.content,
            metadata=dict(new.metadata),
            created_at=now,
            conversation_id=c.id,
            session_id=c.session_id,
            idempotency_key=key,
        )
        c.messages.append(message)
        c.updated_at = now
        return message.model_copy(deep=True)

    async def add_message(self, req: rq.AddMessage) -> Message:
        c = self._get_or_create(req.target)
        for message in c.messages if req.idempotency_key is not None else ():
            if message.idempotency_key == req.idempotency_key:
                return message.model_copy(deep=True)
        return self._append(c, req, req.idempotency_key)

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        c = self._get_or_create(req.target)
        return [self._append(c, m, None) async for m in _cooperatively(req.messages)]

    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        c = self._get_or_create(req.target)
        # idempotent: a second call keeps the stored title and metadata, fills missing ones
        c.title = c.title if c.title is not None else req.title
        c.metadata = c.metadata or dict(req.metadata)
        return c.header()

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        c, session = self._find(req.target), req.target.session_id
        if c is None and session is None:
            raise self._unknown(req.target)
        if c is None:
            return Conversation(id=_stable_id(req.target), session_id=str(session))
        kept = [m for m in c.messages if req.since is None or m.created_at > req.since]
        copies = [m.model_copy(deep=True) async for m in _cooperatively(kept[-req.limit :])]
        return c.header().model_copy(update={"messages": copies})

    async def list_conversations(self, req: rq.ListConversations) -> ConversationPage:
        # Keyset paging over (updated_at, id), newest first: the cursor is the last listed
        # key, and the page is the largest keys below it. (A real store seeks on an index
        # of that order; this one sorts its dict, which a toy can afford.)
        after = None if req.cursor is None else _after(req.cursor)
        mine = [
            c
            for c in self._data.values()
            if c.tenant == req.tenant
            and (req.user_identifier is None or c.user == req.user_identifier)
            and (after is None or c.key() < after)
        ]
        mine.sort(key=_Conversation.key, reverse=True)
        page = mine[: req.limit]
        more = len(mine) > req.limit
        cursor = None
        if more:
            when, conversation_id = page[-1].key()
            cursor = encode_cursor(CURSOR_KIND, [when.isoformat(), conversation_id])
        return ConversationPage(conversations=[c.header() for c in page], next_cursor=cursor)

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        if req.target is not None:
            found = self._find(req.target)
            if found is None and req.target.session_id is None:
                raise self._unknown(req.target)
            pool = [] if found is None else [found]
        else:
            pool = [c for c in self._data.values() if c.tenant == req.tenant]
        terms = query_terms(req.query)
        hits: list[tuple[float, datetime, int, Message]] = []
        for c in pool:
            async for place, message in _cooperatively(list(enumerate(c.messages))):
                score = text_score(terms, message.content)  # the shared scale
                if score > 0 and (req.threshold is None or score >= req.threshold):
                    hit = message.model_copy(update={"score": score}, deep=True)
                    hits.append((score, hit.created_at, place, hit))
        # best first; equal scores: the message written last first, as every backend does
        hits.sort(key=lambda hit: hit[:3], reverse=True)
        return [hit[3] for hit in hits[: req.limit]]

    async def delete_message(self, req: rq.DeleteMessage) -> bool:
        for c in self._data.values():
            if req.tenant is None or c.tenant == req.tenant:
                for index, message in enumerate(c.messages):
                    if message.id == req.message_id:
                        del c.messages[index]
                        return True
        return False

    async def clear_session(self, target: rq.Target) -> bool:
        c = self._find(target)
        return c is not None and self._data.pop((c.tenant, c.session_id)) is not None
