"""The PostgreSQL backend behind a real PgBouncer in transaction mode, with
``prepared_statements=False`` (the ``pgbouncer_server`` fixture: two server connections).

The backend's pool holds more connections than PgBouncer has server connections, and
several tasks write at once, so consecutive transactions of one client connection land
on different server connections and every statement runs far more often than psycopg's
prepare threshold (5): a prepared statement would be missing on the next server.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any, ClassVar

import anyio
import pytest

from memory_core import ConfigurationError, MemoryBackend, MemoryCoreError, open_backend
from memory_core.conformance import ConformanceSuite
from memory_core_dev.postgres_server import PostgresHandle

TASKS = 6
WRITES_PER_TASK = 8
OPTIONS: dict[str, Any] = {"prepared_statements": False, "max_size": TASKS}


def _url(server: PostgresHandle, schema: str) -> str:
    return f"{server.url}?schema={schema}"


@pytest.fixture
async def store(pgbouncer_server: PostgresHandle) -> AsyncIterator[MemoryBackend]:
    schema = f"bouncer_{uuid.uuid4().hex[:12]}"
    async with open_backend(_url(pgbouncer_server, schema), **OPTIONS) as backend:
        yield backend


async def _write(store: MemoryBackend, task: int) -> None:
    for n in range(WRITES_PER_TASK):
        await store.add_message(f"s{task}", "user", f"pelican note {task}-{n}")


@pytest.mark.anyio
async def test_concurrent_work_through_pgbouncer(store: MemoryBackend) -> None:
    async with anyio.create_task_group() as group:
        for task in range(TASKS):
            group.start_soon(_write, store, task)
    for task in range(TASKS):
        read = await store.get_conversation(f"s{task}")
        assert [m.content for m in read.messages] == [
            f"pelican note {task}-{n}" for n in range(WRITES_PER_TASK)
        ]
    hits = await store.search_messages("pelican", session_id="s0", limit=50)
    assert len(hits) == WRITES_PER_TASK
    batch = [{"role": "assistant", "content": f"batch {n}"} for n in range(7)]
    stored = await store.add_messages_batch("s0", batch)
    assert [m.content for m in stored] == [f"batch {n}" for n in range(7)]
    first = await store.add_message("s0", "user", "once", idempotency_key="k-1")
    again = await store.add_message("s0", "user", "once", idempotency_key="k-1")
    assert again.id == first.id
    read = await store.get_conversation("s0")
    assert len(read.messages) == WRITES_PER_TASK + 7 + 1


@pytest.mark.anyio
async def test_list_conversations_pages_through_pgbouncer(store: MemoryBackend) -> None:
    for task in range(TASKS):
        await store.add_message(f"p{task}", "user", "hello")
    seen: list[str] = []
    cursor: str | None = None
    while True:
        page = await store.list_conversations_page(limit=2, cursor=cursor)
        seen += [c.session_id for c in page.conversations]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(seen) == [f"p{task}" for task in range(TASKS)]


async def _until_refused(store: MemoryBackend, task: int) -> MemoryCoreError | None:
    for n in range(WRITES_PER_TASK):
        try:
            await store.add_message(f"s{task}", "user", f"note {n}")
            await store.search_messages("note", session_id=f"s{task}")
        except MemoryCoreError as exc:
            return exc
    return None


@pytest.mark.anyio
async def test_prepared_statements_behind_pgbouncer_are_named_in_the_error(
    pgbouncer_server: PostgresHandle,
) -> None:
    """Issue 48: the error said only that the server failed the operation. Calls on more
    client connections than PgBouncer has server connections move a prepared statement's
    connection within a few rounds."""
    url = _url(pgbouncer_server, f"bouncer_{uuid.uuid4().hex[:12]}")
    found: list[MemoryCoreError | None] = []

    async def run(task: int) -> None:
        found.append(await _until_refused(store, task))

    async with open_backend(url, prepared_statements=True, max_size=TASKS) as store:
        for _ in range(5):
            async with anyio.create_task_group() as group:
                for task in range(TASKS):
                    group.start_soon(run, task)
            if any(found):
                break
    errors = [exc for exc in found if exc is not None]
    assert errors, "no call failed: PgBouncer kept every prepared statement's connection"
    for exc in errors:
        assert isinstance(exc, ConfigurationError), repr(exc)
        assert "prepared_statements=False" in str(exc)


@pytest.mark.anyio
async def test_a_database_pgbouncer_does_not_have_is_a_configuration_error(
    pgbouncer_server: PostgresHandle,
) -> None:
    """Issue 48: it was a retryable TransportError."""
    url = pgbouncer_server.url.rsplit("/", 1)[0] + "/no_such_database_48"
    with pytest.raises(ConfigurationError) as caught:
        async with open_backend(url, **OPTIONS):
            pass
    assert not caught.value.retryable
    assert "'no_such_database_48'" in str(caught.value)


class TestPgBouncerConformance(ConformanceSuite):
    """The whole conformance suite through PgBouncer (about 9 s)."""

    backend_options: ClassVar[dict[str, Any]] = OPTIONS
    _schema: ClassVar[str] = f"bouncer_conf_{uuid.uuid4().hex[:12]}"

    @pytest.fixture
    def conformance_backend_url(self, pgbouncer_server: PostgresHandle) -> str:
        return _url(pgbouncer_server, self._schema)
