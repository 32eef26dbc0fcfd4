"""``get_context(neighbours=N)``: the order in which a hit's neighbours are listed (what
a token budget keeps first), and its checks. The behaviour on every backend is the
conformance scenario ``context.neighbours``."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core import Message, MessageRole, open_backend
from memory_core import requests as rq
from memory_core.errors import InvalidRequestError
from memory_core.interface import nearest_first, with_neighbours
from memory_core.summary import MAX_NEIGHBOURS

pytestmark = pytest.mark.anyio


def _messages(count: int) -> list[Message]:
    return [Message(role=MessageRole.USER, content=f"m{n}") for n in range(count)]


def test_nearest_first_alternates_before_and_after() -> None:
    window = _messages(6)
    near = nearest_first(window, window[2].id)
    assert [m.content for m in near] == ["m1", "m3", "m0", "m4", "m5"]


def test_nearest_first_of_a_window_without_the_hit_is_empty() -> None:
    assert nearest_first(_messages(3), Message(role="user", content="x").id) == []


class _Windows:
    """A store whose ``message_neighbours`` hands out given windows."""

    def __init__(self, windows: list[list[Message]]) -> None:
        self.windows = windows
        self.asked: list[rq.MessageNeighbours] = []

    async def message_neighbours(self, req: rq.MessageNeighbours) -> list[list[Message]]:
        self.asked.append(req)
        return self.windows


def _req(neighbours: int) -> rq.GetContext:
    target = rq.Target(session_id="s", conversation_id=None, scope=rq.Scope())
    return rq.GetContext(
        target=target, query="q", max_messages=1, max_hits=5, neighbours=neighbours
    )


async def test_each_hit_is_followed_by_its_neighbours_once_and_hits_keep_their_place() -> None:
    m = _messages(8)
    hits = [m[5], m[2], m[3]]
    store: Any = _Windows([m[4:7], m[1:4], m[2:5]])
    found = await with_neighbours(store, _req(1), hits, {m[6].id})
    # m6 is recent; m3 is a hit (in its own place, not as m2's neighbour); m4 once
    assert [x.content for x in found] == ["m5", "m4", "m2", "m1", "m3"]
    [asked] = store.asked
    assert asked.message_ids == (m[5].id, m[2].id, m[3].id)
    assert asked.count == 1


async def test_without_neighbours_the_store_is_not_asked() -> None:
    store: Any = _Windows([])
    hits = _messages(2)
    assert await with_neighbours(store, _req(0), hits, set()) == hits
    assert await with_neighbours(store, _req(2), [], set()) == []
    assert store.asked == []


def _relevant(context: str) -> list[str]:
    _, _, section = context.partition("## Relevant messages\n")
    return [line.split("] ")[-1].split(" (score")[0] for line in section.splitlines()]


async def test_a_budget_keeps_the_hit_then_its_nearest_neighbours() -> None:
    async with open_backend("memory://") as memory:
        for n in range(7):
            text = "the zebra line" if n == 3 else f"plain line {n}"
            await memory.add_message("s", "user", text)
        wide = await memory.get_context(
            "zebra", session_id="s", max_messages=1, neighbours=2, long_term_chars=0
        )
        order = ["the zebra line", *(f"plain line {n}" for n in (2, 4, 1, 5))]
        assert _relevant(wide) == sorted(order, key=lambda t: t[-1] if t[-1].isdigit() else "3")
        kept = set()
        for tokens in range(20, 70):
            tight = await memory.get_context(
                "zebra", session_id="s", max_messages=1, neighbours=2, max_tokens=tokens
            )
            found = _relevant(tight)
            assert set(found) == set(order[: len(found)]), f"{tokens} tokens: {found}"
            kept.add(len(found))
        assert kept == {0, 1, 2, 3, 4, 5}, "the budgets did not cover every cut"


@pytest.mark.parametrize("bad", [-1, MAX_NEIGHBOURS + 1, 1.0, "2", True, None])
async def test_a_bad_neighbours_is_refused_naming_it(bad: Any) -> None:
    async with open_backend("memory://") as memory:
        with pytest.raises(InvalidRequestError) as info:
            await memory.get_context("q", session_id="s", neighbours=bad)
    assert info.value.argument == "neighbours"


async def test_neighbours_at_the_cap_is_taken() -> None:
    async with open_backend("memory://") as memory:
        await memory.add_message("s", "user", "a zebra")
        text = await memory.get_context("zebra", session_id="s", neighbours=MAX_NEIGHBOURS)
    assert "a zebra" in text
