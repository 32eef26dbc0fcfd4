"""Small in-process backends for unit tests of the turn protocol's edge cases.

``FullFake`` claims what embedded/Bolt claim for turns (metadata, mentions, idempotency
keys, caller-named sessions, entities); ``NamsLikeFake`` claims what NAMS claims (entities
only, server-issued conversation ids, at most 200 messages per read). Both keep a list of
hook calls so tests can assert what was (not) written.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import NAMESPACE_URL, uuid4, uuid5

from memory_core import (
    Capabilities,
    Conversation,
    ConversationPage,
    Entity,
    Message,
    NotFoundError,
)
from memory_core import requests as rq
from memory_core.interface import Store
from tests.fakes import public


class FullFakeStore(Store):
    """Messages and entities in dicts; every write is recorded in ``writes``."""

    name = "fullfake"
    capabilities = Capabilities(
        message_metadata=True,
        explicit_mentions=True,
        idempotency_keys=True,
        client_chosen_ids=True,
        auto_create_conversation=True,
        full_history=True,
        entities=True,
    )

    def __init__(self, url: str = "fake://", **options: Any) -> None:
        super().__init__(**options)
        self.sessions: dict[str, list[Message]] = {}
        self.entities: list[Entity] = []
        self.writes: list[Message] = []
        self.lookups: list[str] = []
        self._clock = datetime(2026, 1, 1, tzinfo=UTC)

    def _tick(self) -> datetime:
        self._clock += timedelta(seconds=1)
        return self._clock

    def _messages(self, target: rq.Target) -> list[Message]:
        return self.sessions.setdefault(target.handle, [])

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def add_message(self, req: rq.AddMessage) -> Message:
        messages = self._messages(req.target)
        if req.idempotency_key is not None:
            for stored in messages:
                if stored.idempotency_key == req.idempotency_key:
                    return stored
        message = Message(
            role=req.role,
            content=req.content,
            metadata=dict(req.metadata),
            idempotency_key=req.idempotency_key,
            mentions=list(req.mentions),
            session_id=req.target.handle,
            created_at=self._tick(),
        )
        messages.append(message)
        self.writes.append(message)
        return message

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        raise NotImplementedError

    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        self._messages(req.target)
        handle = req.target.handle
        return Conversation(id=uuid5(NAMESPACE_URL, handle), session_id=handle)

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        messages = self.sessions.get(req.target.handle, [])
        return Conversation(
            id=uuid5(NAMESPACE_URL, req.target.handle),
            session_id=req.target.handle,
            messages=list(messages[-req.limit :]),
        )

    async def list_conversations(self, req: rq.ListConversations) -> ConversationPage:
        return ConversationPage()

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        return []

    async def clear_session(self, target: rq.Target) -> bool:
        return self.sessions.pop(target.handle, None) is not None

    async def add_entity(self, req: rq.AddEntity) -> Entity:
        for entity in self.entities:
            if entity.name == req.name and entity.type == req.type:
                return entity
        entity = Entity(id=str(uuid4()), name=req.name, type=req.type)
        self.entities.append(entity)
        return entity

    async def find_entities(self, req: rq.FindEntities) -> list[Entity]:
        self.lookups.append(req.identifier)
        key = req.identifier.casefold()
        hits = [e for e in self.entities if e.id == req.identifier or e.name.casefold() == key]
        return hits[: req.limit]


class NamsLikeFakeStore(FullFakeStore):
    """NAMS-shaped capabilities: no metadata, mentions or keys; ids issued by the store."""

    name = "namslike"
    capabilities = Capabilities(
        entities=True,
        max_messages_per_read=200,
        default_messages_per_read=200,
    )

    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        issued = uuid4()
        self.sessions[str(issued)] = []
        return Conversation(id=issued, session_id=str(issued))

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        if req.target.handle not in self.sessions:
            raise NotFoundError("conversation not found")
        return await super().get_conversation(req)

    async def add_message(self, req: rq.AddMessage) -> Message:
        if req.target.handle not in self.sessions:
            raise NotFoundError("conversation not found")
        return await super().add_message(req)


FullFake = public(FullFakeStore)
NamsLikeFake = public(NamsLikeFakeStore)
