"""LangChain: a chat message history per session and a retriever over search.

``pip install "memory-core[langchain]"``::

    from memory_core.sync import open_backend
    from memory_core.integrations.langchain import MemoryChatMessageHistory

    memory = open_backend("memory://")
    history = MemoryChatMessageHistory(memory, session_id="chat-1")
    history.add_user_message("hi")

Where the backend has ``message_metadata`` every message (human, ai, system, tool, with
tool calls, ids and additional kwargs) round-trips exactly: the message's own
``message_to_dict`` form is kept in the stored message's metadata under
:data:`METADATA_KEY`. Elsewhere only role and content are kept; a message that would lose
anything else gives one :class:`~memory_core.CapabilityWarning` per history (with
``strict=True`` it raises :class:`~memory_core.errors.NotSupportedError` and nothing is
written).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr

from ..errors import InvalidRequestError
from ..models import Message
from ..warning_channel import add_framework
from ._bridge import Memory, MemoryBridge, SessionHandle

# The framework's frames call this module: capability warnings point past them.
add_framework("langchain_core", "langchain", "langgraph", "langsmith")

__all__ = ["METADATA_KEY", "MemoryChatMessageHistory", "MemoryRetriever"]

METADATA_KEY = "langchain_message"
"""Metadata key holding ``langchain_core.messages.message_to_dict(message)``."""

_LOSSLESS = "keep the full messages elsewhere, or use a backend with message_metadata"


def _role(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, ToolMessage | FunctionMessage):
        return "tool"
    if isinstance(message, ChatMessage):
        return message.role if message.role in ("user", "assistant", "system", "tool") else "user"
    raise InvalidRequestError(f"unknown message type {message.type!r}", argument="messages")


def _plain(role: str, content: str) -> BaseMessage:
    """The message rebuilt from role and content alone."""
    if role == "user":
        return HumanMessage(content=content)
    if role == "system":
        return SystemMessage(content=content)
    if role == "tool":
        return ToolMessage(content=content, tool_call_id="")
    return AIMessage(content=content)


def _from_stored(stored: Message) -> BaseMessage:
    exact = stored.metadata.get(METADATA_KEY)
    if isinstance(exact, dict):
        return messages_from_dict([exact])[0]
    return _plain(stored.role.value, stored.content)


class MemoryChatMessageHistory(SessionHandle, BaseChatMessageHistory):
    """A LangChain ``BaseChatMessageHistory`` for one session of any backend.

    ``memory`` is a :class:`~memory_core.sync.SyncMemoryBackend` (sync and async methods
    work) or an async :class:`~memory_core.MemoryBackend` (async methods; sync methods only
    from a worker thread of its loop). ``session_id`` names the session (on NAMS in its
    reference mode: the conversation id from :func:`~memory_core.integrations.start_session`).
    ``limit`` caps how many of the newest messages ``messages`` returns (``None``: the
    backend's default, 200 on NAMS).
    """

    def __init__(
        self,
        memory: Memory,
        session_id: str,
        *,
        user_identifier: str | None = None,
        limit: int | None = None,
    ) -> None:
        self._bind(memory, session_id, user_identifier)
        self.limit = limit

    # ------------------------------------------------------------ reads

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The session's messages, oldest first."""
        return [_from_stored(m) for m in self._bridge.messages(**self._read_args())]

    async def aget_messages(self) -> list[BaseMessage]:
        """The session's messages, oldest first."""
        return [_from_stored(m) for m in await self._bridge.amessages(**self._read_args())]

    def _read_args(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "limit": self.limit,
            "user_identifier": self.user_identifier,
        }

    # ------------------------------------------------------------ writes

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store messages in order (one batch)."""
        items = self._items(messages)
        if items:
            self._bridge.call("add_messages_batch", **self._write_args(items))

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store messages in order (one batch)."""
        items = self._items(messages)
        if items:
            await self._bridge.acall("add_messages_batch", **self._write_args(items))

    def _write_args(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "messages": items,
            "user_identifier": self.user_identifier,
            "generate_embeddings": True,
        }

    def _items(self, messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
        """Batch items for ``messages``; checks everything before anything is written."""
        if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
            raise InvalidRequestError("must be a sequence of messages", argument="messages")
        keep = self._bridge.capabilities.message_metadata
        items: list[dict[str, Any]] = []
        for index, message in enumerate(messages):
            if not isinstance(message, BaseMessage):
                raise InvalidRequestError(
                    f"must be a BaseMessage, got {type(message).__name__}",
                    argument=f"messages[{index}]",
                )
            role, text = _role(message), message.text
            item: dict[str, Any] = {"role": role, "content": text}
            exact = message_to_dict(message)
            if keep:
                item["metadata"] = {METADATA_KEY: exact}
            elif message_to_dict(_plain(role, text)) != exact:
                self._bridge.degrade(
                    "add_messages", "message fields beyond role and content", _LOSSLESS
                )
            items.append(item)
        return items

    def clear(self) -> None:
        """Delete the session's messages (the session accepts new ones afterwards)."""
        self._bridge.call(
            "clear_session", session_id=self.session_id, user_identifier=self.user_identifier
        )

    async def aclear(self) -> None:
        """Delete the session's messages (the session accepts new ones afterwards)."""
        await self._bridge.acall(
            "clear_session", session_id=self.session_id, user_identifier=self.user_identifier
        )


class MemoryRetriever(BaseRetriever):
    """A LangChain retriever over ``search_messages``: one ``Document`` per hit.

    ``session_id=None`` searches every session where the backend has ``search_global``
    (elsewhere it raises ``NotSupportedError``). Each document's metadata has the message
    ``id``, ``role``, ``session_id``, ``score`` and ``created_at`` (ISO 8601).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    memory: Any
    session_id: str | None = None
    k: int = 4
    threshold: float | None = None
    user_identifier: str | None = None
    _bridge: MemoryBridge = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._bridge = MemoryBridge(self.memory)

    def _search_args(self, query: str) -> dict[str, Any]:
        return {
            "query": query,
            "session_id": self.session_id,
            "limit": self.k,
            "threshold": self.threshold,
            "user_identifier": self.user_identifier,
        }

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = self._bridge.call("search_messages", **self._search_args(query))
        return [_document(hit) for hit in hits]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = await self._bridge.acall("search_messages", **self._search_args(query))
        return [_document(hit) for hit in hits]


def _document(hit: Message) -> Document:
    return Document(
        page_content=hit.content,
        metadata={
            "id": str(hit.id),
            "role": hit.role.value,
            "session_id": hit.session_id,
            "score": hit.score,
            "created_at": hit.created_at.isoformat(),
        },
    )
