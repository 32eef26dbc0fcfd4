"""A tiny recording backend for unit tests of the contract's generic behaviour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from memory_core import Capabilities, Conversation, ConversationPage, MemoryBackend, Message
from memory_core import requests as rq
from memory_core.interface import Store


class _Forwarding(MemoryBackend):
    """The public API over a fake store; attributes it lacks are the store's (tests read
    what a fake recorded through the backend object)."""

    def __getattr__(self, name: str) -> Any:
        if name == "store":  # not set yet: __init__ failed before it
            raise AttributeError(name)
        return getattr(self.store, name)


def public(store_class: type[Store]) -> type[MemoryBackend]:
    """A :class:`MemoryBackend` class that builds ``store_class`` from its arguments."""
    name = store_class.__name__.removesuffix("Store")
    return type(name, (_Forwarding,), {"store_class": store_class})


class RecordingStore(Store):
    """Stores nothing durable; records every hook call. Capabilities are NAMS-like."""

    name = "recording"
    capabilities = Capabilities(
        observations=True,
        extraction_status=False,
        max_messages_per_read=200,
        default_messages_per_read=200,
        max_bulk_messages=100,
    )

    def __init__(self, url: str = "recording://", **options: Any) -> None:
        super().__init__(**options)
        self.calls: list[tuple[str, Any]] = []
        self.connects = 0
        self.messages: list[Message] = []

    async def connect(self) -> None:
        self.connects += 1

    async def close(self) -> None:
        self.calls.append(("close", None))

    async def add_message(self, req: rq.AddMessage) -> Message:
        self.calls.append(("add_message", req))
        base = datetime(2026, 1, 1, tzinfo=UTC)
        message = Message(
            role=req.role,
            content=req.content,
            metadata=req.metadata,
            created_at=base + timedelta(minutes=len(self.messages)),
        )
        self.messages.append(message)
        return message

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        self.calls.append(("add_messages", req))
        return [Message(role=m.role, content=m.content) for m in req.messages]

    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        self.calls.append(("create_conversation", req))
        return Conversation(session_id=req.target.handle)

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        self.calls.append(("get_conversation", req))
        return Conversation(
            id=uuid5(NAMESPACE_URL, req.target.handle),
            session_id=req.target.handle,
            messages=list(self.messages),
        )

    async def list_conversations(self, req: rq.ListConversations) -> ConversationPage:
        self.calls.append(("list_conversations", req))
        return ConversationPage()

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        self.calls.append(("search_messages", req))
        return []

    async def clear_session(self, target: rq.Target) -> bool:
        self.calls.append(("clear_session", target))
        return False

    async def get_observations(self, target: rq.Target) -> list[dict[str, Any]]:
        return [{"content": "seen"}]


RecordingBackend = public(RecordingStore)
