"""``related_entities`` costs what the neighbourhood it walks costs: ten times more
relationships elsewhere in the graph do not change its work (SQLite VM steps), and it
finds the same entities. (The walk once joined a subquery of every relationship in both
directions at each step: its work grew with the whole graph.)"""

from __future__ import annotations

import itertools

import pytest
from embedded_support import memory_fixture, vm_steps  # noqa: F401

from memory_core import MemoryBackend
from memory_core.backends.embedded import relationships as relationships_module

pytestmark = pytest.mark.anyio


async def _chain(backend: MemoryBackend, prefix: str, count: int) -> list[str]:
    """``count`` entities, each related to the next; their ids."""
    ids = [str((await backend.add_entity(f"{prefix} {i}", "PERSON")).id) for i in range(count)]
    for a, b in itertools.pairwise(ids):
        await backend.add_relationship(a, b, "KNOWS")
    return ids


async def _steps(
    backend: MemoryBackend, monkeypatch: pytest.MonkeyPatch, start: str
) -> tuple[int, list[str]]:
    """VM steps of one depth-2 walk from ``start``, and the names it found."""
    call = backend.related_entities(start, depth=2)
    steps, found = await vm_steps(monkeypatch, relationships_module, "related", call)
    return steps, [entity.name for entity in found]


async def test_walk_work_does_not_grow_with_the_rest_of_the_graph(
    memory: MemoryBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = await _chain(memory, "mine", 5)
    await _chain(memory, "other", 100)
    small, found_small = await _steps(memory, monkeypatch, mine[2])
    await _chain(memory, "more", 1_000)
    large, found_large = await _steps(memory, monkeypatch, mine[2])
    assert sorted(found_small) == ["mine 0", "mine 1", "mine 3", "mine 4"]
    assert found_large == found_small
    assert large <= small * 1.2 + 50, (small, large)
