"""Backends for the reliability tests: embedded always, Bolt, NAMS and PostgreSQL on real
servers.

``subject`` is parametrised over the four kinds (see :class:`.subjects.Subject`): a
SQLite file, the run's Neo4j, a private NAMS server of this directory over a SQLite
file, and a schema of its own on the run's PostgreSQL. Each test works in sessions of
its own, so tests never see each other's data.

``RELIABILITY_PROFILE=full`` runs the long versions (more messages, more examples); the
default ``ci`` profile keeps the directory short on 2 cores.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_core import open_backend
from memory_core_dev.nams_server import NamsTestServer, start_nams_server
from memory_core_dev.postgres_schemas import new_schema, with_schema

from .subjects import Subject

FULL = os.environ.get("RELIABILITY_PROFILE", "ci") == "full"
KINDS = ["embedded", "bolt", "nams", "postgres"]


# Where a Bolt subject's dump proves "nothing was written" on the whole database: on a
# server others write to (NEO4J_URI) it covers the test's own names only, so these also
# run on the Neo4j scripts/test starts (neo4j_private).
WHOLE_DUMP = {"test_bad_input.py", "test_limits.py", "test_tenancy.py", "test_batches.py"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "[bolt" in item.name or "neo4j_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.neo4j)
            if item.path.name in WHOLE_DUMP and "[bolt" in item.name:
                item.add_marker(pytest.mark.neo4j_private)
        if "[nams" in item.name:
            item.add_marker(pytest.mark.nams)


@pytest.fixture(scope="session")
def reliability_nams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NamsTestServer]:
    """A NAMS server of its own over a SQLite file (so its store can be dumped)."""
    path = tmp_path_factory.mktemp("nams") / "backing.db"
    server = start_nams_server(f"sqlite:///{path}")
    server.backing_path = path  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        server.stop()


async def open_subject(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, **options: Any
) -> Subject:
    """A connected :class:`Subject` of ``kind``."""
    if kind == "embedded":
        path = tmp_path / "store.db"
        subject = Subject(kind, open_backend(f"sqlite:///{path}", **options), sqlite_path=path)
    elif kind == "bolt":
        server = request.getfixturevalue("neo4j_server")
        auth = {} if server.auth is None else {"auth": server.auth}
        backend = open_backend(server.uri, **auth, **options)
        subject = Subject(kind, backend, neo4j=(server.uri, server.auth, not server.wipeable))
    elif kind == "postgres":
        base = request.getfixturevalue("postgres_server").url
        schema = new_schema("rel")
        backend = open_backend(with_schema(base, schema), **options)
        subject = Subject(kind, backend, postgres=(base, schema))
    else:
        nams: NamsTestServer = request.getfixturevalue("reliability_nams")
        backend = nams.backend(NamsTestServer.workspace("rel"), **options)
        subject = Subject(kind, backend, sqlite_path=nams.backing_path)  # type: ignore[attr-defined]
    await subject.backend.connect()
    return subject


@pytest.fixture(params=KINDS)
async def subject(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Subject]:
    """A connected backend of each kind, with a dump of its store."""
    opened = await open_subject(request.param, request, tmp_path)
    try:
        yield opened
    finally:
        await opened.backend.close()


HOOKS = ["embedded", "bolt", "postgres"]
"""The stores with a bulk import hook (transfers write through it)."""


async def _opened(
    request: pytest.FixtureRequest, tmp_path: Path, **options: Any
) -> AsyncIterator[Subject]:
    opened = await open_subject(request.param, request, tmp_path, **options)
    try:
        yield opened
    finally:
        await opened.backend.close()


@pytest.fixture(params=HOOKS)
async def hook_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Subject]:
    """A connected single-tenant store of each kind with a bulk import hook."""
    async for opened in _opened(request, tmp_path):
        yield opened


@pytest.fixture(params=HOOKS)
async def hook_tenants(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Subject]:
    """A connected multi-tenant store of each kind with a bulk import hook."""
    async for opened in _opened(request, tmp_path, multi_tenant=True):
        yield opened


@pytest.fixture
def workspace() -> str:
    """A NAMS workspace no other test uses (on the session-wide ``nams_server``)."""
    return NamsTestServer.workspace()
