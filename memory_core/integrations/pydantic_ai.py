"""Pydantic AI: load and save ``list[ModelMessage]`` for ``agent.run(message_history=...)``.

``pip install "memory-core[pydantic-ai]"``::

    from memory_core.integrations.pydantic_ai import MemoryMessageHistory

    history = MemoryMessageHistory(memory, session_id="chat-1")
    result = agent.run_sync("hi", message_history=history.load())
    history.save(result.new_messages())

Each ``ModelMessage`` is stored as one message: requests as ``user`` (``tool`` when they
only return tool results, ``system`` when they only carry instructions), responses as
``assistant``, with the text of their parts as content (a capability part's too, and the
rendered text of structured content). Where the backend has
``message_metadata`` the exact form — Pydantic AI's own ``ModelMessagesTypeAdapter`` JSON —
is kept under :data:`METADATA_KEY`, and :meth:`MemoryMessageHistory.load` returns the
messages exactly. Elsewhere the messages are rebuilt from role and text (one
:class:`~memory_core.CapabilityWarning`; strict: raises and nothing is written).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolReturnPart,
    UserPromptPart,
)

from ..errors import InvalidRequestError
from ..models import Message
from ..warning_channel import add_framework
from ._bridge import Memory, SessionHandle, read_all_limit, warn_if_truncated

# The framework's frames call this module: capability warnings point past them.
add_framework("pydantic_ai", "pydantic_graph")

__all__ = ["METADATA_KEY", "MemoryMessageHistory"]

METADATA_KEY = "pydantic_ai_message"
"""Metadata key holding ``ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]``."""

_LOSSLESS = "keep messages elsewhere, or use a backend with message_metadata"


def _part_text(part: Any) -> str:
    content = getattr(part, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(part, ToolReturnPart):
        return part.model_response_str()
    return _text_of(content)


def _text_of(content: Any) -> str:
    """The text of a part's content: a string, a ``TextContent`` (``StructuredContent``
    included: the text rendered when it was made) or a sequence of those; files add none."""
    if isinstance(content, str):
        return content
    text = getattr(content, "content", None)
    if isinstance(text, str):
        return text
    if isinstance(content, Sequence):
        return "\n".join(t for t in (_text_of(item) for item in content) if t)
    return ""


def _role(message: ModelMessage) -> str:
    if isinstance(message, ModelResponse):
        return "assistant"
    parts = message.parts
    if parts and all(isinstance(p, ToolReturnPart) for p in parts):
        return "tool"
    if parts and all(isinstance(p, SystemPromptPart) for p in parts):
        return "system"
    return "user"


def _text(message: ModelMessage) -> str:
    return "\n".join(t for t in (_part_text(p) for p in message.parts) if t)


def _plain(stored: Message) -> ModelMessage:
    role, text = stored.role.value, stored.content
    if role == "assistant" or role == "tool":
        return ModelResponse(parts=[TextPart(content=text)], timestamp=stored.created_at)
    if role == "system":
        return ModelRequest(parts=[SystemPromptPart(content=text, timestamp=stored.created_at)])
    return ModelRequest(parts=[UserPromptPart(content=text, timestamp=stored.created_at)])


class MemoryMessageHistory(SessionHandle):
    """Pydantic AI message history for one session of any backend.

    ``memory``: a :class:`~memory_core.sync.SyncMemoryBackend` (``load``/``save`` and
    ``aload``/``asave``) or an async :class:`~memory_core.MemoryBackend` (``aload`` /
    ``asave``). ``limit`` caps how many of the newest messages ``load`` returns (``None``:
    all that the backend can read).
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

    def load(self) -> list[ModelMessage]:
        """The stored messages, oldest first, ready for ``message_history=``."""
        return self._messages(self._bridge.messages(**self._read_args()))

    async def aload(self) -> list[ModelMessage]:
        """The stored messages, oldest first, ready for ``message_history=``."""
        return self._messages(await self._bridge.amessages(**self._read_args()))

    def save(self, messages: Sequence[ModelMessage]) -> None:
        """Append ``messages`` (e.g. ``result.new_messages()``) in order, as one batch."""
        items = self._items(messages)
        if items:
            self._bridge.call("add_messages_batch", **self._write_args(items))

    async def asave(self, messages: Sequence[ModelMessage]) -> None:
        """Append ``messages`` (e.g. ``result.new_messages()``) in order, as one batch."""
        items = self._items(messages)
        if items:
            await self._bridge.acall("add_messages_batch", **self._write_args(items))

    def clear(self) -> None:
        """Delete the session's messages."""
        self._bridge.call(
            "clear_session", session_id=self.session_id, user_identifier=self.user_identifier
        )

    async def aclear(self) -> None:
        """Delete the session's messages."""
        await self._bridge.acall(
            "clear_session", session_id=self.session_id, user_identifier=self.user_identifier
        )

    def _read_args(self) -> dict[str, Any]:
        limit = read_all_limit(self._bridge) if self.limit is None else self.limit
        return {
            "session_id": self.session_id,
            "limit": limit,
            "user_identifier": self.user_identifier,
        }

    def _write_args(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "messages": items,
            "user_identifier": self.user_identifier,
        }

    def _messages(self, stored: list[Message]) -> list[ModelMessage]:
        if self.limit is None:
            warn_if_truncated(self._bridge, "load", len(stored))
        exact = [m.metadata.get(METADATA_KEY) for m in stored]
        if all(isinstance(e, dict) for e in exact):
            return ModelMessagesTypeAdapter.validate_python(exact)
        return [
            ModelMessagesTypeAdapter.validate_python([e])[0] if isinstance(e, dict) else _plain(m)
            for m, e in zip(stored, exact, strict=True)
        ]

    def _items(self, messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
        if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
            raise InvalidRequestError("must be a list of ModelMessage", argument="messages")
        for index, message in enumerate(messages):
            if not isinstance(message, ModelRequest | ModelResponse):
                raise InvalidRequestError(
                    f"must be a ModelRequest or ModelResponse, got {type(message).__name__}",
                    argument=f"messages[{index}]",
                )
        exact = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
        keep = self._bridge.capabilities.message_metadata
        if messages and not keep:
            # timestamps, part kinds, tool calls and usage cannot be kept
            self._bridge.degrade("save", "Pydantic AI message parts", _LOSSLESS)
        items: list[dict[str, Any]] = []
        for message, form in zip(messages, exact, strict=True):
            item: dict[str, Any] = {"role": _role(message), "content": _text(message)}
            if keep:
                item["metadata"] = {METADATA_KEY: form}
            items.append(item)
        return items
