"""NAMS semantics over any :class:`~memory_core.MemoryBackend`.

How the hosted model maps onto the backing store (opened with ``multi_tenant=True``):

* **Workspaces** are tenants: every call uses ``user_identifier="nams:<workspace>"``, so
  one workspace can never read another's conversations, messages or entities.
* **Conversations** get a server-issued random UUID; the backing session is that UUID
  as a string. The backing conversation's metadata holds ``{"nams": {"userId": …,
  "metadata": …}}``: the NAMS ``userId`` and the caller's metadata, and the mark that the
  conversation was created through this API. A session without the mark (never created,
  deleted, or written by something else) is ``404``: the API never auto-creates.
* **Listing** sorts by ``updatedAt`` (newest first, ties by id) and pages with an opaque
  keyset cursor, so a page boundary is stable while conversations are added.
* **Observations/reflections** exist only when a summarizer is configured: one
  observation per full window of ``observation_window`` messages (oldest first), and one
  reflection summarising all messages of those windows. Texts are cached per window.
* **Extraction** is synchronous in every backing store: each message is ``completed``.
  Test mode (``extraction_delay``, ``memory-core serve --test-extraction-delay``): a
  message stays ``pending`` for that many seconds after it was written, and observations
  and reflections cover only messages whose extraction has completed.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import OrderedDict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid4, uuid5

from memory_core import Conversation, Entity, MemoryBackend, Message, NotFoundError
from memory_core.requests import Summarizer
from memory_core.summary import run_summarizer

from .. import nams_wire as wire
from .errors import ApiError, not_found

MARK = "nams"
TENANT_PREFIX = "nams:"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CACHE_SIZE = 4096


def _micros(when: datetime) -> int:
    aware = when if when.tzinfo else when.replace(tzinfo=UTC)
    return (aware - _EPOCH) // timedelta(microseconds=1)


def _canonical_id(conversation_id: str) -> str:
    """The conversation UUID in canonical form; anything else is unknown (404)."""
    try:
        return str(UUID(conversation_id))
    except ValueError:
        raise not_found() from None


def _encode_cursor(micros: int, conversation_id: str, offset: int) -> str:
    raw = json.dumps({"t": micros, "i": conversation_id, "o": offset}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[int, str, int]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        micros, conversation_id, offset = data["t"], data["i"], data["o"]
        if not (isinstance(micros, int) and isinstance(conversation_id, str)):
            raise TypeError
        if not isinstance(offset, int) or offset < 0:
            raise TypeError
        return micros, conversation_id, offset
    except (ValueError, TypeError, KeyError, binascii.Error):
        raise ApiError(400, wire.ErrorCode.INVALID_CURSOR, "cursor is not valid") from None


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

    @property
    def search_type(self) -> wire.SearchType:
        """``vector`` when the backing store searches by embedding, else ``text``."""
        vector = self.backend.embedder is not None and self.backend.capabilities.vector_search
        return "vector" if vector else "text"

    @staticmethod
    def tenant(workspace: str) -> str:
        return TENANT_PREFIX + workspace

    # ------------------------------------------------------------------ conversations

    async def _load(self, workspace: str, conversation_id: str, limit: int) -> Conversation:
        """The marked backing conversation with its newest ``limit`` messages, or 404."""
        session = _canonical_id(conversation_id)
        try:
            conversation = await self.backend.get_conversation(
                session, limit=limit, user_identifier=self.tenant(workspace)
            )
        except NotFoundError:
            raise not_found() from None
        if not isinstance(conversation.metadata.get(MARK), dict):
            raise not_found()
        return conversation

    @staticmethod
    def _header(workspace: str, conversation: Conversation) -> wire.ConversationOut:
        mark = conversation.metadata.get(MARK) or {}
        user = mark.get("userId")
        metadata = mark.get("metadata")
        return wire.ConversationOut(
            id=conversation.session_id,
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
        return self._header(workspace, await self._load(workspace, conversation_id, 1))

    async def delete_conversation(self, workspace: str, conversation_id: str) -> None:
        conversation = await self._load(workspace, conversation_id, 1)
        await self.backend.clear_session(
            conversation.session_id, user_identifier=self.tenant(workspace)
        )

    async def list_conversations(
        self, workspace: str, user_id: str | None, limit: int, cursor: str | None
    ) -> wire.ConversationPage:
        """One page, newest ``updatedAt`` first (ties by id), after ``cursor``."""
        after = _decode_cursor(cursor) if cursor else None
        offset = after[2] if after else 0
        fetch = offset + limit + 1 + limit // 4
        while True:
            rows = await self.backend.list_conversations(
                limit=fetch, user_identifier=self.tenant(workspace)
            )
            complete = len(rows) < fetch
            keyed = [(self._sort_key(c), c) for c in rows]
            if not complete and keyed:
                # Rows sharing the oldest timestamp of a truncated fetch may continue
                # beyond it: keep only the timestamps that are certainly complete.
                oldest = max(key[0] for key, _ in keyed)
                keyed = [(key, c) for key, c in keyed if key[0] < oldest]
            chosen = [
                (key, c)
                for key, c in sorted(keyed, key=lambda item: item[0])
                if self._visible(c, user_id) and (after is None or key > (-after[0], after[1]))
            ]
            if len(chosen) > limit or complete:
                break
            fetch *= 2
        page = chosen[:limit]
        next_cursor = None
        if len(chosen) > limit:
            (neg_micros, last_id), _ = page[-1]
            next_cursor = _encode_cursor(-neg_micros, last_id, offset + len(page))
        return wire.ConversationPage(
            conversations=[self._header(workspace, c) for _, c in page], next_cursor=next_cursor
        )

    @staticmethod
    def _sort_key(conversation: Conversation) -> tuple[int, str]:
        when = conversation.updated_at or conversation.created_at
        return (-_micros(when), conversation.session_id)

    @staticmethod
    def _visible(conversation: Conversation, user_id: str | None) -> bool:
        mark = conversation.metadata.get(MARK)
        if not isinstance(mark, dict):
            return False
        return user_id is None or mark.get("userId") == user_id

    # ------------------------------------------------------------------ messages

    @staticmethod
    def _message(conversation_id: str, message: Message) -> wire.MessageOut:
        return wire.MessageOut(
            id=str(message.id),
            conversation_id=conversation_id,
            role=message.role.value,
            content=message.content,
            created_at=message.created_at,
            score=message.score,
        )

    async def list_messages(
        self, workspace: str, conversation_id: str, limit: int
    ) -> list[wire.MessageOut]:
        """The newest ``limit`` messages, newest first."""
        conversation = await self._load(workspace, conversation_id, limit)
        cid = conversation.session_id
        return [self._message(cid, m) for m in reversed(conversation.messages)]

    async def add_message(
        self, workspace: str, conversation_id: str, item: wire.MessageIn
    ) -> wire.MessageCreated:
        conversation = await self._load(workspace, conversation_id, 1)
        stored = await self.backend.add_message(
            conversation.session_id,
            item.role,
            item.content,
            user_identifier=self.tenant(workspace),
        )
        return wire.MessageCreated(
            id=str(stored.id),
            conversation_id=conversation.session_id,
            role=stored.role.value,
            content=stored.content,
        )

    async def add_messages(
        self, workspace: str, conversation_id: str, items: Sequence[wire.MessageIn]
    ) -> list[wire.MessageOut]:
        conversation = await self._load(workspace, conversation_id, 1)
        stored = await self.backend.add_messages_batch(
            conversation.session_id,
            [{"role": i.role, "content": i.content} for i in items],
            batch_size=wire.MAX_BULK,
            user_identifier=self.tenant(workspace),
        )
        return [self._message(conversation.session_id, m) for m in stored]

    async def search(
        self, workspace: str, conversation_id: str, query: str, limit: int
    ) -> wire.SearchOut:
        conversation = await self._load(workspace, conversation_id, 1)
        hits = await self.backend.search_messages(
            query,
            session_id=conversation.session_id,
            limit=limit,
            user_identifier=self.tenant(workspace),
        )
        cid = conversation.session_id
        return wire.SearchOut(
            messages=[self._message(cid, m) for m in hits],
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
        conversation = await self._load(workspace, conversation_id, self._read_all())
        cid = conversation.session_id
        return wire.ObservationList(
            observations=await self._observations(cid, conversation.messages)
        )

    async def reflections(self, workspace: str, conversation_id: str) -> wire.ReflectionList:
        conversation = await self._load(workspace, conversation_id, self._read_all())
        cid = conversation.session_id
        return wire.ReflectionList(reflections=await self._reflections(cid, conversation.messages))

    async def context(self, workspace: str, conversation_id: str) -> wire.ContextOut:
        """Reflections, observations and the newest messages (newest first)."""
        limit = self._read_all() if self.summarizer else wire.CONTEXT_RECENT_MESSAGES
        conversation = await self._load(workspace, conversation_id, limit)
        cid, messages = conversation.session_id, conversation.messages
        recent = messages[-wire.CONTEXT_RECENT_MESSAGES :]
        return wire.ContextOut(
            reflections=await self._reflections(cid, messages),
            observations=await self._observations(cid, messages),
            recent_messages=[self._message(cid, m) for m in reversed(recent)],
        )

    async def extraction_status(
        self, workspace: str, conversation_id: str
    ) -> wire.ExtractionStatusOut:
        conversation = await self._load(workspace, conversation_id, self._read_all())
        cid = conversation.session_id
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

    @staticmethod
    def _entity(entity: Entity, merged: bool = False) -> wire.EntityOut:
        return wire.EntityOut(
            id=entity.id,
            name=entity.name,
            type=wire.entity_type_to_wire(entity.type),
            description=entity.description,
            confidence=entity.confidence,
            created_at=entity.created_at,
            updated_at=entity.updated_at or entity.created_at,
            resolution="merged" if merged else None,
            merged_into=entity.id if merged else None,
        )

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
        return self._entity(entity, merged=existed)

    async def search_entities(
        self, workspace: str, query: str, kind: str | None, limit: int
    ) -> wire.EntitySearchOut:
        found = await self.backend.find_entities(
            query,
            limit,
            type=kind.upper() if kind else None,
            user_identifier=self.tenant(workspace),
        )
        return wire.EntitySearchOut(entities=[self._entity(e) for e in found])
