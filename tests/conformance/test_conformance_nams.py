"""The whole conformance suite through the NAMS adapter, over real HTTP to the
NAMS-compatible server (uvicorn on 127.0.0.1), backed by (a) the embedded store and
(b) the real Neo4j over Bolt, in both session modes: portable names (the default) and
server-issued ids (``session_names="server"``, the reference behaviour). Portable names
over Bolt run the areas where a name meets the server's store (see the class).

Every scenario runs in a fresh workspace of its own, so the store each scenario sees is
empty and may be wiped (``throwaway_store``): nothing outside that workspace is touched.
The ``faults`` area drives the server's fault knobs through ``/_admin/faults``
(:class:`AdminFaults`), as it would on a server started with ``--test-admin``; the
relationship reads run on relationships written through ``/_admin/relationships``
(:class:`AdminSeed`: NAMS reads its entity graph but cannot write it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memory_core.conformance.fault_control import AdminFaults, FaultControl
from memory_core.conformance.seeding import AdminSeed, Seed
from memory_core.conformance.suite import (
    AliasingSuite,
    ClearSuite,
    ConformanceSuite,
    ConversationsSuite,
    DeleteSuite,
    ErasureSuite,
    NamsSuite,
    PortabilitySuite,
    SessionsSuite,
    TenancySuite,
)
from memory_core.summary import extractive_summary
from memory_core_dev.nams_server import API_KEY, NamsTestServer

# Test mode: extraction stays pending for a moment and observations/reflections have
# content, so the nams.* scenarios check the polling, timeout and content paths.
TEST_MODE: dict[str, Any] = {
    "summarizer": extractive_summary,
    "observation_window": 2,
    "extraction_delay": 0.3,
}

pytestmark = pytest.mark.nams


def _options(session_names: str = "portable") -> dict[str, Any]:
    return {
        "api_key": API_KEY,
        "workspace_id": NamsTestServer.workspace("cf"),
        "trust_env": False,  # test traffic to 127.0.0.1 never goes through a proxy
        "session_names": session_names,
    }


@pytest.fixture(scope="module")
def nams_test_mode_server() -> Iterator[NamsTestServer]:
    with NamsTestServer("memory://", **TEST_MODE) as server:
        yield server


@pytest.fixture(scope="module")
def nams_bolt_test_mode_server(neo4j_server: Any) -> Iterator[NamsTestServer]:
    options = dict(TEST_MODE)
    if neo4j_server.auth is not None:
        options["backend_options"] = {"auth": neo4j_server.auth}
    with NamsTestServer(neo4j_server.uri, **options) as server:
        yield server


class _OverTestModeServer(ConformanceSuite):
    @pytest.fixture
    def conformance_faults(self, conformance_backend_url: str) -> FaultControl:
        return AdminFaults(conformance_backend_url, api_key=API_KEY)

    @pytest.fixture
    def conformance_seed(
        self, conformance_backend_url: str, conformance_backend_options: dict[str, Any]
    ) -> Seed:
        # NAMS cannot write relationships: the graph reads are checked on relationships
        # the test server's admin route writes into the workspace.
        workspace = conformance_backend_options["workspace_id"]
        return AdminSeed(conformance_backend_url, api_key=API_KEY, workspace=workspace)


class TestNamsOverEmbedded(_OverTestModeServer):
    """NAMS adapter (portable session names) → server → ``memory://``."""

    throwaway_store = True

    @pytest.fixture
    def conformance_backend_url(self, nams_test_mode_server: NamsTestServer) -> str:
        return nams_test_mode_server.url

    @pytest.fixture
    def conformance_backend_options(self) -> dict[str, Any]:
        return _options()


@pytest.mark.neo4j
class TestNamsOverBolt(
    AliasingSuite,
    ClearSuite,
    ConversationsSuite,
    DeleteSuite,
    ErasureSuite,
    NamsSuite,
    PortabilitySuite,
    SessionsSuite,
    TenancySuite,
):
    """NAMS adapter (portable session names) → server → Neo4j over Bolt: the areas where a
    portable name meets the server's store (names kept in conversation metadata, listings
    filtered by user, ownership, deletes and erasure). Every area runs with portable names
    over embedded and with server ids over Bolt; this pairing alone cost the most CI time
    of any run (a session's first write lists the user's conversations twice, each listing
    a Neo4j query)."""

    throwaway_store = True

    @pytest.fixture
    def conformance_backend_url(self, nams_bolt_test_mode_server: NamsTestServer) -> str:
        return nams_bolt_test_mode_server.url

    @pytest.fixture
    def conformance_backend_options(self) -> dict[str, Any]:
        return _options()


class TestNamsServerIdsOverEmbedded(_OverTestModeServer):
    """NAMS adapter with ``session_names="server"`` → server → ``memory://``."""

    throwaway_store = True

    @pytest.fixture
    def conformance_backend_url(self, nams_test_mode_server: NamsTestServer) -> str:
        return nams_test_mode_server.url

    @pytest.fixture
    def conformance_backend_options(self) -> dict[str, Any]:
        return _options("server")


@pytest.mark.neo4j
class TestNamsServerIdsOverBolt(_OverTestModeServer):
    """NAMS adapter with ``session_names="server"`` → server → Neo4j over Bolt."""

    throwaway_store = True

    @pytest.fixture
    def conformance_backend_url(self, nams_bolt_test_mode_server: NamsTestServer) -> str:
        return nams_bolt_test_mode_server.url

    @pytest.fixture
    def conformance_backend_options(self) -> dict[str, Any]:
        return _options("server")
