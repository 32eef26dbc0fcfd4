"""stats on Bolt: exact counts per user (and a dry-run erasure) on a single-tenant and a
multi-tenant store; the size is unknown. The run's own Neo4j is wiped before each test
(see conftest), so totals are exact there; on a server someone else uses, only the
users' rows are checked."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_core import MemoryBackend
from memory_core_dev.neo4j_fixtures import Neo4jHandle
from tests.backends.erasure_data import write_user
from tests.backends.stats_cases import (
    check_counts,
    check_dry_run,
    check_long_term_counts,
    check_trace_counts,
    row,
)

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]


@pytest.mark.parametrize("multi_tenant", [False, True], ids=["single-tenant", "multi-tenant"])
async def test_counts_per_user_and_a_dry_run(
    open_bolt: Callable[..., MemoryBackend],
    neo4j_server: Neo4jHandle,
    unique: Callable[[str], str],
    multi_tenant: bool,
) -> None:
    ada, bob = unique("ada"), unique("bob")
    async with open_bolt(multi_tenant=multi_tenant) as memory:
        if neo4j_server.wipeable:
            found = await check_counts(memory, ada, bob)
            assert found.size_bytes is None
            await check_dry_run(memory, ada, bob)
            return
        await write_user(memory, ada, "A")
        await write_user(memory, bob, "B")
        found = await memory.stats(user_identifier=ada)
        assert found.users == [row(ada, multi_tenant)] and found.size_bytes is None
        report = await memory.forget_user(bob)
        assert report.counts["conversations"] == 2


@pytest.mark.neo4j_private
@pytest.mark.parametrize("multi_tenant", [False, True], ids=["single-tenant", "multi-tenant"])
async def test_long_term_counts_per_user(
    open_bolt: Callable[..., MemoryBackend],
    neo4j_server: Neo4jHandle,
    unique: Callable[[str], str],
    multi_tenant: bool,
) -> None:
    neo4j_server.require_wipeable("it checks the whole database's totals")
    async with open_bolt(multi_tenant=multi_tenant) as memory:
        await check_long_term_counts(memory, unique("ada"), unique("bob"))


@pytest.mark.neo4j_private
@pytest.mark.parametrize("multi_tenant", [False, True], ids=["single-tenant", "multi-tenant"])
async def test_trace_counts_per_user(
    open_bolt: Callable[..., MemoryBackend],
    neo4j_server: Neo4jHandle,
    unique: Callable[[str], str],
    multi_tenant: bool,
) -> None:
    neo4j_server.require_wipeable("it checks the whole database's totals")
    async with open_bolt(multi_tenant=multi_tenant) as memory:
        await check_trace_counts(memory, unique("ada"), unique("bob"))
