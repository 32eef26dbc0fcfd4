"""OpenAI Agents SDK: a ``Session`` over one session of any backend.

``pip install "memory-core[openai-agents]"``::

    from agents import Agent, Runner
    from memory_core.integrations.openai_agents import MemorySession

    session = MemorySession(memory, session_id="chat-1")
    await Runner.run(agent, "hi", session=session)

Where the backend has ``message_metadata`` every item round-trips exactly (kept under
:data:`METADATA_KEY`). Elsewhere only role and text are kept; an item that would lose
anything else gives one :class:`~memory_core.CapabilityWarning` (strict: raises, nothing
written). ``pop_item`` needs ``delete_message``.
"""

from __future__ import annotations

import json
from typing import Any, cast

from agents.items import TResponseInputItem
from agents.memory import SessionABC
from agents.memory.session_settings import SessionSettings

from ..errors import InvalidRequestError
from ..models import Message
from ..warning_channel import add_framework
from ._bridge import Memory, SessionHandle, read_all_limit, warn_if_truncated

# The framework's frames call this module: capability warnings point past them.
add_framework("agents")

__all__ = ["METADATA_KEY", "MemorySession"]

METADATA_KEY = "openai_agents_item"
"""Metadata key holding the response input item exactly as given."""

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_LOSSLESS = "keep items elsewhere, or use a backend with message_metadata"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _role_and_text(item: dict[str, Any]) -> tuple[str, str]:
    role = item.get("role")
    if isinstance(role, str) and role in _ROLES:
        return _ROLES[role], _text(item.get("content"))
    kind = item.get("type")
    if kind == "function_call_output" or str(kind).endswith("_output"):
        output = item.get("output")
        return "tool", output if isinstance(output, str) else json.dumps(output, default=str)
    # function calls, reasoning and other model items: the model's side of the exchange
    return "assistant", json.dumps(item, sort_keys=True, default=str)


def _plain(role: str, text: str) -> dict[str, Any]:
    return {"role": "assistant" if role == "tool" else role, "content": text}


def _from_stored(stored: Message) -> TResponseInputItem:
    exact = stored.metadata.get(METADATA_KEY)
    if isinstance(exact, dict):
        return cast(TResponseInputItem, exact)
    return cast(TResponseInputItem, _plain(stored.role.value, stored.content))


class MemorySession(SessionHandle, SessionABC):
    """An Agents SDK ``Session`` for one session of any backend.

    ``memory``: a :class:`~memory_core.sync.SyncMemoryBackend` or an async
    :class:`~memory_core.MemoryBackend` (awaited on the caller's loop). ``session_id`` names
    the session (on NAMS in its reference mode: the id from
    :func:`~memory_core.integrations.start_session`). ``user_identifier``: the user every
    call acts for (required on a multi-tenant backend). ``session_settings``: its ``limit``
    is how many of the newest items ``get_items()`` returns when given no ``limit``.
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        memory: Memory,
        session_id: str,
        *,
        user_identifier: str | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self._bind(memory, session_id, user_identifier)
        self.session_settings = session_settings

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The newest ``limit`` items, oldest first; without ``limit`` the newest
        ``session_settings.limit``, and all when that is ``None`` too."""
        count = limit
        if count is None and self.session_settings is not None:
            count = self.session_settings.limit
        stored = await self._bridge.amessages(
            session_id=self.session_id,
            limit=read_all_limit(self._bridge) if count is None else count,
            user_identifier=self.user_identifier,
        )
        if count is None:
            warn_if_truncated(self._bridge, "get_items", len(stored))
        return [_from_stored(m) for m in stored]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append items in order (one batch); checks all of them before writing."""
        if not isinstance(items, list):
            raise InvalidRequestError("must be a list of items", argument="items")
        keep = self._bridge.capabilities.message_metadata
        batch: list[dict[str, Any]] = []
        for index, raw in enumerate(items):
            if not isinstance(raw, dict):
                raise InvalidRequestError(
                    f"must be a dict, got {type(raw).__name__}", argument=f"items[{index}]"
                )
            item = cast(dict[str, Any], raw)
            role, text = _role_and_text(item)
            entry: dict[str, Any] = {"role": role, "content": text}
            if keep:
                entry["metadata"] = {METADATA_KEY: item}
            elif _plain(role, text) != item:
                self._bridge.degrade("add_items", "item fields beyond role and text", _LOSSLESS)
            batch.append(entry)
        if batch:
            await self._bridge.acall(
                "add_messages_batch",
                session_id=self.session_id,
                messages=batch,
                user_identifier=self.user_identifier,
            )

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item of this session and user (``None`` when it
        has none).

        Needs ``delete_message``; without it raises ``NotSupportedError`` before reading.
        """
        self._bridge.require(
            "delete_message",
            "pop_item",
            "read get_items() and rebuild the session without the last item "
            "(clear_session, then add_items)",
        )
        stored = await self._bridge.amessages(
            session_id=self.session_id, limit=1, user_identifier=self.user_identifier
        )
        if not stored:
            return None
        newest = stored[-1]
        await self._bridge.acall("delete_message", newest.id, user_identifier=self.user_identifier)
        return _from_stored(newest)

    async def clear_session(self) -> None:
        """Delete every item of the session."""
        await self._bridge.acall(
            "clear_session", session_id=self.session_id, user_identifier=self.user_identifier
        )
