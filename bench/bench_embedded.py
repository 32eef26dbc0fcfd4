"""Benchmark of the embedded backend: write throughput and newest-50 read latency.

Run ``python bench/bench_embedded.py [--messages 10000]``. Prints figures for a private
``memory://`` store and a ``sqlite:///`` file in a temporary folder; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from memory_core import MemoryBackend, open_backend


async def _single_writes(backend: MemoryBackend, count: int) -> float:
    start = time.perf_counter()
    for i in range(count):
        await backend.add_message("single", "user", f"single write number {i}")
    return count / (time.perf_counter() - start)


async def _batch_writes(backend: MemoryBackend, count: int) -> float:
    rows = [{"role": "user", "content": f"message {i} about topic {i % 97}"} for i in range(count)]
    start = time.perf_counter()
    await backend.add_messages_batch("long", rows, batch_size=500)
    return count / (time.perf_counter() - start)


async def _read_latency(backend: MemoryBackend, rounds: int) -> tuple[float, float]:
    timings = []
    for _ in range(rounds):
        start = time.perf_counter()
        conversation = await backend.get_conversation("long", limit=50)
        timings.append(time.perf_counter() - start)
        assert len(conversation.messages) == 50
    timings.sort()
    return statistics.median(timings) * 1000, timings[int(len(timings) * 0.95)] * 1000


async def _search_latency(backend: MemoryBackend, rounds: int) -> float:
    start = time.perf_counter()
    for i in range(rounds):
        await backend.search_messages(f"topic {i % 97}", session_id="long", limit=10)
    return (time.perf_counter() - start) / rounds * 1000


async def bench(url: str, messages: int, singles: int) -> None:
    async with open_backend(url) as backend:
        single = await _single_writes(backend, singles)
        batched = await _batch_writes(backend, messages)
        median, p95 = await _read_latency(backend, 200)
        search = await _search_latency(backend, 50)
    print(f"{url}")
    print(f"  add_message, one at a time : {single:10.0f} writes/s ({singles} writes)")
    print(f"  add_messages_batch (500)   : {batched:10.0f} writes/s ({messages} messages)")
    print(f"  newest-50 read of {messages}  : median {median:.2f} ms, p95 {p95:.2f} ms")
    print(f"  search, one session        : {search:.2f} ms per query")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--singles", type=int, default=1_000)
    args = parser.parse_args()
    await bench("memory://", args.messages, args.singles)
    with tempfile.TemporaryDirectory() as folder:
        await bench(f"sqlite:///{Path(folder) / 'bench.db'}", args.messages, args.singles)


if __name__ == "__main__":
    anyio.run(main)
