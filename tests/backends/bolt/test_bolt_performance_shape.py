"""The shape of the fast paths: the batch result built from the input equals a read,
and the text search returns exactly what scoring its candidates would."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import pytest

from memory_core import EntityRef, MemoryBackend, MessageRole
from memory_core import requests as rq
from memory_core.backends.bolt.schema import FULLTEXT_INDEX
from memory_core.backends.bolt.scoring import lucene_queries
from memory_core.scoring import candidate_pool, query_terms, text_score

from .helpers import Graph, foreign_message

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]


async def test_batch_result_equals_what_a_read_returns(
    bolt: MemoryBackend, unique: Callable[[str], str]
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
    bolt: MemoryBackend, unique: Callable[[str], str]
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
    stored = await bolt.store.add_messages(rq.AddMessages(target=target, messages=items))
    read = (await bolt.get_conversation(session)).messages
    assert stored == read
    assert stored[0].mentions == []
    assert sorted(m.name or "" for m in stored[1].mentions) == sorted([name, known.name])


async def test_text_search_equals_scoring_every_hit(
    bolt: MemoryBackend, unique: Callable[[str], str], graph: Graph
) -> None:
    """Lucene's order is not the shared scale's: with fewer matches than the candidate
    pool, the hits must be exactly those of scoring every match from its content."""
    session = unique("s")
    rows = []
    for i in range(120):
        words = ["alpha"] * (1 + i % 5) + ["filler"] * (i % 9)
        if i % 7 == 0:
            words.append("beta")
        if i % 11 == 0:
            words.append("gamma")
        rows.append({"role": "user", "content": " ".join(words) + f" n{i}"})
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


async def test_only_lucenes_best_matches_are_scored(
    bolt: MemoryBackend, unique: Callable[[str], str], graph: Graph
) -> None:
    """Beyond the pool, Lucene's rank decides what is considered: the hits are the best,
    on the shared scale, of its best ``candidate_pool(limit)`` matches in the session."""
    session = unique("s")
    rows = [
        {"role": "user", "content": " ".join(["alpha"] * (1 + i % 4) + ["x"] * (i % 13))}
        for i in range(candidate_pool(5) + 60)
    ]
    await bolt.add_messages_batch(session, rows)
    hits = graph(
        "CALL db.index.fulltext.queryNodes($index, $lucene, {limit: $k}) YIELD node AS m "
        "MATCH (c:Conversation {session_id: $s})-[:HAS_MESSAGE]->(m) RETURN m.content AS content",
        index=FULLTEXT_INDEX,
        lucene=lucene_queries("alpha")[0],
        k=10_000,
        s=session,
    )
    pool = [h["content"] for h in hits][: candidate_pool(5)]
    best = sorted((text_score(["alpha"], c) for c in pool), reverse=True)[:5]
    found = await bolt.search_messages("alpha", session_id=session, limit=5)
    assert [round(m.score or 0, 12) for m in found] == [round(s, 12) for s in best]
    assert {m.content for m in found} <= set(pool)


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
    """Every text match of the session scored from its content, best first."""
    hits = graph(
        "CALL db.index.fulltext.queryNodes($index, $lucene) YIELD node AS m "
        "MATCH (c:Conversation {session_id: $s})-[:HAS_MESSAGE]->(m) "
        "RETURN m.content AS content",
        index=FULLTEXT_INDEX,
        lucene=lucene_queries(query)[0],
        s=session,
    )
    terms = query_terms(query)
    scored = [(text_score(terms, h["content"]), h["content"]) for h in hits]
    scored = [hit for hit in scored if hit[0] > 0]
    if threshold is not None:
        scored = [hit for hit in scored if hit[0] >= threshold]
    scored.sort(key=lambda hit: -hit[0])
    return scored[:limit]


Statements = list[tuple[str, dict[str, Any]]]


def _record_scans(monkeypatch: pytest.MonkeyPatch) -> Statements:
    """The text-search statements (and parameters) run from now on, in order."""
    from memory_core.backends.bolt import search as bolt_search

    statements: Statements = []
    candidates = bolt_search._candidates

    async def recording(tx: Any, statement: str, params: dict[str, Any]) -> Any:
        statements.append((statement, params))
        return await candidates(tx, statement, params)

    monkeypatch.setattr(bolt_search, "_candidates", recording)
    return statements


def _profiled_index_rows(server: Any, statements: Statements) -> list[int]:
    """Rows the full-text index yielded to each statement, run again under ``PROFILE``."""
    from neo4j import GraphDatabase

    found = []
    with GraphDatabase.driver(server.uri, auth=server.auth) as driver:
        for statement, params in statements:
            _, summary, _ = driver.execute_query("PROFILE " + statement, params)
            found.append(_index_rows(summary.profile))
    return found


def _index_rows(plan: Any) -> int:
    """Rows the full-text procedure yielded, from a ``PROFILE`` plan tree."""
    rows = plan.get("rows", plan.get("args", {}).get("Rows", 0))
    own = rows if "ProcedureCall" in plan.get("operatorType", "") else 0
    return own + sum(_index_rows(child) for child in plan.get("children", []))


async def test_search_in_one_conversation_reads_only_its_hits(
    bolt: MemoryBackend,
    unique: Callable[[str], str],
    graph: Graph,
    neo4j_server: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A search in one conversation cost as much as every hit in the database (a load
    test's searches scanned all 200 clients' messages): Lucene itself must be asked for
    that conversation's hits only, by session and by conversation id."""
    session = unique("s")
    needle = unique("needle").replace("-", "")  # one word no other test writes
    mine = await bolt.add_messages_batch(
        session, [{"role": "user", "content": f"{needle} {i}"} for i in range(5)]
    )
    for _ in range(3):
        await bolt.add_messages_batch(
            unique("other"), [{"role": "user", "content": f"{needle} other {i}"} for i in range(60)]
        )
    statements = _record_scans(monkeypatch)
    by_session = await bolt.search_messages(needle, session_id=session, limit=3)
    conversation_id = str(mine[0].conversation_id)
    by_id = await bolt.search_messages(needle, conversation_id=conversation_id, limit=3)
    everywhere = await bolt.search_messages(needle, limit=3)
    assert len(by_session) == len(by_id) == len(everywhere) == 3
    assert {m.content for m in by_session} <= {m.content for m in mine}
    assert [m.id for m in by_session] == [m.id for m in by_id]

    index_rows = _profiled_index_rows(neo4j_server, statements)
    assert len(index_rows) == 3
    # PROFILE reads each statement to the end: the first ``k`` (the pool) hits at most.
    assert index_rows[:2] == [5, 5], index_rows  # the conversation's own five
    assert index_rows[2] == 185, index_rows  # across sessions: every match (185 < the pool)


async def test_search_restricted_by_the_ids_last_group_drops_other_conversations_hits(
    bolt: MemoryBackend,
    unique: Callable[[str], str],
    graph: Graph,
    neo4j_server: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lucene is asked for the hits whose ``conversation_id`` holds the id's last twelve hex
    digits: another conversation whose id ends the same way is read too (a third is not),
    but none of its messages is returned, and the scores are the shared scale's."""
    tag = unique("chat").replace("-", "")
    shared = uuid4().hex[:12]
    sessions = []
    for last in (shared, shared, uuid4().hex[:12]):
        sessions.append(unique("s"))
        graph(
            "CREATE (c:Conversation {id: $id, session_id: $session, message_count: 4, "
            "created_at: datetime()}) "
            "WITH c UNWIND range(1, 4) AS i "
            "CREATE (c)-[:HAS_MESSAGE]->(:Message {id: randomUUID(), role: 'user', "
            "content: $tag + reduce(t = '', _ IN range(0, i) | t + ' needle'), "
            "conversation_id: $id, seq: i, timestamp: datetime()})",
            id=str(uuid4())[:24] + last,
            session=sessions[-1],
            tag=tag,
        )
    graph("CALL db.awaitIndexes(30)")
    statements = _record_scans(monkeypatch)
    found = await bolt.search_messages(f"{tag} needle", session_id=sessions[0], limit=10)
    assert [m.session_id for m in found] == [sessions[0]] * 4
    expected = _reference(graph, sessions[0], f"{tag} needle", 10, None)
    assert [m.score for m in found] == [score for score, _ in expected]  # exactly
    assert _profiled_index_rows(neo4j_server, statements) == [8]  # two conversations', not 3


async def test_search_in_one_conversation_finds_other_writers_messages(
    bolt: MemoryBackend, unique: Callable[[str], str], graph: Graph
) -> None:
    """A message another library linked to the conversation without ``conversation_id``
    (the reference writes such) is still found: the conversation's count then disagrees
    and the index is not restricted."""
    session = unique("s")
    [first] = await bolt.add_messages_batch(session, [{"role": "user", "content": "needle one"}])
    foreign_message(
        graph, first.conversation_id, id=str(uuid4()), role="user", content="needle from elsewhere"
    )
    graph("CALL db.awaitIndexes(30)")
    found = await bolt.search_messages("needle", session_id=session, limit=10)
    assert sorted(m.content for m in found) == ["needle from elsewhere", "needle one"]


async def test_the_content_only_index_of_earlier_versions_is_replaced(
    open_bolt: Callable[..., MemoryBackend], graph: Graph
) -> None:
    """A store set up by an earlier version has ``memory_core_message_text``: connecting
    drops it (it would cost every write an index update for nothing) and searches use the
    index that also holds ``conversation_id``."""
    graph(
        "CREATE FULLTEXT INDEX memory_core_message_text IF NOT EXISTS "
        "FOR (n:Message) ON EACH [n.content]"
    )
    async with open_bolt() as backend:
        await backend.search_messages("anything", limit=1)
    [row] = graph(
        "SHOW FULLTEXT INDEXES YIELD name, properties RETURN collect([name, properties]) AS i"
    )
    indexes = {name: props for name, props in row["i"]}
    assert "memory_core_message_text" not in indexes
    assert indexes[FULLTEXT_INDEX] == ["content", "conversation_id"]


async def test_rows_are_plain_dicts_and_graph_values_still_convert(
    bolt: MemoryBackend, unique: Callable[[str], str], graph: Graph
) -> None:
    """Records become dicts without ``Record.data()``'s walk over nested values; a record
    carrying a node at the top still gets its properties as a dict, as before."""
    tag = unique("probe")
    graph("CREATE (:Probe {tag: $tag, n: 1})", tag=tag)
    nested = {"a": [1, {"b": [True, None, "x"]}], "c": {"d": 2.5}}
    found = await bolt.store._conn.run_read(
        "MATCH (p:Probe {tag: $tag}) RETURN $nested AS nested, [1, 2] AS list, 'x' AS s, "
        "p {.*} AS projected",
        tag=tag,
        nested=nested,
    )
    assert found == [
        {"nested": nested, "list": [1, 2], "s": "x", "projected": {"tag": tag, "n": 1}}
    ]
    assert all(type(row) is dict for row in found)
    [row] = await bolt.store._conn.run_read("MATCH (p:Probe {tag: $tag}) RETURN p, 3 AS n", tag=tag)
    assert row == {"p": {"tag": tag, "n": 1}, "n": 3}
    graph("MATCH (p:Probe {tag: $tag}) DELETE p", tag=tag)
