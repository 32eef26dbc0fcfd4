"""Writing and reading messages on the embedded backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import anyio
import pytest
from embedded_support import count_rows, memory_fixture, snapshot  # noqa: F401

from memory_core import MemoryBackend, MessageRole, NotFoundError, open_backend
from memory_core.backends.embedded import codec
from memory_core.backends.embedded.conversations import session_uuid

pytestmark = pytest.mark.anyio

AWKWARD = [
    "",
    "x" * 12_000,
    "family: 👨‍👩‍👧‍👦 flag: 🏳️‍🌈",
    'line\nbreak\ttab "quote" back\\slash',
    "nul\x00inside\x00",
    "  leading and trailing spaces  ",
    "Ünïcödé — ∑ 漢字",
]

METADATA = {
    "nested": {"deep": {"list": [1, 2.5, "three", None, True, False, {"k": []}]}},
    "flag": True,
    "zero": 0,
    "one": 1,
    "float": 1.0,
    "empty": "",
    "none": None,
    "big": 2**70,
    "text": 'nul\x00 "q" \\ 😀',
    "list": [],
    "dict": {},
}


async def test_add_returns_stored_message(memory: MemoryBackend) -> None:
    message = await memory.add_message("s", "user", "hello", metadata={"a": 1})
    assert message.role is MessageRole.USER
    assert message.content == "hello"
    assert message.metadata == {"a": 1}
    assert message.session_id == "s"
    assert message.conversation_id == session_uuid(None, "s")
    assert message.created_at.tzinfo is not None
    conversation = await memory.get_conversation("s")
    assert conversation.messages == [message]


@pytest.mark.parametrize("content", AWKWARD, ids=range(len(AWKWARD)))
async def test_content_round_trips_exactly(memory: MemoryBackend, content: str) -> None:
    stored = await memory.add_message("s", "user", content)
    read = (await memory.get_conversation("s")).messages
    assert stored.content == content
    assert [m.content for m in read] == [content]


async def test_nul_content_is_searchable_and_intact(memory: MemoryBackend) -> None:
    await memory.add_message("s", "user", "before\x00after words")
    hits = await memory.search_messages("after")
    assert [h.content for h in hits] == ["before\x00after words"]


async def test_metadata_round_trips_exactly(memory: MemoryBackend) -> None:
    stored = await memory.add_message("s", "user", "m", metadata=METADATA)
    (read,) = (await memory.get_conversation("s")).messages
    for message in (stored, read):
        assert message.metadata == METADATA
        assert message.metadata["flag"] is True
        assert type(message.metadata["one"]) is int
        assert type(message.metadata["float"]) is float
        assert message.metadata["nested"]["deep"]["list"][4] is True
        assert list(message.metadata) == list(METADATA)


@pytest.mark.parametrize("metadata", [None, {}])
async def test_missing_metadata_is_empty_dict(memory: MemoryBackend, metadata: object) -> None:
    await memory.add_message("s", "user", "m", metadata=metadata)  # type: ignore[arg-type]
    (read,) = (await memory.get_conversation("s")).messages
    assert read.metadata == {}


async def test_back_to_back_writes_keep_order(memory: MemoryBackend) -> None:
    for i in range(120):
        await memory.add_message("s", "user", f"message {i}")
    messages = (await memory.get_conversation("s")).messages
    assert [m.content for m in messages] == [f"message {i}" for i in range(120)]
    stamps = [m.created_at for m in messages]
    assert stamps == sorted(stamps)


async def test_concurrent_writers_lose_nothing_and_keep_a_total_order(
    memory: MemoryBackend,
) -> None:
    returned: list[UUID] = []

    async def writer(n: int) -> None:
        for i in range(5):
            message = await memory.add_message("s", "user", f"w{n}-{i}")
            returned.append(message.id)

    async with anyio.create_task_group() as group:
        for n in range(20):
            group.start_soon(writer, n)
    messages = (await memory.get_conversation("s")).messages
    assert len(messages) == 100
    assert {m.id for m in messages} == set(returned)
    for n in range(20):  # each writer's own messages stay in its order
        mine = [m.content for m in messages if m.content.startswith(f"w{n}-")]
        assert mine == [f"w{n}-{i}" for i in range(5)]
    seqs = await memory.store._store.call(
        lambda c: [r[0] for r in c.execute("SELECT seq FROM messages ORDER BY seq")], write=False
    )
    assert seqs == list(range(1, 101))
    stamps = [m.created_at for m in messages]
    assert stamps == sorted(stamps)


async def test_concurrent_first_writes_create_one_conversation(memory: MemoryBackend) -> None:
    async with anyio.create_task_group() as group:
        for n in range(20):
            group.start_soon(memory.add_message, "fresh", "user", f"m{n}")
    assert await count_rows(memory, "conversations") == 1
    assert len((await memory.get_conversation("fresh")).messages) == 20


async def test_timestamps_never_decrease_when_the_clock_goes_back(
    memory: MemoryBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = codec.now_micros()
    clock = iter([base, base - 10_000_000, base - 20_000_000, base + 1])
    for module in ("messages", "conversations"):
        monkeypatch.setattr(
            f"memory_core.backends.embedded.{module}.now_micros", lambda: next(clock)
        )
    for i in range(4):
        await memory.add_message("s", "user", str(i))
    stamps = [m.created_at for m in (await memory.get_conversation("s")).messages]
    assert stamps == sorted(stamps)
    assert stamps[1] == stamps[0] == codec.from_micros(base)
    assert stamps[3] == codec.from_micros(base + 1)


async def test_limit_keeps_the_newest_returned_oldest_first(memory: MemoryBackend) -> None:
    for i in range(30):
        await memory.add_message("s", "user", str(i))
    conversation = await memory.get_conversation("s", limit=5)
    assert [m.content for m in conversation.messages] == ["25", "26", "27", "28", "29"]
    assert len((await memory.get_conversation("s", limit=1000)).messages) == 30


async def test_default_read_limit_is_1000(memory: MemoryBackend) -> None:
    rows = [{"role": "user", "content": str(i)} for i in range(1005)]
    await memory.add_messages_batch("s", rows, batch_size=500)
    default = (await memory.get_conversation("s")).messages
    assert len(default) == 1000
    assert default[0].content == "5"
    assert len((await memory.get_conversation("s", limit=2000)).messages) == 1005


async def test_since_is_applied_before_the_limit(memory: MemoryBackend) -> None:
    start = datetime(2024, 1, 1, tzinfo=UTC)
    rows = [
        {"role": "user", "content": str(i), "timestamp": start + timedelta(minutes=i)}
        for i in range(10)
    ]
    await memory.add_messages_batch("s", rows)
    after = start + timedelta(minutes=6)
    kept = await memory.get_conversation("s", since=after, limit=2)
    assert [m.content for m in kept.messages] == ["8", "9"]
    kept = await memory.get_conversation("s", since=after, limit=100)
    assert [m.content for m in kept.messages] == ["7", "8", "9"]
    naive = await memory.get_conversation("s", since=after.replace(tzinfo=None))
    assert [m.content for m in naive.messages] == ["7", "8", "9"]
    iso = await memory.get_conversation("s", since=after.isoformat())  # type: ignore[arg-type]
    assert [m.content for m in iso.messages] == ["7", "8", "9"]


async def test_missing_session_has_a_stable_id_and_writes_nothing(
    memory: MemoryBackend,
) -> None:
    before = await snapshot(memory)
    first = await memory.get_conversation("nobody")
    second = await memory.get_conversation("nobody")
    assert first.messages == []
    assert first.id == second.id == session_uuid(None, "nobody")
    assert await snapshot(memory) == before
    message = await memory.add_message("nobody", "user", "now I exist")
    assert message.conversation_id == first.id


async def test_conversation_id_is_an_alias_of_the_session(memory: MemoryBackend) -> None:
    stored = await memory.add_message("s", "user", "one")
    cid = stored.conversation_id
    assert cid is not None
    await memory.add_message(conversation_id=cid, role="assistant", content="two")
    await memory.add_message(conversation_id=str(cid), role="user", content="three")
    by_id = await memory.get_conversation(conversation_id=cid)
    assert by_id.session_id == "s"
    assert [m.content for m in by_id.messages] == ["one", "two", "three"]
    # session_id wins when both are given
    other = await memory.get_conversation("other", conversation_id=cid)
    assert other.session_id == "other"
    assert other.messages == []


async def test_unknown_conversation_id_raises_not_found_and_writes_nothing(
    memory: MemoryBackend,
) -> None:
    await memory.add_message("s", "user", "existing")
    before = await snapshot(memory)
    unknown = uuid4()
    with pytest.raises(NotFoundError, match="conversation_id"):
        await memory.get_conversation(conversation_id=unknown)
    with pytest.raises(NotFoundError):
        await memory.add_message(conversation_id=unknown, role="user", content="x")
    with pytest.raises(NotFoundError):
        await memory.add_messages_batch(
            conversation_id=unknown, messages=[{"role": "user", "content": "x"}]
        )
    with pytest.raises(NotFoundError):
        await memory.search_messages("existing", conversation_id=unknown)
    with pytest.raises(NotFoundError):
        await memory.get_context("existing", conversation_id=unknown)
    assert await memory.clear_session(conversation_id=unknown) is False
    assert await snapshot(memory) == before


async def test_duplicate_content_without_key_is_stored_twice(memory: MemoryBackend) -> None:
    first = await memory.add_message("s", "user", "same")
    second = await memory.add_message("s", "user", "same")
    assert first.id != second.id
    assert len((await memory.get_conversation("s")).messages) == 2


async def test_idempotency_key_replay_returns_stored_and_writes_nothing(
    memory: MemoryBackend,
) -> None:
    first = await memory.add_message("s", "user", "hi", idempotency_key="turn-1", metadata={"a": 1})
    before = await snapshot(memory)
    replay = await memory.add_message("s", "user", "different", idempotency_key="turn-1")
    assert replay == first
    assert replay.idempotency_key == "turn-1"
    assert await snapshot(memory) == before  # no row, no updated_at change
    other = await memory.add_message("s2", "user", "hi", idempotency_key="turn-1")
    assert other.id != first.id  # keys are per conversation


async def test_concurrent_replays_store_one_message(memory: MemoryBackend) -> None:
    ids: set[UUID] = set()

    async def send() -> None:
        ids.add((await memory.add_message("s", "user", "once", idempotency_key="k")).id)

    async with anyio.create_task_group() as group:
        for _ in range(20):
            group.start_soon(send)
    assert len(ids) == 1
    assert len((await memory.get_conversation("s")).messages) == 1


async def test_batch_keeps_order_caller_timestamps_and_callbacks(memory: MemoryBackend) -> None:
    await memory.add_message("s", "user", "before the batch")
    when = datetime(2020, 5, 17, 12, 30, 15, 123456, tzinfo=UTC)
    rows: list[dict[str, Any]] = [
        {"role": "user", "content": "a", "timestamp": when},
        {"role": "assistant", "content": "b", "metadata": {"k": [1]}},
        {"role": "user", "content": "c", "timestamp": when.isoformat()},
        {"role": "tool", "content": "d"},
        {"role": "system", "content": "e"},
    ]
    progress: list[tuple[int, int]] = []
    batches: list[int] = []
    stored = await memory.add_messages_batch(
        "s",
        rows,
        batch_size=2,
        on_progress=lambda done, total: progress.append((done, total)),
        on_batch_complete=lambda n, chunk: batches.append(len(chunk)),
    )
    assert [m.content for m in stored] == ["a", "b", "c", "d", "e"]
    assert stored[0].created_at == when
    assert stored[2].created_at == when
    assert stored[1].metadata == {"k": [1]}
    assert progress == [(2, 5), (4, 5), (5, 5)]
    assert batches == [2, 2, 1]
    read = (await memory.get_conversation("s")).messages
    assert [m.content for m in read] == ["before the batch", "a", "b", "c", "d", "e"]
    assert [m.created_at for m in read[1:]] == [m.created_at for m in stored]
    assert await memory.add_messages_batch("s", []) == []
    assert await memory.bulk_add_messages("s", [{"role": "user", "content": "f"}])


async def test_a_batch_is_one_transaction(
    memory: MemoryBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await memory.add_message("s", "user", "existing")
    before = await snapshot(memory)
    from memory_core.backends.embedded import messages

    calls = {"n": 0}
    real_dump = messages.dump_json

    def failing_dump(value):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("boom in the middle of the batch")
        return real_dump(value)

    monkeypatch.setattr(messages, "dump_json", failing_dump)
    rows = [{"role": "user", "content": str(i)} for i in range(5)]
    with pytest.raises(RuntimeError):
        await memory.add_messages_batch("s", rows)
    assert await snapshot(memory) == before


async def test_add_message_with_embedding_round_trips(memory: MemoryBackend) -> None:
    from memory_core import HashingEmbedder

    async with open_backend("memory://", embedder=HashingEmbedder(16)) as backend:
        stored = await backend.add_message("s", "user", "vectors please")
        skipped = await backend.add_message("s", "user", "none", generate_embedding=False)
        read = (await backend.get_conversation("s")).messages
    assert stored.embedding is not None and len(stored.embedding) == 16
    assert read[0].embedding == stored.embedding
    assert skipped.embedding is None and read[1].embedding is None
