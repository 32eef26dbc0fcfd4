"""Fixtures of the transfer tests: a Neo4j emptied before each test that uses it, and a
fresh PostgreSQL store (a schema of its own) for each test that asks for one."""

from __future__ import annotations

import pytest

from memory_core_dev.neo4j_fixtures import Neo4jHandle, neo4j_wipe
from memory_core_dev.postgres_schemas import schema_url
from memory_core_dev.postgres_server import PostgresHandle


@pytest.fixture
def bolt_url(neo4j_server: Neo4jHandle) -> str:
    """The run's Neo4j, empty: a transfer test exports or copies the whole store and
    compares it, so it skips (saying so) on a server it may not empty (``NEO4J_URI``, not
    a throwaway)."""
    neo4j_server.require_wipeable("it exports or copies the whole database")
    neo4j_wipe(neo4j_server.uri, neo4j_server.auth)
    return neo4j_server.uri


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "bolt_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.neo4j_private)


@pytest.fixture
def pg_url(postgres_server: PostgresHandle) -> str:
    """A fresh, empty PostgreSQL store on the run's server (a schema of its own)."""
    return schema_url(postgres_server.url, "transfer")
