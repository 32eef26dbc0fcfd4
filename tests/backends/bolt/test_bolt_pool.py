"""The Bolt store's pool figures (what the runtime metrics report): idle and used
connections of the driver's pool and its configured maximum, None once closed; and how
its connections introduce themselves to Neo4j."""

from __future__ import annotations

from collections.abc import Callable

import neo4j
import pytest

from memory_core import MemoryBackend, __version__
from memory_core.backends.bolt import BoltStore

from .helpers import Graph

pytestmark = pytest.mark.anyio


async def test_a_connection_in_use_is_counted_as_used_not_idle(
    open_bolt: Callable[..., MemoryBackend],
) -> None:
    backend = open_bolt(max_connection_pool_size=7)
    store = backend.store
    assert isinstance(store, BoltStore)
    async with backend:
        await backend.list_sessions()
        rest = store.pool_stats()
        assert rest is not None and rest["max"] == 7
        assert rest["used"] == 0 and rest["idle"] >= 1
        driver = store._conn._driver
        assert driver is not None
        async with driver.session(default_access_mode=neo4j.READ_ACCESS) as session:
            held = await session.begin_transaction()
            try:
                busy = store.pool_stats()
                assert busy is not None and busy["used"] == 1
                # the transaction took an idle connection or opened one more
                assert busy["idle"] + busy["used"] in (rest["idle"], rest["idle"] + 1)
            finally:
                await held.rollback()
    assert store.pool_stats() is None


async def test_the_driver_introduces_itself_with_the_packages_version(
    open_bolt: Callable[..., MemoryBackend], graph: Graph
) -> None:
    async with open_bolt() as backend:
        await backend.list_sessions()
        agents = {
            row["agent"]
            for row in graph(
                "CALL dbms.listConnections() YIELD userAgent RETURN userAgent AS agent"
            )
        }
    assert f"memory-core-bolt/{__version__}" in agents
