"""Long-term memory workloads (``python -m bench --workloads long_term``): preferences,
facts and relationships on embedded, PostgreSQL and Bolt, beside the floor
(:mod:`bench.long_term_floors`) and, on Bolt, the reference library's ``LongTermMemory``.

- **add_preference**, **add_fact**: single adds, each repeat for a new user; p50/p95.
  Target: at most 1.3x the floor's single INSERT/CREATE.
- **search_preferences**: a two-word query among the 10k (``long_term_records``) current
  preferences of one user (another user holds a tenth as many in the same store); about
  2% of the user's preferences match. Target: at most 2x the floor's text query.
- **related_entities (depth 2)**: walks from rotating starts on a graph of 10k
  (``long_term_entities``) entities, each linked to the next and to one other at random
  (about 20 entities within two steps). Target: at most 2x the floor's hand-written query.

Every store is filled through memory-core's public API. The reference library, with no
embedder, searches preferences by category only and reads related entities at depth 1
whatever the depth asked, so it is beside memory-core on the adds only.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from memory_core import MemoryBackend

from .common import latency_metrics
from .core import PEER, Workload, measure
from .sizes import Sizes

CATEGORIES = ("food", "music", "travel", "work", "sport", "books", "film", "tools")
_FIRST = [f"a{i:03d}" for i in range(97)]
_SECOND = [f"b{i:03d}" for i in range(89)]
_THIRD = [f"c{i:03d}" for i in range(83)]
QUERY = [_FIRST[5], _SECOND[11]]  # each in about 1 preference in 90
TARGETS = {"add": 1.3, "search": 2.0, "walk": 2.0}
_CHUNK = 16  # calls at once while filling a store
_STARTS_STEP = 7919  # a prime: the walks' starts spread over the graph


def statement(i: int) -> str:
    """The ``i``-th generated preference statement."""
    return f"likes {_FIRST[i % 97]} and {_SECOND[(i * 7) % 89]} near {_THIRD[(i * 13) % 83]}"


@dataclass
class Ops:
    """What one subject does: each operation, or None where it has none."""

    add_preference: Callable[[str, str, str], Awaitable[Any]] | None
    add_fact: Callable[[str, str, str, str], Awaitable[Any]] | None
    search: Callable[[str, list[str]], Awaitable[Sequence[Any]]] | None = None
    walk: Callable[[str], Awaitable[Sequence[Any]]] | None = None


def ours(backend: MemoryBackend) -> Ops:
    """memory-core's public API."""

    async def search(user: str, words: list[str]) -> Sequence[Any]:
        return await backend.search_preferences(" ".join(words), limit=10, user_identifier=user)

    async def walk(start: str) -> Sequence[Any]:
        return await backend.related_entities(start, depth=2)

    return Ops(
        lambda user, kind, text: backend.add_preference(kind, text, user_identifier=user),
        lambda user, s, p, o: backend.add_fact(s, p, o, user_identifier=user),
        search,
        walk,
    )


async def run(
    name: str,
    backend: MemoryBackend,
    subjects: dict[str, Ops],
    sizes: Sizes,
    log: Callable[[str], None],
    prefix: str,
    notes: dict[str, str],
    settle: Callable[[], Awaitable[None]] | None = None,
) -> list[dict[str, Any]]:
    """Every long-term workload of backend ``name``: ``subjects`` maps memory-core,
    the floor and the peer to their :class:`Ops`; names written start with ``prefix``;
    ``notes`` says what the floor (and peer) does, by workload key; ``settle`` runs
    after each fill (PostgreSQL: ``ANALYZE``, as autovacuum would)."""
    entries = [
        await _adds(name, "add_preference", subjects, sizes, log, prefix, notes),
        await _adds(name, "add_fact", subjects, sizes, log, prefix, notes),
    ]
    user = f"{prefix}searched"
    await fill_preferences(backend, user, sizes.long_term_records)
    await fill_preferences(backend, f"{prefix}other", sizes.long_term_records // 10)
    if settle is not None:
        await settle()
    entries.append(await _search(name, subjects, sizes, log, user, notes))
    starts = await fill_graph(backend, sizes.long_term_entities, prefix)
    if settle is not None:
        await settle()
    entries.append(await _walk(name, subjects, sizes, log, starts, notes))
    return entries


async def fill_preferences(backend: MemoryBackend, user: str, count: int) -> None:
    """``count`` preferences of ``user`` through the public API."""
    for start in range(0, count, _CHUNK):
        await asyncio.gather(
            *(
                backend.add_preference(
                    CATEGORIES[i % len(CATEGORIES)], statement(i), user_identifier=user
                )
                for i in range(start, min(start + _CHUNK, count))
            )
        )


async def fill_graph(backend: MemoryBackend, count: int, prefix: str) -> list[str]:
    """``count`` entities, each related to the next and to one other at random; the
    entity ids, in order."""
    ids: list[str] = []
    for start in range(0, count, _CHUNK):
        added = await asyncio.gather(
            *(
                backend.add_entity(f"{prefix}entity {i}", "PERSON" if i % 2 else "ORGANIZATION")
                for i in range(start, min(start + _CHUNK, count))
            )
        )
        ids += [str(entity.id) for entity in added]
    rng = random.Random(11)
    edges = [(i, (i + 1) % count, "KNOWS") for i in range(count)]
    edges += [(i, rng.randrange(count), "WORKS_WITH") for i in range(count)]
    edges = [edge for edge in edges if edge[0] != edge[1]]
    for start in range(0, len(edges), _CHUNK):
        await asyncio.gather(
            *(
                backend.add_relationship(ids[a], ids[b], kind)
                for a, b, kind in edges[start : start + _CHUNK]
            )
        )
    return ids


async def _adds(
    name: str,
    kind: str,
    subjects: dict[str, Ops],
    sizes: Sizes,
    log: Callable[[str], None],
    prefix: str,
    notes: dict[str, str],
) -> dict[str, Any]:
    def subject(label: str, ops: Ops) -> Callable[[int], Awaitable[dict[str, float]]]:
        async def each(r: int) -> dict[str, float]:
            user = f"{prefix}{label}-{kind}-{r}"
            spent = []
            for i in range(sizes.long_term_adds):
                started = time.perf_counter()
                if kind == "add_preference" and ops.add_preference is not None:
                    await ops.add_preference(user, CATEGORIES[i % 8], statement(i))
                elif kind == "add_fact" and ops.add_fact is not None:
                    await ops.add_fact(user, f"{prefix}person {i % 50}", "LIKES", statement(i))
                spent.append((time.perf_counter() - started) * 1000)
            return latency_metrics(spent)

        return each

    runs = {label: subject(label, ops) for label, ops in subjects.items()}
    workload = Workload(name, kind, f"x{sizes.long_term_adds}", runs)
    workload.notes += [notes["add"]] + ([notes["peer_add"]] if PEER in subjects else [])
    workload.extra["target_vs_floor"] = TARGETS["add"]
    return await measure(workload, sizes, log)


async def _search(
    name: str,
    subjects: dict[str, Ops],
    sizes: Sizes,
    log: Callable[[str], None],
    user: str,
    notes: dict[str, str],
) -> dict[str, Any]:
    def subject(ops: Ops) -> Callable[[int], Awaitable[dict[str, float]]]:
        assert ops.search is not None
        return _reads(sizes, [partial(ops.search, user, QUERY)] * sizes.long_term_reads)

    runs = {label: subject(ops) for label, ops in subjects.items() if ops.search is not None}
    size = f"{sizes.long_term_records}"
    workload = Workload(name, "search_preferences (one user's)", size, runs)
    workload.notes.append(notes["search"])
    workload.extra["target_vs_floor"] = TARGETS["search"]
    return await measure(workload, sizes, log)


async def _walk(
    name: str,
    subjects: dict[str, Ops],
    sizes: Sizes,
    log: Callable[[str], None],
    ids: list[str],
    notes: dict[str, str],
) -> dict[str, Any]:
    starts = [ids[(k * _STARTS_STEP) % len(ids)] for k in range(sizes.long_term_reads)]

    def subject(ops: Ops) -> Callable[[int], Awaitable[dict[str, float]]]:
        assert ops.walk is not None
        walk = ops.walk
        return _reads(sizes, [partial(walk, start) for start in starts])

    runs = {label: subject(ops) for label, ops in subjects.items() if ops.walk is not None}
    size = f"{sizes.long_term_entities}"
    workload = Workload(name, "related_entities (depth 2)", size, runs)
    workload.notes.append(notes["walk"])
    workload.extra["target_vs_floor"] = TARGETS["walk"]
    return await measure(workload, sizes, log)


def _reads(
    sizes: Sizes, calls: list[Callable[[], Awaitable[Sequence[Any]]]]
) -> Callable[[int], Awaitable[dict[str, float]]]:
    """A subject running ``calls`` one after another: the median milliseconds of a call,
    and the median number of results (the same for every subject: they find the same)."""

    async def each(r: int) -> dict[str, float]:
        spent: list[float] = []
        found: list[float] = []
        for call in calls:
            started = time.perf_counter()
            results = await call()
            spent.append((time.perf_counter() - started) * 1000)
            found.append(len(results))
        return {"median_ms": statistics.median(spent), "results_count": statistics.median(found)}

    return each
