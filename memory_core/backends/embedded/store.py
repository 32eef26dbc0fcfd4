"""``EmbeddedBackend``: the default backend, on the standard library's ``sqlite3``."""

from __future__ import annotations

from typing import Any, ClassVar

from memory_core.store import (
    Capabilities,
    ConfigurationError,
    Conversation,
    ConversationPage,
    Entity,
    Erased,
    Message,
    SessionInfo,
    Store,
    StoreStats,
)
from memory_core.store import requests as rq

from . import conversations, entities, erasure, messages, search, stats
from .database import Database
from .fts_purge import purge
from .location import parse_location
from .long_term import EmbeddedLongTerm
from .reasoning import EmbeddedReasoning
from .transfer import EmbeddedTransfer

# A newest-N read of at most this many messages tries the calling thread first (builds
# in well under a millisecond; see memory_core.backends.embedded.database).
INLINE_MESSAGES = 200


class EmbeddedStore(EmbeddedLongTerm, EmbeddedReasoning, Store):
    """Conversation memory in SQLite: ``memory://`` or ``sqlite:///path/to/file.db``.

    ``memory://`` is a private in-process database: each backend object has its own,
    gone when it is closed. ``sqlite:///relative.db`` / ``sqlite:////absolute.db`` is a
    file in WAL mode (created when missing; its folder must exist, except the default
    store's data folder, which is created) that survives reopening and can be
    shared by several processes. One transaction per call, in worker threads (or, for
    the calls an agent turn makes, in the calling thread when they cannot wait), so the
    event loop never waits on a lock or the disk and it works under asyncio and trio.
    Writes go one at a time; reads of a file store run on reader connections of their
    own, concurrently with each other and with a write (WAL); ``memory://`` serialises
    everything through its one connection (see :mod:`memory_core.backends.embedded.database`).

    Options (besides the shared ones of :class:`~memory_core.interface.Store`):

    ``busy_timeout``
        seconds to wait for another process holding the write lock of a file store
        (default 5) before raising :class:`~memory_core.TransportError`.
    ``inline_reads``
        ``True`` (default): ``get_conversation`` of up to 200 messages first runs in the
        calling thread when it can finish there without waiting, which halves its
        latency; SQLite is interrupted after about a millisecond and the read moves to a
        reader thread. ``False``: every read runs in a worker thread.
    ``inline_writes``
        ``True`` (default): ``add_message`` likewise first runs in the calling thread when
        no other write is queued and it can finish there without waiting (a third of its
        latency); otherwise it is rolled back and runs in the writer thread. ``False``:
        every write runs in the writer thread.
    ``create``
        ``True`` (default): a missing database file is created. ``False``: opening a
        file that does not exist raises :class:`~memory_core.NotFoundError` naming it and
        creates nothing (for reading an existing store, as ``memory-core export`` does).
    """

    name: ClassVar[str] = "embedded"
    capabilities = Capabilities(
        delete_message=True,
        list_sessions=True,
        message_neighbours=True,
        conversation_summary=True,
        conversation_titles=True,
        message_metadata=True,
        explicit_mentions=True,
        idempotency_keys=True,
        client_chosen_ids=True,
        auto_create_conversation=True,
        full_history=True,
        server_side_since=True,
        caller_timestamps=True,
        search_global=True,
        search_threshold=True,
        search_metadata_filters=True,
        vector_search=True,
        observations=False,
        reflections=False,
        extraction_status=False,
        entities=True,
        delete_entity=True,
        entity_search=True,
        entity_updates=True,
        entity_merge=True,
        preferences=True,
        facts=True,
        relationships=True,
        entity_graph=True,
        traces=True,
        tool_stats=True,
        similar_traces=True,
        trace_links=True,
        multi_tenant=True,
        trio=True,
        user_erasure=True,
        store_stats=True,
        max_messages_per_read=None,
        default_messages_per_read=1000,
        max_page_size=None,
        max_bulk_messages=None,
    )

    def __init__(
        self,
        url: str = "memory://",
        *,
        busy_timeout: float = 5.0,
        inline_reads: bool = True,
        inline_writes: bool = True,
        create: bool = True,
        **options: Any,
    ):
        location = parse_location(url)
        if (
            isinstance(busy_timeout, bool)
            or not isinstance(busy_timeout, int | float)
            or not busy_timeout >= 0
        ):
            raise ConfigurationError("busy_timeout must be a number of seconds >= 0")
        for name, value in (
            ("inline_reads", inline_reads),
            ("inline_writes", inline_writes),
            ("create", create),
        ):
            if not isinstance(value, bool):
                raise ConfigurationError(f"{name} must be True or False")
        super().__init__(**options)
        self.location = location
        self._store = Database(
            location, float(busy_timeout), inline_reads, inline_writes, create=create
        )

    def describe(self) -> str:
        """``memory://`` or ``sqlite:///<path>``."""
        return self.location.url

    async def connect(self) -> None:
        await self._store.open()

    async def close(self) -> None:
        await self._store.close()

    async def add_message(self, req: rq.AddMessage) -> Message:
        return await self._store.write(lambda conn: messages.add_message(conn, req), small=True)

    async def add_keyed_message(self, req: rq.AddMessage) -> tuple[Message, bool | None]:
        return await self._store.write(lambda conn: messages.add_keyed(conn, req), small=True)

    async def open_turn(self, req: rq.OpenTurn) -> tuple[list[Entity], Message, bool | None]:
        return await self._store.write(lambda conn: messages.open_turn(conn, req), small=True)

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        return await self._store.call(lambda conn: messages.add_messages(conn, req), write=True)

    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        return await self._store.call(lambda conn: conversations.create(conn, req), write=True)

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        return await self._store.read(
            lambda conn: messages.get_conversation(conn, req),
            small=req.limit <= INLINE_MESSAGES,
        )

    async def list_conversations(self, req: rq.ListConversations) -> ConversationPage:
        return await self._store.call(
            lambda conn: conversations.list_conversations(conn, req), write=False
        )

    async def list_sessions(self, req: rq.ListSessions) -> list[SessionInfo]:
        return await self._store.call(
            lambda conn: conversations.list_sessions(conn, req), write=False
        )

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        return await self._store.call(lambda conn: search.search(conn, req), write=False)

    async def clear_session(self, target: rq.Target) -> bool:
        cleared = await self._store.call(lambda conn: conversations.clear(conn, target), write=True)
        # No deleted word stays in the full-text index. Run even when nothing was found:
        # a retry after a purge that failed finishes it.
        await purge(self._store)
        return cleared

    async def message_neighbours(self, req: rq.MessageNeighbours) -> list[list[Message]]:
        return await self._store.call(lambda conn: messages.neighbours(conn, req), write=False)

    async def delete_message(self, req: rq.DeleteMessage) -> bool:
        deleted = await self._store.call(
            lambda conn: messages.delete_message(conn, req), write=True
        )
        await purge(self._store)
        return deleted

    async def add_entity(self, req: rq.AddEntity) -> Entity:
        return await self._store.call(lambda conn: entities.add_entity(conn, req), write=True)

    async def find_entities(self, req: rq.FindEntities) -> list[Entity]:
        return await self._store.call(lambda conn: entities.find_entities(conn, req), write=False)

    async def delete_entity(self, req: rq.DeleteEntity) -> bool:
        return await self._store.call(lambda conn: entities.delete_entity(conn, req), write=True)

    async def forget_user(self, req: rq.ForgetUser) -> Erased:
        return await erasure.forget_user(self._store, req)

    async def stats(self, req: rq.Stats) -> StoreStats:
        return await self._store.call(
            lambda conn: stats.stats(
                conn, req, self.multi_tenant, self.name, self.capabilities.traces
            ),
            write=False,
        )

    def bulk_transfer(self) -> EmbeddedTransfer:
        """The fast, lossless path of :mod:`memory_core.transfer`."""
        return EmbeddedTransfer(self._store, self.multi_tenant)
