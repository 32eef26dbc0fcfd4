"""Google ADK: a memory service that keeps what an agent's sessions said, per user.

``pip install "memory-core[adk]"``::

    from google.adk import Runner
    from google.adk.agents import Agent
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools import preload_memory
    from memory_core.integrations.adk import MemoryService

    runner = Runner(
        app_name="travel",
        agent=Agent(name="guide", model=model, tools=[preload_memory]),
        session_service=InMemorySessionService(),
        memory_service=MemoryService(memory),  # memory: opened with multi_tenant=True
    )
    ...
    await runner.memory_service.add_session_to_memory(session)  # after a session

:class:`MemoryService` is an ADK ``BaseMemoryService``. ``add_session_to_memory`` stores
the text of each event of an ADK session as a message of the memory-core session
``"<app_name>:<session id>"`` (:func:`memory_session_id`) of the user ``session.user_id``;
calling it again for the same session stores only the events added since.
``search_memory`` searches that user's sessions of that app and returns ADK
``MemoryEntry`` objects. Where the backend has ``message_metadata`` each event is kept
whole (its ``model_dump``) under :data:`METADATA_KEY` and a memory comes back with the
event's exact content, author and time; elsewhere (NAMS) role and text only, with one
:class:`~memory_core.CapabilityWarning` per service for an event that would lose more
(strict: raises, nothing written).

Only the memory service is here, not a session service: ADK sessions hold mutable state
in app-, user- and session-wide scopes and are checked against concurrent writers
(see ``docs/frameworks/adk.md``); use ADK's own session services beside this one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from google.adk.events import Event
from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session

from ..errors import InvalidRequestError, NotSupportedError
from ..models import Message
from ..warning_channel import add_framework, warn_capability
from ._bridge import Memory, MemoryBridge, read_all_limit

# The framework's frames call this module: capability warnings point past them.
add_framework("google", "opentelemetry")

__all__ = ["APP_KEY", "METADATA_KEY", "MemoryService", "memory_session_id"]

METADATA_KEY = "adk_event"
"""Metadata key holding the ADK event, as ``Event.model_dump(mode="json")`` gives it."""

APP_KEY = "adk_app"
"""Metadata key holding the ADK app name (what a search across sessions filters on)."""

_SEPARATOR = ":"
_LOSSLESS = "keep memories elsewhere, or use a backend with message_metadata"


def memory_session_id(app_name: str, session_id: str) -> str:
    """The memory-core session that keeps the memory of ADK session ``session_id`` of
    ``app_name`` (one per user of the session)."""
    return f"{_app(app_name, 'app_name')}{_SEPARATOR}{_name(session_id, 'session_id')}"


def _name(value: Any, argument: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidRequestError("must be a non-empty string", argument=argument)
    return value


def _app(value: Any, argument: str) -> str:
    name = _name(value, argument)
    if _SEPARATOR in name:
        raise InvalidRequestError(f"must not contain {_SEPARATOR!r}", argument=argument)
    return name


def _positive(value: Any, argument: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidRequestError("must be a positive int", argument=argument)
    return value


def _text(event: Event) -> str:
    """The event's readable text: its text parts (not the model's thoughts), one per line."""
    if event.content is None or not event.content.parts:
        return ""
    return "\n".join(p.text for p in event.content.parts if p.text and not p.thought)


def _remembered(events: Sequence[Event]) -> list[Event]:
    """The events that are memories: complete ones with text (not tool calls and results
    alone, not state changes, not streamed fragments)."""
    return [e for e in events if not e.partial and _text(e)]


def _role(event: Event) -> str:
    return "user" if event.author == "user" else "assistant"


def _plain(role: str, text: str) -> dict[str, Any]:
    """What a memory rebuilt from role and text alone holds (an agent's name is lost)."""
    return {
        "content": {"role": "user" if role == "user" else "model", "parts": [{"text": text}]},
        "author": "user" if role == "user" else None,
    }


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def _entry(stored: Message) -> MemoryEntry:
    exact = stored.metadata.get(METADATA_KEY)
    event = Event.model_validate(exact) if isinstance(exact, dict) else None
    if event is not None and event.content is not None:
        return MemoryEntry(
            id=str(stored.id),
            content=event.content,
            author=event.author,
            timestamp=_iso(event.timestamp),
        )
    return MemoryEntry.model_validate(
        {
            **_plain(stored.role.value, stored.content),
            "id": str(stored.id),
            "timestamp": stored.created_at.isoformat(),
        }
    )


def _events(events: Any) -> list[Event]:
    if not isinstance(events, Sequence) or isinstance(events, str | bytes):
        raise InvalidRequestError("must be a sequence of ADK events", argument="events")
    for index, event in enumerate(events):
        if not isinstance(event, Event):
            raise InvalidRequestError(
                f"must be an ADK Event, got {type(event).__name__}", argument=f"events[{index}]"
            )
    return list(events)


class MemoryService(BaseMemoryService):
    """An ADK ``BaseMemoryService`` over any backend: each ADK user's memory is that
    memory-core user's (``user_identifier=user_id``), each app's kept apart.

    ``memory``: a :class:`~memory_core.sync.SyncMemoryBackend` (run in a worker thread) or
    an async :class:`~memory_core.MemoryBackend` (awaited on the runner's loop). Where the
    backend searches across sessions (``search_global``) it must be opened with
    ``multi_tenant=True``, so a search is the user's only; elsewhere (NAMS, caller-named
    sessions) a search reads the user's newest ``sessions_searched`` conversations one by
    one. ``limit``: the most memories a search returns. Capabilities are checked here.
    """

    def __init__(self, memory: Memory, *, limit: int = 10, sessions_searched: int = 20) -> None:
        self._bridge = MemoryBridge(memory)
        self.limit = _positive(limit, "limit")
        self.sessions_searched = _positive(sessions_searched, "sessions_searched")
        self._check_capabilities()

    def _check_capabilities(self) -> None:
        bridge = self._bridge
        bridge.require(
            "client_chosen_ids",
            "MemoryService",
            "open the NAMS backend with session_names='portable' (the default)",
        )
        if not bridge.capabilities.search_global:
            bridge.require(
                "user_scoped_calls", "MemoryService", "use a backend that keeps users apart"
            )
            return
        bridge.require(
            "search_metadata_filters", "MemoryService", "use a backend with metadata filters"
        )
        if not bridge.memory.multi_tenant:
            raise NotSupportedError(
                bridge.name,
                "MemoryService",
                "a search across sessions of a backend that is not multi-tenant would "
                "read other users' messages",
                "open the backend with multi_tenant=True",
            )

    async def add_session_to_memory(self, session: Session) -> None:
        """Store the text of the session's events not stored yet, in order.

        Where the backend has ``idempotency_keys`` each event is written under its event id
        (a replay writes nothing); elsewhere the first events, as many as the memory-core
        session holds, count as stored."""
        if not isinstance(session, Session):
            raise InvalidRequestError(
                f"must be an ADK Session, got {type(session).__name__}", argument="session"
            )
        app = _app(session.app_name, "session.app_name")
        user = _name(session.user_id, "session.user_id")
        name = memory_session_id(app, _name(session.id, "session.id"))
        events = _remembered(session.events)
        items = self._items(app, events, "add_session_to_memory")
        stored = await self._bridge.amessages(
            session_id=name, limit=read_all_limit(self._bridge), user_identifier=user
        )
        if self._bridge.capabilities.idempotency_keys:
            keys = {m.idempotency_key for m in stored}
            todo = [(e, i) for e, i in zip(events, items, strict=True) if e.id not in keys]
            await self._write(name, user, todo)
            return
        self._check_countable(len(stored))
        await self._write(name, user, list(zip(events, items, strict=True))[len(stored) :])

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Store the text of ``events`` (the session's newest, a delta) in the memory of
        session ``session_id``. Where the backend has ``idempotency_keys`` an event stored
        before is not stored again; elsewhere each call appends what it is given."""
        name = memory_session_id(app_name, _name(session_id, "session_id"))
        user = _name(user_id, "user_id")
        if custom_metadata:
            raise InvalidRequestError("no keys are supported", argument="custom_metadata")
        remembered = _remembered(_events(events))
        items = self._items(app_name, remembered, "add_events_to_memory")
        await self._write(name, user, list(zip(remembered, items, strict=True)))

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The user's memories of this app that match ``query``, best first (at most
        ``limit``)."""
        app, user = _app(app_name, "app_name"), _name(user_id, "user_id")
        if not isinstance(query, str) or not query.strip():
            raise InvalidRequestError("must be a non-empty string", argument="query")
        if self._bridge.capabilities.search_global:
            hits = await self._bridge.acall(
                "search_messages",
                query,
                limit=self.limit,
                metadata_filters={APP_KEY: app},
                user_identifier=user,
            )
        else:
            hits = await self._search_each(app, user, query)
        return SearchMemoryResponse(memories=[_entry(h) for h in hits])

    async def _search_each(self, app: str, user: str, query: str) -> list[Message]:
        """A search without ``search_global``: the user's conversations of this app among
        their newest ``sessions_searched``, one search each, best hits first."""
        listed = await self._bridge.acall(
            "list_conversations", limit=self.sessions_searched + 1, user_identifier=user
        )
        if len(listed) > self.sessions_searched:
            self._warn_cut()
        hits: list[Message] = []
        for conversation in listed[: self.sessions_searched]:
            if conversation.session_id.startswith(app + _SEPARATOR):
                hits += await self._bridge.acall(
                    "search_messages",
                    query,
                    session_id=conversation.session_id,
                    limit=self.limit,
                    user_identifier=user,
                )
        hits.sort(key=lambda m: -(m.score or 0.0))
        return hits[: self.limit]

    def _warn_cut(self) -> None:
        """The user may have more conversations than a search reads: say so once (strict:
        raise) rather than miss their memories silently."""
        bridge, count = self._bridge, self.sessions_searched
        what = f"only the user's newest {count} conversations are searched"
        if bridge.strict:
            raise NotSupportedError(
                bridge.name, "search_memory", what, "pass a larger sessions_searched"
            )
        if "cut" not in bridge._warned:
            bridge._warned.add("cut")
            warn_capability(
                f"{bridge.name}.search_memory: {what} (this backend cannot search across "
                "sessions); older ones may hold more. Pass a larger sessions_searched"
            )

    def _items(self, app: str, events: list[Event], method: str) -> list[dict[str, Any]]:
        """The messages for ``events``: checked, all of them, before anything is written."""
        keep = self._bridge.capabilities.message_metadata
        items: list[dict[str, Any]] = []
        for event in events:
            role, text = _role(event), _text(event)
            item: dict[str, Any] = {"role": role, "content": text}
            if keep:
                exact = event.model_dump(mode="json", exclude_none=True)
                item["metadata"] = {APP_KEY: app, METADATA_KEY: exact}
            elif _plain(role, text) != self._kept(event):
                self._bridge.degrade(method, "event contents beyond text", _LOSSLESS)
            items.append(item)
        return items

    @staticmethod
    def _kept(event: Event) -> dict[str, Any]:
        """What a memory of ``event`` holds (its content and author)."""
        content = event.content.model_dump(mode="json", exclude_none=True) if event.content else {}
        return {"content": content, "author": event.author}

    def _check_countable(self, count: int) -> None:
        """Without keys the stored events are counted: a read cut at the backend's cap
        cannot count them."""
        cap = self._bridge.capabilities.max_messages_per_read
        if cap is not None and count >= cap and not self._bridge.capabilities.full_history:
            raise NotSupportedError(
                self._bridge.name,
                "add_session_to_memory",
                f"this session's memory holds {cap} or more messages, more than one read "
                "returns, so which events are stored cannot be told",
                "pass only the new events to add_events_to_memory",
            )

    async def _write(self, name: str, user: str, todo: list[tuple[Event, dict[str, Any]]]) -> None:
        if not todo:
            return
        if not self._bridge.capabilities.idempotency_keys:
            await self._bridge.acall(
                "add_messages_batch",
                session_id=name,
                messages=[item for _, item in todo],
                user_identifier=user,
            )
            return
        for event, item in todo:
            await self._bridge.acall(
                "add_message",
                name,
                item["role"],
                item["content"],
                metadata=item.get("metadata"),
                extract_entities=False,
                user_identifier=user,
                idempotency_key=event.id,
            )
