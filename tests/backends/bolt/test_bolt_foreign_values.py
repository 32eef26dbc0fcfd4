"""Values another writer left in the graph that memory-core itself never writes: read as
documented, and never a crash of a read or a search that reaches them."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import pytest

from memory_core import MemoryBackend

from .helpers import Graph, mentioning

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]
Unique = Callable[[str], str]


def add_list_message(
    graph: Graph, conversation_id: UUID, content: list[str], later: str = "PT0S"
) -> None:
    """Another writer's message in a conversation, its content a list of strings (which
    the full-text index takes), stamped now plus the ISO duration ``later``."""
    graph(
        "MATCH (c:Conversation {id: $cid}) "
        "CREATE (c)-[:HAS_MESSAGE]->(:Message {id: $mid, role: 'user', content: $content, "
        "conversation_id: $cid, timestamp: datetime() + duration($later)})",
        cid=str(conversation_id),
        mid=str(uuid4()),
        content=content,
        later=later,
    )


async def test_an_entitys_confidence_is_read_and_a_missing_name_is_empty(
    bolt: MemoryBackend, graph: Graph
) -> None:
    scored, nameless = str(uuid4()), str(uuid4())
    graph(
        "CREATE (:Entity {id: $a, name: 'Foreign Corp', type: 'ORGANIZATION', confidence: 0.75}),"
        " (:Entity {id: $b, type: 'PERSON', confidence: 'high'})",
        a=scored,
        b=nameless,
    )
    [found] = await bolt.find_entities(scored)
    assert (found.name, found.type, found.confidence) == ("Foreign Corp", "ORGANIZATION", 0.75)
    [found] = await bolt.find_entities(nameless)
    assert (found.name, found.type, found.confidence) == ("", "PERSON", None)


@pytest.mark.usefixtures("new_york")
async def test_a_time_stored_with_an_offset_is_read_in_utc_whatever_the_local_zone(
    bolt: MemoryBackend, graph: Graph
) -> None:
    eid = str(uuid4())
    graph(
        "CREATE (:Entity {id: $id, name: 'Offset Corp', type: 'ORGANIZATION', "
        "created_at: datetime('2025-01-01T12:00:00+02:00'), "
        "updated_at: datetime('2025-01-02T12:00:00-03:00')})",
        id=eid,
    )
    [found] = await bolt.find_entities(eid)
    assert found.created_at == datetime(2025, 1, 1, 10, tzinfo=UTC)
    assert found.updated_at == datetime(2025, 1, 2, 15, tzinfo=UTC)
    assert found.created_at.utcoffset() == found.updated_at.utcoffset() == timedelta(0)


async def test_a_message_whose_content_is_a_list_does_not_break_a_search(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    """The full-text index takes a list of strings as content: a search reaches such a
    message (another writer's), and scores it 0 instead of failing on it."""
    session, term = unique("s"), f"lupin{uuid4().hex[:10]}"
    ours = await bolt.add_message(session, "user", f"plain {term}")
    add_list_message(graph, ours.conversation_id, [term, "x"])
    reached = graph(
        "CALL db.index.fulltext.queryNodes('memory_core_message_search', $q) "
        "YIELD node RETURN count(node) AS n",
        q=f'content:"{term}"',
    )
    assert reached == [{"n": 2}], "control: the index holds the list content"
    for scope in ({"session_id": session}, {}):
        hits = await bolt.search_messages(term, **scope)
        assert [h.id for h in hits] == [ours.id], scope


async def test_a_message_whose_content_is_not_text_has_no_preview_in_list_sessions(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    """One such message (another writer's) failed the whole listing with a raw
    validation error, for every session in scope."""
    session, other = unique("s"), unique("s")
    ours = await bolt.add_message(session, "user", "first")
    await bolt.add_message(other, "user", "untouched")
    add_list_message(graph, ours.conversation_id, ["a", "b"], later="PT1H")
    rows = {r.session_id: r for r in await bolt.list_sessions(limit=10_000)}
    foreign = rows[session]
    assert (foreign.message_count, foreign.first_message_preview) == (2, "first")
    assert foreign.last_message_preview is None
    assert rows[other].last_message_preview == "untouched"


async def test_a_first_message_whose_content_is_not_text_has_no_preview_and_is_counted(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    """The same for the first message (the other writer's is an hour older than ours),
    and in a listing filtered to the session (on a shared store: only its own rows)."""
    session = unique("s")
    ours = await bolt.add_message(session, "user", "last")
    add_list_message(graph, ours.conversation_id, ["a", "b"], later="-PT1H")
    [row] = await bolt.list_sessions(prefix=session)
    assert (row.message_count, row.first_message_preview, row.last_message_preview) == (
        2,
        None,
        "last",
    )


async def test_a_filtered_text_search_asks_the_index_for_more(
    bolt: MemoryBackend, unique: Unique
) -> None:
    """Over 200 stronger matches fail the filter: the index's first answer holds no
    candidate, so it is asked for more (k grows) until the weak match is among them."""
    session, term = unique("s"), f"orchid{uuid4().hex[:10]}"  # in no other test's store
    strong = [
        {"role": "user", "content": f"{term} {term} {term}", "metadata": {"keep": False}}
        for _ in range(230)
    ]
    await bolt.add_messages_batch(session, strong)
    wanted = await bolt.add_message(
        session,
        "user",
        f"{term} among many other longer words that weaken this match a great deal",
        metadata={"keep": True},
    )
    for scope in ({"session_id": session}, {}):
        hits = await bolt.search_messages(term, metadata_filters={"keep": True}, **scope)
        assert [h.id for h in hits] == [wanted.id], scope


async def test_links_another_writer_made_come_after_ours_by_name_then_id(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session = unique("s")
    zeta, ours = await mentioning(bolt, session, unique("Zeta"), "ORGANIZATION")
    # Two of the other writer's entities share a name (ignoring case): the one without an
    # id comes first; an id starting with a digit shows an order that is not the id's alone.
    numbered, beta = f"0{uuid4().hex}", f"b{uuid4().hex}"
    graph(
        "MATCH (m:Message {id: $mid}) "
        "CREATE (m)-[:MENTIONS]->(:Entity {id: $beta, name: 'Beta', type: 'OBJECT'}), "
        "(m)-[:MENTIONS]->(:Entity {id: $numbered, name: 'Acme', type: 'OBJECT'}), "
        "(m)-[:MENTIONS]->(:Entity {name: 'acme', type: 'OBJECT'})",
        mid=str(ours.id),
        beta=beta,
        numbered=numbered,
    )
    [read] = (await bolt.get_conversation(session)).messages
    assert [(ref.id, ref.name) for ref in read.mentions] == [
        (zeta.id, zeta.name),
        (None, "acme"),
        (numbered, "Acme"),
        (beta, "Beta"),
    ]
