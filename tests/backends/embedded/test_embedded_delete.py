"""delete_message and clear_session on the embedded backend."""

from __future__ import annotations

from uuid import uuid4

import pytest
from embedded_support import (  # noqa: F401
    count_rows,
    fts_integrity,
    memory_fixture,
    snapshot,
    tenants_fixture,
)

from memory_core import MemoryBackend
from memory_core.backends.embedded.conversations import session_uuid

pytestmark = pytest.mark.anyio


async def _five(memory: MemoryBackend, session: str = "s") -> list[str]:
    stored = [await memory.add_message(session, "user", f"word{i} common") for i in range(5)]
    return [str(m.id) for m in stored]


async def _contents(memory: MemoryBackend, session: str = "s") -> list[str]:
    return [m.content for m in (await memory.get_conversation(session)).messages]


@pytest.mark.parametrize(
    ("index", "left"), [(0, [1, 2, 3, 4]), (2, [0, 1, 3, 4]), (4, [0, 1, 2, 3])]
)
async def test_delete_first_middle_last_keeps_order(
    memory: MemoryBackend, index: int, left: list[int]
) -> None:
    ids = await _five(memory)
    assert await memory.delete_message(ids[index]) is True
    assert await _contents(memory) == [f"word{i} common" for i in left]
    assert await memory.search_messages(f"word{index}") == []
    assert len(await memory.search_messages("common")) == 4
    await fts_integrity(memory)
    await memory.add_message("s", "user", "after delete")
    assert (await _contents(memory))[-1] == "after delete"


async def test_delete_all_then_write_again(memory: MemoryBackend) -> None:
    ids = await _five(memory)
    for message_id in reversed(ids):
        assert await memory.delete_message(message_id) is True
    assert await _contents(memory) == []
    assert await count_rows(memory, "messages") == 0
    await fts_integrity(memory)
    await memory.add_message("s", "user", "again")
    assert await _contents(memory) == ["again"]


async def test_delete_twice_and_unknown_ids_are_false(memory: MemoryBackend) -> None:
    ids = await _five(memory)
    assert await memory.delete_message(ids[1]) is True
    before = await snapshot(memory)
    assert await memory.delete_message(ids[1]) is False
    assert await memory.delete_message(uuid4()) is False
    assert await memory.delete_message(str(uuid4())) is False
    assert await memory.delete_message("nope") is False
    assert await snapshot(memory) == before


async def test_delete_accepts_uuid_objects_and_cascade_false(memory: MemoryBackend) -> None:
    entity = await memory.add_entity("Ada", "person")
    message = await memory.add_message(
        "s", "user", "about Ada", extraction_mode="explicit", explicit_mentions=[{"id": entity.id}]
    )
    assert await count_rows(memory, "mentions") == 1
    # Mentions always go with their message (cascade only matters on graph stores).
    assert await memory.delete_message(message.id, cascade=False) is True
    assert await count_rows(memory, "mentions") == 0
    assert await memory.find_entities("Ada") == [entity]


async def test_delete_with_cascade_removes_mentions_keeps_entities(
    memory: MemoryBackend,
) -> None:
    first = await memory.add_message(
        "s",
        "user",
        "Ada and Bob",
        extraction_mode="explicit",
        explicit_mentions=[{"name": "Ada", "type": "person"}, {"name": "Bob", "type": "person"}],
    )
    second = await memory.add_message(
        "s", "user", "Ada again", extraction_mode="explicit", explicit_mentions=["Ada"]
    )
    assert await memory.delete_message(first.id) is True
    assert await count_rows(memory, "mentions") == 1
    assert await count_rows(memory, "entities") == 2
    (kept,) = (await memory.get_conversation("s")).messages
    assert kept.id == second.id
    assert [ref.name for ref in kept.mentions] == ["Ada"]


async def test_delete_of_another_tenants_message_is_false(tenants: MemoryBackend) -> None:
    message = await tenants.add_message("s", "user", "alice's", user_identifier="alice")
    before = await snapshot(tenants)
    assert await tenants.delete_message(message.id, user_identifier="bob") is False
    assert await snapshot(tenants) == before
    assert await tenants.delete_message(message.id, user_identifier="alice") is True


async def test_list_sessions_counts_after_delete(memory: MemoryBackend) -> None:
    ids = await _five(memory)
    await memory.delete_message(ids[0])
    await memory.delete_message(ids[4])
    (info,) = await memory.list_sessions()
    assert info.message_count == 3
    assert info.first_message_preview == "word1 common"
    assert info.last_message_preview == "word3 common"


async def test_clear_session_is_idempotent_and_isolating(memory: MemoryBackend) -> None:
    await _five(memory, "a")
    await _five(memory, "b")
    entity = await memory.add_entity("Kept", "concept")
    await memory.add_message(
        "a", "user", "mention", extraction_mode="explicit", explicit_mentions=[{"id": entity.id}]
    )
    assert await memory.clear_session("a") is True
    assert await memory.clear_session("a") is False
    assert await memory.clear_session("never-existed") is False
    assert await _contents(memory, "a") == []
    assert len(await _contents(memory, "b")) == 5
    assert await count_rows(memory, "mentions") == 0
    assert await memory.find_entities("Kept") == [entity]
    assert all(h.session_id == "b" for h in await memory.search_messages("common"))
    assert [s.session_id for s in await memory.list_sessions()] == ["b"]
    await fts_integrity(memory)


async def test_session_accepts_messages_after_clear(memory: MemoryBackend) -> None:
    await _five(memory)
    await memory.clear_session("s")
    message = await memory.add_message("s", "user", "fresh start", idempotency_key="k0")
    assert message.conversation_id == session_uuid(None, "s")
    assert await _contents(memory) == ["fresh start"]
    assert [h.content for h in await memory.search_messages("fresh")] == ["fresh start"]


async def test_clear_by_conversation_id_and_empty_conversation(memory: MemoryBackend) -> None:
    created = await memory.create_conversation("empty")
    assert await memory.clear_session(conversation_id=created.id) is True
    assert await count_rows(memory, "conversations") == 0
    assert await memory.clear_session(conversation_id=created.id) is False


async def test_clear_is_scoped_to_the_tenant(tenants: MemoryBackend) -> None:
    await tenants.add_message("s", "user", "alice", user_identifier="alice")
    await tenants.add_message("s", "user", "bob", user_identifier="bob")
    assert await tenants.clear_session("s", user_identifier="bob") is True
    kept = await tenants.get_conversation("s", user_identifier="alice")
    assert [m.content for m in kept.messages] == ["alice"]
