"""The PostgreSQL backend's one-statement calls (memory_core.backends.postgres.single):
one round trip each, replayable after a lost answer, and stamped times that never go
backwards, also under concurrent writers and in batches with caller timestamps."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import psycopg
import pytest

from bench.postgres import RoundTrips
from memory_core import MemoryBackend, TurnMemory, open_backend
from memory_core.backends.postgres import store as pg_backend
from memory_core.backends.postgres.codec import SAFE_CHARS
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(postgres_server: PostgresHandle) -> AsyncIterator[MemoryBackend]:
    separator = "&" if "?" in postgres_server.url else "?"
    url = f"{postgres_server.url}{separator}schema=t_{uuid.uuid4().hex[:12]}"
    async with open_backend(url, max_size=10) as backend:
        yield backend


async def _trips(counter: RoundTrips, call: Any) -> int:
    before = counter.count
    await call
    return counter.count - before


async def test_common_calls_are_one_round_trip(store: MemoryBackend) -> None:
    await store.add_message("s", "user", "first")  # creates the conversation
    trips = RoundTrips(store)
    assert await _trips(trips, store.add_message("s", "user", "second")) == 1
    batch = [{"role": "user", "content": f"b{i}"} for i in range(30)]
    assert await _trips(trips, store.add_messages_batch("s", batch)) == 1
    assert await _trips(trips, store.get_conversation("s", limit=10)) == 1
    conversation = await store.get_conversation("s", limit=1)
    by_id = store.add_message(conversation_id=conversation.id, role="user", content="x")
    assert await _trips(trips, by_id) == 1
    assert await _trips(trips, store.list_conversations(limit=10)) == 1
    assert [m.content for m in (await store.get_conversation("s", limit=3)).messages] == [
        "b28",
        "b29",
        "x",
    ]


async def _lose_first_answer(backend: MemoryBackend) -> list[int]:
    """Make the next call's first attempt run (and commit) but lose its answer, as a
    connection broken after the server applied the statement; the attempts made."""
    store: Any = backend.store
    once = store._once
    attempts = [0]

    async def flaky(work: Any, *args: Any, **options: Any) -> Any:
        attempts[0] += 1
        result = await once(work, *args, **options)
        if attempts[0] == 1:
            lost = psycopg.OperationalError("server closed the connection unexpectedly")
            raise pg_backend._Broken(lost, False)
        return result

    store._once = flaky
    return attempts


async def test_a_single_add_whose_answer_was_lost_is_written_once(store: MemoryBackend) -> None:
    await store.add_message("s", "user", "before")
    attempts = await _lose_first_answer(store)
    stored = await store.add_message("s", "user", "lost answer")
    assert attempts == [2]
    read = await store.get_conversation("s")
    assert [m.content for m in read.messages] == ["before", "lost answer"]
    assert read.messages[1].id == stored.id
    assert read.messages[1].created_at == stored.created_at


async def test_a_batch_whose_answer_was_lost_is_written_once(store: MemoryBackend) -> None:
    await store.add_message("s", "user", "before")
    attempts = await _lose_first_answer(store)
    batch = [{"role": "user", "content": f"b{i}"} for i in range(5)]
    stored = await store.add_messages_batch("s", batch)
    assert attempts == [2]
    read = await store.get_conversation("s")
    assert [m.content for m in read.messages] == ["before", "b0", "b1", "b2", "b3", "b4"]
    assert [m.id for m in read.messages[1:]] == [m.id for m in stored]


async def test_stamped_times_never_go_backwards_under_concurrent_writers(
    store: MemoryBackend,
) -> None:
    await store.add_message("s", "user", "first")

    async def write(i: int) -> None:
        await store.add_message("s", "user", f"w{i}")

    for _ in range(3):
        async with anyio.create_task_group() as group:
            for i in range(40):
                group.start_soon(write, i)
    read = await store.get_conversation("s", limit=1000)
    stamps = [m.created_at for m in read.messages]
    assert len(stamps) == 121
    assert stamps == sorted(stamps), "a later message got an earlier time"


async def test_batch_times_keep_caller_stamps_and_follow_the_message_before(
    store: MemoryBackend,
) -> None:
    future = datetime.now(UTC) + timedelta(days=2)
    past = datetime(2020, 1, 1, tzinfo=UTC)
    before = datetime.now(UTC)
    stored = await store.add_messages_batch(
        "s",
        [
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b", "timestamp": future},
            {"role": "user", "content": "c"},
            {"role": "user", "content": "d", "timestamp": past},
            {"role": "user", "content": "e"},
        ],
    )
    a, b, c, d, e = (m.created_at for m in stored)
    assert before <= a < future
    assert (b, d) == (future, past)
    assert c == future  # the message before it is in the future
    assert before <= e < future  # the one before it is in the past: the clock wins
    read = await store.get_conversation("s")
    assert [m.created_at for m in read.messages] == [a, b, c, d, e]
    await store.add_messages_batch("s", [{"role": "user", "content": "g", "timestamp": future}])
    later = await store.add_message("s", "user", "h")
    assert later.created_at == future


async def test_a_turn_whose_opening_answer_was_lost_is_stored_once_and_not_a_replay(
    store: MemoryBackend,
) -> None:
    acme = await store.add_entity("Acme Corp", "ORGANIZATION")
    await store.add_message("s", "user", "before")
    attempts = await _lose_first_answer(store)
    opened = await TurnMemory(store, "s", "tests").open_turn("t1", "What about Acme Corp?")
    assert attempts == [2]  # one statement, made again: it found its own first write
    assert not opened.replayed
    assert opened.retrieved_entity_ids == [acme.id]
    assert [ref.id for ref in opened.user_message.mentions] == [acme.id]
    read = await store.get_conversation("s")
    assert [m.content for m in read.messages] == ["before", "What about Acme Corp?"]
    assert [ref.id for ref in read.messages[1].mentions] == [acme.id]


async def test_a_turn_too_long_for_one_statement_opens_in_a_transaction(
    store: MemoryBackend,
) -> None:
    acme = await store.add_entity("Acme Corp", "ORGANIZATION")
    question = "Acme Corp " + "word " * (SAFE_CHARS // 4)  # longer than one statement takes
    trips = RoundTrips(store)
    before = trips.count
    opened = await TurnMemory(store, "s", "tests").open_turn("t1", question)
    assert trips.count - before > 1  # BEGIN, the statements, COMMIT
    assert not opened.replayed and opened.retrieved_entity_ids == [acme.id]
    again = await TurnMemory(store, "s", "tests").open_turn("t1", question)  # another process
    assert again.replayed and again.user_message.id == opened.user_message.id
    assert again.retrieved_entity_ids == [acme.id]
    read = await store.get_conversation("s")
    assert [ref.id for ref in read.messages[0].mentions] == [acme.id]
    assert len(read.messages) == 1
    assert (await store.search_messages("word", session_id="s"))[0].id == opened.user_message.id
