"""Reads from a standby (``read_from="replica"``) with read-your-writes (issue 52).

The formation is the run's ``pg_ha`` (a primary and a synchronous standby); a failover
test elsewhere in the run may have swapped the nodes, so the primary is asked for, never
assumed. The standby's replay is paused (``pg_wal_replay_pause()``) to make it lag: with
``synchronous_commit`` on, the primary still commits (the standby flushes the WAL, it does
not apply it).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio
import psycopg
import pytest
from psycopg import pq

from memory_core import (
    ConfigurationError,
    MemoryBackend,
    MemoryCoreError,
    NotFoundError,
    open_backend,
)
from memory_core.backends.postgres import store as postgres_store
from memory_core.backends.postgres.config import LOAD_BALANCING_LIBPQ, parse_settings
from memory_core_dev.pg_ha import HaFormation

T = TypeVar("T")
LIFETIME = 3.0  # seconds a reads' connection lives in the test of their return


def _standby(pg_ha: HaFormation) -> str:
    return pg_ha.node_url(next(n for n, (r, _) in pg_ha.states().items() if r == "secondary"))


def _caught_up(pg_ha: HaFormation) -> None:
    """Until the standby has replayed everything the primary has written."""
    with psycopg.connect(pg_ha.url, autocommit=True) as primary:
        target = primary.execute("SELECT pg_current_wal_lsn()").fetchone()
    deadline = time.monotonic() + 30
    with psycopg.connect(_standby(pg_ha), autocommit=True) as standby:
        query = "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn"
        while not (standby.execute(query, target).fetchone() or (False,))[0]:
            assert time.monotonic() < deadline, "the standby did not catch up"
            time.sleep(0.05)


@contextmanager
def _replay_paused(pg_ha: HaFormation) -> Iterator[None]:
    """The standby stops applying WAL (it still receives and flushes it)."""
    url = _standby(pg_ha)
    with psycopg.connect(url, autocommit=True) as standby:
        standby.execute("SELECT pg_wal_replay_pause()")
        deadline = time.monotonic() + 30
        state = "SELECT pg_get_wal_replay_pause_state()"
        while (standby.execute(state).fetchone() or ("",))[0] != "paused":
            assert time.monotonic() < deadline, "replay did not pause"
            time.sleep(0.01)
        try:
            yield
        finally:
            standby.execute("SELECT pg_wal_replay_resume()")


def _open(pg_ha: HaFormation, schema: str, **options: object) -> MemoryBackend:
    return open_backend(f"{pg_ha.url}&schema={schema}", connect_timeout=2, **options)


@pytest.fixture
async def schema(pg_ha: HaFormation) -> AsyncIterator[str]:
    name = f"r_{uuid.uuid4().hex[:12]}"
    async with _open(pg_ha, name) as backend:  # the schema exists before a standby reads it
        await backend.add_message("setup", "user", "schema created")
    await anyio.to_thread.run_sync(_caught_up, pg_ha)
    yield name


async def _contents(backend: MemoryBackend, session: str) -> list[str]:
    read = await backend.get_conversation(session)
    return [m.content for m in read.messages]


@pytest.mark.anyio
async def test_reads_go_to_a_standby_that_has_replayed_this_objects_writes(
    pg_ha: HaFormation, schema: str
) -> None:
    """Another object's write the paused standby has not applied is not seen: the read
    ran on the standby, which had replayed this object's own write."""
    async with _open(pg_ha, schema, read_from="replica") as reader, _open(pg_ha, schema) as other:
        await reader.add_message("s", "user", "mine")
        await anyio.to_thread.run_sync(_caught_up, pg_ha)
        with _replay_paused(pg_ha):
            await other.add_message("s", "user", "theirs")
            assert await _contents(reader, "s") == ["mine"]
            assert await _contents(other, "s") == ["mine", "theirs"]
            found = await reader.search_messages("theirs", session_id="s")
            assert found == []
            await other.add_message("t", "user", "a new session")
            assert "t" not in {info.session_id for info in await reader.list_sessions()}
            assert "t" in {info.session_id for info in await other.list_sessions()}


@pytest.mark.anyio
async def test_the_reads_pool_is_reported_beside_the_writes_pool(
    pg_ha: HaFormation, schema: str
) -> None:
    """The telemetry's pool gauges see both pools, each by its own name."""
    async with _open(pg_ha, schema, read_from="replica", max_size=3) as reader:
        await reader.add_message("s", "user", "mine")
        await _contents(reader, "s")
        pools, writes = reader.store.pools(), reader.store.describe()
    assert set(pools) == {writes, f"{writes} reads"}
    for counts in pools.values():
        assert counts["max"] == 3 and counts["idle"] + counts["used"] >= 1, pools
    async with _open(pg_ha, schema, max_size=3) as primary_only:
        await _contents(primary_only, "s")
        assert set(primary_only.store.pools()) == {primary_only.store.describe()}


@pytest.mark.anyio
async def test_a_read_after_this_objects_write_sees_it_while_the_standby_lags(
    pg_ha: HaFormation, schema: str
) -> None:
    """The standby has not applied the write: past ``replica_wait`` the read runs on the
    primary, and each kind of read sees the write."""
    async with _open(pg_ha, schema, read_from="replica", replica_wait=0.2) as reader:
        await reader.add_message("warm", "user", "pools open")
        with _replay_paused(pg_ha):
            stored = await reader.add_message("s", "user", "fresh words")
            assert await _contents(reader, "s") == ["fresh words"]
            found = await reader.search_messages("fresh", session_id="s")
            assert [m.id for m in found] == [stored.id]
            sessions = {info.session_id for info in await reader.list_sessions()}
            assert "s" in sessions


@pytest.mark.anyio
async def test_a_read_waits_for_the_standby_to_replay_this_objects_write(
    pg_ha: HaFormation, schema: str
) -> None:
    """Replay resumes while the read waits (``replica_wait`` far above it): the read sees
    the write."""
    async with _open(pg_ha, schema, read_from="replica", replica_wait=60) as reader:
        await reader.add_message("warm", "user", "pools open")
        with _replay_paused(pg_ha):
            await reader.add_message("s", "user", "after the pause")
        assert await _contents(reader, "s") == ["after the pause"]


@pytest.mark.anyio
async def test_after_a_write_that_raised_the_next_read_is_as_fresh_as_the_primary(
    pg_ha: HaFormation, schema: str
) -> None:
    """A write that raised may have committed where this object cannot know: the next
    read first asks the primary for its position, so it sees what the primary has (here
    another object's write the paused standby has not applied)."""
    replica = _open(pg_ha, schema, read_from="replica", replica_wait=0.2)
    async with replica as reader, _open(pg_ha, schema) as other:
        await reader.add_message("warm", "user", "pools open")
        await anyio.to_thread.run_sync(_caught_up, pg_ha)
        with _replay_paused(pg_ha):
            await other.add_message("s", "user", "theirs")
            with pytest.raises(NotFoundError):
                await reader.update_entity(str(uuid.uuid4()), description="none")
            assert await _contents(reader, "s") == ["theirs"]


@pytest.mark.anyio
async def test_the_first_read_on_a_new_schema_waits_for_its_migrations(
    pg_ha: HaFormation,
) -> None:
    """Connecting creates the schema on the primary: a read before the standby has
    applied it reads from the primary, not a standby without the tables."""
    schema = f"n_{uuid.uuid4().hex[:12]}"
    with _replay_paused(pg_ha):
        async with _open(pg_ha, schema, read_from="replica", replica_wait=0.2) as reader:
            read = await reader.get_conversation("s")
            assert read.messages == []
            assert await reader.list_sessions() == []


async def _retrying(call: Callable[[], Awaitable[T]]) -> T:
    deadline = time.monotonic() + 60
    while True:
        try:
            return await call()
        except MemoryCoreError as exc:
            if not exc.retryable or time.monotonic() > deadline:
                raise
        await anyio.sleep(0.1)


@pytest.mark.anyio
async def test_replica_reads_keep_working_and_see_this_objects_writes_across_a_failover(
    pg_ha: HaFormation, schema: str
) -> None:
    async with _open(pg_ha, schema, read_from="replica", pool_timeout=20) as reader:
        await reader.add_message("s", "user", "before")
        assert await _contents(reader, "s") == ["before"]
        await anyio.to_thread.run_sync(pg_ha.failover)
        assert await _retrying(lambda: _contents(reader, "s")) == ["before"]
        await _retrying(lambda: reader.add_message("s", "user", "after", idempotency_key="a"))
        assert await _retrying(lambda: _contents(reader, "s")) == ["before", "after"]


@pytest.mark.anyio
async def test_after_a_failover_reads_return_to_a_standby_within_the_lifetime(
    pg_ha: HaFormation, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reads' connections on the standby that was promoted read from the primary
    until they reach their lifetime (a minute; a few seconds here); then new ones go to
    the new standby."""
    monkeypatch.setattr(postgres_store, "READ_LIFETIME", LIFETIME)
    options = {"read_from": "replica", "min_size": 2, "max_size": 2, "pool_timeout": 20}
    async with _open(pg_ha, schema, **options) as reader:
        await _contents(reader, "s")
        await anyio.to_thread.run_sync(pg_ha.failover)
        standby = next(n for n, (role, _) in pg_ha.states().items() if role == "secondary")
        deadline = time.monotonic() + LIFETIME * 4
        while pg_ha.client_connections(standby) < 2:
            assert time.monotonic() < deadline, "the reads never came back to a standby"
            await _retrying(lambda: _contents(reader, "s"))
            await anyio.sleep(0.2)


def test_the_read_options_are_checked_before_anything_connects() -> None:
    url = "postgresql://app@127.0.0.1:1,127.0.0.1:2/db?target_session_attrs=read-write"
    with pytest.raises(ConfigurationError, match="read_from"):
        open_backend(url, read_from="standby")
    with pytest.raises(ConfigurationError, match="replica_wait"):
        open_backend(url, read_from="replica", replica_wait=-1)
    with pytest.raises(ConfigurationError, match="keyword argument"):
        open_backend(f"{url}&read_from=replica")


def test_reads_connect_with_prefer_standby_and_the_password_stays_hidden() -> None:
    url = (
        "postgresql://app:s3cr3t@h1:5432,h2:5433/db?target_session_attrs=read-write&sslmode=prefer"
    )
    options: dict[str, Any] = {
        "schema": None,
        "min_size": 1,
        "max_size": 2,
        "pool_timeout": 5,
        "connect_timeout": 2,
        "statement_timeout": None,
        "prepared_statements": True,
        "read_from": "replica",
    }
    settings = parse_settings(url, **options)
    balanced = "&load_balance_hosts=random" if pq.version() >= LOAD_BALANCING_LIBPQ else ""
    assert settings.replica_conninfo == (
        f"postgresql://app:s3cr3t@h1:5432,h2:5433/db?sslmode=prefer{balanced}"
        "&target_session_attrs=prefer-standby"
    )
    chosen = parse_settings(f"{url}&load_balance_hosts=disable", **options)
    assert chosen.replica_conninfo.count("load_balance_hosts") == 1
    assert "s3cr3t" not in repr(settings)
    assert "s3cr3t" not in open_backend(url, read_from="replica").describe()
