"""The whole conformance suite on the PostgreSQL backend, on the real PostgreSQL of the run.

Each run uses a schema of its own in the server of ``postgres_server`` (so a shared
``PG_TEST_URL`` server is never disturbed); the store is not declared throwaway, so
scenarios that need an empty store get a fresh tenant.
"""

from __future__ import annotations

import uuid

import pytest

from memory_core.conformance import ConformanceSuite
from memory_core_dev.postgres_server import PostgresHandle

_SCHEMA = f"conformance_{uuid.uuid4().hex[:12]}"


class TestPostgresConformance(ConformanceSuite):
    @pytest.fixture
    def conformance_backend_url(self, postgres_server: PostgresHandle) -> str:
        separator = "&" if "?" in postgres_server.url else "?"
        return f"{postgres_server.url}{separator}schema={_SCHEMA}"
