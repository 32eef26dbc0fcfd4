"""Neo4j restarts under a connected backend: the next operations reconnect and succeed.
(The one restart of the suite's Neo4j also checks the test server itself: same address,
data kept, a raw driver made before it reconnects.)

Every pooled connection is dead after the restart. The managed transactions the backend
uses fail before COMMIT on such a connection, so the driver retries them on a fresh one
(a transaction that never committed cannot be applied twice): the first operation after
the restart — a read or a write without an idempotency key — works and writes once.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest
from neo4j import AsyncGraphDatabase

from memory_core import MemoryBackend, open_backend
from memory_core.backends.bolt import BoltStore
from memory_core_dev.neo4j_fixtures import Neo4jHandle

from .helpers import Graph, chain

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j, pytest.mark.neo4j_private]


async def test_operations_succeed_after_restart(
    neo4j_server: Neo4jHandle, graph: Graph, unique: Callable[[str], str]
) -> None:
    """One restart under two connected backends: ``bolt://`` (direct) and ``neo4j://``
    (routing, which must also refresh its routing table)."""
    neo4j_server.require_own("it restarts the server")
    sessions = {scheme: unique(f"restart-{scheme}") for scheme in ("bolt", "neo4j")}
    backends: dict[str, MemoryBackend] = {}
    for scheme in sessions:
        url = neo4j_server.uri.replace("bolt://", f"{scheme}://", 1)
        backend = open_backend(url, max_transaction_retry_time=120)
        assert isinstance(backend.store, BoltStore)
        backends[scheme] = backend
    raw = AsyncGraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth)
    label = unique("Restart").replace("-", "_")
    uri_before = neo4j_server.uri
    try:
        await raw.execute_query(f"CREATE (:`{label}` {{v: 42}})")
        for scheme, backend in backends.items():
            await backend.add_message(sessions[scheme], "user", "before")
            await backend.get_conversation(sessions[scheme])  # the pool holds live connections

        await anyio.to_thread.run_sync(neo4j_server.restart)

        assert neo4j_server.uri == uri_before
        # The raw driver's pooled connections are dead too: it reconnects to the same
        # address, and the node written before the restart is there.
        records, _, _ = await raw.execute_query(f"MATCH (x:`{label}`) RETURN x.v AS v")
        assert [r["v"] for r in records] == [42]

        for scheme, backend in backends.items():
            session = sessions[scheme]
            # A non-idempotent write first: retried by the driver, stored exactly once.
            await backend.add_message(session, "assistant", "first after restart")
            read = await backend.get_conversation(session)
            assert [m.content for m in read.messages] == ["before", "first after restart"]
            await backend.add_message(session, "user", "keyed", idempotency_key="k")
            await backend.add_message(session, "user", "keyed", idempotency_key="k")
            hits = await backend.search_messages("restart", session_id=session)
            assert [h.content for h in hits] == ["first after restart"]
            assert chain(graph, session) == ["before", "first after restart", "keyed"]
    finally:
        try:
            await raw.execute_query(f"MATCH (x:`{label}`) DETACH DELETE x")
        finally:
            await raw.close()
            for backend in backends.values():
                await backend.close()
