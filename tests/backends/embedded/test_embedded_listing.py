"""create_conversation, list_conversations and list_sessions on the embedded backend."""

from __future__ import annotations

from uuid import uuid4

import pytest
from embedded_support import count_rows, memory_fixture, snapshot  # noqa: F401

from memory_core import InvalidRequestError, MemoryBackend
from memory_core.backends.embedded.conversations import session_uuid
from memory_core.summary import preview

pytestmark = pytest.mark.anyio


async def test_create_conversation_is_idempotent(memory: MemoryBackend) -> None:
    first = await memory.create_conversation("s", title="Trip", metadata={"k": 1})
    assert first.id == session_uuid(None, "s")
    assert first.title == "Trip" and first.metadata == {"k": 1}
    assert first.messages == []
    before = await snapshot(memory)
    again = await memory.create_conversation("s", title="Other", metadata={"k": 2})
    assert again == first  # the first creation's title and metadata are kept
    assert await snapshot(memory) == before


async def test_create_fills_a_missing_title_of_an_auto_created_conversation(
    memory: MemoryBackend,
) -> None:
    message = await memory.add_message("s", "user", "hi")
    named = await memory.create_conversation("s", title="Named", metadata={"topic": "x"})
    assert named.id == message.conversation_id
    assert named.title == "Named" and named.metadata == {"topic": "x"}
    read = await memory.get_conversation("s")
    assert read.title == "Named"
    assert [m.content for m in read.messages] == ["hi"]


async def test_create_with_conversation_id_only(memory: MemoryBackend) -> None:
    chosen = uuid4()
    created = await memory.create_conversation(conversation_id=chosen, title="By id")
    assert created.id == chosen
    assert created.session_id == str(chosen)
    assert await memory.create_conversation(conversation_id=str(chosen)) == created
    await memory.add_message(conversation_id=chosen, role="user", content="one")
    await memory.add_message(str(chosen), "user", "two")
    read = await memory.get_conversation(conversation_id=chosen)
    assert [m.content for m in read.messages] == ["one", "two"]
    assert await count_rows(memory, "conversations") == 1


async def test_create_with_a_taken_conversation_id_is_refused(memory: MemoryBackend) -> None:
    chosen = uuid4()
    await memory.add_message(str(chosen), "user", "session named like the uuid")
    before = await snapshot(memory)
    with pytest.raises(InvalidRequestError) as raised:
        await memory.create_conversation(conversation_id=chosen)
    assert raised.value.argument == "conversation_id"
    assert await snapshot(memory) == before


async def test_create_records_user_identifier(memory: MemoryBackend) -> None:
    created = await memory.create_conversation("s", user_identifier="alice")
    assert created.user_identifier == "alice"
    listed = await memory.list_conversations(user_identifier="alice")
    assert [c.id for c in listed] == [created.id]
    assert await memory.list_conversations(user_identifier="bob") == []


async def test_list_conversations_most_recent_first_without_messages(
    memory: MemoryBackend,
) -> None:
    for name in ("a", "b", "c"):
        await memory.add_message(name, "user", f"in {name}")
    await memory.add_message("a", "user", "a again")
    listed = await memory.list_conversations()
    assert [c.session_id for c in listed] == ["a", "c", "b"]
    assert all(c.messages == [] for c in listed)
    assert [c.session_id for c in await memory.list_conversations(limit=2)] == ["a", "c"]
    updated = [c.updated_at or c.created_at for c in listed]
    assert updated == sorted(updated, reverse=True)


async def test_list_conversations_ties_break_by_id(
    memory: MemoryBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "memory_core.backends.embedded.messages.now_micros", lambda: 1_700_000_000_000_000
    )
    for name in ("x", "y", "z", "w"):
        await memory.add_message(name, "user", "same time")
    listed = await memory.list_conversations()
    # Descending, like updated_at: the keyset (updated_at, id) < (…) of the next page.
    assert [str(c.id) for c in listed] == sorted((str(c.id) for c in listed), reverse=True)


async def test_list_sessions_rows(memory: MemoryBackend) -> None:
    long = "L" * 300
    await memory.add_message("s1", "user", "first message")
    await memory.add_message("s1", "assistant", long)
    await memory.create_conversation("empty", title="Nothing yet")
    rows = {r.session_id: r for r in await memory.list_sessions()}
    assert set(rows) == {"s1", "empty"}
    s1 = rows["s1"]
    assert s1.message_count == 2
    assert s1.first_message_preview == "first message"
    assert s1.last_message_preview == preview(long)
    assert s1.conversation_id == session_uuid(None, "s1")
    empty = rows["empty"]
    assert empty.message_count == 0
    assert empty.title == "Nothing yet"
    assert empty.first_message_preview is None and empty.last_message_preview is None


async def test_list_sessions_prefix_is_literal(memory: MemoryBackend) -> None:
    for name in ("a%b-1", "axb-2", "a_c-1", "abc-2", "A%b-3", "other"):
        await memory.add_message(name, "user", "x")
    assert {r.session_id for r in await memory.list_sessions(prefix="a%b")} == {"a%b-1"}
    assert {r.session_id for r in await memory.list_sessions(prefix="a_")} == {"a_c-1"}
    assert {r.session_id for r in await memory.list_sessions(prefix="a")} == {
        "a%b-1",
        "axb-2",
        "a_c-1",
        "abc-2",
    }
    assert await memory.list_sessions(prefix="zzz") == []
    assert len(await memory.list_sessions(prefix="")) == 6


async def test_list_sessions_ordering_with_tiebreak_and_offset(memory: MemoryBackend) -> None:
    counts = {"d": 2, "b": 3, "c": 2, "a": 1}
    for name, n in counts.items():
        for i in range(n):
            await memory.add_message(name, "user", f"{name}{i}")

    async def order(**kwargs: object) -> list[str]:
        return [r.session_id for r in await memory.list_sessions(**kwargs)]  # type: ignore[arg-type]

    assert await order(order_by="message_count", order_dir="desc") == ["b", "c", "d", "a"]
    assert await order(order_by="message_count", order_dir="asc") == ["a", "c", "d", "b"]
    assert await order(order_by="session_id", order_dir="asc") == ["a", "b", "c", "d"]
    assert await order(order_by="session_id", order_dir="DESC") == ["d", "c", "b", "a"]
    assert await order(order_by="created_at", order_dir="asc") == ["d", "b", "c", "a"]
    assert await order() == ["a", "c", "b", "d"]  # updated_at desc (default)
    assert await order(order_by="message_count", limit=2) == ["b", "c"]
    assert await order(order_by="message_count", limit=2, offset=2) == ["d", "a"]
    assert await order(order_by="message_count", offset=10) == []


async def test_list_sessions_filters_by_user_identifier(memory: MemoryBackend) -> None:
    await memory.add_message("mine", "user", "x", user_identifier="alice")
    await memory.add_message("theirs", "user", "x", user_identifier="bob")
    assert [r.session_id for r in await memory.list_sessions(user_identifier="alice")] == ["mine"]
    assert len(await memory.list_sessions()) == 2
