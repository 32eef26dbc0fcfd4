"""What similar traces cost on Neo4j (issue 51, item 6): in a scope holding a part of the
index's matches, the full-text index is read once for the scope's best candidates, not
once for the pool and again for four times as many; the hits are those of the pool."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import uuid4

import neo4j
import pytest

from memory_core import MemoryBackend, open_backend
from memory_core.scoring import candidate_pool

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

Unique = Callable[[str], str]


async def test_similar_traces_read_the_index_once_when_a_fourth_is_out_of_scope(
    bolt: MemoryBackend, unique: Unique, monkeypatch: pytest.MonkeyPatch
) -> None:
    word = f"z{uuid4().hex}"
    ours, theirs = unique("user"), unique("user")
    mine = []
    # Three of the user's traces to one of another user's, in turn, so that the index's
    # best pool of matches (ties in creation order) holds fewer than a pool of the user's.
    for n in range(candidate_pool(5) * 2):
        user = theirs if n % 4 == 3 else ours
        trace = await bolt.start_trace("s", f"{word} step {n}", user_identifier=user)
        await bolt.complete_trace(trace.id, success=True, user_identifier=user)
        if user == ours:
            mine.append(trace.id)
    asked: list[dict[str, Any]] = []
    real_run = neo4j.AsyncManagedTransaction.run

    async def run(self: neo4j.AsyncManagedTransaction, query: str, *args: Any, **kw: Any) -> Any:
        if "fulltext.queryNodes" in query:
            asked.append(args[0] if args else kw)
        return await real_run(self, query, *args, **kw)

    monkeypatch.setattr(neo4j.AsyncManagedTransaction, "run", run)
    hits = await bolt.similar_traces(word, limit=5, user_identifier=ours)
    assert len(asked) == 1, [params["k"] for params in asked]
    assert len(hits) == 5 and {t.id for t in hits} <= set(mine)
    assert len({t.score for t in hits}) == 1  # one word in equal-length tasks


async def test_similar_traces_keep_the_embedded_stores_order_and_scores(
    bolt: MemoryBackend, unique: Unique
) -> None:
    word, user = f"z{uuid4().hex}", unique("user")
    async with open_backend("memory://") as embedded:
        found = []
        for memory in (bolt, embedded):
            for n, task in enumerate([f"{word} a", f"{word} {word} b c d", "x", f"{word} e f"]):
                trace = await memory.start_trace("s", task, user_identifier=user)
                await memory.complete_trace(trace.id, success=n != 3, user_identifier=user)
            hits = await memory.similar_traces(f"{word} b", user_identifier=user)
            found.append([(t.task, round(t.score or 0.0, 9)) for t in hits])
    assert found[0] == found[1] and len(found[0]) == 2
