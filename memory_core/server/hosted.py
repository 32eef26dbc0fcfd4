"""NAMS semantics over any :class:`~memory_core.MemoryBackend`.

How the hosted model maps onto the backing store (opened with ``multi_tenant=True``):

* **Workspaces** are tenants: every call uses ``user_identifier="nams:<workspace>"``, so
  one workspace can never read another's conversations, messages or entities.
* **Conversations**: ``POST /conversations`` creates a backing conversation under a
  fresh random session name; its NAMS id is that conversation's backing
  ``Conversation.id`` (a UUID). Every other route addresses it by ``conversation_id=``
  in the workspace's tenant, which never auto-creates: an id the workspace does not have
  is ``NotFoundError``, answered ``404``. (Servers before this one used the session name
  as the NAMS id; ids they issued are unknown here.) The backing conversation's metadata
  holds ``{"nams": {"userId": …, "metadata": …}}``: the NAMS ``userId`` and the caller's
  metadata, and the mark that the conversation was created through this API.
* **One backing call per route** (one transaction of the backing store; nothing is checked
  first and acted on after): creating, reading the header or the messages, context,
  observations, reflections and extraction status (one ``get_conversation`` each), writing
  one message or a bulk, searching, deleting (``clear_session``: False is ``404``); the
  other entity routes are in :mod:`.entities`, and the reasoning routes (a conversation
  read, then its traces: several calls) in :mod:`.reasoning`. Two routes may make more:
  ``GET /conversations`` (one call per backing page it reads: one while every conversation
  read is visible, see below) and ``POST /entities`` (``find_entities`` then
  ``add_entity``: the contract's ``add_entity`` does not say whether the entity existed,
  and NAMS answers ``resolution: "merged"`` when it did; two concurrent creates of one
  name may then both answer it as new, and get the same entity). Searching relies on the
  contract's rule that a ``conversation_id`` naming no conversation raises
  ``NotFoundError`` (scenario ``aliasing.unknown_conversation_id``).
* **The mark** decides what the API shows: the listing and every route that reads the
  conversation (header, messages, context, observations, reflections, extraction
  status) answer ``404`` for a backing conversation without it. Writing, searching and
  deleting act on any conversation of the workspace's tenant by id: checking the mark
  first would take a second call. Only something writing to the backing store directly
  under the tenant ``nams:<workspace>`` can make a conversation without the mark.
* **Listing** sorts by ``updatedAt`` (newest first, ties by id, descending: the backing
  store's order) and pages with the backing store's keyset cursor, carried inside
  ``next_cursor``: a page costs the rows it returns plus the rows it skips (conversations
  of other NAMS users when ``userId`` filters, or without the mark), however deep the
  walk. A conversation written to during a walk moves to the front and may be missed by
  that walk; none appears twice.
* **Observations/reflections** exist only when a summarizer is configured: one
  observation per full window of ``observation_window`` messages (oldest first), and one
  reflection summarising all messages of those windows. Texts are cached per window.
* **Extraction** is synchronous in every backing store: each message is ``completed``.
  Test mode (``extraction_delay``, ``memory-core serve --test-extraction-delay``): a
  message stays ``pending`` for that many seconds after it was written, and observations
  and reflections cover only messages whose extraction has completed.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Awaitable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar
from uuid import NAMESPACE_URL, UUID, uuid4, uuid5

from memory_core import (
    Conversation,
    InvalidRequestError,
    MemoryBackend,
    Message,
    MessageRole,
    NotFoundError,
)
from memory_core.cursors import MAX_CURSOR_CHARS, decode_cursor, encode_cursor
from memory_core.requests import Summarizer
from memory_core.summary import run_summarizer

from .. import nams_wire as wire
from .entities import entity_out
from .errors import ApiError, not_found
from .reasoning import ConversationTraces

MARK = "nams"
TENANT_PREFIX = "nams:"
CURSOR_KIND = "nams-server"
_CACHE_SIZE = 4096
# The most conversations one backing page is asked for while a listing skips rows.
_MAX_READ = 1000
T = TypeVar("T")


def _conversation_uuid(conversation_id: str) -> UUID:
    """The conversation id of a route; anything but a UUID is unknown (404)."""
    try:
        return UUID(conversation_id)
    except ValueError:
        raise not_found() from None


async def _found(call: Awaitable[T]) -> T:
    """``await call``, with the backing store's ``NotFoundError`` answered ``404``."""
    try:
        return await call
    except NotFoundError:
        raise not_found() from None


def _invalid_cursor() -> ApiError:
    return ApiError(400, wire.ErrorCode.INVALID_CURSOR, "cursor is not valid")


def _encode_cursor(backing: str) -> str:
    """The wire cursor: the backing store's keyset cursor, wrapped."""
    return encode_cursor(CURSOR_KIND, backing)


# The shape of every backing cursor (see memory_core.cursors): ``<kind>.<base64url>``.
_BACKING_CURSOR = re.compile(r"[a-z][a-z0-9-]{0,31}\.[A-Za-z0-9_-]+")
# The longest wire cursor: one wrapping the longest backing cursor the contract accepts.
MAX_WIRE_CURSOR_CHARS = len(_encode_cursor("x" * MAX_CURSOR_CHARS))


def _decode_cursor(cursor: str) -> str:
    """The backing store's cursor a wire cursor carries; ``400 invalid_cursor`` else.

    Bounded before anything is decoded (:data:`MAX_WIRE_CURSOR_CHARS`, and
    :func:`~memory_core.cursors.decode_cursor` never recurses on the caller's JSON); the
    value must be one string of the backing cursors' fixed shape, which the backing
    store then checks field by field (its position, ids, ranges)."""
    try:
        backing = decode_cursor(CURSOR_KIND, cursor, max_chars=MAX_WIRE_CURSOR_CHARS)
    except InvalidRequestError:
        raise _invalid_cursor() from None
    if (
        not isinstance(backing, str)
        or len(backing) > MAX_CURSOR_CHARS
        or not _BACKING_CURSOR.fullmatch(backing)
    ):
        raise _invalid_cursor()
    return backing


class HostedMemory:
    """The operations behind each route, for one backing backend."""

    def __init__(
        self,
        backend: MemoryBackend,
        *,
        summarizer: Summarizer | None = None,
        observation_window: int = 10,
        extraction_delay: float = 0.0,
    ) -> None:
        self.backend = backend
        self.summarizer = summarizer
        self.window = observation_window
        self.extraction_delay = timedelta(seconds=extraction_delay)
        self._texts: OrderedDict[tuple[str, ...], str] = OrderedDict()
        self.traces = ConversationTraces()

    @property
    def search_type(self) -> wire.SearchType:
        """``vector`` when the backing store searches by embedding, else ``text``."""
        vector = self.backend.embedder is not None and self.backend.capabilities.vector_search
        return "vector" if vector else "text"

    @staticmethod
    def tenant(workspace: str) -> str:
        return TENANT_PREFIX + workspace

    # ------------------------------------------------------------------ conversations

    async def _marked(self, workspace: str, conversation_id: str, limit: int) -> Conversation:
        """The marked conversation with its newest ``limit`` messages (one backing call),
        or 404."""
        conversation = await _found(
            self.backend.get_conversation(
                conversation_id=_conversation_uuid(conversation_id),
                limit=limit,
                user_identifier=self.tenant(workspace),
            )
        )
        if not isinstance(conversation.metadata.get(MARK), dict):
            raise not_found()
        return conversation

    async def conversation(self, workspace: str, conversation_id: str) -> Conversation:
        """The workspace's marked conversation (with its newest message), or 404."""
        return await self._marked(workspace, conversation_id, 1)

    @staticmethod
    def _header(workspace: str, conversation: Conversation) -> wire.ConversationOut:
        mark = conversation.metadata.get(MARK) or {}
        user = mark.get("userId")
        metadata = mark.get("metadata")
        return wire.ConversationOut(
            id=str(conversation.id),
            user_id=user if isinstance(user, str) else None,
            workspace_id=workspace,
            metadata=metadata if isinstance(metadata, dict) else {},
            created_at=conversation.created_at,
            updated_at=conversation.updated_at or conversation.created_at,
        )

    async def create_conversation(
        self, workspace: str, user_id: str | None, metadata: dict[str, Any] | None
    ) -> wire.ConversationOut:
        mark = {"userId": user_id, "metadata": metadata or {}}
        conversation = await self.backend.create_conversation(
            str(uuid4()), metadata={MARK: mark}, user_identifier=self.tenant(workspace)
        )
        return self._header(workspace, conversation)

    async def get_conversation(self, workspace: str, conversation_id: str) -> wire.ConversationOut:
        return self._header(workspace, await self._marked(workspace, conversation_id, 1))

    async def delete_conversation(self, workspace: str, conversation_id: str) -> None:
        deleted = await self.backend.clear_session(
            conversation_id=_conversation_uuid(conversation_id),
            user_identifier=self.tenant(workspace),
        )
        if not deleted:
            raise not_found()

    async def list_conversations(
        self, workspace: str, user_id: str | None, limit: int, cursor: str | None
    ) -> wire.ConversationPage:
        """One page, newest ``updatedAt`` first (ties by id, descending), after ``cursor``.

        The page is read from the backing store's keyset pages, skipping what the caller
        does not see (no mark, or another ``userId``). A backing page is asked for as many
        conversations as the page still misses, so the last one read ends at the page's
        last conversation and its ``next_cursor`` is the page's own. After rows were
        skipped the next backing page is asked for more (twice as many, up to
        ``_MAX_READ``); when it then holds more visible conversations than missing, it is
        read again, cut after the last one needed (one more backing call).
        """
        backing = None if cursor is None else _decode_cursor(cursor)
        tenant = self.tenant(workspace)
        cap = self.backend.capabilities.max_page_size
        chosen: list[Conversation] = []
        size = limit
        while True:
            missing = limit - len(chosen)
            try:
                page = await self.backend.list_conversations_page(
                    limit=size if cap is None else min(size, cap),
                    cursor=backing,
                    user_identifier=tenant,
                )
            except InvalidRequestError as exc:
                if exc.argument == "cursor":
                    raise _invalid_cursor() from None
                raise
            rows = page.conversations
            seen = [i for i, c in enumerate(rows) if self._visible(c, user_id)]
            if len(seen) > missing:
                size = seen[missing - 1] + 1
                continue
            chosen += [rows[i] for i in seen]
            backing = page.next_cursor if rows else None
            if backing is None or len(chosen) == limit:
                break
            size = min(_MAX_READ, max(limit - len(chosen), 2 * size))
        return wire.ConversationPage(
            conversations=[self._header(workspace, c) for c in chosen],
            next_cursor=None if backing is None else _encode_cursor(backing),
        )

    @staticmethod
    def _visible(conversation: Conversation, user_id: str | None) -> bool:
        mark = conversation.metadata.get(MARK)
        if not isinstance(mark, dict):
            return False
        return user_id is None or mark.get("userId") == user_id

    # ------------------------------------------------------------------ messages

    @staticmethod
    def _message(conversation_id: str, message: Message) -> wire.MessageOut:
        # A stored message's values are valid as they are: no second validation pass.
        return wire.MessageOut.model_construct(
            id=str(message.id),
            conversation_id=conversation_id,
            role=message.role.value,
            content=message.content,
            created_at=message.created_at,
            token_count=None,
            score=message.score,
        )

    async def list_messages(
        self, workspace: str, conversation_id: str, limit: int
    ) -> list[wire.MessageOut]:
        """The newest ``limit`` messages, newest first."""
        conversation = await self._marked(workspace, conversation_id, limit)
        cid = str(conversation.id)
        return [self._message(cid, m) for m in reversed(conversation.messages)]

    async def add_message(
        self, workspace: str, conversation_id: str, item: wire.MessageIn
    ) -> wire.MessageCreated:
        cid = _conversation_uuid(conversation_id)
        # The request model and the limits checked role and content (the route): the
        # backend takes them as checked (see MemoryBackend.checked).
        stored = await _found(
            self.backend.checked.add_message(
                cid, MessageRole(item.role), item.content, user_identifier=self.tenant(workspace)
            )
        )
        return wire.MessageCreated.model_construct(
            id=str(stored.id),
            conversation_id=str(cid),
            role=stored.role.value,
            content=stored.content,
            token_count=None,
        )

    async def add_messages(
        self, workspace: str, conversation_id: str, items: Sequence[wire.MessageIn]
    ) -> list[wire.MessageOut]:
        cid = _conversation_uuid(conversation_id)
        checked = [(MessageRole(i.role), i.content) for i in items]  # checked by the route
        stored = await _found(
            self.backend.checked.add_messages(cid, checked, user_identifier=self.tenant(workspace))
        )
        return [self._message(str(cid), m) for m in stored]

    async def search(
        self, workspace: str, conversation_id: str, query: str, limit: int
    ) -> wire.SearchOut:
        cid = _conversation_uuid(conversation_id)
        hits = await _found(
            self.backend.search_messages(
                query, conversation_id=cid, limit=limit, user_identifier=self.tenant(workspace)
            )
        )
        return wire.SearchOut(
            messages=[self._message(str(cid), m) for m in hits],
            search_type=self.search_type,
        )

    # ------------------------------------------------------------------ derived views

    def _read_all(self) -> int:
        return self.backend.capabilities.default_messages_per_read

    async def _summary(self, key: tuple[str, ...], messages: list[Message]) -> str:
        cached = self._texts.get(key)
        if cached is not None:
            self._texts.move_to_end(key)
            return cached
        assert self.summarizer is not None
        text = await run_summarizer(self.summarizer, messages)
        self._texts[key] = text
        while len(self._texts) > _CACHE_SIZE:
            self._texts.popitem(last=False)
        return text

    def _extracted(self, message: Message) -> bool:
        """Whether extraction of ``message`` has completed (test mode delays it)."""
        if not self.extraction_delay:
            return True
        return datetime.now(UTC) - message.created_at >= self.extraction_delay

    def _windows(self, messages: list[Message]) -> list[list[Message]]:
        messages = [m for m in messages if self._extracted(m)]
        full = len(messages) - len(messages) % self.window
        return [messages[i : i + self.window] for i in range(0, full, self.window)]

    async def _observations(self, cid: str, messages: list[Message]) -> list[wire.ObservationOut]:
        if self.summarizer is None:
            return []
        found = []
        for window in self._windows(messages):
            first, last = window[0], window[-1]
            key = ("observation", cid, str(first.id), str(last.id))
            found.append(
                wire.ObservationOut(
                    id=str(uuid5(NAMESPACE_URL, ":".join(key))),
                    conversation_id=cid,
                    content=await self._summary(key, window),
                    window_start=first.created_at,
                    window_end=last.created_at,
                    created_at=last.created_at,
                )
            )
        return found

    async def _reflections(self, cid: str, messages: list[Message]) -> list[wire.ReflectionOut]:
        windows = self._windows(messages) if self.summarizer is not None else []
        if not windows:
            return []
        covered = [m for w in windows for m in w]
        key = ("reflection", cid, str(covered[0].id), str(covered[-1].id))
        return [
            wire.ReflectionOut(
                id=str(uuid5(NAMESPACE_URL, ":".join(key))),
                conversation_id=cid,
                content=await self._summary(key, covered),
                created_at=covered[-1].created_at,
            )
        ]

    async def observations(self, workspace: str, conversation_id: str) -> wire.ObservationList:
        conversation = await self._marked(workspace, conversation_id, self._read_all())
        cid = str(conversation.id)
        return wire.ObservationList(
            observations=await self._observations(cid, conversation.messages)
        )

    async def reflections(self, workspace: str, conversation_id: str) -> wire.ReflectionList:
        conversation = await self._marked(workspace, conversation_id, self._read_all())
        cid = str(conversation.id)
        return wire.ReflectionList(reflections=await self._reflections(cid, conversation.messages))

    async def context(self, workspace: str, conversation_id: str) -> wire.ContextOut:
        """Reflections, observations and the newest messages (newest first)."""
        limit = self._read_all() if self.summarizer else wire.CONTEXT_RECENT_MESSAGES
        conversation = await self._marked(workspace, conversation_id, limit)
        cid, messages = str(conversation.id), conversation.messages
        recent = messages[-wire.CONTEXT_RECENT_MESSAGES :]
        return wire.ContextOut(
            reflections=await self._reflections(cid, messages),
            observations=await self._observations(cid, messages),
            recent_messages=[self._message(cid, m) for m in reversed(recent)],
        )

    async def extraction_status(
        self, workspace: str, conversation_id: str
    ) -> wire.ExtractionStatusOut:
        conversation = await self._marked(workspace, conversation_id, self._read_all())
        cid = str(conversation.id)
        items = [
            wire.ExtractionItem(
                id=str(m.id),
                conversation_id=cid,
                role=m.role.value,
                created_at=m.created_at,
                status=wire.EXTRACTION_COMPLETED if self._extracted(m) else wire.EXTRACTION_PENDING,
            )
            for m in conversation.messages
        ]
        summary: dict[str, int] = {}
        for item in items:
            summary[item.status] = summary.get(item.status, 0) + 1
        return wire.ExtractionStatusOut(messages=items, summary=summary)

    # ------------------------------------------------------------------ entities

    async def add_entity(self, workspace: str, item: wire.EntityIn) -> wire.EntityOut:
        """Create the entity, or answer ``resolution: "merged"`` with the existing one of
        the same name (ignoring case) and type."""
        tenant = self.tenant(workspace)
        kind = item.type.upper()
        before = await self.backend.find_entities(item.name, 50, type=kind, user_identifier=tenant)
        existed = any(e.name.casefold() == item.name.casefold() for e in before)
        entity = await self.backend.add_entity(
            item.name, kind, description=item.description, user_identifier=tenant
        )
        return entity_out(entity, merged=existed)
