"""Text search ranks by the shared scale, computed from each message's content: bm25 only
picks the candidates (the best ``candidate_pool(limit)`` matches in scope), and a
message's score never depends on what else the store holds."""

from __future__ import annotations

import pytest
from embedded_support import memory_fixture  # noqa: F401

from memory_core import MemoryBackend
from memory_core.backends.embedded.fts import fts_query
from memory_core.scoring import candidate_pool, query_terms, text_score

pytestmark = pytest.mark.anyio


async def _bm25_order(backend: MemoryBackend, query: str) -> list[str]:
    """Every match of ``query`` (one session in the store), best bm25 first."""

    def work(conn):  # type: ignore[no-untyped-def]
        return conn.execute(
            "SELECT m.content FROM messages_fts JOIN messages m ON m.num = messages_fts.rowid "
            "WHERE messages_fts MATCH ? ORDER BY bm25(messages_fts), m.num",
            (fts_query(query),),
        ).fetchall()

    return [row[0] for row in await backend.store._store.call(work, write=False)]


def _expected(contents: list[str], query: str, limit: int, threshold: float | None) -> list:
    terms = query_terms(query)
    scored = [(text_score(terms, c), c) for c in contents]
    scored = [hit for hit in scored if hit[0] > 0]
    if threshold is not None:
        scored = [hit for hit in scored if hit[0] >= threshold]
    scored.sort(key=lambda hit: -hit[0])
    return scored[:limit]


def _same_up_to_ties(found: list, expected: list) -> None:
    """Scores equal position by position; contents equal except among hits tied at the
    last score (which of them made the cut is the engine's order)."""
    assert [round(m.score or 0, 12) for m in found] == [round(s, 12) for s, _ in expected]
    last = round(expected[-1][0], 12)
    mine = sorted((round(m.score or 0, 12), m.content) for m in found)
    theirs = sorted((round(s, 12), c) for s, c in expected)
    assert [h for h in mine if h[0] != last] == [h for h in theirs if h[0] != last]


def _rows(count: int) -> list[dict[str, str]]:
    rows = []
    for i in range(count):
        words = ["alpha"] * (1 + i % 6) + ["filler"] * (i % 9)
        if i % 7 == 0:
            words.append("beta")
        if i % 13 == 0:
            words.append("gamma")
        rows.append({"role": "user", "content": " ".join(words) + f" n{i}"})
    return rows


async def test_text_search_equals_scoring_every_match(memory: MemoryBackend) -> None:
    rows = _rows(150)
    await memory.add_messages_batch("s", rows)
    query = "alpha beta gamma"
    contents = [r["content"] for r in rows]
    for limit, threshold in [(1, None), (5, None), (17, None), (500, None), (10, 0.4)]:
        found = await memory.search_messages(
            query, session_id="s", limit=limit, threshold=threshold
        )
        _same_up_to_ties(found, _expected(contents, query, limit, threshold))


async def test_only_the_engines_best_matches_are_scored(memory: MemoryBackend) -> None:
    """Beyond the pool, the engine's rank decides what is considered: the hits are the
    best of bm25's best ``candidate_pool(limit)`` matches on the shared scale."""
    rows = _rows(candidate_pool(10) + 150)
    await memory.add_messages_batch("s", rows)
    query = "alpha beta gamma"
    pool = (await _bm25_order(memory, query))[: candidate_pool(10)]
    found = await memory.search_messages(query, session_id="s", limit=10)
    _same_up_to_ties(found, _expected(pool, query, 10, None))


async def test_a_score_does_not_depend_on_the_rest_of_the_store(memory: MemoryBackend) -> None:
    """bm25 gives almost nothing to a word found in most messages; the shared scale does
    not care what other messages hold (the same message scored 0.5 with bm25 here)."""
    await memory.add_message("s", "user", "late order")
    [alone] = await memory.search_messages("late order", session_id="s")
    for n in range(30):
        await memory.add_message(f"other-{n}", "user", f"late order number {n}")
    [crowded] = await memory.search_messages("late order", session_id="s")
    assert alone.score == crowded.score == text_score(["late", "order"], "late order")
    assert alone.score is not None and alone.score > 0.8
