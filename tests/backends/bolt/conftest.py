"""Fixtures for the Bolt backend tests: the real Neo4j of the run and open backends.

Every test works in sessions (and tenants) of its own, named with a fresh UUID, so tests
never see each other's data. On top of that, the Neo4j this run started is wiped (every
node and relationship; indexes and constraints stay) before each test that uses it, so
no test depends on what another left behind. An external server (``NEO4J_URI``) is never
wiped (unless ``NEO4J_THROWAWAY=1``: the mutation script's): there the tests rely on
their unique names alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any
from uuid import uuid4

import pytest
from neo4j import GraphDatabase

from memory_core import MemoryBackend, open_backend
from memory_core.backends.bolt import BoltStore
from memory_core_dev.neo4j_fixtures import Neo4jHandle


@pytest.fixture(autouse=True)
def _wipe_own_neo4j(request: pytest.FixtureRequest) -> None:
    """Empty the run's own Neo4j before each test that uses it (see the module doc)."""
    if "neo4j_server" not in request.fixturenames:
        return
    server: Neo4jHandle = request.getfixturevalue("neo4j_server")
    if server.wipeable:
        request.getfixturevalue("neo4j_clean")


@pytest.fixture
def unique() -> Callable[[str], str]:
    """``unique("s")`` → a name no other test uses."""

    def make(kind: str = "s") -> str:
        return f"bolt-test-{kind}-{uuid4().hex}"

    return make


@pytest.fixture
def bolt_url(neo4j_server: Neo4jHandle) -> str:
    return neo4j_server.uri


@pytest.fixture
def open_bolt(bolt_url: str) -> Callable[..., MemoryBackend]:
    """Build (not connect) a Bolt backend on the test server with extra options."""

    def build(**options: Any) -> MemoryBackend:
        backend = open_backend(bolt_url, **options)
        assert isinstance(backend.store, BoltStore)
        return backend

    return build


@pytest.fixture
async def bolt(open_bolt: Callable[..., MemoryBackend]) -> AsyncIterator[MemoryBackend]:
    """A connected single-tenant Bolt backend."""
    async with open_bolt() as backend:
        yield backend


@pytest.fixture
async def tenant_bolt(open_bolt: Callable[..., MemoryBackend]) -> AsyncIterator[MemoryBackend]:
    """A connected multi-tenant Bolt backend."""
    async with open_bolt(multi_tenant=True) as backend:
        yield backend


@pytest.fixture
def graph(neo4j_server: Neo4jHandle) -> Callable[..., list[dict[str, Any]]]:
    """``graph(query, **params)`` → rows, run directly on the test server (for checking
    what the backend stored)."""

    def run(query: str, **params: Any) -> list[dict[str, Any]]:
        with GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth) as driver:
            records, _, _ = driver.execute_query(query, params)
        return [record.data() for record in records]

    return run
