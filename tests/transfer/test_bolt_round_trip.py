"""embedded → Bolt → embedded reproduces every record exactly (real Neo4j)."""

from __future__ import annotations

import pytest

from memory_core import HashingEmbedder, open_backend
from memory_core.backends.bolt import transfer as bolt_transfer
from memory_core.transfer import copy_memory
from tests.transfer.sample import MENTIONS, MESSAGES, export_lines, of_kind, populate

pytestmark = pytest.mark.anyio


async def test_embedded_to_bolt_to_embedded_is_exact(bolt_url: str) -> None:
    async with (
        open_backend("memory://", embedder=HashingEmbedder(dimensions=8)) as source,
        open_backend(bolt_url) as bolt,
        open_backend("memory://") as back,
    ):
        await populate(source)
        first = await export_lines(source)
        there = await copy_memory(source, bolt)
        assert there.copied["message"] == MESSAGES
        assert there.copied["mention"] == MENTIONS
        assert not there.not_carried
        in_bolt = await export_lines(bolt)
        assert in_bolt == first
        home = await copy_memory(bolt, back)
        assert home.copied["message"] == MESSAGES
        assert await export_lines(back) == first
        # The Bolt copy is a normal store: reads, appends and idempotent replays work.
        conversation = await bolt.get_conversation("chat-1")
        assert [m.content for m in conversation.messages][:1] == ["You are helpful."]
        assert conversation.title == "Trip planning"
        key = of_kind(first, "message")[3]["idempotency_key"]
        replay = await bolt.add_message("chat-1", "user", "again", idempotency_key=key)
        assert str(replay.id) == of_kind(first, "message")[3]["id"]
        added = await bolt.add_message("chat-1", "user", "after the import")
        assert (await bolt.get_conversation("chat-1")).messages[-1].id == added.id
        again = await copy_memory(source, bolt)
        assert again.copied["message"] == 0


async def test_multi_tenant_round_trip_through_bolt(bolt_url: str) -> None:
    async with (
        open_backend("memory://", multi_tenant=True) as source,
        open_backend(bolt_url, multi_tenant=True) as bolt,
        open_backend("memory://", multi_tenant=True) as back,
    ):
        await populate(source, "alice")
        await populate(source, "bob")
        first = await export_lines(source)
        await copy_memory(source, bolt)
        assert await export_lines(bolt) == first
        await copy_memory(bolt, back)
        assert await export_lines(back) == first
        # Each user's data stays that user's.
        alice = await bolt.list_sessions(user_identifier="alice")
        assert {s.session_id for s in alice} == {"chat-1", "chat-2"}
        found = await bolt.find_entities("Lisbon", user_identifier="bob")
        assert len(found) == 1
        bob_ids = {e["id"] for e in of_kind(first, "entity") if e["user_identifier"] == "bob"}
        assert found[0].id in bob_ids


async def test_an_export_read_in_small_pages_is_the_same(
    bolt_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        open_backend("memory://", embedder=HashingEmbedder(dimensions=8)) as source,
        open_backend(bolt_url) as bolt,
    ):
        await populate(source)
        first = await export_lines(source)
        await copy_memory(source, bolt)
        monkeypatch.setattr(bolt_transfer, "PAGE", 1)  # conversations and messages
        assert len(of_kind(first, "conversation")) > 1
        assert max(m["seq"] for m in of_kind(first, "message")) > 1
        assert await export_lines(bolt) == first


async def test_overwrite_on_bolt_replaces_a_changed_conversation(bolt_url: str) -> None:
    async with open_backend("memory://") as source, open_backend(bolt_url) as bolt:
        await populate(source)
        first = await export_lines(source)
        await copy_memory(source, bolt)
        await bolt.add_message("chat-2", "user", "only in bolt")
        await copy_memory(source, bolt, on_conflict="overwrite")
        assert await export_lines(bolt) == first


@pytest.mark.parametrize("page", [None, 2], ids=["one-page", "pages-of-2"])
async def test_a_conversation_another_library_wrote_is_exported_in_its_order(
    bolt_url: str, page: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from uuid import uuid4

    from neo4j import GraphDatabase

    if page is not None:
        monkeypatch.setattr(bolt_transfer, "PAGE", page)

    conversation_id = str(uuid4())
    with GraphDatabase.driver(bolt_url) as driver:
        driver.execute_query(
            """
            CREATE (c:Conversation {id: $cid, session_id: 'foreign', title: 'theirs',
                                    created_at: datetime('2025-01-01T00:00:00Z')})
            WITH c
            UNWIND range(0, 2) AS i
            CREATE (c)-[:HAS_MESSAGE]->(:Message {
                id: randomUUID(), role: 'user', content: 'written ' + toString(2 - i),
                mentions: ['a label of theirs'],
                timestamp: datetime('2025-01-01T00:00:00Z') + duration({seconds: 2 - i})
            })
            """,
            cid=conversation_id,
        )
    async with open_backend(bolt_url) as bolt, open_backend("memory://") as back:
        lines = await export_lines(bolt)
        messages = of_kind(lines, "message")
        assert [m["content"] for m in messages] == ["written 0", "written 1", "written 2"]
        assert [m["seq"] for m in messages] == [1, 2, 3]
        await copy_memory(bolt, back)
        conversation = await back.get_conversation("foreign")
        assert [m.content for m in conversation.messages] == ["written 0", "written 1", "written 2"]
        assert conversation.title == "theirs"
