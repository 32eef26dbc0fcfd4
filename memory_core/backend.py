"""The public API: :class:`MemoryBackend`, the one async class applications call.

Public methods live here, once. Each checks its arguments (a typed error naming the
argument, before anything is written), resolves the ``session_id``/``conversation_id``
alias, applies defaults, limits and capability rules (:mod:`memory_core.policy`), and
then calls a hook of the wrapped :class:`~memory_core.interface.Store` (what a backend
implements) with a validated request from :mod:`memory_core.requests`.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from os import PathLike
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NoReturn, Self
from uuid import UUID

import anyio

from . import erasure, long_term_context, retention
from . import requests as rq
from .capabilities import Capabilities
from .cursors import MAX_CURSOR_CHARS
from .embedding import Embedder
from .erasure import ErasureReport
from .errors import (
    ConfigurationError,
    InvalidArgumentTypeError,
    InvalidRequestError,
    MemoryCoreError,
    NotFoundError,
    SessionRequiredError,
    TransportError,
)
from .limits import Limits
from .long_term import LongTermMethods
from .models import (
    Conversation,
    ConversationPage,
    ConversationSummary,
    Entity,
    EntityRef,
    ExtractionStatus,
    Message,
    MessageRole,
    SessionInfo,
)
from .reasoning import ReasoningMethods
from .retention import ExpiryReport
from .scoring import by_recency, by_session, group_pool
from .stats import StoreStats
from .summary import (
    CHARS_PER_TOKEN,
    approx_tokens,
    extractive_summary,
    key_terms,
    run_summarizer,
)
from .telemetry import Telemetry, instrument, resolve
from .validation import (
    check_bool,
    check_datetime,
    check_entity_type,
    check_half_life,
    check_identifier,
    check_int,
    check_limit,
    check_metadata,
    check_neighbours,
    check_optional_identifier,
    check_order,
    check_role,
    check_str,
    check_threshold,
    check_utf8_bytes,
    parse_uuid,
)

if TYPE_CHECKING:
    pass

from .interface import Store, context_of
from .policy import ExtractionMode, Extractor, Policy

__all__ = ["ExtractionMode", "Extractor", "MemoryBackend"]


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


# The options MemoryBackend keeps; every other option goes to the store's constructor.
_POLICY_OPTIONS = ("strict", "extractor", "summarizer", "telemetry")


def _build_store(store_class: type[Store], url: Any, options: dict[str, Any]) -> Store:
    """``store_class(url, **options)``; an unknown option is a ``ConfigurationError``."""
    try:
        return store_class(*(() if url is None else (url,)), **options)
    except TypeError as exc:
        if isinstance(exc, InvalidArgumentTypeError):
            raise
        raise ConfigurationError(f"{store_class.name} backend: {exc}") from None


class MemoryBackend(LongTermMethods, ReasoningMethods):
    """Conversation memory behind one async API, over a :class:`~memory_core.interface.Store`.

    Open one with :func:`memory_core.open_backend` and use it as an async context manager
    (or call :meth:`connect` / :meth:`close`). Methods connect lazily on first use.
    ``MemoryBackend(store)`` wraps a store object; :meth:`over` builds the store of a
    given class from a URL and options, as ``open_backend`` does.

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
    ``telemetry``
        OpenTelemetry spans and metrics (see :mod:`memory_core.telemetry`): ``None``
        (default) reports to the global providers when ``opentelemetry-api`` is installed,
        ``False`` switches it off, a :class:`~memory_core.telemetry.Telemetry` picks the
        providers and whether content is captured.
    """

    # Set by a backend's own class, so that ``Class(url, **options)`` builds its store.
    store_class: ClassVar[type[Store] | None] = None
    """A subclass that names its store class is built from that store's URL and options
    (``Sub("memory://", ...)``), as :meth:`over` builds one (test doubles use this)."""

    def __init__(
        self,
        store: Store | str | None = None,
        /,
        *,
        strict: bool = False,
        extractor: Extractor | None = None,
        summarizer: rq.Summarizer | None = None,
        telemetry: Telemetry | bool | None = None,
        **options: Any,
    ) -> None:
        self._telemetry = resolve(telemetry)
        if not isinstance(store, Store):
            if self.store_class is None:
                raise ConfigurationError(
                    "MemoryBackend wraps a Store: pass one, or open a URL with open_backend()"
                )
            store = _build_store(self.store_class, store, options)
        elif options:
            raise ConfigurationError(
                f"options {sorted(options)} belong to the store's constructor, not here"
            )
        self.store = store
        self.strict = check_bool(strict, "strict")
        caps = store.capabilities
        self._policy = Policy(store, strict=self.strict, extractor=None)
        if store.multi_tenant and not caps.multi_tenant:
            self._policy.refuse(
                "open",
                "multi_tenant=True is not supported",
                "scope data per user with separate stores or conversations",
            )
        if store.embedder is not None and not caps.vector_search:
            self._policy.refuse(
                "open",
                "an embedder cannot be used (no vector search)",
                "open the backend without an embedder; text search still works",
            )
        if extractor is not None:
            if not callable(extractor):
                raise ConfigurationError("extractor must be callable")
            if not caps.explicit_mentions:
                self._policy.refuse(
                    "open",
                    "an extractor cannot be used (mentions are not stored)",
                    "run extraction in your application",
                )
        if summarizer is not None and not callable(summarizer):
            raise ConfigurationError("summarizer must be callable")
        self.extractor = extractor
        self._policy.extractor = extractor
        self.summarizer = summarizer
        self._state: Literal["new", "open", "closed"] = "new"
        self._connect_lock = anyio.Lock()

    @classmethod
    def over(cls, store_class: type[Store], url: str | None, /, **options: Any) -> MemoryBackend:
        """A backend over ``store_class(url, **store options)`` (what ``open_backend``
        does with the class registered for the URL's scheme)."""
        policy = {k: options.pop(k) for k in _POLICY_OPTIONS if k in options}
        return MemoryBackend(_build_store(store_class, url, options), **policy)

    # ------------------------------------------------------------------ the store's

    @property
    def name(self) -> str:
        """The backend's name (``embedded``, ``bolt``, ``nams``, …)."""
        return self.store.name

    @property
    def capabilities(self) -> Capabilities:
        """What this backend does: flags and limits (see :class:`Capabilities`)."""
        return self.store.capabilities

    @property
    def limits(self) -> Limits:
        """The sizes every argument is checked against."""
        return self.store.limits

    @property
    def multi_tenant(self) -> bool:
        """Whether every call must carry ``user_identifier``."""
        return self.store.multi_tenant

    @property
    def embedder(self) -> Embedder | None:
        """The embedder used for vector search, if any."""
        return self.store.embedder

    def describe(self) -> str:
        """Where this backend stores data, with no secret in it."""
        return self.store.describe()

    # ------------------------------------------------------------------ lifecycle

    async def connect(self) -> None:
        """Open connections and prepare storage. Calling it again is a no-op."""
        async with self._connect_lock:
            if self._state == "closed":
                raise TransportError(
                    f"{self.name} backend is closed; open a new one", retryable=False
                )
            if self._state == "new":
                await self.store.connect()
                self._state = "open"
                if self._telemetry is not None:
                    self._telemetry.instruments.watch(self.store)

    async def close(self) -> None:
        """Release connections. Calling it again is a no-op."""
        if self._state == "open":
            await self.store.close()
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

    def __enter__(self) -> NoReturn:
        raise TypeError(
            f"{type(self).__name__} is async: use 'async with open_backend(...)' inside an "
            "async function, or memory_core.sync.open_backend(...) with a plain 'with'"
        )

    def __exit__(self, *_exc: object) -> None:
        """Never reached: :meth:`__enter__` refuses the plain ``with``."""

    async def _ready(self) -> None:
        if self._state != "open":
            await self.connect()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()} {self._state}>"

    # ------------------------------------------------------------------ writes

    @instrument("add_message")
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
        target = self._policy.target("add_message", session_id, conversation_id, user_identifier)
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
            self._policy.drop("add_message", "metadata", "keep metadata in your application")
            meta = {}
        if key is not None and not caps.idempotency_keys:
            self._policy.drop("add_message", "idempotency_key", "de-duplicate replays yourself")
            key = None
        refs = await self._policy.mentions(
            "add_message", text, extraction_mode, explicit_mentions, extract
        )
        return await self._append(target, role_, text, meta, key, refs, embed)

    @instrument("add_message")
    async def _add_keyed(
        self,
        session_id: str,
        role: MessageRole,
        content: str,
        metadata: dict[str, Any],
        key: str,
        mentions: list[EntityRef],
        user_identifier: str | None,
        lookup: tuple[list[str], int] | None = None,
    ) -> tuple[list[Entity], Message, bool | None]:
        """The turn protocol's write: a keyed ``add_message`` of checked values, and
        whether the key was stored before (see
        :meth:`~memory_core.interface.Store.add_keyed_message`). With ``lookup``
        (identifiers, limit), on a store that :attr:`~memory_core.interface.Store.opens_turns`,
        the entities the identifiers name are found and linked by the same call (see
        :meth:`~memory_core.interface.Store.open_turn`); else none are returned."""
        target = self._policy.target("add_message", session_id, None, user_identifier)
        text = check_str(content, "content", max_chars=self.limits.max_content_chars)
        meta = check_metadata(metadata, "metadata", self.limits)
        refs = await self._policy.mentions("add_message", text, "explicit", mentions, True)
        req = await self._message_request(target, role, text, meta, key, refs, True)
        if lookup is None:
            return [], *await self.store.add_keyed_message(req)
        identifiers, limit = lookup
        scope = self._policy.scope("find_entities", user_identifier)
        count = self._policy.search_limit("find_entities", limit)
        names = [check_identifier(name, "identifiers", self.limits) for name in identifiers]
        opening = rq.OpenTurn(message=req, identifiers=names, limit=count, scope=scope)
        return await self.store.open_turn(opening)

    async def _append(
        self,
        target: rq.Target,
        role: MessageRole,
        content: str,
        metadata: dict[str, Any],
        key: str | None,
        mentions: list[EntityRef],
        embed: bool,
    ) -> Message:
        req = await self._message_request(target, role, content, metadata, key, mentions, embed)
        return await self.store.add_message(req)

    async def _message_request(
        self,
        target: rq.Target,
        role: MessageRole,
        content: str,
        metadata: dict[str, Any],
        key: str | None,
        mentions: list[EntityRef],
        embed: bool,
    ) -> rq.AddMessage:
        vectors = await self._policy.embed([content], embed)
        await self._ready()
        return rq.AddMessage(
            target=target,
            role=role,
            content=content,
            metadata=metadata,
            idempotency_key=key,
            mentions=mentions,
            embedding=vectors[0] if vectors else None,
        )

    @property
    def checked(self) -> CheckedWrites:
        """Writes of values the caller has checked itself (see :class:`CheckedWrites`)."""
        return CheckedWrites(self)

    @instrument("add_messages_batch")
    async def _add_checked_messages(
        self,
        conversation_id: UUID,
        messages: list[tuple[MessageRole, str]],
        user_identifier: str | None,
    ) -> list[Message]:
        target = self._policy.target("add_messages_batch", None, conversation_id, user_identifier)
        items = [
            rq.NewMessage(role=role, content=content, metadata={}, timestamp=None)
            for role, content in messages
        ]
        return await self._store_batch(target, items, len(items), True, None, None)

    @instrument("add_message")
    async def _add_checked_message(
        self, conversation_id: UUID, role: MessageRole, content: str, user_identifier: str | None
    ) -> Message:
        target = self._policy.target("add_message", None, conversation_id, user_identifier)
        refs = await self._policy.mentions("add_message", content, "auto", None, True)
        return await self._append(target, role, content, {}, None, refs, True)

    @instrument("add_messages_batch")
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
        target = self._policy.target(
            "add_messages_batch", session_id, conversation_id, user_identifier
        )
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
        items = await self._policy.batch_items(messages, extract)
        return await self._store_batch(target, items, size, embed, on_progress, on_batch_complete)

    async def _store_batch(
        self,
        target: rq.Target,
        items: list[rq.NewMessage],
        size: int,
        embed: bool,
        on_progress: rq.ProgressCallback | None,
        on_batch_complete: rq.BatchCallback | None,
    ) -> list[Message]:
        if not items:
            return []
        vectors = await self._policy.embed([m.content for m in items], embed)
        if vectors:
            items = [
                dataclasses.replace(m, embedding=v) for m, v in zip(items, vectors, strict=True)
            ]
        cap = self.capabilities.max_bulk_messages
        await self._ready()
        if cap is None:
            # The store can take the whole call in one transaction: all or nothing.
            stored = await self.store.add_messages(rq.AddMessages(target=target, messages=items))
            _report(stored, size, on_batch_complete, on_progress)
            return stored
        step = min(size, cap)
        stored = []
        for number, start in enumerate(range(0, len(items), step)):
            try:
                chunk = await self.store.add_messages(
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

    @instrument("create_conversation")
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
        target = self._policy.target(
            "create_conversation", session_id, conversation_id, user_identifier
        )
        heading = check_optional_identifier(title, "title", self.limits)
        meta = check_metadata(metadata, "metadata", self.limits)
        if heading is not None and not self.capabilities.conversation_titles:
            self._policy.drop("create_conversation", "title", "keep the title in metadata")
            heading = None
        await self._ready()
        return await self.store.create_conversation(
            rq.CreateConversation(target=target, title=heading, metadata=meta)
        )

    # ------------------------------------------------------------------ reads

    @instrument("get_conversation")
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

        Note: without ``limit``, at most ``capabilities.default_messages_per_read``
        messages come back (1,000 on embedded and Bolt, 200 on NAMS): the newest ones, and
        a longer conversation is cut without a warning (reading recent context is the
        common call, so the default read never warns). To read everything where
        ``full_history``, pass a larger ``limit``; NAMS never returns more than 200.
        A limit above the backend's cap is clamped with a :class:`CapabilityWarning`.
        ``since`` keeps only messages created strictly after it (in the store where
        ``server_side_since``, otherwise on the fetched page).
        """
        target = self._policy.target(
            "get_conversation", session_id, conversation_id, user_identifier
        )
        count = self._policy.read_limit("get_conversation", limit)
        after = None if since is None else check_datetime(since, "since")
        await self._ready()
        conversation = await self.store.get_conversation(
            rq.GetConversation(target=target, limit=count, since=after)
        )
        if after is not None and not self.capabilities.server_side_since:
            kept = [m for m in conversation.messages if m.created_at > after]
            conversation = conversation.model_copy(update={"messages": kept})
        return conversation

    @instrument("list_conversations")
    async def list_conversations(
        self, *, limit: int = 100, user_identifier: str | None = None
    ) -> list[Conversation]:
        """Conversation headers (no messages), most recently updated first, ties broken by
        conversation id: at most ``limit`` (default 100).

        Where the backend has a ``max_page_size`` (NAMS: 200) a larger ``limit`` is
        collected over several pages, following each page's cursor. To walk every
        conversation a page at a time, use :meth:`list_conversations_page`.
        """
        count = check_limit(limit)
        scope = self._policy.scope("list_conversations", user_identifier)
        await self._ready()
        cap = self.capabilities.max_page_size
        if cap is None:
            # A store without a page cap fills the page: one call, as many as asked for.
            page = await self.store.list_conversations(
                rq.ListConversations(limit=count, scope=scope)
            )
            return page.conversations
        found: list[Conversation] = []
        cursor: str | None = None
        while len(found) < count:
            page = await self.store.list_conversations(
                rq.ListConversations(limit=min(cap, count - len(found)), scope=scope, cursor=cursor)
            )
            found += page.conversations
            cursor = page.next_cursor
            if not page.conversations or cursor is None:
                break
        return found

    @instrument("list_conversations_page")
    async def list_conversations_page(
        self, *, limit: int = 100, cursor: str | None = None, user_identifier: str | None = None
    ) -> ConversationPage:
        """One page of conversation headers (no messages), to walk every conversation.

        Pass ``cursor=None`` for the first page, then each page's ``next_cursor`` until it
        is ``None``. The order is :meth:`list_conversations`'s: most recently updated
        first, ties broken by conversation id (a total order). ``limit`` (default 100) is
        capped by ``capabilities.max_page_size`` where the backend has one (NAMS: 200),
        with a :class:`CapabilityWarning`. A page holds ``limit`` conversations while more
        follow (on NAMS, what the service sends: a short page is not the end, a ``None``
        cursor is).

        Keyset paging: a cursor holds the sort key (``updated_at``, id) of the last
        conversation of its page, and the next page is read with a seek on an index of
        that order, never with OFFSET or by reading the earlier pages, so each page costs
        O(``limit``) in the store however deep the walk goes. One walk guarantees:

        * no conversation appears twice;
        * every conversation not written to during the walk appears exactly once;
        * a conversation written to during the walk (a message, a batch, a title filled
          in) moves to the front of the order: if the walk had not reached it yet it may
          be missed, and it is first in the next walk. One created during the walk is
          not listed by it.

        A cursor is an opaque string made by the store (see :mod:`memory_core.cursors`):
        a malformed one, or one another kind of backend made, raises
        :class:`InvalidRequestError` naming ``cursor``, and nothing is read or written.
        """
        count = self._policy.clamp(
            "list_conversations_page",
            check_limit(limit),
            self.capabilities.max_page_size,
            "a page holds no more; follow next_cursor",
        )
        after = (
            None
            if cursor is None
            else check_str(cursor, "cursor", allow_empty=False, max_chars=MAX_CURSOR_CHARS)
        )
        scope = self._policy.scope("list_conversations_page", user_identifier)
        await self._ready()
        return await self.store.list_conversations(
            rq.ListConversations(limit=count, scope=scope, cursor=after)
        )

    @instrument("list_sessions")
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
        self._policy.require("list_sessions", "list_sessions", "use list_conversations")
        head = (
            None
            if prefix is None
            else check_utf8_bytes(
                check_str(prefix, "prefix"), "prefix", self.limits.max_identifier_bytes
            )
        )
        count = check_limit(limit)
        skip = check_int(offset, "offset", minimum=0)
        field, direction = check_order(order_by, order_dir)
        scope = self._policy.scope("list_sessions", user_identifier)
        await self._ready()
        return await self.store.list_sessions(
            rq.ListSessions(
                prefix=head,
                limit=count,
                offset=skip,
                order_by=field,
                order_dir=direction,  # type: ignore[arg-type]
                scope=scope,
            )
        )

    @instrument("search_messages")
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
        per_session: int | None = None,
        recency_half_life: timedelta | None = None,
    ) -> list[Message]:
        """Messages matching ``query``, best first, each with a ``score`` in 0..1.

        Scoped to one session when one is given; across every session (of the tenant)
        otherwise, where the backend has ``search_global``. ``threshold`` drops hits scoring
        below it. ``metadata_filters`` keeps messages whose top-level metadata keys equal
        the given values exactly; a backend that cannot filter raises rather than ignore.

        ``per_session`` groups the hits by session: the best ``per_session`` hits of each
        session, the session whose best hit scores highest first (see
        :func:`~memory_core.scoring.by_session`). The groups are made of the best
        ``limit`` times :data:`~memory_core.scoring.GROUP_POOL` hits, so fewer than ``limit``
        hits may come back when a few sessions hold most of the matches.

        ``recency_half_life`` weighs the hits by age: each score is halved for every
        half-life between the message's ``created_at`` and now (:func:`~memory_core.scoring.
        by_recency`), and the hits are ranked by that weighted score (the one returned),
        out of the best ``limit`` times :data:`~memory_core.scoring.GROUP_POOL` hits.
        ``threshold`` applies to the score before weighting.
        """
        text = check_str(query, "query", allow_empty=False, max_chars=self.limits.max_query_chars)
        count = self._policy.search_limit("search_messages", limit)
        groups = None if per_session is None else check_limit(per_session, "per_session")
        half_life = check_half_life(recency_half_life)
        cut = check_threshold(threshold)
        filters = check_metadata(metadata_filters, "metadata_filters", self.limits)
        caps = self.capabilities
        target: rq.Target | None = None
        if session_id is not None or conversation_id is not None:
            target = self._policy.target(
                "search_messages", session_id, conversation_id, user_identifier
            )
        elif not caps.search_global:
            raise SessionRequiredError(
                self.name,
                "search_messages",
                "session_id or conversation_id is required",
                "pass the conversation to search",
            )
        scope = self._policy.scope("search_messages", user_identifier)
        if cut is not None and not caps.search_threshold:
            self._policy.drop("search_messages", "threshold", "filter on Message.score yourself")
            cut = None
        if filters and not caps.search_metadata_filters:
            self._policy.refuse(
                "search_messages",
                "metadata_filters cannot be applied",
                "filter the returned messages in your application",
            )
        vectors = await self._policy.embed([text], True)
        wide = group_pool(count, caps.max_search_hits)
        await self._ready()
        hits = await self.store.search_messages(
            rq.SearchMessages(
                query=text,
                target=target,
                limit=count if groups is None and half_life is None else wide,
                threshold=cut,
                metadata_filters=filters,
                query_embedding=vectors[0] if vectors else None,
                scope=scope,
            )
        )
        if half_life is not None:  # the store was asked for a wider pool: cut it here
            hits = by_recency(hits, half_life, datetime.now(UTC))
            hits = hits[:count] if groups is None else hits
        return hits if groups is None else by_session(hits, groups, count)

    @instrument("get_context")
    async def get_context(
        self,
        query: str | None = None,
        *,
        session_id: str | UUID | None = None,
        conversation_id: Any = None,
        max_messages: int = 10,
        max_hits: int = 5,
        long_term_chars: int = 2_000,
        across_sessions: bool = False,
        max_tokens: int | None = None,
        user_identifier: str | None = None,
        per_session: int | None = None,
        neighbours: int = 0,
        recency_half_life: timedelta | None = None,
    ) -> str:
        """Text to put in a prompt: recent messages plus, with a ``query``, relevant ones,
        after a long-term section (the user's preferences, the facts about the entities the
        recent messages mention) of at most ``long_term_chars`` characters (0: none) where
        the backend keeps them (:mod:`memory_core.long_term_context`).

        The relevant messages are search hits not among the recent ones: of the session,
        or with ``across_sessions`` of every session of the user (where the backend has
        ``search_global``), found by meaning too when an embedder is configured; they are
        listed in the order they were written, each with its time (and its session).
        ``max_tokens`` keeps the whole text within that many tokens as
        :func:`~memory_core.summary.approx_tokens` counts them (4 characters a token): the
        long-term section first, then the newest recent message and the best hit, one of
        each in turn, until the next does not fit (a message is never cut).
        ``per_session`` groups the relevant messages by session before the best
        ``max_hits`` are kept, as :meth:`search_messages` does: with ``across_sessions``
        and ``per_session=1``, the best message of each of the ``max_hits`` best sessions.
        ``neighbours`` (0 to :data:`~memory_core.summary.MAX_NEIGHBOURS`) adds, for each
        relevant message kept, the messages written just before and after it in its
        session (that many of each), listed without a score; where the backend has
        ``message_neighbours``. Within ``max_tokens`` a hit's neighbours come right after
        it, before the next hit. ``recency_half_life`` weighs the relevant messages by age
        before the best ``max_hits`` are kept, as :meth:`search_messages` does.

        The format is :func:`memory_core.summary.format_context`. Raises a ``ValueError``
        (:class:`~memory_core.errors.MissingIdentifierError`) without a session.
        """
        target = self._policy.target("get_context", session_id, conversation_id, user_identifier)
        text = (
            None
            if query is None
            else check_str(query, "query", max_chars=self.limits.max_query_chars)
        )
        recent = check_limit(max_messages, "max_messages")
        hits = check_limit(max_hits, "max_hits")
        room = check_int(long_term_chars, "long_term_chars", minimum=0)
        wide = check_bool(across_sessions, "across_sessions")
        budget = None if max_tokens is None else check_limit(max_tokens, "max_tokens")
        groups = None if per_session is None else check_limit(per_session, "per_session")
        around = check_neighbours(neighbours)
        half_life = check_half_life(recency_half_life)
        self._context_refusals(wide, around)
        vectors = await self._policy.embed([text], True) if text else None
        await self._ready()
        req = rq.GetContext(
            target=target,
            query=text or None,
            max_messages=recent,
            max_hits=hits,
            query_embedding=vectors[0] if vectors else None,
            across_sessions=wide,
            max_tokens=budget,
            per_session=groups,
            neighbours=around,
            recency_half_life=half_life,
        )
        caps = self.capabilities
        if room == 0 or not (caps.preferences or caps.facts):
            return await self.store.get_context(req)
        return await self._context_after_long_term(req, room)

    def _context_refusals(self, wide: bool, around: int) -> None:
        """``get_context``'s options the backend lacks the capability for, refused."""
        if around and not self.capabilities.message_neighbours:
            self._policy.refuse(
                "get_context",
                "neighbours needs the messages around a hit (message_neighbours)",
                "read the session with get_conversation and take the messages around each hit",
            )
        if wide and not self.capabilities.search_global:
            self._policy.refuse(
                "get_context",
                "across_sessions needs search across sessions (search_global)",
                "call search_messages for each session and add the hits yourself",
            )

    async def _context_after_long_term(self, req: rq.GetContext, room: int) -> str:
        """The long-term section, then the store's context in what it leaves of the
        budget."""
        default = type(self.store).get_context is Store.get_context
        read = rq.GetConversation(target=req.target, limit=req.max_messages, since=None)
        try:
            conversation = await self.store.get_conversation(read)
        except NotFoundError:
            if default:
                raise
            return await self.store.get_context(req)
        if req.max_tokens is not None:
            room = min(room, req.max_tokens * CHARS_PER_TOKEN)
        extra = await long_term_context.section(self.store, conversation, req.target.scope, room)
        if req.max_tokens is not None and extra:
            left = req.max_tokens - approx_tokens(extra + "\n\n")
            if left <= 0:
                return extra
            req = dataclasses.replace(req, max_tokens=left)
        if default:  # it reads the conversation the section needed: read it once
            found = await context_of(self.store, req, conversation)
        else:
            found = await self.store.get_context(req)
        return "\n\n".join(part for part in (extra, found) if part)

    @instrument("get_conversation_summary")
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
        self._policy.require(
            "conversation_summary",
            "get_conversation_summary",
            "read the conversation and summarise it in your application",
        )
        target = self._policy.target(
            "get_conversation_summary", session_id, conversation_id, user_identifier
        )
        if summarizer is not None and not callable(summarizer):
            raise InvalidArgumentTypeError("must be callable", argument="summarizer")
        await self._ready()
        conversation = await self.store.get_conversation(
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

    @instrument("get_observations")
    async def get_observations(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
    ) -> list[dict[str, Any]]:
        """Server-side observations (NAMS only)."""
        self._policy.require("observations", "get_observations", "summarise messages yourself")
        target = self._policy.target(
            "get_observations", session_id, conversation_id, user_identifier
        )
        await self._ready()
        return await self.store.get_observations(target)

    @instrument("get_reflections")
    async def get_reflections(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
    ) -> list[dict[str, Any]]:
        """Server-side reflections (NAMS only)."""
        self._policy.require("reflections", "get_reflections", "summarise messages yourself")
        target = self._policy.target(
            "get_reflections", session_id, conversation_id, user_identifier
        )
        await self._ready()
        return await self.store.get_reflections(target)

    @instrument("get_extraction_status")
    async def get_extraction_status(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
    ) -> ExtractionStatus:
        """Per-message entity-extraction progress (NAMS only)."""
        self._policy.require(
            "extraction_status",
            "get_extraction_status",
            "extraction is synchronous here: wait_for_extraction() returns True",
        )
        target = self._policy.target(
            "get_extraction_status", session_id, conversation_id, user_identifier
        )
        await self._ready()
        return await self.store.get_extraction_status(target)

    @instrument("wait_for_extraction")
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
        target = self._policy.target(
            "wait_for_extraction", session_id, conversation_id, user_identifier
        )
        await self._ready()
        with anyio.move_on_after(timeout):
            while True:
                if (await self.store.get_extraction_status(target)).is_complete:
                    return True
                await anyio.sleep(poll_interval)
        return False

    # ------------------------------------------------------------------ deletes

    @instrument("delete_message")
    async def delete_message(
        self, message_id: Any, *, cascade: bool = True, user_identifier: str | None = None
    ) -> bool:
        """Delete one message and keep the rest in order. False when nothing matched
        (including an id that is not a UUID). ``cascade`` is accepted for compatibility
        and checked: a message's mentions always go with it, and entities never do."""
        self._policy.require(
            "delete_message", "delete_message", "delete the whole conversation with clear_session"
        )
        if not isinstance(message_id, str) and parse_uuid(message_id) is None:
            raise InvalidArgumentTypeError(
                f"must be a UUID or str, got {type(message_id).__name__}", argument="message_id"
            )
        check_bool(cascade, "cascade")
        scope = self._policy.scope("delete_message", user_identifier)
        uuid = parse_uuid(message_id)
        if uuid is None:
            return False
        await self._ready()
        return await self.store.delete_message(rq.DeleteMessage(message_id=uuid, scope=scope))

    @instrument("clear_session")
    async def clear_session(
        self,
        session_id: str | UUID | None = None,
        *,
        conversation_id: Any = None,
        user_identifier: str | None = None,
    ) -> bool:
        """Delete a whole conversation and the reasoning traces of its session (with
        their steps and tool calls, where the backend has ``traces``). True if something
        was deleted; a missing session is not an error. The session accepts new messages
        afterwards."""
        target = self._policy.target("clear_session", session_id, conversation_id, user_identifier)
        await self._ready()
        return await self.store.clear_session(target)

    @instrument("forget_user")
    async def forget_user(
        self, user_identifier: str, *, batch_size: int = 500, dry_run: bool = False
    ) -> ErasureReport:
        """Erase everything the store holds for ``user_identifier`` (capability
        ``user_erasure``) and return the counts per kind (see the "Erasure and retention" page).

        Multi-tenant: every record of that tenant. Otherwise: every conversation recorded
        for that user, with its messages, mentions and idempotency keys, and the entities
        only those messages referenced (an entity another message mentions loses only
        the links). Idempotent: a re-run reports zeros, and a re-run after a crash
        finishes the erasure. ``batch_size`` bounds the messages one transaction deletes.
        Returns even while the user's writers keep writing: what the user had when it
        started is erased, and ``writes_continued`` in the report says whether records
        they wrote meanwhile remain (stop them and call again to erase those).
        Logs one audit record on ``memory_core.audit`` (counts, no content).

        ``dry_run=True`` deletes nothing and reports what would go: the user's
        conversations, messages and entities as :meth:`stats` counts them (the backend
        needs ``store_stats`` as well); the report's ``dry_run`` is true."""
        self._policy.require(
            "user_erasure",
            "forget_user",
            "list the user's conversations with list_conversations(user_identifier=...) "
            "and clear_session each of them",
        )
        user = check_identifier(user_identifier, "user_identifier", self.limits, plain=True)
        size = check_int(batch_size, "batch_size", minimum=1)
        if check_bool(dry_run, "dry_run"):
            self._policy.require(
                "store_stats",
                "forget_user",
                "list the user's conversations with list_conversations(user_identifier=...) "
                "to see what an erasure would delete",
            )
            await self._ready()
            return await erasure.preview(self.store, user)
        await self._ready()
        return await erasure.forget(self.store, user, size)

    @instrument("stats")
    async def stats(self, *, user_identifier: str | None = None) -> StoreStats:
        """What the store holds: conversations, messages and entities per user (the
        tenant on a multi-tenant backend; and preferences, facts, relationships and
        reasoning traces where the backend keeps them), the totals, and the store's size where the
        backend can tell (capability ``store_stats``; see :class:`StoreStats`). The
        store counts with aggregate queries: nothing is read whole. ``user_identifier``:
        that user's row only (zeros when the user has nothing), without totals; it may be
        left out on a multi-tenant backend too (every tenant is counted: an operator's
        view)."""
        self._policy.require(
            "store_stats",
            "stats",
            "walk list_conversations_page and count the conversations yourself",
        )
        user = check_optional_identifier(
            user_identifier, "user_identifier", self.limits, plain=True
        )
        await self._ready()
        return await self.store.stats(rq.Stats(user=user))

    @instrument("expire_conversations")
    async def expire_conversations(
        self,
        older_than: timedelta | datetime,
        *,
        user_identifier: str | None = None,
        batch_size: int = 100,
        archive: str | PathLike[str] | None = None,
        dry_run: bool = False,
        by: str = "updated_at",
    ) -> ExpiryReport:
        """Delete the conversations whose last activity is before the cut-off (``now -
        older_than`` for a ``timedelta``, or an aware ``datetime``), of one user or of
        everyone (a multi-tenant backend needs ``user_identifier``), one conversation per
        delete, listing ``batch_size`` at a time (see the "Erasure and retention" page).
        ``archive``: a path to write them to first, in the transfer format. ``dry_run``:
        report what would go and delete nothing. ``by``: last activity is the
        conversation's ``updated_at`` (``"updated_at"``, the default) or the time of its
        newest message (``"last_message"``: for conversations loaded with the times of
        old messages; one read of one message per conversation). Logs one audit record on
        ``memory_core.audit``."""
        cutoff = retention.cutoff_of(older_than)
        user = check_optional_identifier(
            user_identifier, "user_identifier", self.limits, plain=True
        )
        if self.multi_tenant and user is None:
            raise InvalidRequestError(
                "is required when the backend is multi-tenant", argument="user_identifier"
            )
        size = check_int(batch_size, "batch_size", minimum=1)
        size = min(size, self.capabilities.max_page_size or size)
        retention.check_archive(archive)
        check_bool(dry_run, "dry_run")
        basis = retention.check_by(by)
        await self._ready()
        return await retention.expire(self, cutoff, user, size, archive, dry_run, basis)

    # ------------------------------------------------------------------ entities

    @instrument("add_entity")
    async def add_entity(
        self,
        name: str,
        type: str,
        *,
        description: str | None = None,
        user_identifier: str | None = None,
    ) -> Entity:
        """Create an entity, or return the existing one with this name and type."""
        self._policy.require("entities", "add_entity", "keep entities in your application")
        label = check_identifier(name, "name", self.limits)
        kind = check_entity_type(type)
        kept = self.store.kept_entity_types
        if kept is not None and kind not in kept:
            self._policy.drop("add_entity", "type", f"{kind} is kept as CUSTOM on this backend")
        about = (
            None
            if description is None
            else check_str(description, "description", max_chars=self.limits.max_content_chars)
        )
        scope = self._policy.scope("add_entity", user_identifier)
        await self._ready()
        return await self.store.add_entity(
            rq.AddEntity(name=label, type=kind, description=about, scope=scope)
        )

    @instrument("find_entities")
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
        self._policy.require("entities", "find_entities", "keep entities in your application")
        ident = check_identifier(identifier, "identifier", self.limits)
        count = self._policy.search_limit("find_entities", limit)
        kind = None if type is None else check_entity_type(type)
        scope = self._policy.scope("find_entities", user_identifier)
        await self._ready()
        return await self.store.find_entities(
            rq.FindEntities(identifier=ident, limit=count, type=kind, scope=scope)
        )

    @instrument("delete_entity")
    async def delete_entity(self, entity_id: str, *, user_identifier: str | None = None) -> bool:
        """Delete an entity and the mentions that link messages to it (the messages stay).
        False when no entity of the caller has this id."""
        self._policy.require(
            "delete_entity", "delete_entity", "keep entities; they are only linked"
        )
        ident = check_identifier(entity_id, "entity_id", self.limits)
        scope = self._policy.scope("delete_entity", user_identifier)
        await self._ready()
        return await self.store.delete_entity(rq.DeleteEntity(entity_id=ident, scope=scope))


class CheckedWrites:
    """Writes of values a caller has checked itself against the backend's limits: the
    NAMS-compatible server, whose request models and limits check every field before it
    calls these (its backend is opened with those limits), so a value is checked once on
    each side of the wire. The values reach the store as given; the conversation and the
    user are resolved, extraction and embedding run, and the call is traced, as the
    public methods do it. Reached as ``backend.checked``. A value nobody has checked goes
    through the public methods (:meth:`MemoryBackend.add_message` …)."""

    def __init__(self, backend: MemoryBackend) -> None:
        self._backend = backend

    async def add_message(
        self,
        conversation_id: UUID,
        role: MessageRole,
        content: str,
        *,
        user_identifier: str | None = None,
    ) -> Message:
        """:meth:`MemoryBackend.add_message` by conversation id, with its defaults, for a
        ``role`` and ``content`` the caller checked."""
        return await self._backend._add_checked_message(
            conversation_id, role, content, user_identifier
        )

    async def add_messages(
        self,
        conversation_id: UUID,
        messages: list[tuple[MessageRole, str]],
        *,
        user_identifier: str | None = None,
    ) -> list[Message]:
        """:meth:`MemoryBackend.add_messages_batch` by conversation id, with its defaults,
        for (role, content) pairs the caller checked: one batch, in order."""
        return await self._backend._add_checked_messages(conversation_id, messages, user_identifier)
