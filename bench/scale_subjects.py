"""What the scale bench runs on: memory-core over any backend, and the peer on Bolt.

A subject offers the scale operations it has (``ops``); the bench skips the others and
says so. memory-core's stores are opened ``multi_tenant=True`` (each of the 100 users is
a tenant, so "search across all of a user's sessions" is one scoped call); on NAMS each
user is a workspace of its own (the server maps workspaces onto tenants).
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from memory_core import MemoryBackend
from memory_core.server.hosted import MARK
from memory_core.turns.agent import with_memory

from .scale_data import ENTITY, user_name

LIST_PAGE = 10  # conversations per list page (one screen of a UI)
CONTEXT = 20  # messages a concurrent agent reads as context
EVERY_OP = (
    "add_one",
    "add_batch",
    "newest",
    "search_session",
    "search_user",
    "find_entities",
    "list_page",
    "turn",
    "agent_turn",
)

Size = Callable[[], Awaitable[float | None]]


async def _unknown_size() -> float | None:
    return None


class Ours:
    """memory-core over one backend. ``backend_for(user)`` gives the backend object that
    acts for ``user`` and the ``user_identifier`` to pass (``None`` on NAMS, where the
    workspace is the user)."""

    grows = True  # the steps load this subject's store
    measured = True  # the steps measure it (False: it only grows a store others read)
    url: str | None = None  # the store's URL, for agents in other processes (embedded)
    tenant_prefix = ""  # what a user's name is prefixed with to make its tenant

    def __init__(
        self,
        name: str,
        backend_for: Callable[[str], tuple[MemoryBackend, str | None]],
        size: Size = _unknown_size,
        marked: bool = False,
    ) -> None:
        self.name = name
        self._backend_for = backend_for
        self.size = size
        # the store's server processes (their CPU is counted under concurrency)
        self.server_pids: Callable[[], list[int]] = list
        self.marked = marked
        self.users: set[str] = set()  # every user acted for (to erase them at the end)
        self.ids: dict[tuple[str, str], str] = {}  # (user, session) -> conversation id
        caps = backend_for(user_name(0))[0].capabilities
        self.ops = set(EVERY_OP) - (set() if caps.search_global else {"search_user"})

    def backend_for(self, user: str) -> tuple[MemoryBackend, str | None]:
        """The backend acting for ``user`` and the ``user_identifier`` to pass."""
        self.users.add(user)
        return self._backend_for(user)

    async def handle(self, user: str, session: str) -> str:
        """What names ``session`` in calls (the name itself: the caller names sessions)."""
        return session

    async def load(self, user: str, session: str, rows: list[dict[str, Any]]) -> None:
        backend, who = self.backend_for(user)
        if self.marked and (user, session) not in self.ids:
            # The hosted API shows a conversation only with its mark (NamsShared reads
            # these through the server): made before the session's first messages.
            made = await backend.create_conversation(
                session, metadata={MARK: {"userId": None, "metadata": {}}}, user_identifier=who
            )
            self.ids[(user, session)] = str(made.id)
        session = await self.handle(user, session)
        await backend.bulk_add_messages(session, rows, user_identifier=who)

    async def add_entities(self, user: str, numbers: range) -> None:
        backend, who = self.backend_for(user)
        for k in numbers:
            await backend.add_entity(f"{ENTITY} {k}", "ORGANIZATION", user_identifier=who)

    async def add_one(self, user: str, session: str, content: str) -> None:
        backend, who = self.backend_for(user)
        session = await self.handle(user, session)
        await backend.add_message(session, "user", content, user_identifier=who)

    async def add_batch(self, user: str, session: str, rows: list[dict[str, Any]]) -> None:
        backend, who = self.backend_for(user)
        session = await self.handle(user, session)
        await backend.add_messages_batch(session, rows, user_identifier=who)

    async def newest(self, user: str, session: str) -> int:
        backend, who = self.backend_for(user)
        session = await self.handle(user, session)
        found = await backend.get_conversation(session, limit=100, user_identifier=who)
        return len(found.messages)

    async def search_session(self, user: str, session: str, query: str) -> int:
        backend, who = self.backend_for(user)
        session = await self.handle(user, session)
        hits = await backend.search_messages(
            query, session_id=session, limit=10, user_identifier=who
        )
        return len(hits)

    async def search_user(self, user: str, query: str) -> int:
        backend, who = self.backend_for(user)
        return len(await backend.search_messages(query, limit=10, user_identifier=who))

    async def find_entities(self, user: str, name: str) -> int:
        backend, who = self.backend_for(user)
        return len(await backend.find_entities(name, 8, user_identifier=who))

    async def list_page(self, user: str, cursor: Any) -> Any:
        """Read the page at ``cursor`` (``None``: the first); the next page's cursor."""
        backend, who = self.backend_for(user)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            page = await backend.list_conversations_page(
                limit=LIST_PAGE, cursor=cursor, user_identifier=who
            )
        return page.next_cursor

    async def turn(self, user: str, session: str, turn_id: str) -> None:
        """One turn through the turn protocol (retrieval, user message, reply)."""
        backend, who = self.backend_for(user)
        session = await self.handle(user, session)
        chat = with_memory(
            _agent, backend=backend, conversation_id=session, platform="bench", user_identifier=who
        )
        await chat(f"what about {ENTITY} 7 and the meadow?", turn_id=turn_id)

    async def agent_turn(self, user: str, session: str, query: str) -> None:
        """Read context, search the session, add the user message and the reply."""
        backend, who = self.backend_for(user)
        session = await self.handle(user, session)
        await backend.get_conversation(session, limit=CONTEXT, user_identifier=who)
        await backend.search_messages(query, session_id=session, limit=5, user_identifier=who)
        await backend.add_message(session, "user", f"tell me about {query}", user_identifier=who)
        await backend.add_message(session, "assistant", f"{query}: noted", user_identifier=who)


class NamsShared(Ours):
    """memory-core on NAMS, through a server over the store ``direct`` grows: each user is
    a workspace, whose tenant in the backing store (``nams:<workspace>``) is the one
    ``direct`` writes the user's sessions under, marked as the hosted API's own; a
    session is addressed by the conversation id the store gave it (server-issued ids,
    ``session_names="server"``). The store is loaded once and measured directly and
    through the server. (Portable names cost a listing of the user's conversations,
    ``⌈conversations / 200⌉`` requests, for every new name: at 10k sessions that listing,
    not the store, would be measured.)"""

    grows = False

    def __init__(self, direct: Ours, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.direct = direct

    async def handle(self, user: str, session: str) -> str:
        return self.direct.ids[(user, session)]


async def _agent(user_message: str, ctx: Any) -> str:
    return f"noted: {user_message[:24]}"


class PeerSubject:
    """neo4j-agent-memory's ``ShortTermMemory`` (no embedder, no extraction). It has no
    users, search needs an embedder, and it has no entity lookup or turn protocol: its
    sessions are named ``<prefix><user>-<session>`` so a prefix lists one user's, and its agent
    turn is read context plus two adds (no search)."""

    name = "peer"
    ops = {"add_one", "add_batch", "newest", "list_page", "agent_turn"}
    grows = True
    measured = True

    def __init__(self, memory: Any, prefix: str, size: Size = _unknown_size) -> None:
        self.memory = memory
        self.prefix = prefix
        self.size = size
        self.server_pids: Callable[[], list[int]] = list

    def _session(self, user: str, session: str) -> str:
        return f"{self.prefix}{user}-{session}"

    async def load(self, user: str, session: str, rows: list[dict[str, Any]]) -> None:
        await self.add_batch(user, session, rows)

    async def add_one(self, user: str, session: str, content: str) -> None:
        await self.memory.add_message(
            self._session(user, session),
            "user",
            content,
            extract_entities=False,
            generate_embedding=False,
        )

    async def add_batch(self, user: str, session: str, rows: list[dict[str, Any]]) -> None:
        await self.memory.add_messages_batch(
            self._session(user, session), rows, batch_size=len(rows), generate_embeddings=False
        )

    async def newest(self, user: str, session: str) -> int:
        found = await self.memory.get_conversation(self._session(user, session), limit=100)
        return len(found.messages)

    async def list_page(self, user: str, cursor: Any) -> Any:
        """Offset paging (the peer has no cursor): ``cursor`` is the offset."""
        offset = cursor or 0
        await self.memory.list_sessions(
            prefix=f"{self.prefix}{user}-", limit=LIST_PAGE, offset=offset
        )
        return offset + LIST_PAGE

    async def agent_turn(self, user: str, session: str, query: str) -> None:
        name = self._session(user, session)
        await self.memory.get_conversation(name, limit=CONTEXT)
        for role, content in (("user", f"tell me about {query}"), ("assistant", "noted")):
            await self.memory.add_message(
                name, role, content, extract_entities=False, generate_embedding=False
            )
