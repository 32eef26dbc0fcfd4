"""A text search in one session costs what the session's matches cost: neither other
sessions with the search word in 10x more messages nor the session's own messages without
it change its work (SQLite VM steps), and its hits are those a store-wide search finds in
the session."""

from __future__ import annotations

import pytest
from embedded_support import memory_fixture, search_steps, token_and_store_wide  # noqa: F401

from memory_core import MemoryBackend

pytestmark = pytest.mark.anyio

MINE = 10  # messages in the searched session, 3 with the word
OTHERS = 400  # messages with the word elsewhere at first, then 10x more


def _rows(count: int, every: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"ripe apple {i}" if i % every == 0 else f"pear {i}"}
        for i in range(count)
    ]


async def _add_others(backend: MemoryBackend, start: int, count: int) -> None:
    for session in range(start, start + count, 200):
        await backend.add_messages_batch(f"other-{session}", _rows(200, 1))


async def _steps(
    backend: MemoryBackend, monkeypatch: pytest.MonkeyPatch, session: str = "mine"
) -> tuple[int, list]:
    """VM steps of one session search, and what it found."""
    return await search_steps(backend, monkeypatch, "apple", session_id=session, limit=5)


async def test_session_search_work_does_not_grow_with_other_sessions(
    memory: MemoryBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    await memory.add_messages_batch("mine", _rows(MINE, 4))
    await _add_others(memory, 0, OTHERS)
    small, found_small = await _steps(memory, monkeypatch)
    await _add_others(memory, OTHERS, 9 * OTHERS)
    large, found_large = await _steps(memory, monkeypatch)
    assert len(found_small) == 3
    assert found_large == found_small
    assert large <= small * 1.1 + 50, (small, large)


async def test_session_search_work_does_not_grow_with_the_sessions_other_messages(
    memory: MemoryBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long session with as many matches as a short one costs what the short one costs
    (a search that visits each message of the session, or every match in the store,
    does 40 to 400 times the work here)."""
    await memory.add_messages_batch("short", _rows(12, 4))
    await memory.add_messages_batch("long", _rows(1_200, 400))
    await _add_others(memory, 0, 4_000)
    short, found_short = await _steps(memory, monkeypatch, "short")
    long, found_long = await _steps(memory, monkeypatch, "long")
    assert len(found_short) == len(found_long) == 3
    assert long <= short * 1.2 + 50, (short, long)


@pytest.mark.parametrize("filters", [None, {"k": "a"}])
async def test_session_hits_are_the_store_wide_hits_in_the_session(
    memory: MemoryBackend, monkeypatch: pytest.MonkeyPatch, filters: dict | None
) -> None:
    """The conversation's token in the match changes which rows FTS5 reads, not their
    ranks: the candidates, scores and order (ties too) are those of the store-wide match
    kept to the session by SQL."""
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
    seen = token_and_store_wide(monkeypatch, lambda token: token is not None)
    found = await memory.search_messages(
        "apple pie", session_id="mine", limit=25, metadata_filters=filters
    )
    [(scoped, store_wide)] = seen
    assert len(scoped) == (60 if filters is None else 30)  # more than the limit
    assert scoped == store_wide
    assert [m.score for m in found] == [score for _, score in scoped[:25]]


async def test_a_conversation_token_is_not_a_word(memory: MemoryBackend) -> None:
    """Searching for the text of a conversation's id finds no message of it: the words
    are matched in the text column only."""
    stored = await memory.add_messages_batch("mine", _rows(5, 1))
    token = str(stored[0].conversation_id).replace("-", "")
    assert await memory.search_messages(token) == []
    assert await memory.search_messages(token, session_id="mine") == []
    assert len(await memory.search_messages("apple", session_id="mine")) == 5
