"""Batches are checked whole before anything is written; atomic where the store allows
(one transaction for the whole call on embedded, Bolt and PostgreSQL); on NAMS (chunks of 100) a
failure says how many messages were stored (``exc.written``)."""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg
import pytest
from psycopg import sql

from memory_core import (
    InvalidRequestError,
    MemoryCoreError,
    Message,
    TransportError,
    open_backend,
)
from memory_core import requests as rq
from memory_core_dev.nams_server import NamsTestServer

from .conftest import open_subject
from .subjects import Subject

pytestmark = pytest.mark.anyio


def batch(count: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"m{i}", **extra} for i in range(count)]


async def test_a_bad_fourth_message_writes_nothing(subject: Subject) -> None:
    """The probe's case: batch_size=2, an invalid value in the 4th message."""
    handle = await subject.session()
    before = await subject.dump()
    messages = [*batch(3), {"role": "user", "content": "bad", "metadata": {"n": 10**4301}}]
    with pytest.raises(InvalidRequestError) as raised:
        await subject.backend.add_messages_batch(handle, messages, batch_size=2)
    assert raised.value.argument == "messages[3].metadata"
    assert await subject.dump() == before


async def test_whole_call_is_one_hook_call_without_a_bulk_cap(subject: Subject) -> None:
    backend = subject.backend
    calls: list[int] = []
    hook = backend.store.add_messages

    async def spy(req: rq.AddMessages) -> list[Message]:
        calls.append(len(req.messages))
        return await hook(req)

    backend.store.add_messages = spy  # type: ignore[method-assign]
    progress: list[tuple[int, int]] = []
    done: list[tuple[int, int]] = []
    stored = await backend.add_messages_batch(
        await subject.session(),
        batch(250),
        batch_size=40,
        on_progress=lambda n, total: progress.append((n, total)),
        on_batch_complete=lambda number, chunk: done.append((number, len(chunk))),
    )
    assert [m.content for m in stored] == [f"m{i}" for i in range(250)]
    cap = backend.capabilities.max_bulk_messages
    if cap is None:
        assert calls == [250]
    else:
        assert calls == [40] * 6 + [10]
    assert [n for n, _ in done] == list(range(7))
    assert sum(size for _, size in done) == 250
    assert progress[-1] == (250, 250)


async def test_sqlite_failure_mid_batch_rolls_back_the_whole_call(tmp_path: Any) -> None:
    """A store error on the 5th of 6 messages (a trigger aborts it): nothing is kept."""
    path = tmp_path / "trigger.db"
    async with open_backend(f"sqlite:///{path}") as backend:
        await backend.add_message("s", "user", "before")
        conn = sqlite3.connect(path)
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON messages WHEN NEW.content = 'boom' "
            "BEGIN SELECT RAISE(ABORT, 'refused by test trigger'); END"
        )
        conn.commit()
        conn.close()
        messages = [*batch(4), {"role": "user", "content": "boom"}, *batch(1)]
        with pytest.raises(TransportError) as raised:
            await backend.add_messages_batch("s", messages, batch_size=2)
        assert raised.value.written is None
        read = await backend.get_conversation("s")
        assert [m.content for m in read.messages] == ["before"]
        await backend.add_message("s", "user", "after")
        read = await backend.get_conversation("s")
        assert [m.content for m in read.messages] == ["before", "after"]


async def test_postgres_failure_mid_batch_rolls_back_the_whole_call(
    request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    """A server error on the 5th of 6 messages (a trigger raises): the store is as before,
    row for row, and the error is typed."""
    subject = await open_subject("postgres", request, tmp_path)
    try:
        backend = subject.backend
        await backend.add_message("s", "user", "before")
        assert subject.postgres is not None
        url, schema = subject.postgres
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                sql.SQL(
                    "CREATE FUNCTION {}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                    "IF NEW.content = 'boom' THEN RAISE EXCEPTION 'refused by test trigger'; "
                    "END IF; RETURN NEW; END $$; CREATE TRIGGER refuse BEFORE INSERT ON {} "
                    "FOR EACH ROW EXECUTE FUNCTION {}.refuse()"
                ).format(
                    sql.Identifier(schema),
                    sql.Identifier(schema, "messages"),
                    sql.Identifier(schema),
                )
            )
        before = await subject.dump()
        messages = [*batch(4), {"role": "user", "content": "boom"}, *batch(1)]
        with pytest.raises(MemoryCoreError) as raised:
            await backend.add_messages_batch("s", messages, batch_size=2)
        assert "postgres" in str(raised.value)
        assert await subject.dump() == before
        await backend.add_message("s", "user", "after")
        read = await backend.get_conversation("s")
        assert [m.content for m in read.messages] == ["before", "after"]
    finally:
        await subject.backend.close()


async def test_nams_failure_after_a_chunk_reports_what_was_written(
    reliability_nams: NamsTestServer,
) -> None:
    """The second chunk of 100 meets a 503: the first 100 are stored, ``written`` says so."""
    server = reliability_nams
    backend = server.backend(NamsTestServer.workspace("chunks"), max_retries=0)
    async with backend:
        created = await backend.create_conversation(session_id="chunks")
        handle = str(created.id)

        def fail_next(number: int, chunk: list[Message]) -> None:
            if number == 0:
                server.faults.set(unavailable=1)

        try:
            with pytest.raises(MemoryCoreError) as raised:
                await backend.add_messages_batch(handle, batch(250), on_batch_complete=fail_next)
        finally:
            server.faults.reset()
        assert raised.value.written == 100
        read = await backend.get_conversation(handle)
        assert [m.content for m in read.messages] == [f"m{i}" for i in range(100)]
