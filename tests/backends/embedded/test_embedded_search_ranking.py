"""The early-stopping text search returns exactly the hits that scoring every match
would, on the shared scale (bm25 order is not the final order: coverage weighs in)."""

from __future__ import annotations

import pytest
from embedded_support import memory_fixture  # noqa: F401

from memory_core.backends.embedded import EmbeddedBackend
from memory_core.backends.embedded.fts import fts_query
from memory_core.scoring import query_terms, text_score

pytestmark = pytest.mark.anyio


async def _reference(
    backend: EmbeddedBackend, query: str, limit: int, threshold: float | None
) -> list[tuple[float, str]]:
    def work(conn):  # type: ignore[no-untyped-def]
        return conn.execute(
            "SELECT m.content, -bm25(messages_fts) FROM messages_fts "
            "JOIN messages m ON m.num = messages_fts.rowid WHERE messages_fts MATCH ?",
            (fts_query(query),),
        ).fetchall()

    terms = query_terms(query)
    scored = [
        (text_score(terms, c, raw), c)
        for c, raw in await backend.store._store.call(work, write=False)
    ]
    if threshold is not None:
        scored = [hit for hit in scored if hit[0] >= threshold]
    scored.sort(key=lambda hit: -hit[0])
    return scored[:limit]


async def test_text_search_equals_scoring_every_match(memory: EmbeddedBackend) -> None:
    rows = []
    for i in range(150):
        words = ["alpha"] * (1 + i % 6)
        if i % 7 == 0:
            words.append("beta")
        if i % 13 == 0:
            words.append("gamma")
        rows.append({"role": "user", "content": " ".join(words) + f" filler {i}"})
    await memory.add_messages_batch("s", rows)
    query = "alpha beta gamma"
    for limit, threshold in [(1, None), (5, None), (17, None), (500, None), (10, 0.4)]:
        found = await memory.search_messages(
            query, session_id="s", limit=limit, threshold=threshold
        )
        expected = await _reference(memory, query, limit, threshold)
        assert [round(m.score or 0, 12) for m in found] == [round(s, 12) for s, _ in expected]
        last = round(expected[-1][0], 12)
        # Equally scored hits at the cut may differ; everything above it must match.
        mine = sorted(
            (round(m.score or 0, 12), m.content) for m in found if round(m.score or 0, 12) != last
        )
        theirs = sorted((round(s, 12), c) for s, c in expected if round(s, 12) != last)
        assert mine == theirs
