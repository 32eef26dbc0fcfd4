"""Pieces every backend's workloads share: message rows, the agent, call counting, keyset
paging."""

from __future__ import annotations

import statistics
from collections.abc import Awaitable, Callable
from typing import Any

from memory_core import MemoryBackend
from memory_core.turns.agent import with_memory

from .core import FLOOR, OURS, Run, Workload, percentile, timed
from .sizes import Sizes

SEARCH_QUERY = "topic"  # every generated message contains it
Pages = tuple[Callable[[Any], Awaitable[Any]], Any]
"""A keyset walk: the function reading the page at a cursor, and a cursor to read from."""


def rows(count: int, start: int = 0) -> list[dict[str, Any]]:
    """``count`` message dicts; every one contains the word ``topic``."""
    return [
        {"role": "user" if i % 2 else "assistant", "content": f"message {i} about topic {i % 97}"}
        for i in range(start, start + count)
    ]


def latency_metrics(latencies: list[float]) -> dict[str, float]:
    """p50 / p95 of per-call milliseconds."""
    return {"p50_ms": percentile(latencies, 0.5), "p95_ms": percentile(latencies, 0.95)}


def ingest_metrics(ms: float, messages: int) -> dict[str, float]:
    """Milliseconds for storing ``messages`` messages, and the throughput (messages per
    second, higher is better)."""
    return {"ms": ms, "msgs_per_s": messages / ms * 1000}


class Counter:
    """Counts calls of a wrapped method (round trips to the store)."""

    def __init__(self, owner: Any, *methods: str) -> None:
        self.count = 0
        for method in methods:
            setattr(owner, method, self._wrap(getattr(owner, method)))

    def _wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return await fn(*args, **kwargs)

        return counted


async def agent_turns(backend: MemoryBackend, conversation: str, turns: int) -> list[float]:
    """Run ``turns`` turns through the turn protocol; milliseconds per turn."""
    import time

    async def agent(user_message: str, ctx: Any) -> str:
        return f"noted: {user_message[:20]}"

    chat = with_memory(agent, backend=backend, conversation_id=conversation, platform="bench")
    spent = []
    for t in range(turns):
        start = time.perf_counter()
        await chat(f"turn {t}: tell me about Acme Corp and topic {t % 7}", turn_id=f"t{t}")
        spent.append((time.perf_counter() - start) * 1000)
    return spent


async def cursor_before(page: Callable[[Any], Awaitable[Any]], number: int) -> Any:
    """The cursor that starts page ``number`` (1-based) of a walk: ``page(cursor)``
    reads one page and returns its next cursor; it is followed ``number - 1`` times."""
    cursor = None
    for _ in range(number - 1):
        cursor = await page(cursor)
        if cursor is None:
            raise RuntimeError(f"the store holds fewer than {number} pages")
    return cursor


def keyset_metrics(first: list[float], deep: list[float], number: int) -> dict[str, float]:
    """Median milliseconds of reading the first page and page ``number``, and their
    ratio (a keyset page costs the same at any depth: about 1)."""
    one, far = statistics.median(first), statistics.median(deep)
    return {"page1_ms": one, f"page{number}_ms": far, f"page{number}_to_page1_ratio": far / one}


def keyset_reads(sizes: Sizes, page: Callable[[Any], Awaitable[Any]], deep: Any) -> Run:
    """A subject of the keyset workload: ``page(None)`` (the first page) and ``page(deep)``
    (``deep``: the cursor of page ``sizes.keyset_deep``), each ``sizes.keyset_reads`` times."""

    async def run(r: int) -> dict[str, float]:
        first = [await timed(page, None) for _ in range(sizes.keyset_reads)]
        later = [await timed(page, deep) for _ in range(sizes.keyset_reads)]
        return keyset_metrics(first, later, sizes.keyset_deep)

    return run


def keyset_workload(
    backend: str,
    sizes: Sizes,
    ours: Pages,
    floor: Pages,
    note: str,
    wrap: Callable[[Run], Run] | None = None,
) -> Workload:
    """``backend``'s keyset paging workload: memory-core's and the floor's reads (each a
    function reading the page at a cursor, and the cursor of page ``sizes.keyset_deep``;
    see :func:`keyset_reads`), each subject's run passed through ``wrap`` if given."""
    runs = {OURS: keyset_reads(sizes, *ours), FLOOR: keyset_reads(sizes, *floor)}
    subjects = {name: wrap(run) if wrap else run for name, run in runs.items()}
    label = f"page {sizes.keyset_deep} of {sizes.keyset_page} in {sizes.keyset_conversations}"
    workload = Workload(backend, "keyset paging (list_conversations_page)", label, subjects)
    workload.notes.append(note)
    return workload
