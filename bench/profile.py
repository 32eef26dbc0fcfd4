"""``python -m bench.profile``: where the time of each workload goes, before any change.

For each workload on each store it runs the calls ``--calls`` times after a warm-up, then
reports per call: the wall time, the client's CPU time (this process), the time left
waiting (wall less client CPU: the database server, the network and the kernel), and
the client's CPU split by where it was spent, from a ``cProfile`` run of the same calls:

- ``driver``: the database driver and what it calls (``sqlite3``, psycopg, the Neo4j
  driver, httpx), parsing and packing values;
- ``models``: building the result models (:mod:`memory_core.models`, pydantic);
- ``ours``: the rest of memory-core's own Python (validation, SQL and rows, the API);
- ``runtime``: the event loop, threads, the standard library.

The split is of the profiled time of the calling thread, waits left out (``cProfile``
inflates Python function calls, so read it as shares, not as times). The embedded store
runs batches, searches and any call that cannot finish at once in worker threads, which
this split does not see: their CPU is in the client's CPU, not in the split.

The stores: embedded on a temporary file, PostgreSQL on ``PG_TEST_URL`` or a server
started here, Neo4j on ``NEO4J_URI`` or one started here (``--only`` picks). Not in CI;
the last figures are in docs/benchmarks.md ("Where the time goes").
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from memory_core import MemoryBackend, open_backend

from .scale_stores import store_url

Call = Callable[[MemoryBackend, int], Awaitable[Any]]
BUCKETS = ("driver", "models", "ours", "runtime")
_DRIVERS = ("sqlite3", "/psycopg", "/neo4j/", "/httpx/", "/httpcore/")
_MODELS = ("memory_core/models.py", "/pydantic", "pydantic_core")
# Waiting, not working: the event loop's poll, a thread's lock (the store's worker threads
# do their work where this profile does not see it; their CPU is in the client's CPU).
_WAITS = ("<method 'poll' of 'select", "<method 'acquire' of '_thread", "<method 'select' of")
SESSION_SIZE = 1_000  # messages in the read workloads' session


def _content(i: int) -> str:
    return f"message {i} about the meadow and the river, and what was said on day {i % 97}"


async def _single(backend: MemoryBackend, i: int) -> Any:
    return await backend.add_message("single", "user", _content(i))


async def _batch(backend: MemoryBackend, i: int) -> Any:
    rows = [{"role": "user", "content": _content(i * 100 + k)} for k in range(100)]
    return await backend.add_messages_batch(f"batch-{i % 10}", rows)


async def _newest(backend: MemoryBackend, i: int) -> Any:
    return await backend.get_conversation("read", limit=100)


async def _search(backend: MemoryBackend, i: int) -> Any:
    return await backend.search_messages("meadow river day", session_id="read", limit=10)


WORKLOADS: dict[str, Call] = {
    "single add_message": _single,
    "add_messages_batch (100)": _batch,
    "newest-100 read": _newest,
    "text search in a session": _search,
}


def bucket(filename: str, function: str) -> str:
    """Which of :data:`BUCKETS` a profiled function's own time counts in."""
    where = f"{filename} {function}"
    if any(mark in where for mark in _MODELS):
        return "models"
    if any(mark in where for mark in _DRIVERS):
        return "driver"
    if "memory_core/" in filename:
        return "ours"
    return "runtime"


def split(stats: pstats.Stats) -> dict[str, float]:
    """Each bucket's share of the profiled time."""
    spent = dict.fromkeys(BUCKETS, 0.0)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (filename, _, function), (_, _, own, _, _) in raw.items():
        if not function.startswith(_WAITS) and "_lsprof" not in function:
            spent[bucket(filename, function)] += own
    total = sum(spent.values()) or 1.0
    return {name: value / total for name, value in spent.items()}


async def measure(backend: MemoryBackend, call: Call, calls: int) -> dict[str, float]:
    """Per call: wall and client CPU milliseconds, the wait, and the profiled split."""
    for i in range(max(5, calls // 10)):
        await call(backend, i)
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(calls):
        await call(backend, i)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    profile = cProfile.Profile()
    profile.enable()
    for i in range(calls):
        await call(backend, i)
    profile.disable()
    shares = split(pstats.Stats(profile))
    return {
        "wall_ms": wall * 1000 / calls,
        "client_cpu_ms": cpu * 1000 / calls,
        "wait_ms": max(0.0, wall - cpu) * 1000 / calls,
        **{f"{name}_share": share for name, share in shares.items()},
    }


async def profile_store(name: str, calls: int) -> list[tuple[str, dict[str, float]]]:
    """Every workload on one store."""
    with tempfile.TemporaryDirectory() as folder:
        async with store_url(name, Path(folder)) as url, open_backend(url) as backend:
            rows = [{"role": "user", "content": _content(i)} for i in range(SESSION_SIZE)]
            await backend.add_messages_batch("read", rows, batch_size=500)
            return [(w, await measure(backend, call, calls)) for w, call in WORKLOADS.items()]


def table(results: dict[str, list[tuple[str, dict[str, float]]]]) -> str:
    """The figures as a markdown table."""
    lines = [
        "| store | workload | wall ms | client CPU ms | wait ms | driver | models | ours | "
        "runtime |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for store, rows in results.items():
        for workload, f in rows:
            shares = " | ".join(f"{f[f'{b}_share']:.0%}" for b in BUCKETS)
            lines.append(
                f"| {store} | {workload} | {f['wall_ms']:.3f} | {f['client_cpu_ms']:.3f} | "
                f"{f['wait_ms']:.3f} | {shares} |"
            )
    return "\n".join(lines)


async def run(stores: list[str], calls: int) -> str:
    """Profile ``stores`` and return the table."""
    return table({name: await profile_store(name, calls) for name in stores})


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    parser.add_argument("--only", default="embedded,postgres,bolt", help="stores to profile")
    parser.add_argument("--calls", type=int, default=300, help="calls per workload (300)")
    args = parser.parse_args()
    print(asyncio.run(run([s for s in args.only.split(",") if s], args.calls)))


if __name__ == "__main__":
    main()
