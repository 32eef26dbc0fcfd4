"""A text search in one session costs what the session holds, not what the store holds:
other sessions with the search word in 10x more messages leave its work (SQLite VM
steps) unchanged."""

from __future__ import annotations

import sqlite3

import pytest
from embedded_support import memory_fixture  # noqa: F401

from memory_core import requests as rq
from memory_core.backends.embedded import EmbeddedBackend
from memory_core.backends.embedded import search as search_module

pytestmark = pytest.mark.anyio

MINE = 10  # messages in the searched session, 3 with the word
OTHERS = 400  # messages with the word elsewhere at first, then 10x more


def _rows(count: int, every: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"ripe apple {i}" if i % every == 0 else f"pear {i}"}
        for i in range(count)
    ]


async def _add_others(backend: EmbeddedBackend, start: int, count: int) -> None:
    for session in range(start, start + count, 200):
        await backend.add_messages_batch(f"other-{session}", _rows(200, 1))


async def _steps(backend: EmbeddedBackend, monkeypatch: pytest.MonkeyPatch) -> tuple[int, list]:
    """VM steps of one session search, and what it found. The FTS5 index is merged into
    one segment first: each lookup's reads grow with the segment count (its log), and
    this measures how the work grows with the matches."""

    def optimize(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")

    await backend.store._store.call(optimize, write=True)
    steps = 0
    original = search_module.search

    def counting(conn: sqlite3.Connection, req: rq.SearchMessages) -> list:
        def tick() -> int:
            nonlocal steps
            steps += 1
            return 0

        conn.set_progress_handler(tick, 1)
        try:
            return original(conn, req)
        finally:
            conn.set_progress_handler(None, 1)

    monkeypatch.setattr(search_module, "search", counting)
    found = await backend.search_messages("apple", session_id="mine", limit=5)
    monkeypatch.setattr(search_module, "search", original)
    return steps, [(m.id, m.score) for m in found]


async def test_session_search_work_does_not_grow_with_other_sessions(
    memory: EmbeddedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await memory.add_messages_batch("mine", _rows(MINE, 4))
    await _add_others(memory, 0, OTHERS)
    small, found_small = await _steps(memory, monkeypatch)
    await _add_others(memory, OTHERS, 9 * OTHERS)
    large, found_large = await _steps(memory, monkeypatch)
    assert len(found_small) == 3
    assert found_large == found_small
    assert large <= small * 1.1 + 50, (small, large)


@pytest.mark.parametrize("filters", [None, {"k": "a"}])
async def test_both_plans_find_the_same(
    memory: EmbeddedBackend, monkeypatch: pytest.MonkeyPatch, filters: dict | None
) -> None:
    """Message by message or store-wide: the same hits, scores and order (ties too)."""
    rows = [
        {
            "role": "user",
            "content": f"apple {'pie ' * (i % 3)}{i % 5}",
            "metadata": {"k": "ab"[i % 2]},
        }
        for i in range(60)
    ]
    await memory.add_messages_batch("mine", rows)
    await memory.add_messages_batch("other", _rows(100, 2))
    found = {}
    for per_match in (0, 10**6):  # every store "large", then every store "small"
        monkeypatch.setattr(search_module, "LOOKUPS_PER_MATCH", per_match)
        hits = await memory.search_messages(
            "apple pie", session_id="mine", limit=25, metadata_filters=filters
        )
        found[per_match] = [(m.id, m.score) for m in hits]
    assert len(found[0]) == 25
    assert found[0] == found[10**6]
