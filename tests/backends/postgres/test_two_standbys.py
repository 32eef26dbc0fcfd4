"""A pg_auto_failover formation with two standbys (issue 52): reads with
``read_from="replica"`` spread over both (``load_balance_hosts=random``, libpq 16 or
later), and a commit waits for either standby, so losing one leaves synchronous commit on.
The formation is this module's own, started once for its tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import anyio
import pytest
from psycopg import pq

from memory_core import open_backend
from memory_core.backends.postgres.config import LOAD_BALANCING_LIBPQ
from memory_core_dev.pg_ha import MONITOR_SETTINGS, HaFormation

pytestmark = pytest.mark.anyio
READERS = 8
UNHEALTHY = int(MONITOR_SETTINGS["pgautofailover.node_considered_unhealthy_timeout"]) / 1000


@pytest.fixture(scope="module")
def two_standbys() -> Iterator[HaFormation]:
    formation = HaFormation(standbys=2)
    try:
        formation.start()
        yield formation
    finally:
        formation.stop()


def _standbys(formation: HaFormation) -> list[str]:
    return [n for n, (reported, _) in formation.states().items() if reported == "secondary"]


@pytest.mark.skipif(pq.version() < LOAD_BALANCING_LIBPQ, reason="libpq before 16")
async def test_replica_reads_spread_over_both_standbys(two_standbys: HaFormation) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    url = f"{two_standbys.url}&schema={schema}"
    async with open_backend(url, read_from="replica", min_size=READERS, max_size=READERS) as b:
        await b.add_message("s", "user", "hello")
        async with anyio.create_task_group() as group:
            for _ in range(READERS * 4):
                group.start_soon(b.get_conversation, "s")
        counts = {n: two_standbys.client_connections(n) for n in _standbys(two_standbys)}
    assert len(counts) == 2 and all(counts.values()), counts


async def test_a_lost_standby_leaves_commits_synchronous(two_standbys: HaFormation) -> None:
    """One standby's machine lost: the primary keeps a synchronous standby (it does not
    fall back to committing alone, as a pair does), and writes go on."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    lost = _standbys(two_standbys)[0]
    async with open_backend(f"{two_standbys.url}&schema={schema}") as backend:
        await backend.add_message("s", "user", "before")
        await anyio.to_thread.run_sync(two_standbys.lose_node, lost)
        try:
            await anyio.sleep(UNHEALTHY + 2)  # the monitor has marked it unhealthy by now
            await backend.add_message("s", "user", "while one standby is gone")
            assert two_standbys.replication().count("streaming/quorum") == 1
            assert "synchronous_standby_names=''" not in two_standbys.replication()
            assert two_standbys.states()[two_standbys.primary()][0] == "primary"
        finally:
            await anyio.to_thread.run_sync(two_standbys.restore)
        read = await backend.get_conversation("s")
    assert [m.content for m in read.messages] == ["before", "while one standby is gone"]
