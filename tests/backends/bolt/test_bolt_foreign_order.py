"""The order of a conversation another writer (neo4j-agent-memory) appended to: its
messages carry no ``seq``, so the backend reads them in that writer's order, timestamp
then id (MemoryBackend's docstring), for full reads, newest-N reads and ``since``; a
delete there, and our appends after it, keep that order for later reads."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from memory_core import MemoryBackend
from memory_core import requests as rq

from .helpers import Graph, foreign_message

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]
Unique = Callable[[str], str]

T0 = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
# (content, timestamp, id) in the order the other writer created the nodes: equal
# timestamps whose ids run against creation order, so neither creation order nor the
# timestamp alone gives the documented order.
WRITTEN = [
    ("c", T0 + timedelta(seconds=1), UUID(int=3)),
    ("b", T0 + timedelta(seconds=1), UUID(int=2)),
    ("z", T0 + timedelta(seconds=2), UUID(int=1)),
    ("a", T0, UUID(int=9)),
    ("d", T0 + timedelta(seconds=1), UUID(int=4)),
]
DOCUMENTED = ["a", "b", "c", "d", "z"]  # (timestamp, then id)


def _foreign_conversation(graph: Graph, session: str) -> UUID:
    """A conversation as the reference writes it (no ``next_seq``, no ``message_count``)
    holding :data:`WRITTEN`, with fresh ids of the same relative order."""
    cid = UUID(int=int(session.rsplit("-", 1)[-1], 16))
    graph(
        "CREATE (:Conversation {id: $cid, session_id: $s, created_at: datetime($t), "
        "updated_at: datetime($t)})",
        cid=str(cid),
        s=session,
        t=T0.isoformat(),
    )
    prefix = cid.int & ~0xFFFF
    for content, when, order in WRITTEN:
        foreign_message(
            graph, cid, id=str(UUID(int=prefix | order.int)), role="user", content=content
        )
        graph(
            "MATCH (m:Message {content: $content})<-[:HAS_MESSAGE]-(:Conversation {id: $cid}) "
            "SET m.timestamp = datetime($t)",
            content=content,
            cid=str(cid),
            t=when.isoformat(),
        )
    return cid


async def _contents(bolt: MemoryBackend, session: str, **options: object) -> list[str]:
    read = await bolt.get_conversation(session, **options)  # type: ignore[arg-type]
    return [m.content for m in read.messages]


async def test_another_writers_conversation_reads_by_timestamp_then_id(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session = unique("s")
    _foreign_conversation(graph, session)
    assert await _contents(bolt, session) == DOCUMENTED
    assert await _contents(bolt, session, limit=3) == DOCUMENTED[-3:]
    since = await _contents(bolt, session, since=T0 + timedelta(milliseconds=1))
    assert since == DOCUMENTED[1:]
    hits = await bolt.search_messages("a", session_id=session)
    assert all(h.content in DOCUMENTED for h in hits)


async def test_deletes_and_appends_keep_another_writers_order(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session = unique("s")
    _foreign_conversation(graph, session)
    by_content = {m.content: m for m in (await bolt.get_conversation(session)).messages}
    assert await bolt.delete_message(by_content["c"].id) is True
    assert await _contents(bolt, session) == ["a", "b", "d", "z"]
    await bolt.add_message(session, "user", "ours 1")
    await bolt.add_message(session, "user", "ours 2")
    expected = ["a", "b", "d", "z", "ours 1", "ours 2"]
    assert await _contents(bolt, session) == expected
    assert await _contents(bolt, session, limit=4) == expected[-4:]
    assert await bolt.delete_message(by_content["b"].id) is True
    expected.remove("b")
    assert await _contents(bolt, session) == expected
    assert await _contents(bolt, session, limit=2) == expected[-2:]


async def test_a_second_backend_object_reads_the_same_order(
    bolt: MemoryBackend, open_bolt: Callable[..., MemoryBackend], graph: Graph, unique: Unique
) -> None:
    session = unique("s")
    _foreign_conversation(graph, session)
    async with open_bolt() as other:
        await other.add_message(session, "user", "from another process")
        await bolt.add_message(session, "user", "from this one")
        for reader in (bolt, other):
            read = await _contents(reader, session)
            assert read == [*DOCUMENTED, "from another process", "from this one"]


async def _around(bolt: MemoryBackend, ids: list[UUID], count: int) -> list[list[str]]:
    req = rq.MessageNeighbours(message_ids=tuple(ids), count=count, scope=rq.UNSCOPED)
    return [[m.content for m in window] for window in await bolt.store.message_neighbours(req)]


async def test_neighbours_in_another_writers_conversation_follow_the_read_order(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session = unique("s")
    _foreign_conversation(graph, session)
    by_content = {m.content: m.id for m in (await bolt.get_conversation(session)).messages}
    ids = [by_content[c] for c in ("c", "a", "z")]
    assert await _around(bolt, ids, 1) == [["b", "c", "d"], ["a", "b"], ["d", "z"]]
    assert await _around(bolt, [by_content["c"]], 5) == [DOCUMENTED]
    await bolt.add_message(session, "user", "ours")  # ours now, in the same order
    assert await _around(bolt, [by_content["z"]], 1) == [["d", "z", "ours"]]
    assert await _around(bolt, [UUID(int=7)], 1) == [[]], "an unknown id has a window"
