"""The contract: :class:`MemoryBackend`, the one async API every backend implements.

Public methods live here, once. Each checks its arguments (a typed error naming the
argument, before anything is written), resolves the ``session_id``/``conversation_id``
alias, applies defaults, limits and capability rules, and then calls a protected hook
(``_add_message``, ``_get_conversation`` …) with a validated request from
:mod:`memory_core.requests`. A backend subclass declares ``name`` and ``capabilities`` and
implements the hooks; the hooks of capabilities it does not claim are never called.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, Self
from uuid import UUID

import anyio

from . import requests as rq
from .capabilities import Capabilities
from .embedding import Embedder
from .errors import (
    CapabilityWarning,
    ConfigurationError,
    InvalidArgumentTypeError,
    InvalidRequestError,
    MemoryCoreError,
    MissingIdentifierError,
    NotSupportedError,
    SessionRequiredError,
    TransportError,
)
from .limits import DEFAULT_LIMITS, Limits
from .models import (
    Conversation,
    ConversationSummary,
    Entity,
    EntityRef,
    ExtractionStatus,
    Message,
    MessageRole,
    SessionInfo,
)
from .summary import extractive_summary, format_context, key_terms, run_summarizer
from .validation import (
    check_bool,
    check_datetime,
    check_entity_refs,
    check_entity_type,
    check_identifier,
    check_int,
    check_limit,
    check_metadata,
    check_optional_identifier,
    check_order,
    check_role,
    check_str,
    check_threshold,
    check_uuid,
    parse_uuid,
    simple_message,
)

if TYPE_CHECKING:
    from .transfer.hooks import BulkTransfer

ExtractionMode = Literal["auto", "skip", "explicit"]
# Calls that take a user_identifier on every backend: creating a conversation records it,
# listing conversations filters by it. Elsewhere it needs ``user_scoped_calls``.
USER_FILTER_METHODS = frozenset({"create_conversation", "list_conversations"})
UNSCOPED_WORKAROUND = (
    "this backend scopes data by conversation, not by user; pass user_identifier to "
    "create_conversation (it is recorded there) or list_conversations (it filters by it)"
)
# Entities belong to a tenant only when the backend is opened multi-tenant.
ENTITY_METHODS = frozenset({"add_entity", "find_entities", "delete_entity"})
SHARED_ENTITIES = (
    "entities are shared by every user of this store; open it with multi_tenant=True "
    "(where the backend has it) to keep them per user"
)
# The optional hooks a capability flag promises. A subclass that declares the flag without
# overriding every hook listed fails when it is defined (``__init_subclass__``).
# Hooks with a working default that a backend may override for a better source.
DEFAULTED_HOOKS = ("_get_context", "_bulk_transfer")
HOOKS_FOR_FLAG: dict[str, tuple[str, ...]] = {
    "delete_message": ("_delete_message",),
    "list_sessions": ("_list_sessions",),
    "observations": ("_get_observations",),
    "reflections": ("_get_reflections",),
    "extraction_status": ("_get_extraction_status",),
    "entities": ("_add_entity", "_find_entities"),
    "delete_entity": ("_delete_entity",),
}
BATCH_KEYS = frozenset({"role", "content", "metadata", "timestamp"})


_LIBRARY_MODULES = ("memory_core", "backends")


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning point at the first frame outside memory-core
    and any backend (a third-party one too: frames of a ``MemoryBackend`` method): the
    line of the caller's ``await backend.method(...)``, however deep in the library the
    warning is raised (coroutine frames chain like plain calls)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        inside = module.partition(".")[0] in _LIBRARY_MODULES
        if not inside and not isinstance(frame.f_locals.get("self"), MemoryBackend):
            return level
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return 2


def warn_capability(message: str) -> None:
    """Issue a :class:`CapabilityWarning` attributed to the caller's line (see above)."""
    warnings.warn(message, CapabilityWarning, stacklevel=_caller_stacklevel())


class Extractor(Protocol):
    """Finds entity mentions in a message (``extraction_mode='auto'``)."""

    def __call__(self, text: str) -> Any:
        """Return ``list[EntityRef]`` (or an awaitable of it)."""
        ...


def _report(
    stored: list[Message],
    size: int,
    on_batch_complete: rq.BatchCallback | None,
    on_progress: rq.ProgressCallback | None,
) -> None:
    """Run the batch callbacks for messages already stored, ``size`` at a time."""
    for number, start in enumerate(range(0, len(stored), size)):
        if on_batch_complete is not None:
            on_batch_complete(number, stored[start : start + size])
        if on_progress is not None:
            on_progress(min(start + size, len(stored)), len(stored))


class MemoryBackend(ABC):
    """Conversation memory behind one async API.

    Open one with :func:`memory_core.open_backend` and use it as an async context manager
    (or call :meth:`connect` / :meth:`close`). Methods connect lazily on first use.

    Options shared by every backend:

    ``strict``
        raise :class:`NotSupportedError` for an argument the backend cannot honour,
        instead of warning once and dropping it.
    ``multi_tenant``
        every call must carry ``user_identifier`` and sees only that user's data.
    ``embedder``
        an :class:`~memory_core.embedding.Embedder`; enables vector search where the
        backend has ``vector_search``.
    ``extractor``
        a callable ``text -> list[EntityRef]`` run for ``extraction_mode='auto'``.
    ``summarizer``
        a callable ``list[Message] -> str`` (sync or async) for conversation summaries.
    ``limits``
        a :class:`~memory_core.limits.Limits`: sizes of content, metadata, queries and
        identifiers (default :data:`~memory_core.limits.DEFAULT_LIMITS`).
    """

    name: ClassVar[str] = "abstract"
    # Declared once per class; a backend whose flags depend on an option (NAMS session
    # names) sets its own per instance in ``__init__``, before calling this ``__init__``.
    # Callers read ``backend.capabilities``: what THIS object does.
    capabilities: Capabilities = Capabilities()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        caps = getattr(cls, "capabilities", None)
        if not isinstance(caps, Capabilities):
            return  # declared per instance (a property): checked when it is read
        missing = [
            f"{flag} needs {hook}()"
            for flag, hooks in HOOKS_FOR_FLAG.items()
            if caps.supports(flag)
            for hook in hooks
            if getattr(cls, hook) is getattr(MemoryBackend, hook)
        ]
        if missing:
            raise TypeError(
                f"{cls.__qualname__} claims capabilities whose hooks it does not implement: "
                f"{'; '.join(missing)}. Implement them, or set the flags to False."
            )

    def __init__(
        self,
        *,
        strict: bool = False,
        multi_tenant: bool = False,
        embedder: Embedder | None = None,
        extractor: Extractor | None = None,
        summarizer: rq.Summarizer | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.strict = check_bool(strict, "strict")
        if limits is not None and not isinstance(limits, Limits):
            raise ConfigurationError("limits must be a memory_core.Limits")
        self.limits = limits or DEFAULT_LIMITS
        self.multi_tenant = check_bool(multi_tenant, "multi_tenant")
        caps = self.capabilities
        indexed = caps.max_indexed_bytes
        if indexed is not None and self.limits.max_identifier_bytes > indexed:
            raise ConfigurationError(
                f"limits.max_identifier_bytes={self.limits.max_identifier_bytes} is above what "
                f"the {self.name} backend can index ({indexed} bytes)"
            )
        if multi_tenant and not caps.multi_tenant:
            self._refuse(
                "open",
                "multi_tenant=True is not supported",
                "scope data per user with separate stores or conversations",
            )
        if embedder is not None:
            if not isinstance(embedder, Embedder):
                raise ConfigurationError("embedder must have .dimensions and async .embed()")
            if not caps.vector_search:
                self._refuse(
                    "open",
                    "an embedder cannot be used (no vector search)",
                    "open the backend without an embedder; text search still works",
                )
        if extractor is not None:
            if not callable(extractor):
                raise ConfigurationError("extractor must be callable")
            if not caps.explicit_mentions:
                self._refuse(
                    "open",
                    "an extractor cannot be used (mentions are not stored)",
                    "run extraction in your application",
                )
        if summarizer is not None and not callable(summarizer):
            raise ConfigurationError("summarizer must be callable")
        self.embedder = embedder
        self.extractor = extractor
        self.summarizer = summarizer
        self._state: Literal["new", "open", "closed"] = "new"
        self._connect_lock = anyio.Lock()
        self._warned: set[tuple[str, str]] = set()

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Self:
        """Build the backend for ``url``; unknown options raise ``ConfigurationError``."""
        try:
            return cls(url, **options)  # type: ignore[call-arg,arg-type]
        except TypeError as exc:
            if isinstance(exc, InvalidArgumentTypeError):
                raise
            raise ConfigurationError(f"{cls.name} backend: {exc}") from None

    # ------------------------------------------------------------------ lifecycle

    async def connect(self) -> None:
        """Open connections and prepare storage. Calling it again is a no-op."""
        async with self._connect_lock:
            if self._state == "closed":
                raise TransportError(
                    f"{self.name} backend is closed; open a new one", retryable=False
                )
            if self._state == "new":
                await self._connect()
                self._state = "open"

    async def close(self) -> None:
        """Release connections. Calling it again is a no-op."""
        if self._state == "open":
            await self._close()
        self._state = "closed"

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(
        self,
        _exc_type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _ready(self) -> None:
        if self._state != "open":
            await self.connect()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()} {self._state}>"

    def describe(self) -> str:
        """Where this backend stores data, with no secret in it."""
        return self.name

    # ------------------------------------------------------------------ helpers

    def _refuse(self, method: str, message: str, workaround: str) -> None:
        raise NotSupportedError(self.name, method, message, workaround)

    def _require(self, flag: str, method: str, workaround: str) -> None:
        if not self.capabilities.supports(flag):
            self._refuse(method, f"not supported by the {self.name} backend", workaround)

    def _drop(self, method: str, argument: str, workaround: str) -> None:
        """An argument the backend cannot honour: raise when strict, else warn once."""
        if self.strict:
            self._refuse(method, f"argument {argument!r} cannot be honoured", workaround)
        if (method, argument) not in self._warned:
            self._warned.add((method, argument))
            warn_capability(
                f"{self.name}.{method}: argument {argument!r} is not supported and was "
                f"dropped. {workaround}"
            )

    def _scope(self, method: str, user_identifier: Any) -> rq.Scope:
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
            self._drop(method, "user_identifier", UNSCOPED_WORKAROUND)
            return rq.UNSCOPED
        if method in ENTITY_METHODS and not self.multi_tenant:
            self._drop(method, "user_identifier", SHARED_ENTITIES)
            return rq.UNSCOPED
        return rq.Scope(user_identifier=user, tenant=user if self.multi_tenant else None)

    def _target(
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
            scope=self._scope(method, user_identifier),
        )

    def _read_limit(self, method: str, limit: Any) -> int:
        caps = self.capabilities
        if limit is None:
            return caps.default_messages_per_read
        return self._clamp(
            method,
            check_limit(limit),
            caps.max_messages_per_read,
            "older messages cannot be read from this backend",
        )

    def _clamp(self, method: str, value: int, cap: int | None, why: str) -> int:
        """``value``, or ``cap`` with a :class:`CapabilityWarning` when it is larger."""
        if cap is None or value <= cap:
            return value
        warn_capability(f"{self.name}.{method}: limit={value} clamped to {cap}; {why}")
        return cap

    def _search_limit(self, method: str, limit: Any) -> int:
        cap = self.capabilities.max_search_hits
        return self._clamp(method, check_limit(limit), cap, "the backend returns no more hits")

    async def _mentions(
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
            self._drop(method, "explicit_mentions", "this backend stores no mentions")
            return []
        if mode == "auto" and extract and self.extractor is not None:
            found = self.extractor(content)
            if inspect.isawaitable(found):
                found = await found
            return check_entity_refs(found, "extractor result", self.limits)
        return refs

    async def _embed(self, texts: list[str], wanted: bool) -> list[list[float]] | None:
        if not wanted or self.embedder is None or not texts:
            return None
        return await self.embedder.embed(texts)

    # ------------------------------------------------------------------ writes

    async def add_message(
        self,
        session_id: str | UUID | None = None,
        role: MessageRole | str | None = None,
        content: str | None = None,
        *,
        conversation_id: Any = None,
        extract_entities: bool = True,
        extract_relations: bool = True,
        generate_embedding: bool = True,
        metadata: dict[str, Any] | None = None,
        extraction_mode: ExtractionMode = "auto",
        explicit_mentions: list[Any] | None = None,
        user_identifier: str | None = None,
        idempotency_key: str | None = None,
    ) -> Message:
        """Store one message at the end of a conversation and return it.

        ``idempotency_key`` (a memory-core extension): replaying the same key in the same
        conversation returns the stored message and writes nothing. Conversations are
        created on first write where the backend has ``auto_create_conversation``.

        ``extraction_mode``: ``"auto"`` runs the backend's ``extractor`` (if any) unless
        ``extract_entities=False``; ``"explicit"`` links ``explicit_mentions``; ``"skip"``
        links nothing. ``extract_relations`` is accepted for compatibility with the
        reference and checked, but no backend extracts relations.
        """
        target = self._target("add_message", session_id, conversation_id, user_identifier)
        role_ = check_role(role)
        text = check_str(content, "content", max_chars=self.limits.max_content_chars)
        meta = check_metadata(metadata, "metadata", self.limits)
        extract = check_bool(extract_entities, "extract_entities")
        check_bool(extract_relations, "extract_relations")
        embed = check_bool(generate_embedding, "generate_embedding")
        key = (
            None
            if idempotency_key is None
            else check_str(
                idempotency_key,
                "idempotency_key",
                allow_empty=False,
                max_chars=self.limits.max_content_chars,
            )
        )
        caps = self.capabilities
        if meta and not caps.message_metadata:
            self._drop("add_message", "metadata", "keep metadata in your application")
            meta = {}
        if key is not None and not caps.idempotency_keys:
            self._drop("add_message", "idempotency_key", "de-duplicate replays yourself")
            key = None
        refs = await self._mentions(
            "add_message", text, extraction_mode, explicit_mentions, extract
        )
        vectors = await self._embed([text], embed)
        await self._ready()
        return await self._add_message(
            rq.AddMessage(
                target=target,
                role=role_,
                content=text,
                metadata=meta,
                idempotency_key=key,
                mentions=refs,
                embedding=vectors[0] if vectors else None,
            )
        )

    async def add_messages_batch(
        self,
        session_id: str | UUID | None = None,
        messages: list[dict[str, Any]] | None = None,
        *,
        conversation_id: Any = None,
        batch_size: int = 100,
        generate_embeddings: bool = True,
        extract_entities: bool = False,
        extract_relations: bool = True,
        on_progress: rq.ProgressCallback | None = None,
        on_batch_complete: rq.BatchCallback | None = None,
        user_identifier: str | None = None,
    ) -> list[Message]:
        """Store message dicts (``role``, ``content``, optional ``metadata``, ``timestamp``).

        Every message is checked before anything is written. Where the backend has no
        ``max_bulk_messages`` the whole call is one transaction (all or nothing) and the
        callbacks run after it, once per ``batch_size`` messages. Otherwise (NAMS) it is
        one request per batch of ``batch_size`` (capped by ``max_bulk_messages``), the
        callbacks run after each, and an error carries ``written``: how many messages
        were stored before it. ``on_progress(done, total)`` and
        ``on_batch_complete(batch_number, stored)``.
        ``extract_relations`` is accepted for compatibility and checked, but unused.
        """
        target = self._target("add_messages_batch", session_id, conversation_id, user_identifier)
        size = check_limit(batch_size, "batch_size")
        embed = check_bool(generate_embeddings, "generate_embeddings")
        extract = check_bool(extract_entities, "extract_entities")
        check_bool(extract_relations, "extract_relations")
        for name, callback in (
            ("on_progress", on_progress),
            ("on_batch_complete", on_batch_complete),
        ):
            if callback is not None and not callable(callback):
                raise InvalidArgumentTypeError("must be callable", argument=name)
        items = await self._batch_items(messages, extract)
        if not items:
            return []
        vectors = await self._embed([m.content for m in items], embed)
        if vectors:
            items = [
                dataclasses.replace(m, embedding=v) for m, v in zip(items, vectors, strict=True)
            ]
        cap = self.capabilities.max_bulk_messages
        await self._ready()
        if cap is None:
            # The store can take the whole call in one transaction: all or nothing.
            stored = await self._add_messages(rq.AddMessages(target=target, messages=items))
            _report(stored, size, on_batch_complete, on_progress)
            return stored
        step = min(size, cap)
        stored = []
        for number, start in enumerate(range(0, len(items), step)):
            try:
                chunk = await self._add_messages(
                    rq.AddMessages(target=target, messages=items[start : start + step])
                )
            except MemoryCoreError as exc:
                exc.written = len(stored)
                raise
            stored.extend(chunk)
            if on_batch_complete is not None:
                on_batch_complete(number, chunk)
            if on_progress is not None:
                on_progress(len(stored), len(items))
        return stored

    async def bulk_add_messages(
        self,
        session_id: str | UUID | None = None,
        messages: list[dict[str, Any]] | None = None,
        *,
        conversation_id: Any = None,
        **kwargs: Any,
    ) -> list[Message]:
        """The portable batch name: same as :meth:`add_messages_batch`.

        On NAMS a list longer than the bulk limit (100) is sent as ordered chunks; an
        empty list returns ``[]`` without a request.
        """
        return await self.add_messages_batch(
            session_id, messages, conversation_id=conversation_id, **kwargs
        )

    async def _batch_items(self, messages: Any, extract: bool) -> list[rq.NewMessage]:
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
                self._drop("add_messages_batch", "metadata", "keep metadata in your application")
                meta = {}
            if when is not None and not caps.caller_timestamps:
                self._drop("add_messages_batch", "timestamp", "the store sets timestamps")
                when = None
            mentions: list[EntityRef] = []
            if extract and self.extractor is not None:
                mentions = await self._mentions("add_messages_batch", content, "auto", None, True)
            items.append(
                rq.NewMessage(
                    role=role, content=content, metadata=meta, timestamp=when, mentions=mentions
                )
            )
        return items

    async def create_conversation(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        user_identifier: str | None = None,
    ) -> Conversation:
        """Create a conversation, or return the existing one for this session.

        Idempotent where the caller names sessions (``client_chosen_ids``). Where the
        store issues ids (NAMS with ``session_names="server"``) every call creates one:
        use the returned ``Conversation.id`` (also its ``session_id``) in later calls.
        """
        target = self._target("create_conversation", session_id, conversation_id, user_identifier)
        heading = check_optional_identifier(title, "title", self.limits)
        meta = check_metadata(metadata, "metadata", self.limits)
        if heading is not None and not self.capabilities.conversation_titles:
            self._drop("create_conversation", "title", "keep the title in metadata")
            heading = None
        await self._ready()
        return await self._create_conversation(
            rq.CreateConversation(target=target, title=heading, metadata=meta)
        )

    # ------------------------------------------------------------------ reads

    async def get_conversation(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        limit: int | None = None,
        since: datetime | None = None,
        user_identifier: str | None = None,
    ) -> Conversation:
        """A conversation with its newest ``limit`` messages, returned oldest first.

        ``limit=None`` uses the backend's default (1,000; 200 on NAMS). A limit above the
        backend's cap is clamped with a :class:`CapabilityWarning`. ``since`` keeps only
        messages created strictly after it (in the store where ``server_side_since``,
        otherwise on the fetched page).
        """
        target = self._target("get_conversation", session_id, conversation_id, user_identifier)
        count = self._read_limit("get_conversation", limit)
        after = None if since is None else check_datetime(since, "since")
        await self._ready()
        conversation = await self._get_conversation(
            rq.GetConversation(target=target, limit=count, since=after)
        )
        if after is not None and not self.capabilities.server_side_since:
            kept = [m for m in conversation.messages if m.created_at > after]
            conversation = conversation.model_copy(update={"messages": kept})
        return conversation

    async def list_conversations(
        self, *, limit: int = 100, user_identifier: str | None = None
    ) -> list[Conversation]:
        """Conversation headers (no messages), most recently updated first."""
        count = check_limit(limit)
        scope = self._scope("list_conversations", user_identifier)
        await self._ready()
        return await self._list_conversations(rq.ListConversations(limit=count, scope=scope))

    async def list_sessions(
        self,
        *,
        prefix: str | None = None,
        limit: int = 100,
        offset: int = 0,
        order_by: str = "updated_at",
        order_dir: str = "desc",
        user_identifier: str | None = None,
    ) -> list[SessionInfo]:
        """One row per session with message count and first/last message previews.

        ``order_by`` is one of updated_at, created_at, message_count, session_id; ties are
        broken by session_id ascending so paging with ``offset`` is stable.
        """
        self._require("list_sessions", "list_sessions", "use list_conversations")
        head = (
            None
            if prefix is None
            else check_str(prefix, "prefix", max_chars=self.limits.max_identifier_bytes)
        )
        count = check_limit(limit)
        skip = check_int(offset, "offset", minimum=0)
        field, direction = check_order(order_by, order_dir)
        scope = self._scope("list_sessions", user_identifier)
        await self._ready()
        return await self._list_sessions(
            rq.ListSessions(
                prefix=head,
                limit=count,
                offset=skip,
                order_by=field,
                order_dir=direction,  # type: ignore[arg-type]
                scope=scope,
            )
        )

    async def search_messages(
        self,
        query: str,
        *,
        session_id: str | UUID | None = None,
        conversation_id: Any = None,
        limit: int = 10,
        threshold: float | None = None,
        metadata_filters: dict[str, Any] | None = None,
        user_identifier: str | None = None,
    ) -> list[Message]:
        """Messages matching ``query``, best first, each with a ``score`` in 0..1.

        Scoped to one session when one is given; across every session (of the tenant)
        otherwise, where the backend has ``search_global``. ``threshold`` drops hits scoring
        below it. ``metadata_filters`` keeps messages whose top-level metadata keys equal
        the given values exactly; a backend that cannot filter raises rather than ignore.
        """
        text = check_str(query, "query", allow_empty=False, max_chars=self.limits.max_query_chars)
        count = self._search_limit("search_messages", limit)
        cut = check_threshold(threshold)
        filters = check_metadata(metadata_filters, "metadata_filters", self.limits)
        caps = self.capabilities
        target: rq.Target | None = None
        if session_id is not None or conversation_id is not None:
            target = self._target("search_messages", session_id, conversation_id, user_identifier)
        elif not caps.search_global:
            raise SessionRequiredError(
                self.name,
                "search_messages",
                "session_id or conversation_id is required",
                "pass the conversation to search",
            )
        scope = self._scope("search_messages", user_identifier)
        if cut is not None and not caps.search_threshold:
            self._drop("search_messages", "threshold", "filter on Message.score yourself")
            cut = None
        if filters and not caps.search_metadata_filters:
            self._refuse(
                "search_messages",
                "metadata_filters cannot be applied",
                "filter the returned messages in your application",
            )
        vectors = await self._embed([text], True)
        await self._ready()
        return await self._search_messages(
            rq.SearchMessages(
                query=text,
                target=target,
                limit=count,
                threshold=cut,
                metadata_filters=filters,
                query_embedding=vectors[0] if vectors else None,
                scope=scope,
            )
        )

    async def get_context(
        self,
        query: str | None = None,
        *,
        session_id: str | UUID | None = None,
        conversation_id: Any = None,
        max_messages: int = 10,
        max_hits: int = 5,
        user_identifier: str | None = None,
    ) -> str:
        """Text to put in a prompt: recent messages plus, with a ``query``, relevant ones.

        The format is :func:`memory_core.summary.format_context`. Raises a ``ValueError``
        (:class:`~memory_core.errors.MissingIdentifierError`) without a session.
        """
        target = self._target("get_context", session_id, conversation_id, user_identifier)
        text = (
            None
            if query is None
            else check_str(query, "query", max_chars=self.limits.max_query_chars)
        )
        recent = check_limit(max_messages, "max_messages")
        hits = check_limit(max_hits, "max_hits")
        await self._ready()
        return await self._get_context(
            rq.GetContext(target=target, query=text or None, max_messages=recent, max_hits=hits)
        )

    async def get_conversation_summary(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
        summarizer: rq.Summarizer | None = None,
    ) -> ConversationSummary:
        """A summary of the conversation: the backend's ``summarizer`` (or the one passed)
        if any, else a deterministic extractive summary."""
        self._require(
            "conversation_summary",
            "get_conversation_summary",
            "read the conversation and summarise it in your application",
        )
        target = self._target(
            "get_conversation_summary", session_id, conversation_id, user_identifier
        )
        if summarizer is not None and not callable(summarizer):
            raise InvalidArgumentTypeError("must be callable", argument="summarizer")
        await self._ready()
        conversation = await self._get_conversation(
            rq.GetConversation(
                target=target, limit=self.capabilities.default_messages_per_read, since=None
            )
        )
        chosen = summarizer or self.summarizer
        messages = conversation.messages
        text = (await run_summarizer(chosen, messages)) if chosen else extractive_summary(messages)
        return ConversationSummary(
            session_id=conversation.session_id,
            conversation_id=conversation.id,
            summary=text,
            message_count=len(messages),
            first_message_at=messages[0].created_at if messages else None,
            last_message_at=messages[-1].created_at if messages else None,
            key_terms=key_terms(messages),
        )

    async def get_observations(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
    ) -> list[dict[str, Any]]:
        """Server-side observations (NAMS only)."""
        self._require("observations", "get_observations", "summarise messages yourself")
        target = self._target("get_observations", session_id, conversation_id, user_identifier)
        await self._ready()
        return await self._get_observations(target)

    async def get_reflections(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
    ) -> list[dict[str, Any]]:
        """Server-side reflections (NAMS only)."""
        self._require("reflections", "get_reflections", "summarise messages yourself")
        target = self._target("get_reflections", session_id, conversation_id, user_identifier)
        await self._ready()
        return await self._get_reflections(target)

    async def get_extraction_status(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
    ) -> ExtractionStatus:
        """Per-message entity-extraction progress (NAMS only)."""
        self._require(
            "extraction_status",
            "get_extraction_status",
            "extraction is synchronous here: wait_for_extraction() returns True",
        )
        target = self._target("get_extraction_status", session_id, conversation_id, user_identifier)
        await self._ready()
        return await self._get_extraction_status(target)

    async def wait_for_extraction(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        timeout: float = 60.0,
        poll_interval: float = 0.5,
        user_identifier: str | None = None,
    ) -> bool:
        """Wait until extraction is complete: True when it is, False on timeout.

        Where extraction is synchronous (no ``extraction_status``) it returns True at once.
        """
        for name, value in (("timeout", timeout), ("poll_interval", poll_interval)):
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise InvalidRequestError("must be a positive number", argument=name)
        if not self.capabilities.extraction_status:
            return True
        target = self._target("wait_for_extraction", session_id, conversation_id, user_identifier)
        await self._ready()
        with anyio.move_on_after(timeout):
            while True:
                if (await self._get_extraction_status(target)).is_complete:
                    return True
                await anyio.sleep(poll_interval)
        return False

    # ------------------------------------------------------------------ deletes

    async def delete_message(
        self, message_id: Any, *, cascade: bool = True, user_identifier: str | None = None
    ) -> bool:
        """Delete one message and keep the rest in order. False when nothing matched
        (including an id that is not a UUID). ``cascade`` is accepted for compatibility
        and checked: a message's mentions always go with it, and entities never do."""
        self._require(
            "delete_message", "delete_message", "delete the whole conversation with clear_session"
        )
        if not isinstance(message_id, str) and parse_uuid(message_id) is None:
            raise InvalidArgumentTypeError(
                f"must be a UUID or str, got {type(message_id).__name__}", argument="message_id"
            )
        check_bool(cascade, "cascade")
        scope = self._scope("delete_message", user_identifier)
        uuid = parse_uuid(message_id)
        if uuid is None:
            return False
        await self._ready()
        return await self._delete_message(rq.DeleteMessage(message_id=uuid, scope=scope))

    async def clear_session(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
    ) -> bool:
        """Delete a whole conversation. True if something was deleted; a missing session
        is not an error. The session accepts new messages afterwards."""
        target = self._target("clear_session", session_id, conversation_id, user_identifier)
        await self._ready()
        return await self._clear_session(target)

    # ------------------------------------------------------------------ entities

    async def add_entity(
        self,
        name: str,
        type: str,
        *,
        description: str | None = None,
        user_identifier: str | None = None,
    ) -> Entity:
        """Create an entity, or return the existing one with this name and type."""
        self._require("entities", "add_entity", "keep entities in your application")
        label = check_identifier(name, "name", self.limits)
        kind = check_entity_type(type)
        about = (
            None
            if description is None
            else check_str(description, "description", max_chars=self.limits.max_content_chars)
        )
        scope = self._scope("add_entity", user_identifier)
        await self._ready()
        return await self._add_entity(
            rq.AddEntity(name=label, type=kind, description=about, scope=scope)
        )

    async def find_entities(
        self,
        identifier: str,
        limit: int = 8,
        *,
        type: str | None = None,
        user_identifier: str | None = None,
    ) -> list[Entity]:
        """Entities whose id equals ``identifier`` or whose name equals it ignoring case
        (exact matches first; a backend may add close matches after them)."""
        self._require("entities", "find_entities", "keep entities in your application")
        ident = check_identifier(identifier, "identifier", self.limits)
        count = self._search_limit("find_entities", limit)
        kind = None if type is None else check_entity_type(type)
        scope = self._scope("find_entities", user_identifier)
        await self._ready()
        return await self._find_entities(
            rq.FindEntities(identifier=ident, limit=count, type=kind, scope=scope)
        )

    async def delete_entity(self, entity_id: str, *, user_identifier: str | None = None) -> bool:
        """Delete an entity and the mentions that link messages to it (the messages stay).
        False when no entity of the caller has this id."""
        self._require("delete_entity", "delete_entity", "keep entities; they are only linked")
        ident = check_identifier(entity_id, "entity_id", self.limits)
        scope = self._scope("delete_entity", user_identifier)
        await self._ready()
        return await self._delete_entity(rq.DeleteEntity(entity_id=ident, scope=scope))

    # ------------------------------------------------------------------ hooks
    #
    # Every hook receives a request the public method has already checked: arguments are
    # validated and typed, ``session_id``/``conversation_id`` are resolved into a
    # ``Target``, defaults and limits are applied (a read limit is already clamped to
    # ``max_messages_per_read``, a batch is already cut to ``max_bulk_messages``), and
    # capability rules are settled (arguments the backend cannot honour were dropped or
    # refused; a hook whose flag is False is never called). A hook contains storage logic
    # only. It may raise ``NotFoundError``, ``TransportError``, ``AuthenticationError``,
    # ``StoreError`` or ``InvalidRequestError`` (for a limit only the store knows), and
    # must translate every driver or HTTP exception into one of them.

    @abstractmethod
    async def _connect(self) -> None:
        """Open connections and prepare storage (schema, indexes). Called once, by
        :meth:`connect`; raise ``TransportError``/``AuthenticationError``/
        ``ConfigurationError`` when the store cannot be used."""

    @abstractmethod
    async def _close(self) -> None:
        """Release every connection. Called once, only after a successful ``_connect``."""

    @abstractmethod
    async def _add_message(self, req: rq.AddMessage) -> Message:
        """Append one message to ``req.target``'s conversation and return it as stored.

        Creates the conversation where the backend has ``auto_create_conversation``; a
        ``conversation_id``-only target that does not exist raises ``NotFoundError``.
        ``req.idempotency_key`` (only set where ``idempotency_keys``): a stored message
        with the same key in that conversation is returned and nothing is written.
        ``req.mentions`` (only non-empty where ``explicit_mentions``) are linked.
        ``req.embedding`` is set when an embedder is configured.
        """

    @abstractmethod
    async def _add_messages(self, req: rq.AddMessages) -> list[Message]:
        """Append one batch (at most ``max_bulk_messages``) in order, in one transaction
        or request where the store allows, and return the stored messages in order.
        ``NewMessage.timestamp`` is only set where ``caller_timestamps``."""

    @abstractmethod
    async def _create_conversation(self, req: rq.CreateConversation) -> Conversation:
        """Create the conversation of ``req.target`` (or return the existing one, filling
        a title or metadata it lacks) and return its header, without messages."""

    @abstractmethod
    async def _get_conversation(self, req: rq.GetConversation) -> Conversation:
        """The conversation with its newest ``req.limit`` messages, oldest first, created
        strictly after ``req.since`` (filter in the store where ``server_side_since``;
        otherwise the contract filters the returned page). A missing session reads as an
        empty conversation with a stable id where ``auto_create_conversation``, else
        ``NotFoundError``."""

    @abstractmethod
    async def _list_conversations(self, req: rq.ListConversations) -> list[Conversation]:
        """At most ``req.limit`` conversation headers of ``req.scope``, most recently
        updated first."""

    @abstractmethod
    async def _search_messages(self, req: rq.SearchMessages) -> list[Message]:
        """At most ``req.limit`` hits, best first, each with ``score`` in 0..1 on the scale
        of :mod:`memory_core.scoring` (cosine for vector hits). ``req.target`` is ``None``
        only where ``search_global``; ``req.threshold`` and ``req.metadata_filters`` are
        only set where the backend declared it honours them, and must then be applied."""

    @abstractmethod
    async def _clear_session(self, target: rq.Target) -> bool:
        """Delete the whole conversation of ``target``: True if something was deleted,
        False (not an error) when there was nothing."""

    async def _get_context(self, req: rq.GetContext) -> str:
        """Prompt text for ``req.target``. The default (any backend) is the newest
        ``req.max_messages`` plus, with ``req.query``, up to ``req.max_hits`` search hits
        not already among them, formatted by :func:`~memory_core.summary.format_context`.
        Override only when the store has a better source (NAMS: its context endpoint)."""
        conversation = await self._get_conversation(
            rq.GetConversation(target=req.target, limit=req.max_messages, since=None)
        )
        relevant: Sequence[Message] = []
        if req.query:
            seen = {m.id for m in conversation.messages}
            hits = await self._search_messages(
                rq.SearchMessages(
                    query=req.query,
                    target=req.target,
                    limit=req.max_hits + len(seen),
                    threshold=None,
                    metadata_filters={},
                    query_embedding=None,
                    scope=req.target.scope,
                )
            )
            relevant = [m for m in hits if m.id not in seen][: req.max_hits]
        return format_context(conversation.messages, relevant)

    def _unimplemented(self, method: str) -> NotSupportedError:
        return NotSupportedError(
            self.name,
            method,
            "not implemented by this backend",
            "check backend.capabilities before calling",
        )

    # Optional hooks: required exactly when their capability flag is True (checked when a
    # subclass is defined, see HOOKS_FOR_FLAG).

    async def _list_sessions(self, req: rq.ListSessions) -> list[SessionInfo]:
        """``list_sessions``: rows of ``req.scope``'s sessions whose id starts with
        ``req.prefix`` (a literal prefix: no pattern characters), ordered by
        ``req.order_by``/``req.order_dir`` with ties broken by session id ascending, then
        ``req.offset`` skipped and ``req.limit`` kept."""
        raise self._unimplemented("list_sessions")

    async def _delete_message(self, req: rq.DeleteMessage) -> bool:
        """``delete_message``: delete one message of ``req.scope`` and its mentions, keep
        the rest in order. False when no such message is visible to the caller."""
        raise self._unimplemented("delete_message")

    async def _get_observations(self, target: rq.Target) -> list[dict[str, Any]]:
        """``observations``: the store's observation records for ``target``."""
        raise self._unimplemented("get_observations")

    async def _get_reflections(self, target: rq.Target) -> list[dict[str, Any]]:
        """``reflections``: the store's reflection records for ``target``."""
        raise self._unimplemented("get_reflections")

    async def _get_extraction_status(self, target: rq.Target) -> ExtractionStatus:
        """``extraction_status``: per-message extraction progress for ``target``."""
        raise self._unimplemented("get_extraction_status")

    async def _add_entity(self, req: rq.AddEntity) -> Entity:
        """``entities``: create the entity, or return the one of ``req.scope`` with the
        same name and type."""
        raise self._unimplemented("add_entity")

    async def _find_entities(self, req: rq.FindEntities) -> list[Entity]:
        """``entities``: at most ``req.limit`` entities of ``req.scope`` whose id equals
        ``req.identifier`` or whose name equals it ignoring case, exact matches first."""
        raise self._unimplemented("find_entities")

    async def _delete_entity(self, req: rq.DeleteEntity) -> bool:
        """``delete_entity``: delete the entity of ``req.scope`` and the mentions linking
        messages to it (the messages stay). False when there is no such entity."""
        raise self._unimplemented("delete_entity")

    # ------------------------------------------------------------------ transfer

    def _bulk_transfer(self) -> BulkTransfer | None:
        """Optional fast path of :mod:`memory_core.transfer`: an object that reads and
        writes archive records directly, keeping ids, sequence numbers and timestamps
        (see :class:`memory_core.transfer.BulkTransfer`). ``None`` (the default) means
        transfers go through the public methods."""
        return None
