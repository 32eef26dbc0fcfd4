"""Faults of a real PostgreSQL under writes in flight: restarted, crashed (SIGKILL of every
server process), connections terminated; a write lost while committing, a serialization
failure, a refused password, idle pooled connections killed.

Every call either succeeds or raises a typed ``TransportError`` (never a raw psycopg
exception); afterwards each batch is wholly present or wholly absent (a success present,
an error without ``maybe_applied`` absent), nothing twice; and the next call after the
server is back succeeds. The server is a private one of this module (with a password and
``synchronous_commit`` on, so a commit acknowledged before a crash survives it), so the
shared ``postgres_server`` is never disturbed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass

import anyio
import psycopg
import pytest

from memory_core import (
    AuthenticationError,
    MemoryBackend,
    MemoryCoreError,
    TransportError,
    open_backend,
)
from memory_core_dev.postgres_server import PostgresServer, private_server

pytestmark = pytest.mark.anyio

PASSWORD = "fault-pw-7c1"
BATCH = 200
APP = "memory-core-faults"


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    with private_server(password=PASSWORD, settings={"synchronous_commit": "on"}) as running:
        yield running


def _url(server: PostgresServer, schema: str) -> str:
    return f"{server.url}?schema={schema}&application_name={APP}"


@pytest.fixture
async def store(server: PostgresServer) -> AsyncIterator[MemoryBackend]:
    backend = open_backend(
        _url(server, f"f_{uuid.uuid4().hex[:12]}"),
        max_size=6,
        pool_timeout=3,
        connect_timeout=2,
    )
    async with backend:
        yield backend


def _terminate(server: PostgresServer, which: str = "") -> int:
    """pg_terminate_backend of the store's connections (``which``: an extra condition)."""
    with psycopg.connect(server.url, autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE application_name = %s AND pid <> pg_backend_pid() {which}",
            (APP,),
        ).fetchall()
    return sum(1 for (done,) in rows if done)


def _count(server: PostgresServer, which: str) -> int:
    with psycopg.connect(server.url, autocommit=True) as admin:
        [(count,)] = admin.execute(
            f"SELECT count(*) FROM pg_stat_activity WHERE application_name = %s {which}",
            (APP,),
        ).fetchall()
    return int(count)


@dataclass
class Call:
    """One batch written: its contents and how the call ended."""

    contents: list[str]
    error: MemoryCoreError | None = None
    started: float = 0.0
    ended: float = 0.0


async def _writer(store: MemoryBackend, session: str, calls: list[Call], stop: anyio.Event) -> None:
    k = 0
    while not stop.is_set():
        call = Call([f"{session}/{k}/{i}" for i in range(BATCH)])
        calls.append(call)
        items = [{"role": "user", "content": c} for c in call.contents]
        call.started = time.monotonic()
        try:
            await store.add_messages_batch(session, items)
        except MemoryCoreError as exc:  # any other exception fails the test
            call.error = exc
        call.ended = time.monotonic()
        k += 1


async def _under_fault(store: MemoryBackend, fault: Callable[[], object], writers: int = 4) -> None:
    """Writers of batches, with ``fault`` run (in a thread) while some are in flight; they
    go on until a few calls after it."""
    calls: list[Call] = []
    stop = anyio.Event()
    sessions = [f"w{n}" for n in range(writers)]
    async with anyio.create_task_group() as group:
        for session in sessions:
            group.start_soon(_writer, store, session, calls, stop)
        while sum(c.ended > 0 for c in calls) < writers * 2:
            await anyio.sleep(0.001)
        hit = [c for c in calls if c.ended == 0]
        await anyio.to_thread.run_sync(fault)
        over = len(calls)
        while sum(c.ended > 0 for c in calls[over:]) < writers:
            await anyio.sleep(0.01)
        stop.set()
    assert hit, "no call was in flight when the fault began"
    # the server is back: the very next call succeeds (dead pooled connections replaced)
    await store.add_message("after", "user", "the next call")
    await _check(store, sessions, calls)
    errors = [c.error for c in calls if c.error is not None]
    print(  # the figures of RELIABILITY.md (run with -s)
        f"{len(calls)} batches of {BATCH}, {len(hit)} in flight at the fault, "
        f"{len(errors)} TransportError ({sum(e.maybe_applied for e in errors)} maybe_applied), "
        "0 half-written, 0 twice"
    )


async def _check(store: MemoryBackend, sessions: list[str], calls: list[Call]) -> None:
    stored: list[str] = []
    for session in sessions:
        read = await store.get_conversation(session_id=session, limit=100_000)
        stored += [m.content for m in read.messages]
    assert len(stored) == len(set(stored)), "a message was stored twice"
    present = set(stored)
    for call in calls:
        if call.error is not None:
            assert isinstance(call.error, TransportError), repr(call.error)
            assert call.error.retryable
        found = [c for c in call.contents if c in present]
        assert found in ([], call.contents), f"half a batch: {len(found)} of {BATCH}"
        if call.error is None:
            assert found, "a batch reported written is missing"
        elif not call.error.maybe_applied:
            assert not found, "a batch reported as not applied was written"
    assert sum(c.error is None for c in calls) > len(sessions), "too few calls succeeded"


async def test_a_restart_during_batches_leaves_each_whole_or_absent(
    server: PostgresServer, store: MemoryBackend
) -> None:
    await _under_fault(store, server.restart)


async def test_a_crash_during_batches_leaves_each_whole_or_absent(
    server: PostgresServer, store: MemoryBackend
) -> None:
    def crash_and_recover() -> None:
        server.crash()
        server.start()

    await _under_fault(store, crash_and_recover)


async def test_terminated_connections_during_batches_leave_each_whole_or_absent(
    server: PostgresServer, store: MemoryBackend
) -> None:
    def terminate_active() -> None:
        for _ in range(5):
            _terminate(server, "AND state = 'active'")
            anyio.from_thread.run(anyio.sleep, 0.02)

    await _under_fault(store, terminate_active)


async def _slow_commit(server: PostgresServer, schema: str, seconds: float) -> None:
    """A deferred trigger that sleeps at COMMIT of every message insert in ``schema``."""
    with psycopg.connect(server.url, autocommit=True) as admin:
        admin.execute(
            f"CREATE FUNCTION {schema}.slow() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN PERFORM pg_sleep({seconds}); RETURN NULL; END $$"
        )
        admin.execute(
            f"CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON {schema}.messages "
            f"DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {schema}.slow()"
        )


def _schema_of(store: MemoryBackend) -> str:
    schema: str = store.store.settings.schema  # type: ignore[attr-defined]
    return schema


async def test_a_connection_lost_while_committing_may_have_applied(
    server: PostgresServer, store: MemoryBackend
) -> None:
    schema = _schema_of(store)
    await store.add_message("s", "user", "before")
    entity = await store.add_entity("Acme", "organization")
    await _slow_commit(server, schema, 5)
    outcome: list[MemoryCoreError] = []

    async def write() -> None:
        try:  # a mention: the transactional path, COMMIT sent on its own
            await store.add_message(
                "s", "user", "at commit", extraction_mode="explicit", explicit_mentions=[entity.id]
            )
        except MemoryCoreError as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(write)
        with anyio.fail_after(4):
            while not await anyio.to_thread.run_sync(
                _terminate, server, "AND query = 'COMMIT' AND state = 'active'"
            ):
                await anyio.sleep(0.02)
    [error] = outcome
    assert isinstance(error, TransportError)
    assert error.maybe_applied and error.retryable


async def test_a_serialization_failure_is_retryable_and_writes_nothing(
    server: PostgresServer, store: MemoryBackend
) -> None:
    schema = _schema_of(store)
    await store.add_message("s", "user", "before")
    with psycopg.connect(server.url, autocommit=True) as admin:
        admin.execute(
            f"CREATE FUNCTION {schema}.conflict() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$"
        )
        admin.execute(
            f"CREATE TRIGGER conflict BEFORE INSERT ON {schema}.messages "
            f"FOR EACH ROW EXECUTE FUNCTION {schema}.conflict()"
        )
    for write in (
        store.add_message("s", "user", "lost", idempotency_key="k"),
        store.add_messages_batch("s", [{"role": "user", "content": "lost"}] * 3),
    ):
        with pytest.raises(TransportError) as caught:
            await write
        assert caught.value.retryable and not caught.value.maybe_applied
    read = await store.get_conversation(session_id="s")
    assert [m.content for m in read.messages] == ["before"]


async def test_a_refused_password_is_an_authentication_error(server: PostgresServer) -> None:
    wrong = server.url.replace(PASSWORD, "not-the-password")
    missing = server.url.replace(f":{PASSWORD}", "")
    for url in (wrong, missing):
        backend = open_backend(url, connect_timeout=20, pool_timeout=20)
        # at once: not a pool timeout after connect_timeout
        with anyio.fail_after(15), pytest.raises(AuthenticationError) as caught:
            await backend.connect()
        assert PASSWORD not in str(caught.value)


async def test_idle_connections_killed_are_replaced_without_failing_a_call(
    server: PostgresServer,
) -> None:
    url = _url(server, f"f_{uuid.uuid4().hex[:12]}")
    async with open_backend(url, min_size=4, max_size=6) as store:
        await store.add_messages_batch("s", [{"role": "user", "content": "one"}])
        entity = await store.add_entity("Acme", "organization")

        async def mentioned() -> None:  # the transactional path
            await store.add_message(
                "s", "user", "mentioned", extraction_mode="explicit", explicit_mentions=[entity.id]
            )

        async def keyed() -> None:  # one statement
            await store.add_message("s", "user", "keyed", idempotency_key="k")

        for _ in range(2):
            with anyio.fail_after(10):
                while _count(server, "AND state = 'idle'") < 4:
                    await anyio.sleep(0.05)  # the pool refills in the background
            assert _terminate(server, "AND state = 'idle'") >= 4
            async with anyio.create_task_group() as group:
                group.start_soon(store.add_message, "s", "user", "single")
                group.start_soon(keyed)
                group.start_soon(mentioned)
                group.start_soon(store.get_conversation, "s")
                group.start_soon(store.list_sessions)
            _terminate(server, "AND state = 'idle'")
            await store.add_messages_batch("s", [{"role": "user", "content": "two"}])
        read = await store.get_conversation(session_id="s")
    assert sorted(m.content for m in read.messages) == sorted(
        ["one", "single", "keyed", "mentioned", "two", "single", "mentioned", "two"]
    )
