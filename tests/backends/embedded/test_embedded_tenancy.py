"""multi_tenant=True: data written as one user is invisible to every read as another."""

from __future__ import annotations

from typing import Any

import pytest
from embedded_support import snapshot, tenants_fixture  # noqa: F401

from memory_core import MemoryBackend, NotFoundError, open_backend
from memory_core.backends.embedded.conversations import session_uuid

pytestmark = pytest.mark.anyio


@pytest.fixture
async def alice_wrote(tenants: MemoryBackend) -> MemoryBackend:
    await tenants.add_message("shared-name", "user", "alice secret zebra", user_identifier="alice")
    await tenants.create_conversation("alice-only", title="A", user_identifier="alice")
    await tenants.add_entity("Zebra", "concept", user_identifier="alice")
    return tenants


async def test_same_session_name_is_two_conversations(alice_wrote: MemoryBackend) -> None:
    bob = await alice_wrote.get_conversation("shared-name", user_identifier="bob")
    assert bob.messages == []
    assert bob.id == session_uuid("bob", "shared-name")
    alice = await alice_wrote.get_conversation("shared-name", user_identifier="alice")
    assert alice.id == session_uuid("alice", "shared-name") != bob.id
    assert [m.content for m in alice.messages] == ["alice secret zebra"]
    assert alice.user_identifier == "alice"
    await alice_wrote.add_message("shared-name", "user", "bob's own", user_identifier="bob")
    alice = await alice_wrote.get_conversation("shared-name", user_identifier="alice")
    assert [m.content for m in alice.messages] == ["alice secret zebra"]


async def test_every_read_is_scoped(alice_wrote: MemoryBackend) -> None:
    before = await snapshot(alice_wrote)
    bob: dict[str, Any] = {"user_identifier": "bob"}
    assert await alice_wrote.search_messages("zebra", **bob) == []
    assert await alice_wrote.search_messages("zebra", session_id="shared-name", **bob) == []
    assert await alice_wrote.list_sessions(**bob) == []
    assert await alice_wrote.list_conversations(**bob) == []
    assert await alice_wrote.find_entities("zebra", **bob) == []
    assert await alice_wrote.get_context("zebra", session_id="shared-name", **bob) == ""
    summary = await alice_wrote.get_conversation_summary("shared-name", **bob)
    assert summary.message_count == 0
    alice_cid = session_uuid("alice", "shared-name")
    with pytest.raises(NotFoundError):
        await alice_wrote.get_conversation(conversation_id=alice_cid, **bob)
    with pytest.raises(NotFoundError):
        await alice_wrote.add_message(conversation_id=alice_cid, role="user", content="x", **bob)
    assert await alice_wrote.clear_session(conversation_id=alice_cid, **bob) is False
    assert await alice_wrote.clear_session("alice-only", **bob) is False
    assert await snapshot(alice_wrote) == before
    alice: dict[str, Any] = {"user_identifier": "alice"}
    assert len(await alice_wrote.search_messages("zebra", **alice)) == 1
    assert {s.session_id for s in await alice_wrote.list_sessions(**alice)} == {
        "shared-name",
        "alice-only",
    }
    assert len(await alice_wrote.list_conversations(**alice)) == 2
    assert len(await alice_wrote.find_entities("zebra", **alice)) == 1


async def test_idempotency_keys_are_per_tenant(tenants: MemoryBackend) -> None:
    first = await tenants.add_message("s", "user", "a", idempotency_key="k", user_identifier="a")
    second = await tenants.add_message("s", "user", "b", idempotency_key="k", user_identifier="b")
    assert first.id != second.id
    assert second.content == "b"


async def test_single_tenant_ignores_user_for_scoping() -> None:
    async with open_backend("memory://") as backend:
        await backend.add_message("s", "user", "one", user_identifier="alice")
        await backend.add_message("s", "user", "two", user_identifier="bob")
        conversation = await backend.get_conversation("s")
        assert [m.content for m in conversation.messages] == ["one", "two"]
        assert conversation.user_identifier == "alice"  # the first writer is recorded
