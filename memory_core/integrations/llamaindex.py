"""LlamaIndex: a ``BaseChatStore`` over any backend, keyed by session.

``pip install "memory-core[llamaindex]"``::

    from llama_index.core.memory import ChatMemoryBuffer
    from memory_core.integrations.llamaindex import MemoryChatStore

    store = MemoryChatStore(memory=memory)
    buffer = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="chat-1")

A key is a session id (on NAMS in its reference mode: the id from
:func:`~memory_core.integrations.start_session`). Where the backend has
``message_metadata`` each ``ChatMessage`` round-trips exactly (its ``model_dump`` JSON under
:data:`METADATA_KEY`); elsewhere role and text only, with one
:class:`~memory_core.CapabilityWarning` (strict: raises). ``delete_message`` and
``delete_last_message`` need ``delete_message``; ``get_keys`` needs ``list_sessions``.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.storage.chat_store.base import BaseChatStore
from pydantic import ConfigDict, PrivateAttr

from ..errors import InvalidRequestError
from ..models import Message
from ..warning_channel import add_framework
from ._bridge import MemoryBridge, read_all_limit, warn_if_truncated

# The framework's frames call this module: capability warnings point past them.
add_framework("llama_index")

__all__ = ["METADATA_KEY", "MemoryChatStore"]

METADATA_KEY = "llamaindex_message"
"""Metadata key holding ``ChatMessage.model_dump(mode="json")``."""

_LOSSLESS = "keep messages elsewhere, or use a backend with message_metadata"
_ROLES = {
    MessageRole.USER: "user",
    MessageRole.ASSISTANT: "assistant",
    MessageRole.SYSTEM: "system",
    MessageRole.DEVELOPER: "system",
    MessageRole.TOOL: "tool",
    MessageRole.FUNCTION: "tool",
}
_BACK = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT}
_BACK |= {"system": MessageRole.SYSTEM, "tool": MessageRole.TOOL}
_SESSIONS_PAGE = 100


def _from_stored(stored: Message) -> ChatMessage:
    exact = stored.metadata.get(METADATA_KEY)
    if isinstance(exact, dict):
        return ChatMessage.model_validate(exact)
    return ChatMessage(role=_BACK[stored.role.value], content=stored.content)


class MemoryChatStore(BaseChatStore):
    """A LlamaIndex chat store whose keys are sessions of a memory-core backend.

    ``memory``: a :class:`~memory_core.sync.SyncMemoryBackend` (sync and async methods) or
    an async :class:`~memory_core.MemoryBackend` (async methods).

    The delete methods return what LlamaIndex's in-memory ``SimpleChatStore`` returns:
    ``delete_message(key, -1)`` deletes the newest message; a key without messages gives
    ``None`` from ``delete_messages``, ``delete_message`` and ``delete_last_message``. Two
    cases differ, deliberately: an index out of range below ``-len`` gives ``None`` (there
    ``IndexError``, while one out of range above already gives ``None``), and a key set to
    an empty list gives ``None`` (there ``[]``: a session never written and one with no
    messages cannot be told apart).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    user_identifier: str | None = None
    _bridge: MemoryBridge = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._bridge = MemoryBridge(self.memory)

    @classmethod
    def class_name(cls) -> str:
        return "MemoryCoreChatStore"

    # ------------------------------------------------------------ helpers

    def _items(self, messages: list[ChatMessage]) -> list[dict[str, Any]]:
        keep = self._bridge.capabilities.message_metadata
        items: list[dict[str, Any]] = []
        for index, message in enumerate(messages):
            if not isinstance(message, ChatMessage):
                raise InvalidRequestError(
                    f"must be a ChatMessage, got {type(message).__name__}",
                    argument=f"messages[{index}]",
                )
            role = _ROLES.get(message.role, "assistant")
            text = message.content or ""
            item: dict[str, Any] = {"role": role, "content": text}
            exact = message.model_dump(mode="json")
            if keep:
                item["metadata"] = {METADATA_KEY: exact}
            elif ChatMessage(role=_BACK[role], content=text).model_dump(mode="json") != exact:
                self._bridge.degrade(
                    "add_message", "ChatMessage fields beyond role and text", _LOSSLESS
                )
            items.append(item)
        return items

    def _read(self, key: str, limit: int | None = None) -> dict[str, Any]:
        return {
            "session_id": key,
            "limit": read_all_limit(self._bridge) if limit is None else limit,
            "user_identifier": self.user_identifier,
        }

    def _write(self, key: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        return {"session_id": key, "messages": items, "user_identifier": self.user_identifier}

    def _clear(self, key: str) -> dict[str, Any]:
        return {"session_id": key, "user_identifier": self.user_identifier}

    def _messages(self, stored: list[Message]) -> list[ChatMessage]:
        warn_if_truncated(self._bridge, "get_messages", len(stored))
        return [_from_stored(m) for m in stored]

    def _may_replace(self, held: list[Message]) -> bool:
        """Whether ``set_messages`` must clear first; raises where it cannot."""
        if not held:
            return False
        if not self._bridge.capabilities.auto_create_conversation:
            # clear_session removes the conversation itself and it is not re-created
            self._bridge.require(
                "auto_create_conversation",
                "set_messages",
                "write the new messages to a new session (start_session), or use a backend "
                "that creates sessions on first write",
            )
        return True

    def _need_delete(self, method: str) -> None:
        self._bridge.require(
            "delete_message",
            method,
            "read get_messages(key), then set_messages(key, the messages you keep)",
        )

    # ------------------------------------------------------------ sync

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace the session's messages."""
        items = self._items(messages)
        if self._may_replace(self._bridge.messages(**self._read(key, 1))):
            self._bridge.call("clear_session", **self._clear(key))
        if items:
            self._bridge.call("add_messages_batch", **self._write(key, items))

    def get_messages(self, key: str) -> list[ChatMessage]:
        """The session's messages, oldest first."""
        return self._messages(self._bridge.messages(**self._read(key)))

    def add_message(self, key: str, message: ChatMessage) -> None:
        """Append one message."""
        items = self._items([message])
        self._bridge.call("add_messages_batch", **self._write(key, items))

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete the session; returns what it held (``None`` when it was empty)."""
        held = self.get_messages(key)
        self._bridge.call("clear_session", **self._clear(key))
        return held or None

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete and return the message at position ``idx`` (negative: from the end, as
        in a list); ``None``, and nothing deleted, when there is none."""
        self._need_delete("delete_message")
        stored = self._bridge.messages(**self._read(key))
        if not -len(stored) <= idx < len(stored):
            return None
        self._bridge.call("delete_message", stored[idx].id, user_identifier=self.user_identifier)
        return _from_stored(stored[idx])

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Delete the newest message; ``None`` when the session is empty."""
        self._need_delete("delete_last_message")
        stored = self._bridge.messages(**self._read(key, 1))
        if not stored:
            return None
        self._bridge.call("delete_message", stored[-1].id, user_identifier=self.user_identifier)
        return _from_stored(stored[-1])

    def get_keys(self) -> list[str]:
        """Every session id (needs ``list_sessions``)."""
        self._bridge.require("list_sessions", "get_keys", "keep the keys you use yourself")
        keys: list[str] = []
        while True:
            page = self._bridge.call(
                "list_sessions",
                limit=_SESSIONS_PAGE,
                offset=len(keys),
                order_by="session_id",
                order_dir="asc",
                user_identifier=self.user_identifier,
            )
            keys.extend(s.session_id for s in page)
            if len(page) < _SESSIONS_PAGE:
                return keys

    # ------------------------------------------------------------ async

    async def aset_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace the session's messages."""
        items = self._items(messages)
        if self._may_replace(await self._bridge.amessages(**self._read(key, 1))):
            await self._bridge.acall("clear_session", **self._clear(key))
        if items:
            await self._bridge.acall("add_messages_batch", **self._write(key, items))

    async def aget_messages(self, key: str) -> list[ChatMessage]:
        """The session's messages, oldest first."""
        return self._messages(await self._bridge.amessages(**self._read(key)))

    async def async_add_message(self, key: str, message: ChatMessage) -> None:
        """Append one message."""
        items = self._items([message])
        await self._bridge.acall("add_messages_batch", **self._write(key, items))

    async def adelete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete the session; returns what it held (``None`` when it was empty)."""
        held = await self.aget_messages(key)
        await self._bridge.acall("clear_session", **self._clear(key))
        return held or None

    async def adelete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete and return the message at position ``idx`` (negative: from the end, as
        in a list); ``None``, and nothing deleted, when there is none."""
        self._need_delete("delete_message")
        stored = await self._bridge.amessages(**self._read(key))
        if not -len(stored) <= idx < len(stored):
            return None
        await self._bridge.acall(
            "delete_message", stored[idx].id, user_identifier=self.user_identifier
        )
        return _from_stored(stored[idx])

    async def adelete_last_message(self, key: str) -> ChatMessage | None:
        """Delete the newest message; ``None`` when the session is empty."""
        self._need_delete("delete_last_message")
        stored = await self._bridge.amessages(**self._read(key, 1))
        if not stored:
            return None
        newest = stored[-1]
        await self._bridge.acall("delete_message", newest.id, user_identifier=self.user_identifier)
        return _from_stored(newest)

    async def aget_keys(self) -> list[str]:
        """Every session id (needs ``list_sessions``)."""
        self._bridge.require("list_sessions", "get_keys", "keep the keys you use yourself")
        keys: list[str] = []
        while True:
            page = await self._bridge.acall(
                "list_sessions",
                limit=_SESSIONS_PAGE,
                offset=len(keys),
                order_by="session_id",
                order_dir="asc",
                user_identifier=self.user_identifier,
            )
            keys.extend(s.session_id for s in page)
            if len(page) < _SESSIONS_PAGE:
                return keys
