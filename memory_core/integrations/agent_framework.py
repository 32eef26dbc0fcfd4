"""Microsoft Agent Framework: a history provider and a context provider over any backend.

``pip install "memory-core[agent-framework]"``::

    from agent_framework import Agent
    from memory_core.integrations.agent_framework import (
        MemoryContextProvider,
        MemoryHistoryProvider,
    )

    agent = Agent(
        client,
        context_providers=[
            MemoryHistoryProvider(memory, user_identifier="ana"),
            MemoryContextProvider(memory, user_identifier="ana"),
        ],
    )
    session = agent.create_session(session_id="chat-1")  # the memory-core session
    await agent.run("hi", session=session)

:class:`MemoryHistoryProvider` keeps each agent session's messages in the memory-core
session of the same id. Where the backend has ``message_metadata`` every ``Message`` (text,
function calls and results, data, reasoning, ids, author, additional properties)
round-trips exactly: its own ``to_dict`` form is kept under :data:`METADATA_KEY`.
Elsewhere only role and text are kept; a message that would lose anything else gives one
:class:`~memory_core.CapabilityWarning` per provider (strict: raises, nothing written).

:class:`MemoryContextProvider` gives the agent, before each run, the user's stored messages
and (where the backend has ``preferences``) preferences that match the run's input, as
instructions. It writes nothing: the history provider records the run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

from agent_framework import (
    AgentSession,
    ContextProvider,
    HistoryProvider,
    Message,
    SessionContext,
    SupportsAgentRun,
)

from ..errors import ConflictError, InvalidRequestError, NotSupportedError
from ..models import Message as StoredMessage
from ..models import Preference
from ..warning_channel import add_framework
from ._bridge import Memory, MemoryBridge, read_all_limit, warn_if_truncated

# The framework's frames call this module: capability warnings point past them.
add_framework("agent_framework")

__all__ = ["METADATA_KEY", "MemoryContextProvider", "MemoryHistoryProvider"]

METADATA_KEY = "agent_framework_message"
"""Metadata key holding ``Message.to_dict()`` of the framework's message."""

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_LOSSLESS = "keep messages elsewhere, or use a backend with message_metadata"


def _result_text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, default=str)


def _text(message: Message) -> str:
    """The readable text: text parts and function results, one per line."""
    parts: list[str] = []
    for content in message.contents:
        if content.type == "text" and content.text:
            parts.append(content.text)
        elif content.type == "function_result" and content.result is not None:
            parts.append(_result_text(content.result))
    return "\n".join(parts)


def _role(message: Message) -> str:
    if message.role == "tool":
        return "tool"
    return _ROLES.get(str(message.role), "user")


def _plain(role: str, text: str) -> Message:
    """The message rebuilt from role and text alone (a tool message without its call
    cannot be replayed as one: it comes back as the assistant's)."""
    return Message("assistant" if role == "tool" else role, [text] if text else [])


def _from_stored(stored: StoredMessage) -> Message:
    exact = stored.metadata.get(METADATA_KEY)
    if isinstance(exact, dict):
        return Message.from_dict(exact)
    return _plain(stored.role.value, stored.content)


def _check_limit(limit: Any, *, optional: bool = True) -> int | None:
    if limit is None and optional:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        expected = "a positive int or None" if optional else "a positive int"
        raise InvalidRequestError(f"must be {expected}", argument="limit")
    return limit


class _UserBound:
    """The bridge to the backend and the user every call acts for."""

    _bridge: MemoryBridge
    user_identifier: str | None

    def _bind_user(self, memory: Memory, user_identifier: Any) -> None:
        if user_identifier is not None and (
            not isinstance(user_identifier, str) or not user_identifier
        ):
            raise InvalidRequestError(
                "must be a non-empty string or None", argument="user_identifier"
            )
        self._bridge = MemoryBridge(memory)
        self.user_identifier = user_identifier


class MemoryHistoryProvider(_UserBound, HistoryProvider):
    """An Agent Framework ``HistoryProvider``: each agent session's messages in the
    memory-core session named by the agent session's ``session_id``.

    ``memory``: a :class:`~memory_core.sync.SyncMemoryBackend` (run in a worker thread) or
    an async :class:`~memory_core.MemoryBackend` (awaited on the agent's loop).
    ``user_identifier``: the user every call acts for; an agent session first used for one
    user is refused (``ConflictError``) by a provider of another. ``limit``: how many of the
    newest messages a run loads (``None``: all; on NAMS the newest 200, with a warning when
    there may be more). The remaining options are ``HistoryProvider``'s.
    """

    DEFAULT_SOURCE_ID: ClassVar[str] = "memory_core"

    def __init__(
        self,
        memory: Memory,
        *,
        user_identifier: str | None = None,
        limit: int | None = None,
        source_id: str | None = None,
        load_messages: bool = True,
        store_inputs: bool = True,
        store_context_messages: bool = False,
        store_context_from: set[str] | None = None,
        store_outputs: bool = True,
    ) -> None:
        super().__init__(
            source_id or self.DEFAULT_SOURCE_ID,
            load_messages=load_messages,
            store_inputs=store_inputs,
            store_context_messages=store_context_messages,
            store_context_from=store_context_from,
            store_outputs=store_outputs,
        )
        self._bind_user(memory, user_identifier)
        self.limit = _check_limit(limit)

    async def get_messages(
        self, session_id: str | None, *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Message]:
        """The session's newest ``limit`` messages (all when ``None``), oldest first."""
        session = self._session(session_id, state)
        stored = await self._bridge.amessages(
            session_id=session,
            limit=read_all_limit(self._bridge) if self.limit is None else self.limit,
            user_identifier=self.user_identifier,
        )
        if self.limit is None:
            warn_if_truncated(self._bridge, "get_messages", len(stored))
        return [_from_stored(m) for m in stored]

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Append ``messages`` in order (one batch); checks all of them before writing."""
        session = self._session(session_id, state)
        items = self._items(messages)
        if items:
            await self._bridge.acall(
                "add_messages_batch",
                session_id=session,
                messages=items,
                user_identifier=self.user_identifier,
            )

    def _session(self, session_id: Any, state: dict[str, Any] | None) -> str:
        """The memory-core session for ``session_id``; the provider's state (kept in the
        agent session, serialised with it) records the user it was first used for."""
        if not isinstance(session_id, str) or not session_id:
            raise InvalidRequestError("must be a non-empty string", argument="session_id")
        if state is not None:
            owner = state.setdefault("user_identifier", self.user_identifier)
            if owner != self.user_identifier:
                raise ConflictError(
                    "this agent session belongs to another user; create a new one",
                    argument="session",
                )
            state.setdefault("session_id", session_id)
        return session_id

    def _items(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
            raise InvalidRequestError("must be a sequence of messages", argument="messages")
        keep = self._bridge.capabilities.message_metadata
        items: list[dict[str, Any]] = []
        for index, message in enumerate(messages):
            if not isinstance(message, Message):
                raise InvalidRequestError(
                    f"must be an agent_framework Message, got {type(message).__name__}",
                    argument=f"messages[{index}]",
                )
            role, text = _role(message), _text(message)
            item: dict[str, Any] = {"role": role, "content": text}
            exact = message.to_dict()
            if keep:
                item["metadata"] = {METADATA_KEY: exact}
            elif _plain(role, text).to_dict() != exact:
                self._bridge.degrade("save_messages", "message contents beyond text", _LOSSLESS)
            items.append(item)
        return items


class MemoryContextProvider(_UserBound, ContextProvider):
    """An Agent Framework ``ContextProvider`` that adds, before each run, the user's
    stored messages and preferences matching the run's input to the agent's instructions.

    ``across_sessions``: search every session of the user (needs ``search_global``, and
    with a ``user_identifier`` a multi-tenant backend, whose searches are the user's
    only); ``False`` searches the run's session. ``limit`` hits of each kind, at least
    ``threshold`` (where the backend has ``search_threshold``). ``preferences``: ``None``
    includes them where the backend has the ``preferences`` flag, ``True`` requires it,
    ``False`` leaves them out. Capabilities are checked here, before any run.
    """

    DEFAULT_SOURCE_ID: ClassVar[str] = "memory_core_context"

    def __init__(
        self,
        memory: Memory,
        *,
        user_identifier: str | None = None,
        across_sessions: bool = True,
        limit: int = 5,
        threshold: float | None = None,
        preferences: bool | None = None,
        source_id: str | None = None,
    ) -> None:
        super().__init__(source_id or self.DEFAULT_SOURCE_ID)
        self._bind_user(memory, user_identifier)
        self.limit = _check_limit(limit, optional=False)
        self.threshold = threshold
        self.across_sessions = self._check_across(across_sessions)
        self.preferences = self._check_preferences(preferences)

    def _check_across(self, across_sessions: Any) -> bool:
        if not isinstance(across_sessions, bool):
            raise InvalidRequestError("must be a bool", argument="across_sessions")
        if across_sessions:
            self._bridge.require(
                "search_global", "MemoryContextProvider", "pass across_sessions=False"
            )
        if (
            across_sessions
            and self.user_identifier is not None
            and not self._bridge.memory.multi_tenant
        ):
            raise NotSupportedError(
                self._bridge.name,
                "MemoryContextProvider",
                "a search across sessions of a backend that is not multi-tenant would "
                "read other users' messages",
                "open the backend with multi_tenant=True, or pass across_sessions=False",
            )
        return across_sessions

    def _check_preferences(self, preferences: Any) -> bool:
        if preferences is not None and not isinstance(preferences, bool):
            raise InvalidRequestError("must be a bool or None", argument="preferences")
        if preferences:
            self._bridge.require("preferences", "MemoryContextProvider", "pass preferences=False")
        has = self._bridge.capabilities.preferences
        return has if preferences is None else preferences

    async def before_run(
        self,
        *,
        agent: SupportsAgentRun,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Search with the text of the run's input; add what is found as instructions."""
        query = "\n".join(m.text for m in context.input_messages if m.text).strip()
        if not query:
            return
        found = await self.recall(query, session_id=context.session_id)
        if found:
            context.extend_instructions(self.source_id, found)

    async def recall(self, query: str, *, session_id: str | None = None) -> str:
        """The instructions text for ``query`` (empty when nothing matches);
        ``session_id``: the run's session, searched when ``across_sessions`` is off."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidRequestError("must be a non-empty string", argument="query")
        hits = await self._search_messages(query, session_id)
        liked = await self._search_preferences(query) if self.preferences else []
        return _instructions(hits, liked)

    async def _search_messages(self, query: str, session_id: str | None) -> list[StoredMessage]:
        if not self.across_sessions and not session_id:
            return []
        hits = await self._bridge.acall(
            "search_messages",
            query,
            session_id=None if self.across_sessions else session_id,
            limit=self.limit,
            threshold=self.threshold,
            user_identifier=self.user_identifier,
        )
        return list(hits)

    async def _search_preferences(self, query: str) -> list[Preference]:
        found = await self._bridge.acall(
            "search_preferences",
            query,
            limit=self.limit,
            user_identifier=self.user_identifier,
        )
        return list(found)


def _instructions(hits: list[StoredMessage], liked: list[Preference]) -> str:
    blocks: list[str] = []
    if hits:
        lines = [f"- [{h.role.value}] {h.content}" for h in hits if h.content]
        if lines:
            blocks.append("Relevant earlier messages of this user:\n" + "\n".join(lines))
    if liked:
        lines = [f"- ({p.category}) {p.preference}" for p in liked]
        blocks.append("Known preferences of this user:\n" + "\n".join(lines))
    return "\n\n".join(blocks)
