"""The shape of the fast paths: the batch result built from the input equals a read,
and the early-stopping text search returns exactly what scoring every hit would."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from backends.bolt import BoltBackend
from backends.bolt.schema import FULLTEXT_INDEX
from backends.bolt.scoring import lucene_query
from memory_core import EntityRef, MessageRole
from memory_core import requests as rq
from memory_core.scoring import query_terms, text_score

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

Graph = Callable[..., list[dict[str, Any]]]


async def test_batch_result_equals_what_a_read_returns(
    bolt: BoltBackend, unique: Callable[[str], str]
) -> None:
    session = unique("s")
    await bolt.add_message(session, "user", "before the batch")
    given = datetime(2024, 5, 1, 12, 0, tzinfo=UTC) + timedelta(microseconds=7)
    stored = await bolt.add_messages_batch(
        session,
        [
            {"role": "user", "content": "one", "metadata": {"k": [1, {"x": True}]}},
            {"role": "assistant", "content": "two", "timestamp": given},
            {"role": "user", "content": "three"},
        ],
    )
    read = (await bolt.get_conversation(session)).messages[1:]
    assert stored == read
    assert stored[1].created_at == given
    assert stored[0].created_at < stored[2].created_at


async def test_batch_result_carries_the_mentions_it_linked(
    bolt: BoltBackend, unique: Callable[[str], str]
) -> None:
    session = unique("s")
    name = unique("entity")
    known = await bolt.add_entity(unique("known"), "ORGANIZATION")
    target = rq.Target(session_id=session, conversation_id=None)
    items = [
        rq.NewMessage(role=MessageRole.USER, content="no mention", metadata={}, timestamp=None),
        rq.NewMessage(
            role=MessageRole.USER,
            content="two mentions",
            metadata={},
            timestamp=None,
            mentions=[EntityRef(name=name, type="PERSON"), EntityRef(id=known.id)],
        ),
    ]
    await bolt._ready()
    stored = await bolt._add_messages(rq.AddMessages(target=target, messages=items))
    read = (await bolt.get_conversation(session)).messages
    assert stored == read
    assert stored[0].mentions == []
    assert sorted(m.name or "" for m in stored[1].mentions) == sorted([name, known.name])


async def test_text_search_equals_scoring_every_hit(
    bolt: BoltBackend, unique: Callable[[str], str], graph: Graph
) -> None:
    """Lucene's order differs from the shared scale's (coverage weighs in), and the stream
    stops early: the top hits must still be exactly those of the full ranking."""
    session = unique("s")
    rows = []
    for i in range(120):
        words = ["alpha"] * (1 + i % 5)
        if i % 7 == 0:
            words.append("beta")
        if i % 11 == 0:
            words.append("gamma")
        rows.append({"role": "user", "content": " ".join(words) + f" filler {i}"})
    await bolt.add_messages_batch(session, rows)
    query = "alpha beta gamma"
    for limit, threshold in [(1, None), (5, None), (17, None), (200, None), (10, 0.4)]:
        found = await bolt.search_messages(
            query, session_id=session, limit=limit, threshold=threshold
        )
        expected = _reference(graph, session, query, limit, threshold)
        assert [round(m.score or 0, 12) for m in found] == [round(s, 12) for s, _ in expected]
        # Equal scores may come in any order; the set of contents per score must agree.
        assert sorted((round(m.score or 0, 12), m.content) for m in found) == sorted(
            (round(s, 12), c) for s, c in expected
        ) or _ties_only(found, expected)


def _ties_only(found: list[Any], expected: list[tuple[float, str]]) -> bool:
    """True when the two lists differ only in which of equally scored hits made the cut
    at the last score."""
    last = round(expected[-1][0], 12)
    head = [(round(s, 12), c) for s, c in expected if round(s, 12) != last]
    mine = [(round(m.score or 0, 12), m.content) for m in found if round(m.score or 0, 12) != last]
    return sorted(head) == sorted(mine)


def _reference(
    graph: Graph, session: str, query: str, limit: int, threshold: float | None
) -> list[tuple[float, str]]:
    """Every text hit of the session scored in Python, best first (the old algorithm)."""
    hits = graph(
        "CALL db.index.fulltext.queryNodes($index, $lucene) YIELD node AS m, score "
        "MATCH (c:Conversation {session_id: $s})-[:HAS_MESSAGE]->(m) "
        "RETURN m.content AS content, score",
        index=FULLTEXT_INDEX,
        lucene=lucene_query(query),
        s=session,
    )
    terms = query_terms(query)
    scored = [(text_score(terms, h["content"], float(h["score"])), h["content"]) for h in hits]
    if threshold is not None:
        scored = [hit for hit in scored if hit[0] >= threshold]
    scored.sort(key=lambda hit: -hit[0])
    return scored[:limit]
