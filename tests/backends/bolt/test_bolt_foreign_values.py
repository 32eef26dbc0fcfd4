"""Values another writer left in the graph that memory-core itself never writes: read as
documented, and never a crash of a read or a search that reaches them."""

from __future__ import annotations

from collections.abc import Callable
from uuid import uuid4

import pytest

from memory_core.backends.bolt import BoltBackend

from .helpers import Graph

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]
Unique = Callable[[str], str]


async def test_an_entitys_confidence_is_read_and_a_missing_name_is_empty(
    bolt: BoltBackend, graph: Graph
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


async def test_a_message_without_text_content_does_not_break_a_search(
    bolt: BoltBackend, graph: Graph, unique: Unique
) -> None:
    """The full-text index also holds ``conversation_id``: a search for a word of it
    reaches a message whose ``content`` is not text (another writer's), which scores 0."""
    session = unique("s")
    ours = await bolt.add_message(session, "user", "plain words")
    cid = str(ours.conversation_id)
    graph(
        "MATCH (c:Conversation {id: $cid}) "
        "CREATE (c)-[:HAS_MESSAGE]->(:Message {id: $mid, role: 'user', content: 42, "
        "conversation_id: $cid, timestamp: datetime()})",
        cid=cid,
        mid=str(uuid4()),
    )
    word = cid.split("-")[-1]
    assert await bolt.search_messages(word, session_id=session) == []
    assert await bolt.search_messages(word) == []
    hits = await bolt.search_messages("plain", session_id=session)
    assert [h.id for h in hits] == [ours.id]


async def test_a_filtered_text_search_asks_the_index_for_more(
    bolt: BoltBackend, unique: Unique
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
