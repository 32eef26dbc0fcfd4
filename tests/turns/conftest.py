"""Fixtures for the turn protocol on the real backends.

``turn_store`` is parametrized over the embedded backend (a SQLite file), Bolt (the real
Neo4j of ``memory_core_dev.neo4j_fixtures``) and NAMS (the NAMS-compatible HTTP server of
``memory_core_dev.nams_server`` on 127.0.0.1), in both NAMS session modes: portable names
(the default) and the reference's server-issued ids (``session_names="server"``: a
single-tenant store where conversations must be created first), and PostgreSQL (the
session's server, a schema per test). Each test works in its
own conversations and entities with unique names, and the conversations are removed
afterwards.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from memory_core import Entity, MemoryBackend, Message, open_backend
from memory_core.turns import TurnMemory
from memory_core_dev.nams_server import API_KEY

BACKENDS = [
    pytest.param("embedded", id="embedded"),
    pytest.param("bolt", id="bolt", marks=pytest.mark.neo4j),
    pytest.param("nams", id="nams", marks=pytest.mark.nams),
    pytest.param("nams-server-ids", id="nams-server-ids", marks=pytest.mark.nams),
    pytest.param("postgres", id="postgres"),
]


@dataclass
class TurnStore:
    """One real store: open backends on it, make conversations and entities in it."""

    kind: str
    url: str
    options: dict[str, Any]
    backends: list[MemoryBackend] = field(default_factory=list)
    conversations: list[str] = field(default_factory=list)
    tag: str = field(default_factory=lambda: uuid4().hex[:10])

    @property
    def backend(self) -> MemoryBackend:
        """The first backend opened on the store."""
        return self.backends[0]

    async def open(self) -> MemoryBackend:
        """A new backend object on the same store (a new 'process')."""
        backend = open_backend(self.url, **self.options)
        await backend.connect()
        self.backends.append(backend)
        return backend

    async def new_conversation(self, backend: MemoryBackend | None = None) -> str:
        """A fresh conversation id valid on this store (server-issued on NAMS)."""
        target = backend or self.backend
        name = f"turns-{self.tag}-{len(self.conversations)}"
        memory = await TurnMemory.start_conversation(target, "tests", conversation_id=name)
        self.conversations.append(memory.conversation_id)
        return memory.conversation_id

    @property
    def name_tag(self) -> str:
        """The tag as one capitalized word of letters only, e.g. ``Zqdfaebc…``."""
        return "Zq" + "".join(chr(ord("a") + int(c, 16)) for c in self.tag)

    async def entity(self, name: str, kind: str = "ORGANIZATION") -> Entity:
        """An entity whose name is unique to this test: ``"<name> <name_tag>"``.

        The store may be shared (Bolt: one Neo4j for the run), so a message must name only
        this test's entities. A capitalized name such as "Acme Corp" followed by the
        capitalized tag is extracted as ONE phrase, "Acme Corp Zq…"; with a tag that does
        not continue the phrase (lower case, digits) "Acme Corp" alone would be looked up
        too and could find another test's entity.
        """
        return await self.backend.add_entity(f"{name} {self.name_tag}", kind)

    async def messages(self, conversation_id: str) -> list[Message]:
        """Everything stored in the conversation, oldest first (read on a fresh backend)."""
        reader = await self.open()
        return (await reader.get_conversation(session_id=conversation_id)).messages

    async def close(self) -> None:
        if self.conversations:
            cleaner = await self.open()
            for conversation_id in self.conversations:
                await cleaner.clear_session(session_id=conversation_id)
        for backend in self.backends:
            await backend.close()


def _store_location(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> TurnStore:
    if kind == "embedded":
        return TurnStore(kind, f"sqlite:///{tmp_path / 'turns.db'}", {})
    if kind == "postgres":
        url = request.getfixturevalue("postgres_server").url
        separator = "&" if "?" in url else "?"
        return TurnStore(kind, f"{url}{separator}schema=turns_{uuid4().hex[:12]}", {})
    if kind == "bolt":
        server = request.getfixturevalue("neo4j_server")
        return TurnStore(kind, server.uri, {"auth": server.auth})
    server = request.getfixturevalue("nams_server")
    options = {"api_key": API_KEY, "workspace_id": server.workspace("turns"), "trust_env": False}
    if kind == "nams-server-ids":
        return TurnStore("nams", server.url, {**options, "session_names": "server"})
    return TurnStore(kind, server.url, options)


async def opened_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TurnStore]:
    """The store of the fixture's parameter, one backend already open (for a fixture)."""
    store = _store_location(request.param, request, tmp_path)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture(params=BACKENDS)
async def turn_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TurnStore]:
    """A real store of each backend kind with one backend already open."""
    async for store in opened_store(request, tmp_path):
        yield store


NAMS_KINDS = [p for p in BACKENDS if str(p.id).startswith("nams")]


@pytest.fixture(params=NAMS_KINDS)
async def read_first_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[TurnStore]:
    """A real store whose writes cannot tell a replay (NAMS): a turn reads first."""
    async for store in opened_store(request, tmp_path):
        yield store
