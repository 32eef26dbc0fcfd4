"""Strands Agents: a ``SessionManager`` that keeps an agent's messages in one session.

``pip install "memory-core[strands]"``::

    from strands import Agent
    from memory_core.integrations.strands import MemorySessionManager

    agent = Agent(session_manager=MemorySessionManager(memory, session_id="chat-1"))

Why a session manager for Strands but only a memory service for Google ADK
(:mod:`memory_core.integrations.adk`): Strands' session manager is four plain hooks over a
list of messages (restore, append, redact the latest, sync), which maps onto
conversation memory directly; ADK's session service also owns events with actions,
per-app/per-user state scopes and its own id scheme.

One agent per session. Where the backend has ``message_metadata`` each Strands message
(content blocks, tool use and results; bytes via Strands' own encoding) round-trips exactly
under :data:`METADATA_KEY`; elsewhere the text only, with one
:class:`~memory_core.CapabilityWarning` (strict: raises). Agent state is not stored: a
non-empty ``agent.state`` gives one ``CapabilityWarning`` (strict: raises).
``redact_latest_message`` needs ``delete_message``.
"""

from __future__ import annotations

from typing import Any, cast

from strands.session.session_manager import SessionManager
from strands.types.content import Message as StrandsMessage
from strands.types.session import decode_bytes_values, encode_bytes_values

from ..errors import InvalidRequestError
from ..models import Message
from ..warning_channel import add_framework
from ._bridge import Memory, MemoryBridge, read_all_limit, warn_if_truncated

# The framework's frames call this module: capability warnings point past them.
add_framework("strands", "opentelemetry")

__all__ = ["METADATA_KEY", "MemorySessionManager"]

METADATA_KEY = "strands_message"
"""Metadata key holding the Strands message with bytes encoded by Strands."""

_LOSSLESS = "keep messages elsewhere, or use a backend with message_metadata"


def _text(message: StrandsMessage) -> str:
    return "\n".join(b["text"] for b in message.get("content", []) if "text" in b)


def _role(message: StrandsMessage) -> str:
    blocks = message.get("content", [])
    if blocks and all("toolResult" in b for b in blocks):
        return "tool"
    return "assistant" if message.get("role") == "assistant" else "user"


def _plain(role: str, text: str) -> StrandsMessage:
    return cast(
        StrandsMessage,
        {"role": "assistant" if role == "assistant" else "user", "content": [{"text": text}]},
    )


def _from_stored(stored: Message) -> StrandsMessage:
    exact = stored.metadata.get(METADATA_KEY)
    if isinstance(exact, dict):
        return cast(StrandsMessage, decode_bytes_values(exact))
    return _plain(stored.role.value, stored.content)


class MemorySessionManager(SessionManager):
    """A Strands ``SessionManager`` over one session of any backend.

    ``memory``: a :class:`~memory_core.sync.SyncMemoryBackend` (Strands calls session hooks
    synchronously, on its own event loop's thread) or an async ``MemoryBackend`` reachable
    from a worker thread of its loop.
    """

    def __init__(
        self, memory: Memory, session_id: str, *, user_identifier: str | None = None
    ) -> None:
        if not isinstance(session_id, str) or not session_id:
            raise InvalidRequestError("must be a non-empty string", argument="session_id")
        self._bridge = MemoryBridge(memory)
        self.session_id = session_id
        self.user_identifier = user_identifier

    def initialize(self, agent: Any, **kwargs: Any) -> None:
        """Restore the session's messages into ``agent.messages``; a new session stores the
        messages the agent was created with instead."""
        stored = self._bridge.messages(
            hook=True,
            session_id=self.session_id,
            limit=read_all_limit(self._bridge),
            user_identifier=self.user_identifier,
        )
        warn_if_truncated(self._bridge, "initialize", len(stored))
        if stored:
            agent.messages = [_from_stored(m) for m in stored]
        elif agent.messages:
            self._store(list(agent.messages))

    def append_message(self, message: StrandsMessage, agent: Any, **kwargs: Any) -> None:
        """Store one message the agent added."""
        self._store([message])

    def redact_latest_message(
        self, redact_message: StrandsMessage, agent: Any, **kwargs: Any
    ) -> None:
        """Replace the newest stored message (needs ``delete_message``)."""
        self._bridge.require(
            "delete_message",
            "redact_latest_message",
            "start a new session from the agent's redacted messages",
        )
        newest = self._bridge.messages(
            hook=True, session_id=self.session_id, limit=1, user_identifier=self.user_identifier
        )
        if newest:
            self._bridge.call_in_hook(
                "delete_message", newest[-1].id, user_identifier=self.user_identifier
            )
        self._store([redact_message])

    def sync_agent(self, agent: Any, **kwargs: Any) -> None:
        """Agent state is not kept: warn once (strict: raise) when the agent has any."""
        state = getattr(agent, "state", None)
        if state is not None and state.get():
            self._bridge.degrade(
                "sync_agent",
                "agent state",
                "keep agent.state elsewhere; only messages are stored",
            )

    def _store(self, messages: list[StrandsMessage]) -> None:
        keep = self._bridge.capabilities.message_metadata
        items: list[dict[str, Any]] = []
        for message in messages:
            role, text = _role(message), _text(message)
            item: dict[str, Any] = {"role": role, "content": text}
            if keep:
                item["metadata"] = {METADATA_KEY: encode_bytes_values(dict(message))}
            elif _plain(role, text) != message:
                self._bridge.degrade("append_message", "Strands content blocks", _LOSSLESS)
            items.append(item)
        self._bridge.call_in_hook(
            "add_messages_batch",
            session_id=self.session_id,
            messages=items,
            user_identifier=self.user_identifier,
        )
