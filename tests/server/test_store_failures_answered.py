"""How the server answers a backing store that fails mid-write, over a real PostgreSQL
(issue 52): what a failover looks like to a NAMS client.

* nothing written and worth retrying (a serialization failure here, a primary being
  replaced in a failover): ``503 service_unavailable`` with ``Retry-After: 1``, which the
  client resends;
* the connection lost while committing (the store's ``maybe_applied``): ``500``, which the
  client never resends for a ``POST`` and raises as ``TransportError(maybe_applied=True)``.
  A 503 here would make the client send the write again, storing it twice.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import anyio
import psycopg
import pytest

from memory_core import MemoryBackend, MemoryCoreError, TransportError
from memory_core_dev.nams_server import NamsTestServer, start_nams_server
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = pytest.mark.anyio


@pytest.fixture
def schema() -> str:
    return f"sf_{uuid.uuid4().hex[:12]}"


@pytest.fixture
def server(postgres_server: PostgresHandle, schema: str) -> Iterator[NamsTestServer]:
    joiner = "&" if "?" in postgres_server.url else "?"
    url = f"{postgres_server.url}{joiner}schema={schema}&application_name={schema}"
    running = start_nams_server(url)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def workspace() -> str:
    return NamsTestServer.workspace()


@pytest.fixture
async def client(server: NamsTestServer, workspace: str) -> AsyncIterator[MemoryBackend]:
    async with server.backend(workspace, session_names="portable") as backend:
        await backend.add_message("s", "user", "before")
        yield backend


def _admin(postgres_server: PostgresHandle, sql: str) -> int:
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        cursor = admin.execute(sql)
        return len(cursor.fetchall()) if cursor.description else 0


def _bulk_posts(server: NamsTestServer, mark: int) -> int:
    return sum(1 for r in server.since(mark) if r.method == "POST" and "bulk" in r.path)


async def test_a_write_lost_while_committing_is_answered_500_and_not_resent(
    postgres_server: PostgresHandle, server: NamsTestServer, client: MemoryBackend, schema: str
) -> None:
    _admin(
        postgres_server,
        f"CREATE FUNCTION {schema}.slow() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN PERFORM pg_sleep(5); RETURN NULL; END $$",
    )
    _admin(
        postgres_server,
        f"CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON {schema}.messages "
        f"DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {schema}.slow()",
    )
    mark, outcome = server.mark(), list[MemoryCoreError]()

    async def write() -> None:
        try:
            await client.add_messages_batch("s", [{"role": "user", "content": "at commit"}] * 3)
        except MemoryCoreError as exc:
            outcome.append(exc)

    done = anyio.Event()

    async def write_then_done() -> None:
        await write()
        done.set()

    # A lost single-statement write is made once more by the store; lost again, it may
    # have been applied: so every attempt is cut while its commit waits.
    terminate = (
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
        f"'{schema}' AND state = 'active' AND pid <> pg_backend_pid()"
    )
    async with anyio.create_task_group() as group:
        group.start_soon(write_then_done)
        with anyio.fail_after(60):
            while not done.is_set():
                await anyio.to_thread.run_sync(_admin, postgres_server, terminate)
                await anyio.sleep(0.1)
    [error] = outcome
    assert isinstance(error, TransportError), repr(error)
    assert error.maybe_applied and error.retryable
    assert "→ 500" in str(error) and "may have been stored" in str(error)
    assert _bulk_posts(server, mark) == 1  # answered once, never sent again


async def test_a_retryable_store_error_is_503_with_retry_after_and_writes_nothing(
    postgres_server: PostgresHandle,
    server: NamsTestServer,
    client: MemoryBackend,
    schema: str,
    workspace: str,
) -> None:
    _admin(
        postgres_server,
        f"CREATE FUNCTION {schema}.conflict() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$",
    )
    _admin(
        postgres_server,
        f"CREATE TRIGGER conflict BEFORE INSERT ON {schema}.messages "
        f"FOR EACH ROW EXECUTE FUNCTION {schema}.conflict()",
    )
    with server.client(workspace) as http:
        conversation = http.get("/conversations").json()["conversations"][0]["id"]
        answer = http.post(
            f"/conversations/{conversation}/messages", json={"role": "user", "content": "x"}
        )
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "1"
    assert answer.json()["error"]["code"] == "service_unavailable"
    mark = server.mark()
    with pytest.raises(TransportError) as raised:
        await client.add_messages_batch("s", [{"role": "user", "content": "refused"}] * 2)
    assert raised.value.retryable and not raised.value.maybe_applied
    assert _bulk_posts(server, mark) > 1  # resent: the server said nothing was written
    _admin(postgres_server, f"DROP TRIGGER conflict ON {schema}.messages")
    read = await client.get_conversation("s")
    assert [m.content for m in read.messages] == ["before"]
