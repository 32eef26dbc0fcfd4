"""The argument and capability policy between the public API and the stores.

:class:`Policy` is what :class:`memory_core.MemoryBackend` runs before any hook of a
:class:`memory_core.interface.Store`: typed errors that name the argument, the
``session_id``/``conversation_id`` alias, defaults and limits, and the capability rules
(an argument the store cannot honour warns once, or raises when ``strict``; a limit
above the store's cap is clamped with a warning; a call the store does not support is
refused with :class:`~memory_core.errors.NotSupportedError`).
"""

from __future__ import annotations

import inspect
from typing import Any, Literal, Protocol
from uuid import UUID

from . import requests as rq
from .capabilities import Capabilities
from .embedding import Embedder
from .errors import (
    InvalidArgumentTypeError,
    InvalidRequestError,
    MissingIdentifierError,
    NotSupportedError,
)
from .interface import Store
from .limits import Limits
from .models import EntityRef
from .validation import (
    check_datetime,
    check_entity_refs,
    check_limit,
    check_metadata,
    check_optional_identifier,
    check_role,
    check_str,
    check_uuid,
    simple_message,
)
from .warning_channel import warn_capability

ExtractionMode = Literal["auto", "skip", "explicit"]
# Calls that take a user_identifier on every backend: creating a conversation records it,
# listing conversations filters by it. Elsewhere it needs ``user_scoped_calls``.
USER_FILTER_METHODS = frozenset(
    {
        "create_conversation",
        "list_conversations",
        "list_conversations_page",
        "add_preference",
        "search_preferences",
        "list_preferences",
        "supersede_preference",
        "delete_preference",
        "add_fact",
        "search_facts",
        "facts_about",
        "delete_fact",
        "start_trace",
        "add_step",
        "record_tool_call",
        "complete_trace",
        "link_trace",
        "get_trace",
        "list_traces",
        "list_traces_page",
        "tool_stats",
        "similar_traces",
        "search_steps",
    }
)
UNSCOPED_WORKAROUND = (
    "this backend scopes data by conversation, not by user; pass user_identifier to "
    "create_conversation (it is recorded there) or list_conversations (it filters by it)"
)
# Entities belong to a tenant only when the backend is opened multi-tenant.
ENTITY_METHODS = frozenset(
    {
        "add_entity",
        "find_entities",
        "delete_entity",
        "search_entities",
        "get_entity",
        "get_entity_by_name",
        "update_entity",
        "merge_entities",
        "add_relationship",
        "list_relationships",
        "related_entities",
        "delete_relationship",
    }
)
SHARED_ENTITIES = (
    "entities are shared by every user of this store; open it with multi_tenant=True "
    "(where the backend has it) to keep them per user"
)
BATCH_KEYS = frozenset({"role", "content", "metadata", "timestamp"})


class Extractor(Protocol):
    """Finds entity mentions in a message (``extraction_mode='auto'``)."""

    def __call__(self, text: str) -> Any:
        """Return ``list[EntityRef]`` (or an awaitable of it)."""
        ...


class Policy:
    """The checks and capability rules of one :class:`~memory_core.MemoryBackend`."""

    def __init__(self, store: Store, *, strict: bool, extractor: Extractor | None) -> None:
        self.store = store
        self.strict = strict
        self.extractor = extractor
        self._warned: set[tuple[str, str]] = set()

    @property
    def name(self) -> str:
        return self.store.name

    @property
    def capabilities(self) -> Capabilities:
        return self.store.capabilities

    @property
    def limits(self) -> Limits:
        return self.store.limits

    @property
    def multi_tenant(self) -> bool:
        return self.store.multi_tenant

    @property
    def embedder(self) -> Embedder | None:
        return self.store.embedder

    def refuse(self, method: str, message: str, workaround: str) -> None:
        raise NotSupportedError(self.name, method, message, workaround)

    def require(self, flag: str, method: str, workaround: str) -> None:
        if not self.capabilities.supports(flag):
            instead = self.store.workarounds.get(flag, workaround)
            self.refuse(method, f"not supported by the {self.name} backend", instead)

    def drop(self, method: str, argument: str, workaround: str) -> None:
        """An argument the backend cannot honour: raise when strict, else warn once."""
        if self.strict:
            self.refuse(method, f"argument {argument!r} cannot be honoured", workaround)
        if (method, argument) not in self._warned:
            self._warned.add((method, argument))
            warn_capability(
                f"{self.name}.{method}: argument {argument!r} is not supported and was "
                f"dropped. {workaround}"
            )

    def scope(self, method: str, user_identifier: Any) -> rq.Scope:
        """The caller's scope. A ``user_identifier`` the backend cannot honour on this
        method (no ``user_scoped_calls``) is dropped: a warning, or strict: refused."""
        user = check_optional_identifier(
            user_identifier, "user_identifier", self.limits, plain=True
        )
        if self.multi_tenant and user is None:
            raise InvalidRequestError(
                "is required when the backend is multi-tenant", argument="user_identifier"
            )
        if user is None:
            return rq.UNSCOPED
        if not self.capabilities.user_scoped_calls and method not in USER_FILTER_METHODS:
            self.drop(method, "user_identifier", UNSCOPED_WORKAROUND)
            return rq.UNSCOPED
        if method in ENTITY_METHODS and not self.multi_tenant:
            self.drop(method, "user_identifier", SHARED_ENTITIES)
            return rq.UNSCOPED
        return rq.Scope(user_identifier=user, tenant=user if self.multi_tenant else None)

    def target(
        self, method: str, session_id: Any, conversation_id: Any, user_identifier: Any
    ) -> rq.Target:
        if isinstance(session_id, UUID):
            # A UUID is a conversation id (e.g. the Conversation.id a call returned), never
            # a session name: it names that conversation, as conversation_id would, and
            # still wins over a conversation_id given alongside.
            session: str | None = None
            conversation: UUID | None = session_id
            if conversation_id is not None:
                check_uuid(conversation_id, "conversation_id")
        else:
            session = check_optional_identifier(session_id, "session_id", self.limits, plain=True)
            conversation = (
                None if conversation_id is None else check_uuid(conversation_id, "conversation_id")
            )
        if session is None and conversation is None:
            # Both a TypeError (what the reference raises for CRUD) and a ValueError (what
            # it raises for search and context).
            raise MissingIdentifierError(
                "session_id or conversation_id is required", argument="session_id"
            )
        return rq.Target(
            session_id=session,
            conversation_id=conversation,
            scope=self.scope(method, user_identifier),
        )

    def read_limit(self, method: str, limit: Any) -> int:
        caps = self.capabilities
        if limit is None:
            return caps.default_messages_per_read
        return self.clamp(
            method,
            check_limit(limit),
            caps.max_messages_per_read,
            "older messages cannot be read from this backend",
        )

    def clamp(self, method: str, value: int, cap: int | None, why: str) -> int:
        """``value``, or ``cap`` with a :class:`CapabilityWarning` when it is larger."""
        if cap is None or value <= cap:
            return value
        warn_capability(f"{self.name}.{method}: limit={value} clamped to {cap}; {why}")
        return cap

    def search_limit(self, method: str, limit: Any) -> int:
        cap = self.capabilities.max_search_hits
        return self.clamp(method, check_limit(limit), cap, "the backend returns no more hits")

    async def mentions(
        self, method: str, content: str, mode: Any, explicit: Any, extract: bool
    ) -> list[EntityRef]:
        if mode not in ("auto", "skip", "explicit"):
            raise InvalidRequestError(
                f"{mode!r} is not one of 'auto', 'skip', 'explicit'", argument="extraction_mode"
            )
        refs = check_entity_refs(explicit, limits=self.limits)
        if refs and mode != "explicit":
            raise InvalidRequestError(
                "is only used with extraction_mode='explicit'", argument="explicit_mentions"
            )
        if mode == "explicit" and refs and not self.capabilities.explicit_mentions:
            self.drop(method, "explicit_mentions", "this backend stores no mentions")
            return []
        if mode == "auto" and extract and self.extractor is not None:
            found = self.extractor(content)
            if inspect.isawaitable(found):
                found = await found
            return check_entity_refs(found, "extractor result", self.limits)
        return refs

    async def embed(self, texts: list[str], wanted: bool) -> list[list[float]] | None:
        if not wanted or self.embedder is None or not texts:
            return None
        return await self.embedder.embed(texts)

    async def batch_items(self, messages: Any, extract: bool) -> list[rq.NewMessage]:
        if messages is None:
            raise InvalidArgumentTypeError("is required", argument="messages")
        if not isinstance(messages, list | tuple):
            raise InvalidArgumentTypeError(
                f"must be a list of dicts, got {type(messages).__name__}", argument="messages"
            )
        caps = self.capabilities
        max_chars = self.limits.max_content_chars
        no_extraction = not (extract and self.extractor is not None)
        items: list[rq.NewMessage] = []
        for i, raw in enumerate(messages):
            simple = simple_message(raw, max_chars) if no_extraction else None
            if simple is not None:
                items.append(
                    rq.NewMessage(role=simple[0], content=simple[1], metadata={}, timestamp=None)
                )
                continue
            where = f"messages[{i}]"
            if not isinstance(raw, dict):
                raise InvalidArgumentTypeError(
                    f"must be a dict, got {type(raw).__name__}", argument=where
                )
            unknown = set(raw) - BATCH_KEYS
            if unknown:
                raise InvalidRequestError(
                    f"unknown keys {sorted(unknown)} (allowed: {sorted(BATCH_KEYS)})",
                    argument=where,
                )
            role = check_role(raw.get("role"), f"{where}.role")
            content = check_str(raw.get("content"), f"{where}.content", max_chars=max_chars)
            meta = check_metadata(raw.get("metadata"), f"{where}.metadata", self.limits)
            stamp = raw.get("timestamp")
            when = None if stamp is None else check_datetime(stamp, f"{where}.timestamp")
            if meta and not caps.message_metadata:
                self.drop("add_messages_batch", "metadata", "keep metadata in your application")
                meta = {}
            if when is not None and not caps.caller_timestamps:
                self.drop("add_messages_batch", "timestamp", "the store sets timestamps")
                when = None
            mentions: list[EntityRef] = []
            if extract and self.extractor is not None:
                mentions = await self.mentions("add_messages_batch", content, "auto", None, True)
            items.append(
                rq.NewMessage(
                    role=role, content=content, metadata=meta, timestamp=when, mentions=mentions
                )
            )
        return items
