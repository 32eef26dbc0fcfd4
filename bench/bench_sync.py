"""What the blocking facade costs: per-call latency of ``memory_core.sync`` against the
async API on the same embedded store, and throughput from several threads at once.

Run ``python bench/bench_sync.py [URL]`` (default ``memory://``). Prints figures; asserts
nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from memory_core import open_backend as open_async
from memory_core.sync import open_backend as open_blocking

CALLS = 300


async def async_latency(url: str) -> list[float]:
    async with open_async(url) as memory:
        await memory.add_message("bench", "user", "warm-up")
        times = []
        for i in range(CALLS):
            start = time.perf_counter()
            await memory.add_message("bench", "user", f"m{i}")
            times.append(time.perf_counter() - start)
        return times


def blocking_latency(url: str) -> list[float]:
    with open_blocking(url) as memory:
        memory.add_message("bench", "user", "warm-up")
        times = []
        for i in range(CALLS):
            start = time.perf_counter()
            memory.add_message("bench", "user", f"m{i}")
            times.append(time.perf_counter() - start)
        return times


def threaded_rate(url: str, threads: int) -> float:
    with open_blocking(url) as memory:
        memory.add_message("bench", "user", "warm-up")

        def work(worker: int) -> None:
            for i in range(CALLS // threads):
                memory.add_message(f"bench-{worker}", "user", f"m{i}")

        start = time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(work, range(threads)))
        return (CALLS // threads) * threads / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url", nargs="?", default="memory://")
    url = parser.parse_args().url
    for name, times in (
        ("async add_message", asyncio.run(async_latency(url))),
        ("sync  add_message", blocking_latency(url)),
    ):
        ms = sorted(t * 1000 for t in times)
        print(
            f"{name}: median {statistics.median(ms):.3f} ms, p95 {ms[int(len(ms) * 0.95)]:.3f} ms"
        )
    for threads in (1, 4, 8):
        print(f"sync, {threads} thread(s): {threaded_rate(url, threads):,.0f} messages/s")


if __name__ == "__main__":
    main()
