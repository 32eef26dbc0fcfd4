"""Real stores of each backend kind, opened through :mod:`memory_core.sync`.

``sync_store`` (import it into a conftest) is parametrized over the embedded backend (a
SQLite file), Bolt (the run's real Neo4j), NAMS (the run's NAMS-compatible server, a
fresh workspace per test) and PostgreSQL (the run's server, one schema for the run).
Tests make their sessions with :meth:`SyncStore.session`,
which works in either NAMS mode (server-issued ids or caller-named sessions); every
session made is cleared afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from memory_core.integrations import start_session
from memory_core.sync import SyncMemoryBackend, open_backend
from memory_core_dev.nams_server import API_KEY
from memory_core_dev.postgres_schemas import schema_url

STORE_KINDS = [
    pytest.param("embedded", id="embedded"),
    pytest.param("bolt", id="bolt", marks=pytest.mark.neo4j),
    pytest.param("nams", id="nams", marks=pytest.mark.nams),
    pytest.param("postgres", id="postgres"),
]
# One schema for the run's sync stores (like Bolt's one database: sessions are per test).
_SCHEMA_URLS: dict[str, str] = {}


@dataclass
class SyncStore:
    """One real store: open blocking backends on it and make sessions in it."""

    kind: str
    url: str
    options: dict[str, Any]
    opened: list[SyncMemoryBackend] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    tag: str = field(default_factory=lambda: uuid4().hex[:10])

    def open(self, **extra: Any) -> SyncMemoryBackend:
        """A new blocking backend on the store (closed after the test)."""
        memory = open_backend(self.url, **{**self.options, **extra})
        memory.connect()
        self.opened.append(memory)
        return memory

    @property
    def memory(self) -> SyncMemoryBackend:
        """The first backend opened on the store."""
        return self.opened[0]

    def session(self, name: str = "s") -> str:
        """A new session usable on this store (server-issued id on NAMS today)."""
        session_id = start_session(self.memory, f"{name}-{self.tag}-{len(self.sessions)}")
        self.sessions.append(session_id)
        return session_id

    def close(self) -> None:
        try:
            for session_id in self.sessions:
                self.memory.clear_session(session_id)
        finally:
            for memory in self.opened:
                memory.close()


def store_location(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> SyncStore:
    """Where a store of ``kind`` lives for this test."""
    if kind == "embedded":
        return SyncStore(kind, f"sqlite:///{tmp_path / 'sync.db'}", {})
    if kind == "bolt":
        server = request.getfixturevalue("neo4j_server")
        return SyncStore(kind, server.uri, {"auth": server.auth})
    if kind == "postgres":
        base = request.getfixturevalue("postgres_server").url
        url = _SCHEMA_URLS.setdefault(base, schema_url(base, "sync"))
        return SyncStore(kind, url, {})
    server = request.getfixturevalue("nams_server")
    options = {"api_key": API_KEY, "workspace_id": server.workspace("sync"), "trust_env": False}
    return SyncStore(kind, server.url, options)


@contextmanager
def opened_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SyncStore]:
    """A store of ``kind`` with one blocking backend open; its sessions cleared and its
    backends closed afterwards."""
    store = store_location(kind, request, tmp_path)
    store.open()
    try:
        yield store
    finally:
        store.close()


@pytest.fixture(params=STORE_KINDS)
def sync_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SyncStore]:
    """A real store of each backend kind with one blocking backend already open."""
    with opened_store(request.param, request, tmp_path) as store:
        yield store
