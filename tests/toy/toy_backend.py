"""A small, correct, pure-Python in-memory backend: the README's example of running the
conformance suite against a new backend.

It implements only the hooks of :class:`memory_core.MemoryBackend`; the contract does the
argument checks, aliases, defaults and capability rules. It claims fewer capabilities
than the real backends (no list_sessions, no entities, no metadata filters) so the suite
reports those scenarios as not applicable. Register and run it::

    from memory_core import register_backend
    register_backend("toy", "tests.toy.toy_backend:ToyBackend")
    # memory-core conformance toy://   or   pytest --pyargs conformance --backend-url toy://
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar
from uuid import NAMESPACE_URL, UUID, uuid5

import anyio.lowlevel

from memory_core import Capabilities, Conversation, MemoryBackend, Message, NotFoundError
from memory_core import requests as rq
from memory_core.scoring import coverage, query_terms

_YIELD_EVERY = 20  # messages handled between two yields to the event loop


async def _cooperatively(items: Iterable[Any]) -> Any:
    """Iterate, letting other tasks run every _YIELD_EVERY items: the work is plain CPU
    on the event loop, so a long loop must not hold it (runtime.responsive)."""
    for n, item in enumerate(items):
        if n % _YIELD_EVERY == 0:
            await anyio.lowlevel.checkpoint()
        yield item


@dataclass
class _Conversation:
    id: UUID
    session_id: str
    tenant: str | None
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    updated_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    messages: list[Message] = field(default_factory=list)


class ToyBackend(MemoryBackend):
    """Conversations in a dict, one per (tenant, session); ``toy://`` URLs."""

    name: ClassVar[str] = "toy"
    capabilities: ClassVar[Capabilities] = Capabilities(
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

    def __init__(self, url: str = "toy://", **options: Any) -> None:
        super().__init__(**options)
        self._store: dict[tuple[str | None, str], _Conversation] = {}

    async def _connect(self) -> None:
        pass

    async def _close(self) -> None:
        self._store.clear()

    # -- helpers ---------------------------------------------------------------

    def _find(self, target: rq.Target) -> _Conversation | None:
        if target.session_id is not None:
            return self._store.get((target.tenant, target.session_id))
        for conversation in self._store.values():
            if conversation.id == target.conversation_id and conversation.tenant == target.tenant:
                return conversation
        return None

    def _get_or_create(self, target: rq.Target) -> _Conversation:
        found = self._find(target)
        if found is not None:
            return found
        if target.session_id is None:
            raise NotFoundError(f"no conversation {target.conversation_id}")
        return self._store.setdefault(
            (target.tenant, target.session_id),
            _Conversation(self._stable_id(target), target.session_id, target.tenant),
        )

    @staticmethod
    def _stable_id(target: rq.Target) -> UUID:
        return uuid5(NAMESPACE_URL, f"toy:{target.tenant or ''}:{target.session_id}")

    @staticmethod
    def _append(
        conversation: _Conversation, new: rq.NewMessage | rq.AddMessage, key: str | None
    ) -> Message:
        now = datetime.now(UTC)
        if conversation.messages:  # timestamps never decrease
            now = max(now, conversation.messages[-1].created_at)
        message = Message(
            role=new.role,
            content=new.content,
            metadata=dict(new.metadata),
            created_at=now,
            conversation_id=conversation.id,
            session_id=conversation.session_id,
            idempotency_key=key,
        )
        conversation.messages.append(message)
        conversation.updated_at = now
        return message

    async def _with_copies(
        self, conversation: _Conversation, messages: list[Message]
    ) -> Conversation:
        copies = [m.model_copy(deep=True) async for m in _cooperatively(messages)]
        return self._header(conversation, []).model_copy(update={"messages": copies})

    def _header(self, conversation: _Conversation, messages: list[Message]) -> Conversation:
        return Conversation(
            id=conversation.id,
            session_id=conversation.session_id,
            title=conversation.title,
            metadata=dict(conversation.metadata),
            created_at=conversation.created_at,
            updated_at=conversation.updated_at,
            messages=[m.model_copy(deep=True) for m in messages],
            user_identifier=conversation.tenant,
        )

    # -- hooks -----------------------------------------------------------------

    async def _add_message(self, req: rq.AddMessage) -> Message:
        conversation = self._get_or_create(req.target)
        if req.idempotency_key is not None:
            for message in conversation.messages:
                if message.idempotency_key == req.idempotency_key:
                    return message.model_copy(deep=True)
        return self._append(conversation, req, req.idempotency_key).model_copy(deep=True)

    async def _add_messages(self, req: rq.AddMessages) -> list[Message]:
        conversation = self._get_or_create(req.target)
        return [
            self._append(conversation, m, None).model_copy(deep=True)
            async for m in _cooperatively(req.messages)
        ]

    async def _create_conversation(self, req: rq.CreateConversation) -> Conversation:
        conversation = self._get_or_create(req.target)
        # idempotent: a second call keeps the stored title and metadata, fills missing ones
        if conversation.title is None:
            conversation.title = req.title
        if not conversation.metadata:
            conversation.metadata = dict(req.metadata)
        return self._header(conversation, [])

    async def _get_conversation(self, req: rq.GetConversation) -> Conversation:
        conversation = self._find(req.target)
        if conversation is None:
            if req.target.session_id is None:
                raise NotFoundError(f"no conversation {req.target.conversation_id}")
            return Conversation(
                id=self._stable_id(req.target), session_id=req.target.session_id, messages=[]
            )
        messages = conversation.messages
        if req.since is not None:
            messages = [m for m in messages if m.created_at > req.since]
        return await self._with_copies(conversation, messages[-req.limit :])

    async def _list_conversations(self, req: rq.ListConversations) -> list[Conversation]:
        mine = [c for c in self._store.values() if req.tenant is None or c.tenant == req.tenant]
        mine.sort(key=lambda c: c.updated_at, reverse=True)
        return [self._header(c, []) for c in mine[: req.limit]]

    async def _search_messages(self, req: rq.SearchMessages) -> list[Message]:
        if req.target is not None:
            found = self._find(req.target)
            pool = [] if found is None else [found]
        else:
            pool = [c for c in self._store.values() if c.tenant == req.tenant]
        terms = query_terms(req.query)
        hits = []
        for conversation in pool:
            async for message in _cooperatively(conversation.messages):
                score = coverage(terms, message.content)
                if score > 0 and (req.threshold is None or score >= req.threshold):
                    hits.append(message.model_copy(update={"score": score}, deep=True))
        hits.sort(key=lambda m: m.score or 0.0, reverse=True)
        return hits[: req.limit]

    async def _delete_message(self, req: rq.DeleteMessage) -> bool:
        for conversation in self._store.values():
            if req.tenant is not None and conversation.tenant != req.tenant:
                continue
            for index, message in enumerate(conversation.messages):
                if message.id == req.message_id:
                    del conversation.messages[index]
                    return True
        return False

    async def _clear_session(self, target: rq.Target) -> bool:
        conversation = self._find(target)
        if conversation is None:
            return False
        del self._store[(conversation.tenant, conversation.session_id)]
        return True
