"""The Bolt store's pool figures (what the runtime metrics report): idle and used
connections of the driver's pool and its configured maximum, None once closed; and how
its connections introduce themselves to Neo4j."""

from __future__ import annotations

from collections.abc import Callable

import neo4j
import pytest

from memory_core import MemoryBackend, __version__
from memory_core.backends.bolt import BoltStore
from memory_core.backends.bolt import session as session_module

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


async def test_without_a_pool_size_the_pool_is_sized_from_the_servers_processors(
    open_bolt: Callable[..., MemoryBackend], graph: Graph
) -> None:
    [row] = graph(
        'CALL dbms.queryJmx("java.lang:type=OperatingSystem") YIELD attributes '
        "RETURN attributes.AvailableProcessors.value AS n"
    )
    backend = open_bolt()
    store = backend.store
    assert isinstance(store, BoltStore)
    async with backend:
        stats = store.pool_stats()
        assert stats is not None
        assert stats["max"] == max(8, min(100, 4 * row["n"]))
        assert stats["max"] != 100  # not the driver's default, on a server of < 25 cores


async def test_a_server_that_does_not_say_keeps_the_drivers_default(
    open_bolt: Callable[..., MemoryBackend], monkeypatch: pytest.MonkeyPatch
) -> None:
    # as on a managed service that refuses dbms.queryJmx: the procedure is unknown here
    monkeypatch.setattr(session_module, "_PROCESSORS", "CALL memory_core.no_such_procedure()")
    backend = open_bolt()
    store = backend.store
    assert isinstance(store, BoltStore)
    async with backend:
        await backend.add_message("s", "user", "still works")
        stats = store.pool_stats()
        assert stats is not None and stats["max"] == 100


@pytest.mark.parametrize(
    ("processors", "size"), [(None, None), (1, 8), (2, 8), (3, 12), (16, 64), (64, 100)]
)
def test_pool_size_is_four_per_processor_between_8_and_the_drivers_100(
    processors: int | None, size: int | None
) -> None:
    assert session_module.pool_size(processors) == size
