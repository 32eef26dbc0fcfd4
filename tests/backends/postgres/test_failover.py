"""Failover of a real pg_auto_failover pair under concurrent writers (issue 52).

Four writers (:mod:`memory_core_dev.failover_writers`, the soak's too) share one backend
object opened on the multi-host URL (``target_session_attrs=read-write``): keyed
``add_message`` calls, batches and turns through :class:`~memory_core.TurnMemory`, each
retrying a retryable error as an
application would (a batch, which has no key, only when nothing was applied). Meanwhile
the primary is switched over (``pg_autoctl perform failover``), its postmaster killed,
or its whole machine lost (keeper and PostgreSQL killed: the monitor promotes).
Afterwards: every acknowledged write is stored, nothing keyed and no turn twice, every
error a retryable ``TransportError`` whose ``maybe_applied`` is true of what is stored,
and the same backend object goes on working. The switchover and the killed primary run
with ``require_standby=True``: pg_auto_failover 2.0 now and then lets the old primary
take writes without its standby while the standby is promoted (its bug #774; see the
Reliability page), and only that option keeps those writes from being acknowledged. The
lost machine runs without it: with the primary's machine gone the pair has no standby
until it is restored, and the option would refuse every write until then. The formation
(``pg_ha``) is this module's alone; the run's other PostgreSQL servers are untouched.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable

import anyio
import psycopg
import pytest

from memory_core import (
    MemoryBackend,
    TransportError,
    open_backend,
)
from memory_core.backends.postgres.config import parse_settings
from memory_core_dev.failover_writers import (
    Findings,
    Tally,
    batches,
    check,
    keyed,
    retrying,
    turns,
)
from memory_core_dev.pg_ha import HaFormation
from memory_core_dev.postgres_schemas import schema_url
from memory_core_dev.postgres_server import private_server


@pytest.fixture
async def store(pg_ha: HaFormation) -> AsyncIterator[MemoryBackend]:
    url = schema_url(pg_ha.url, "f")
    async with open_backend(url, max_size=6, pool_timeout=20, connect_timeout=2) as backend:
        yield backend


@pytest.fixture
async def strict_store(pg_ha: HaFormation) -> AsyncIterator[MemoryBackend]:
    """A store whose writes are acknowledged only with a synchronous standby."""
    url = f"{schema_url(pg_ha.url, 'f')}&require_standby=true"
    async with open_backend(url, max_size=6, pool_timeout=20, connect_timeout=2) as backend:
        yield backend


async def _under_fault(store: MemoryBackend, fault: Callable[[], object]) -> Tally:
    """Four writers; ``fault`` (in a thread) once each has acknowledged a few writes; they
    go on until each has acknowledged a few more after it."""
    tally, stop = Tally(), anyio.Event()
    writers = {"keyed-a": keyed, "keyed-b": keyed, "batch": batches, "turn": turns}
    async with anyio.create_task_group() as group:
        for session, writer in writers.items():
            group.start_soon(writer, store, session, tally, stop)
        while len(tally.acknowledged) < len(writers) or len(tally.acked_at) < 20:
            await anyio.sleep(0.01)
        began = time.monotonic()
        await anyio.to_thread.run_sync(fault)
        seen = {s: len(tally.acknowledged[s]) for s in writers}
        while any(len(tally.acknowledged[s]) < seen[s] + 3 for s in writers):
            await anyio.sleep(0.01)
        stop.set()
    times = sorted(t for t in tally.acked_at if t >= began - 5)
    pause = max(b - a for a, b in itertools.pairwise(times))
    maybe = sum(e.maybe_applied for e in tally.errors)
    print(  # the figures for RELIABILITY.md (run with -s)
        f"{len(tally.acked_at)} acknowledged writes, {len(tally.errors)} errors "
        f"({maybe} maybe_applied), longest pause between acknowledgements {pause:.2f} s"
    )
    return tally


async def _check(store: MemoryBackend, tally: Tally) -> None:
    """Every error a retryable ``TransportError``; every acknowledged write stored, nothing
    keyed and no turn twice, each batch whole or absent (absent when it failed with
    ``maybe_applied=False``), nothing stored that was not acknowledged or may-be-applied."""
    for error in tally.errors:
        assert isinstance(error, TransportError), repr(error)
        assert error.retryable, repr(error)
    assert await check(store, tally, list(tally.acknowledged)) == Findings()


async def _still_works(store: MemoryBackend) -> None:
    """The same object, no re-open: a write and a read reach the primary."""
    stored = await store.add_message("after", "user", "the next call")
    read = await store.get_conversation("after")
    assert [m.id for m in read.messages] == [stored.id]


@pytest.mark.anyio
async def test_a_switchover_under_writers_loses_nothing_and_stores_nothing_twice(
    pg_ha: HaFormation, strict_store: MemoryBackend
) -> None:
    store = strict_store
    before = pg_ha.primary()
    seen = len(pg_ha.event_log())
    tally = await _under_fault(store, pg_ha.failover)
    after = pg_ha.primary()
    assert after != before
    await _check(store, tally)
    await _still_works(store)
    # The monitor's history (kept when a soak loses a write) shows the switchover: the old
    # primary drained, the new one promoted and back to primary once its standby streams.
    events = pg_ha.event_log()[seen:]
    assert (before, "draining") in {(e[1], e[3]) for e in events}
    assert (after, "primary", "primary") in {(e[1], e[2], e[3]) for e in events}


@pytest.mark.anyio
async def test_a_killed_primary_under_writers_loses_nothing_and_stores_nothing_twice(
    pg_ha: HaFormation, strict_store: MemoryBackend
) -> None:
    store = strict_store
    tally = await _under_fault(store, pg_ha.kill_primary)
    await _check(store, tally)
    await _still_works(store)


@pytest.mark.anyio
async def test_a_lost_primary_machine_under_writers_loses_nothing_and_stores_nothing_twice(
    pg_ha: HaFormation, store: MemoryBackend
) -> None:
    """The primary's keeper dies with its PostgreSQL: only the monitor can promote the
    standby. Then the lost node comes back and rejoins as the standby: what the new
    primary acknowledged alone is still there."""
    before = pg_ha.primary()
    try:
        tally = await _under_fault(store, pg_ha.lose_primary)
        assert pg_ha.primary_or_alone() != before
        await _check(store, tally)
        await _still_works(store)
    finally:
        await anyio.to_thread.run_sync(pg_ha.restore)
    assert pg_ha.primary() != before
    await _check(store, tally)


@pytest.mark.anyio
async def test_a_write_refused_by_a_standby_is_retryable_and_not_applied(
    pg_ha: HaFormation,
) -> None:
    """What a connection to the old primary meets once it is a standby: the refusal is a
    retryable ``TransportError`` that says nothing was written and names the URL option
    that keeps writes on the primary (not a final ``StoreError``)."""
    schema = f"ro_{uuid.uuid4().hex[:12]}"
    async with open_backend(f"{pg_ha.url}&schema={schema}") as primary:
        await primary.add_message("s", "user", "on the primary")
    standby = next(n for n, (role, _) in pg_ha.states().items() if role == "secondary")
    await anyio.to_thread.run_sync(_replayed, pg_ha.node_url(standby), schema)
    app = f"application_name={schema}"
    url = f"{pg_ha.node_url(standby)}?schema={schema}&{app}"
    async with open_backend(url, min_size=1, max_size=1) as replica:
        await replica.get_conversation("s")
        pooled = _sessions(pg_ha.node_url(standby), schema)
        with pytest.raises(TransportError) as raised:
            await replica.add_message("s", "user", "refused")
        # the refused connection is closed, never lent again (its server process ends)
        assert pooled
        with anyio.move_on_after(30):
            while pooled & _sessions(pg_ha.node_url(standby), schema):
                await anyio.sleep(0.05)
        assert not pooled & _sessions(pg_ha.node_url(standby), schema)
    assert raised.value.retryable and not raised.value.maybe_applied
    assert "target_session_attrs=read-write" in str(raised.value)
    async with open_backend(f"{pg_ha.url}&schema={schema}") as primary:
        read = await primary.get_conversation("s")
    assert [m.content for m in read.messages] == ["on the primary"]


@pytest.mark.anyio
async def test_a_write_cancelled_while_it_waits_for_the_standby_is_stored_all_the_same(
    pg_ha: HaFormation,
) -> None:
    """PostgreSQL's rule, which docs/postgres.md passes on: a commit waiting for the
    synchronous standby is already written on the primary, so cancelling the call (an
    application's timeout around it) does not undo it: it is stored once the standby
    confirms it (or at once, on the primary alone, when the server gets the cancel).
    ``statement_timeout`` does not end that wait. Here the standby's WAL receiver is
    paused, so nothing can be confirmed until it goes on."""
    schema = f"sync_{uuid.uuid4().hex[:12]}"
    standby = next(n for n, (role, _) in pg_ha.states().items() if role == "secondary")
    async with open_backend(f"{pg_ha.url}&schema={schema}", statement_timeout=1) as backend:
        await backend.add_message("s", "user", "before")
        receiver = _wal_receiver(pg_ha.node_url(standby))
        os.kill(receiver, signal.SIGSTOP)
        try:
            with anyio.move_on_after(3) as waited:  # three times statement_timeout
                await backend.add_message("s", "user", "cut short")
        finally:
            os.kill(receiver, signal.SIGCONT)
        assert waited.cancelled_caught  # still waiting for the standby after 3 s
        with anyio.fail_after(30):
            while (await backend.get_conversation("s")).messages[-1].content != "cut short":
                await anyio.sleep(0.1)
        read = await backend.get_conversation("s")
    assert [m.content for m in read.messages] == ["before", "cut short"]


def _wal_receiver(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pid FROM pg_stat_wal_receiver").fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.anyio
async def test_no_writable_host_within_pool_timeout_is_retryable_and_not_applied() -> None:
    """The primary gone for longer than ``pool_timeout``: the call gives up with a
    retryable error saying nothing was written, and the same object works once a primary
    is back."""
    with private_server() as server:
        url = f"{server.url}?schema=gone&target_session_attrs=read-write"
        async with open_backend(url, pool_timeout=1, connect_timeout=1) as store:
            await store.add_message("s", "user", "before")
            await anyio.to_thread.run_sync(server.stop)
            with pytest.raises(TransportError) as raised:
                await store.add_message("s", "user", "while down", idempotency_key="k")
            assert raised.value.retryable and not raised.value.maybe_applied
            assert "no connection from the pool in time" in str(raised.value)
            await anyio.to_thread.run_sync(server.start)
            await retrying(
                lambda: store.add_message("s", "user", "while down", idempotency_key="k"),
                Tally(),
            )
            read = await store.get_conversation("s")
    assert [m.content for m in read.messages] == ["before", "while down"]


def _sessions(url: str, application: str) -> set[int]:
    """The server processes of the connections named ``application`` at ``url``."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (application,)
        ).fetchall()
    return {pid for (pid,) in rows}


def _replayed(url: str, schema: str) -> None:
    """Wait until the standby at ``url`` has replayed the one message of ``schema``."""
    deadline = time.monotonic() + 30
    while True:
        with psycopg.connect(url, autocommit=True) as conn:
            found = conn.execute(
                "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'messages'",
                (schema,),
            ).fetchone()
            count = conn.execute(f"SELECT count(*) FROM {schema}.messages") if found else None
            if count is not None and (count.fetchone() or (0,))[0] == 1:
                return
        assert time.monotonic() < deadline, "the standby did not replay the schema"
        time.sleep(0.1)


def test_the_multi_host_url_is_kept_and_its_password_hidden() -> None:
    url = (
        "postgresql://app:s3cr3t-pw@10.0.0.1:5432,10.0.0.2:5433/memory"
        "?target_session_attrs=read-write&schema=ha&connect_timeout=3"
    )
    settings = parse_settings(
        url,
        schema=None,
        min_size=1,
        max_size=2,
        pool_timeout=5,
        connect_timeout=2,
        statement_timeout=None,
        prepared_statements=True,
    )
    assert settings.conninfo == (
        "postgresql://app:s3cr3t-pw@10.0.0.1:5432,10.0.0.2:5433/memory"
        "?target_session_attrs=read-write&connect_timeout=3"
    )
    assert settings.schema == "ha"
    backend = open_backend(url)
    shown = f"{backend.describe()} {backend!r} {backend.store!r} {settings!r}"
    assert "s3cr3t" not in shown
    assert "10.0.0.1:5432,10.0.0.2:5433" in backend.describe()
    assert "target_session_attrs=read-write" in backend.describe()


def test_the_pools_connection_errors_are_not_printed_when_logging_is_unconfigured() -> None:
    """psycopg_pool logs each failed connection attempt at WARNING to ``psycopg.pool``;
    with logging left unconfigured, Python would print each one to stderr."""
    code = (
        "import logging, memory_core.backends.postgres.store\n"
        "logging.getLogger('psycopg.pool').warning('error connecting in %r', 'memory-core')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
