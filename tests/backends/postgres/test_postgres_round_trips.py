"""Round trips of the PostgreSQL backend's writes, counted on the wire.

libpq's protocol trace (``PQtrace``) of every pooled connection a call uses records what
the client sends; each simple-protocol ``Query`` (``BEGIN``, ``COMMIT``, …) and each
extended-protocol ``Sync`` ends one exchange with the server: one round trip. Counting
there, not in our own code, also counts the ``BEGIN``/``COMMIT`` of a transaction opened
inside a call made in autocommit. psycopg prepares a statement on its sixth run on a
connection (one round trip more, once): the counts are taken after that.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from psycopg import pq

from memory_core import MemoryBackend, open_backend
from memory_core.turns import with_memory
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = pytest.mark.anyio

_FLAGS = pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE
_PREPARED = 6  # runs after which psycopg has prepared a statement


class Wire:
    """The frontend messages a backend's pooled connections send, from libpq's trace."""

    def __init__(self, backend: MemoryBackend, path: Path) -> None:
        self.path = path
        path.touch()
        self._sink = path.open("ab")  # O_APPEND: each connection's trace lands at the end
        pool: Any = backend.store._pool  # type: ignore[attr-defined]
        real = pool.connection

        @asynccontextmanager
        async def traced(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            async with real(*args, **kwargs) as conn:
                conn.pgconn.trace(self._sink.fileno())
                conn.pgconn.set_trace_flags(_FLAGS)
                try:
                    yield conn
                finally:
                    conn.pgconn.untrace()  # flushes the trace

        pool.connection = traced

    def sent(self) -> list[str]:
        """The type of every message sent so far (``Query``, ``Parse``, ``Sync``, …)."""
        lines = self.path.read_text(errors="replace").splitlines()
        return [line.split("\t")[2] for line in lines if line.startswith("F\t")]

    async def trips(self, call: Awaitable[Any]) -> int:
        """The round trips ``call`` makes."""
        before = len(self.sent())
        await call
        return sum(kind in ("Query", "Sync") for kind in self.sent()[before:])

    def close(self) -> None:
        self._sink.close()


@pytest.fixture
async def wired(
    postgres_server: PostgresHandle, tmp_path: Path
) -> AsyncIterator[tuple[MemoryBackend, Wire]]:
    separator = "&" if "?" in postgres_server.url else "?"
    url = f"{postgres_server.url}{separator}schema=t_{uuid.uuid4().hex[:12]}"
    async with open_backend(url, max_size=4) as backend:
        wire = Wire(backend, tmp_path / "trace")
        try:
            yield backend, wire
        finally:
            wire.close()


async def test_the_wire_counts_begin_and_commit(
    wired: tuple[MemoryBackend, Wire],
) -> None:
    # the transactional path (a mention): BEGIN and COMMIT are two of its round trips
    backend, wire = wired
    entity = await backend.add_entity("Acme", "organization")
    await backend.add_message("s", "user", "first")
    mention = backend.add_message(
        "s", "user", "about Acme", extraction_mode="explicit", explicit_mentions=[entity.id]
    )
    assert await wire.trips(mention) >= 4
    sent = wire.sent()
    assert "Query" in sent and "Sync" in sent


async def test_a_write_with_an_idempotency_key_is_one_round_trip(
    wired: tuple[MemoryBackend, Wire],
) -> None:
    backend, wire = wired
    for i in range(_PREPARED):
        await backend.add_message("s", "user", "warm", idempotency_key=f"w{i}")
    keyed = backend.add_message("s", "user", "keyed", idempotency_key="k1")
    assert await wire.trips(keyed) == 1
    replay = backend.add_message("s", "assistant", "changed", idempotency_key="k1")
    assert await wire.trips(replay) == 1
    read = await backend.get_conversation("s")
    assert [m.content for m in read.messages] == ["warm"] * _PREPARED + ["keyed"]
    assert read.messages[-1].idempotency_key == "k1"


async def test_a_sessions_first_write_is_two_round_trips(
    wired: tuple[MemoryBackend, Wire],
) -> None:
    # the statement finds no conversation, then makes it and writes in one statement
    backend, wire = wired
    batch = [{"role": "user", "content": f"b{i}"} for i in range(3)]
    for i in range(_PREPARED):
        await backend.add_message(f"warm-{i}", "user", "one")
        await backend.add_messages_batch(f"warm-b{i}", batch)
        await backend.add_message(f"warm-k{i}", "user", "keyed", idempotency_key="k")
    assert await wire.trips(backend.add_message("a", "user", "one")) == 2
    assert await wire.trips(backend.add_messages_batch("b", batch)) == 2
    keyed = backend.add_message("c", "user", "keyed", idempotency_key="k")
    assert await wire.trips(keyed) == 2
    for session, count in (("a", 1), ("b", 3), ("c", 1)):
        read = await backend.get_conversation(session)
        assert len(read.messages) == count
        assert read.messages[0].session_id == session


async def test_an_agent_turn_is_two_round_trips(wired: tuple[MemoryBackend, Wire]) -> None:
    # the question (one statement: the entities it names, found and linked, and its keyed
    # write, which tells a new turn from a replay: no read first) and the reply
    backend, wire = wired
    acme = await backend.add_entity("Acme Corp", "ORGANIZATION")

    async def agent(user_message: str, ctx: Any) -> str:
        return f"noted: {user_message[:20]}"

    chat = with_memory(agent, backend=backend, conversation_id="turns", platform="test")
    for t in range(_PREPARED):  # the first creates the conversation
        await chat(f"turn {t}: tell me about Acme Corp", turn_id=f"t{t}")
    for t in range(_PREPARED, _PREPARED + 3):
        turn = chat(f"turn {t}: tell me about Acme Corp and topic {t}", turn_id=f"t{t}")
        assert await wire.trips(turn) == 2
    read = await backend.get_conversation("turns")
    assert len(read.messages) == 2 * (_PREPARED + 3)
    assert all(m.idempotency_key is not None for m in read.messages)
    questions = [m for m in read.messages if m.role.value == "user"]
    assert all([ref.id for ref in m.mentions] == [acme.id] for m in questions)
    # Replays store nothing and do not run the agent. Known to this object: the retrieval
    # only. Found in storage by another object: the question's statement (it finds the
    # entities, and the message stored under the key: nothing written), the read that
    # finds the reply and the one that looks for the turn's reasoning trace to link (a
    # conversation without an owner is not created first: the first write creates it).
    said = f"turn {_PREPARED}: tell me about Acme Corp and topic {_PREPARED}"
    assert await wire.trips(chat(said, turn_id=f"t{_PREPARED}")) == 1
    other = with_memory(agent, backend=backend, conversation_id="turns", platform="test")
    again = other(said, turn_id=f"t{_PREPARED}")
    assert await wire.trips(again) == 3
    assert len((await backend.get_conversation("turns")).messages) == 2 * (_PREPARED + 3)


async def test_concurrent_first_writes_of_a_session_with_one_key_store_one_message(
    wired: tuple[MemoryBackend, Wire],
) -> None:
    # racing creators: the losers' statements find the winner's row and write nothing,
    # then fall back to the transaction; every caller gets the one stored message
    backend, _ = wired
    for round_ in range(3):
        session, results = f"race-{round_}", []

        async def write(session: str = session, results: list[Any] = results) -> None:
            results.append(
                await backend.add_message(session, "user", "racing", idempotency_key="k")
            )

        async with anyio.create_task_group() as group:
            for _ in range(6):
                group.start_soon(write)
        assert len({m.id for m in results}) == 1
        read = await backend.get_conversation(session)
        assert [m.content for m in read.messages] == ["racing"]


async def test_a_replay_committed_while_the_write_waited_is_returned_not_written(
    postgres_server: PostgresHandle,
) -> None:
    # Writers of one key that took their snapshots before any of them committed: the
    # first writes, the others find the key's row only through its unique index (their
    # snapshots predate it) and read the stored message by one statement more.
    separator = "&" if "?" in postgres_server.url else "?"
    schema = f"t_{uuid.uuid4().hex[:12]}"
    url = f"{postgres_server.url}{separator}schema={schema}"
    async with open_backend(url, min_size=3, max_size=3) as backend:
        await backend.add_message("s", "user", "first")
        results: list[Any] = []

        async def write() -> None:
            results.append(await backend.add_message("s", "user", "racing", idempotency_key="k"))

        async with (
            await psycopg.AsyncConnection.connect(postgres_server.url) as holder,
            await psycopg.AsyncConnection.connect(postgres_server.url, autocommit=True) as watch,
        ):
            await holder.execute(f"SELECT 1 FROM {schema}.conversations FOR UPDATE")
            async with anyio.create_task_group() as group:
                for _ in range(3):
                    group.start_soon(write)
                with anyio.fail_after(10):
                    while await _waiting_for_locks(watch) < 3:
                        await anyio.sleep(0.02)
                await holder.commit()  # the three go on, one after the other
        assert len(results) == 3
        assert len({m.id for m in results}) == 1
        assert {m.content for m in results} == {"racing"}
        read = await backend.get_conversation("s")
        assert [m.content for m in read.messages] == ["first", "racing"]
        assert read.messages[1].id == results[0].id


async def _waiting_for_locks(watch: psycopg.AsyncConnection[Any]) -> int:
    cursor = await watch.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
        "AND datname = current_database()"
    )
    row = await cursor.fetchone()
    return int(row[0]) if row else 0
