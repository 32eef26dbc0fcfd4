"""The whole conformance suite on the Bolt backend, against the real Neo4j of the run.

The store is not declared throwaway: scenarios that need an empty store get a fresh
tenant (the backend is multi-tenant capable), so the suite also proves it is safe on a
Neo4j it does not own.
"""

from __future__ import annotations

import pytest

from memory_core.conformance import ConformanceSuite
from memory_core_dev.neo4j_fixtures import Neo4jHandle

pytestmark = pytest.mark.neo4j


class TestBoltConformance(ConformanceSuite):
    @pytest.fixture
    def conformance_backend_url(self, neo4j_server: Neo4jHandle) -> str:
        return neo4j_server.uri
