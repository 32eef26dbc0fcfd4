"""The whole conformance suite on the PostgreSQL backend, on the real PostgreSQL of the run.

Each run uses a schema of its own in the server of ``postgres_server`` (so a shared
``PG_TEST_URL`` server is never disturbed); the store is not declared throwaway, so
scenarios that need an empty store get a fresh tenant. Before the first scenario the schema
holds other programs' rows in no tenant's scope, with values memory-core's models cannot
hold (``memory_core_dev.foreign_data.add_postgres_adversarial``): every whole-store read
of the suite meets them, and must not break.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest

from memory_core import open_backend
from memory_core.conformance import ConformanceSuite
from memory_core_dev.foreign_data import add_postgres_adversarial
from memory_core_dev.pg_ha import HaFormation
from memory_core_dev.postgres_server import PostgresHandle

_SCHEMA = f"conformance_{uuid.uuid4().hex[:12]}"


def _url(server: PostgresHandle) -> str:
    separator = "&" if "?" in server.url else "?"
    return f"{server.url}{separator}schema={_SCHEMA}"


async def _migrate(url: str) -> None:
    async with open_backend(url):
        pass


@pytest.fixture(scope="class")
def foreign_rows(postgres_server: PostgresHandle) -> None:
    anyio.run(_migrate, _url(postgres_server))
    add_postgres_adversarial(postgres_server.url, _SCHEMA, uuid.uuid4().hex[:8])


@pytest.mark.usefixtures("foreign_rows")
class TestPostgresConformance(ConformanceSuite):
    @pytest.fixture
    def conformance_backend_url(self, postgres_server: PostgresHandle) -> str:
        return _url(postgres_server)


class TestPostgresReplicaConformance(ConformanceSuite):
    """The whole suite with reads on a standby (``read_from="replica"``) of the run's
    pg_auto_failover formation: each backend object reads its own writes there."""

    @pytest.fixture
    def conformance_backend_url(self, pg_ha: HaFormation) -> str:
        return f"{pg_ha.url}&schema={_SCHEMA}_replica"

    @pytest.fixture
    def conformance_backend_options(self) -> dict[str, Any]:
        return {"read_from": "replica"}
