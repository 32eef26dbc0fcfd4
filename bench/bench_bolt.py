"""Benchmark of the Bolt backend: write rates and newest-50 read latency at 1k vs 10k.

Run ``python bench/bench_bolt.py``. Uses the Neo4j at ``NEO4J_URI`` (with
``NEO4J_USERNAME`` / ``NEO4J_PASSWORD``) when set, else starts the test-suite's local
Neo4j (``memory_core_dev.neo4j_server``; run from the repository root). Works in sessions
of its own and clears them at the end. Prints figures; asserts nothing.

What it shows: ``add_message`` is one round trip whose cost does not grow with the
conversation (the tail is found through the ``Message(conversation_id, seq)`` index), and
the newest-50 read walks that index backwards, so its latency at 10,000 messages is about
the same as at 1,000.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from uuid import uuid4

from memory_core import MemoryBackend, open_backend

WARMUP = 20


async def single_writes(backend: MemoryBackend, session: str, count: int) -> float:
    """Messages per second for ``count`` sequential ``add_message`` calls."""
    start = time.perf_counter()
    for i in range(count):
        await backend.add_message(session, "user", f"single write number {i}")
    return count / (time.perf_counter() - start)


async def batch_writes(backend: MemoryBackend, session: str, count: int, size: int) -> float:
    """Messages per second for ``count`` messages written in batches of ``size``."""
    rows = [{"role": "user", "content": f"message {i} about topic {i % 97}"} for i in range(count)]
    start = time.perf_counter()
    await backend.add_messages_batch(session, rows, batch_size=size)
    return count / (time.perf_counter() - start)


async def read_latency(backend: MemoryBackend, session: str, rounds: int) -> tuple[float, float]:
    """Median and 95th percentile (ms) of reading the newest 50 messages."""
    for _ in range(WARMUP):
        await backend.get_conversation(session, limit=50)
    timings = []
    for _ in range(rounds):
        start = time.perf_counter()
        conversation = await backend.get_conversation(session, limit=50)
        timings.append((time.perf_counter() - start) * 1000)
        assert len(conversation.messages) == 50
    timings.sort()
    return statistics.median(timings), timings[int(len(timings) * 0.95) - 1]


async def run(url: str, small: int, large: int, singles: int, rounds: int, size: int) -> None:
    session = f"bench-bolt-{uuid4().hex}"
    scratch = f"{session}-warmup"
    async with open_backend(url) as backend:
        print(f"backend: {backend.describe()}")
        await single_writes(backend, scratch, WARMUP)  # plan the statements once
        await batch_writes(backend, scratch, WARMUP, size)
        try:
            rate_small = await single_writes(backend, session, small)
            median_small, p95_small = await read_latency(backend, session, rounds)
            batch_rate = await batch_writes(backend, session, large - small - singles, size)
            rate_large = await single_writes(backend, session, singles)
            median_large, p95_large = await read_latency(backend, session, rounds)
        finally:
            await backend.clear_session(session)
            await backend.clear_session(scratch)
    print(f"{'':32}{'at ' + str(small):>14}{'at ' + str(large):>14}")
    print(f"{'add_message (msgs/s)':32}{rate_small:14.0f}{rate_large:14.0f}")
    print(f"{'newest-50 read, median (ms)':32}{median_small:14.2f}{median_large:14.2f}")
    print(f"{'newest-50 read, p95 (ms)':32}{p95_small:14.2f}{p95_large:14.2f}")
    print(f"batch writes (batch_size={size}): {batch_rate:.0f} msgs/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1_000, help="first read point")
    parser.add_argument("--large", type=int, default=10_000, help="second read point")
    parser.add_argument("--singles", type=int, default=500, help="single writes at the end")
    parser.add_argument("--rounds", type=int, default=200, help="reads per measurement")
    parser.add_argument("--batch-size", type=int, default=500)
    args = parser.parse_args()
    url = os.environ.get("NEO4J_URI")
    server = None
    if not url:
        from memory_core_dev.neo4j_server import Neo4jServer

        server = Neo4jServer().start()
        url = server.uri
        print(f"started a local Neo4j in {server.last_start_seconds:.1f} s")
    try:
        asyncio.run(run(url, args.small, args.large, args.singles, args.rounds, args.batch_size))
    finally:
        if server is not None:
            server.close()


if __name__ == "__main__":
    main()
