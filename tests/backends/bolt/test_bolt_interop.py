"""Interoperability with neo4j-agent-memory 0.8.0 (the reference) on one Neo4j, both ways.

The reference is used through its own ShortTermMemory API with no embedder, extractor or
LLM (extraction is off). Its schema set-up runs first, so the two libraries' constraints
and indexes also have to coexist.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory_core import MemoryBackend
from memory_core_dev.foreign_data import reference_client
from memory_core_dev.neo4j_fixtures import Neo4jHandle

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the reference warns about neo4j preview features
    from neo4j_agent_memory.memory.short_term import ShortTermMemory

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

METADATA: list[dict[str, Any]] = [
    {"source": "cli", "n": 1, "flag": True, "nested": {"list": [1, 2.5, None], "s": "é"}},
    {"turn": 2, "flag": False},
    {},
    {"emoji": "👩‍👩‍👧", "big": 12345678901234},
]
CONTENTS = ["Hello, I'm Ada.", "Hi Ada! 👋\nHow can I help?", "", 'line\twith "quotes" \\ ok']
ROLES = ["user", "assistant", "system", "tool"]


@pytest.fixture
async def reference(neo4j_server: Neo4jHandle) -> AsyncIterator[ShortTermMemory]:
    """The reference library's short-term memory on the test server (no extraction)."""
    async with reference_client(neo4j_server.uri, neo4j_server.auth) as client:
        yield ShortTermMemory(client)


def _shape(messages: list[Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(str(getattr(m.role, "value", m.role)), m.content, m.metadata) for m in messages]


EXPECTED: list[tuple[str, str, dict[str, Any]]] = list(zip(ROLES, CONTENTS, METADATA, strict=True))


async def test_reference_conversation_reads_back_through_bolt(
    reference: ShortTermMemory, bolt: MemoryBackend, unique: Callable[[str], str]
) -> None:
    session = unique("ref")
    for role, content, metadata in EXPECTED:
        await reference.add_message(session, role, content, metadata=metadata)
    await reference.add_messages_batch(
        session,
        [
            {"role": "user", "content": "batched one"},
            {"role": "assistant", "content": "batched two", "metadata": {"k": 1}},
        ],
        generate_embeddings=False,
    )
    theirs = await reference.get_conversation(session)

    ours = await bolt.get_conversation(session)
    assert ours.id == theirs.id
    assert _shape(ours.messages) == _shape(theirs.messages)
    assert _shape(ours.messages)[:4] == EXPECTED
    assert [m.id for m in ours.messages] == [m.id for m in theirs.messages]
    newest = await bolt.get_conversation(session, limit=2)
    assert [m.content for m in newest.messages] == ["batched one", "batched two"]

    # We append to their conversation; both libraries read the same order.
    await bolt.add_message(session, "assistant", "appended by memory-core", metadata={"x": 1})
    await reference.add_message(session, "user", "appended by the reference")
    ours = await bolt.get_conversation(session)
    theirs = await reference.get_conversation(session)
    assert _shape(ours.messages) == _shape(theirs.messages)
    assert [m.content for m in ours.messages][-2:] == [
        "appended by memory-core",
        "appended by the reference",
    ]
    assert [m.content for m in (await bolt.get_conversation(session, limit=3)).messages] == [
        "batched two",
        "appended by memory-core",
        "appended by the reference",
    ]
    since = ours.messages[-3].created_at
    after = await bolt.get_conversation(session, since=since)
    assert [m.content for m in after.messages] == [m.content for m in ours.messages[-2:]]


async def test_bolt_conversation_reads_back_through_reference(
    reference: ShortTermMemory, bolt: MemoryBackend, unique: Callable[[str], str]
) -> None:
    session = unique("ours")
    for role, content, metadata in EXPECTED:
        await bolt.add_message(session, role, content, metadata=metadata)
    await bolt.add_messages_batch(
        session,
        [
            {"role": "user", "content": "batch a"},
            {"role": "assistant", "content": "batch b", "metadata": {"deep": {"a": [True]}}},
        ],
    )
    ours = await bolt.get_conversation(session)
    theirs = await reference.get_conversation(session)

    assert theirs.id == ours.id
    assert _shape(theirs.messages) == _shape(ours.messages)
    assert _shape(theirs.messages)[:4] == EXPECTED
    assert [m.id for m in theirs.messages] == [m.id for m in ours.messages]
    # Their listing sees our session with the right count and previews.
    rows = [s for s in await reference.list_sessions(prefix=session) if s.session_id == session]
    assert [(r.message_count, r.first_message_preview) for r in rows] == [(6, CONTENTS[0])]


async def test_caller_timestamps_read_back_through_reference(
    reference: ShortTermMemory, bolt: MemoryBackend, unique: Callable[[str], str]
) -> None:
    session = unique("stamped")
    stamp = datetime(2001, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    [stored] = await bolt.add_messages_batch(
        session, [{"role": "user", "content": "old", "timestamp": stamp}]
    )
    assert stored.created_at == stamp
    [read] = (await reference.get_conversation(session)).messages
    assert (read.id, read.created_at) == (stored.id, stamp)


async def test_timestamps_are_stored_as_neo4j_datetimes(
    reference: ShortTermMemory, bolt: MemoryBackend, unique: Callable[[str], str]
) -> None:
    ours, theirs = unique("ours"), unique("theirs")
    await bolt.add_message(ours, "user", "mine")
    await reference.add_message(theirs, "user", "theirs")
    rows = await reference._client.execute_read(
        "MATCH (c:Conversation)-[:HAS_MESSAGE]->(m:Message) WHERE c.session_id IN $s "
        "RETURN c.session_id AS s, valueType(m.timestamp) AS message, "
        "valueType(c.created_at) AS created, valueType(c.updated_at) AS updated, "
        "valueType(m.metadata) AS metadata",
        {"s": [ours, theirs]},
    )
    kinds = {row["s"]: (row["message"], row["created"], row["updated"]) for row in rows}
    assert kinds[ours] == kinds[theirs] == ("ZONED DATETIME NOT NULL",) * 3


async def test_reference_user_link_is_a_tenant(
    reference: ShortTermMemory,
    open_bolt: Callable[..., MemoryBackend],
    unique: Callable[[str], str],
) -> None:
    session, alice, bob = unique("s"), unique("alice"), unique("bob")
    await reference.add_message(session, "user", "alice wrote this", user_identifier=alice)
    async with open_bolt(multi_tenant=True) as tenants:
        mine = await tenants.get_conversation(session, user_identifier=alice)
        assert [m.content for m in mine.messages] == ["alice wrote this"]
        other = await tenants.get_conversation(session, user_identifier=bob)
        assert other.messages == []
        assert other.id != mine.id


async def test_reference_created_at_is_recent(
    reference: ShortTermMemory, bolt: MemoryBackend, unique: Callable[[str], str]
) -> None:
    """Our stored timestamps are real UTC instants the reference reads back unchanged."""
    session = unique("s")
    before = datetime.now(UTC)
    stored = await bolt.add_message(session, "user", "now")
    [read] = (await reference.get_conversation(session)).messages
    assert read.created_at == stored.created_at
    assert before - timedelta(seconds=5) <= read.created_at <= datetime.now(UTC)
