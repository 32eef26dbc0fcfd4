"""A tiny recording backend for unit tests of the contract's generic behaviour."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from memory_core import Capabilities, Conversation, MemoryBackend, Message
from memory_core import requests as rq


class RecordingBackend(MemoryBackend):
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

    async def _connect(self) -> None:
        self.connects += 1

    async def _close(self) -> None:
        self.calls.append(("close", None))

    async def _add_message(self, req: rq.AddMessage) -> Message:
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

    async def _add_messages(self, req: rq.AddMessages) -> list[Message]:
        self.calls.append(("add_messages", req))
        return [Message(role=m.role, content=m.content) for m in req.messages]

    async def _create_conversation(self, req: rq.CreateConversation) -> Conversation:
        self.calls.append(("create_conversation", req))
        return Conversation(session_id=req.target.handle)

    async def _get_conversation(self, req: rq.GetConversation) -> Conversation:
        self.calls.append(("get_conversation", req))
        return Conversation(
            id=uuid5(NAMESPACE_URL, req.target.handle),
            session_id=req.target.handle,
            messages=list(self.messages),
        )

    async def _list_conversations(self, req: rq.ListConversations) -> list[Conversation]:
        self.calls.append(("list_conversations", req))
        return []

    async def _search_messages(self, req: rq.SearchMessages) -> list[Message]:
        self.calls.append(("search_messages", req))
        return []

    async def _clear_session(self, target: rq.Target) -> bool:
        self.calls.append(("clear_session", target))
        return False

    async def _get_observations(self, target: rq.Target) -> list[dict[str, Any]]:
        return [{"content": "seen"}]
