"""Benchmark of the PostgreSQL backend: write rates, newest-50 reads at 1k vs 10k, and the
round trips of each call.

Run ``python bench/bench_postgres.py`` from the repository root. Uses ``PG_TEST_URL``
when set, else starts a throwaway server (``memory_core_dev.postgres_server``); works in
a database of its own, dropped at the end. Prints figures; asserts nothing. The side by
side comparison with the floor and the peers is ``python -m bench --only postgres``.

What it shows: ``add_message`` (also with an idempotency key) and ``add_messages_batch``
on a session that has a conversation, and ``get_conversation``, are one statement each
(one round trip; a session's first write is two), and the newest-50 read walks the
``(conversation_id, seq)`` index backwards, so its latency at 10,000 messages is about
the same as at 1,000.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script

from bench.bench_bolt import WARMUP, batch_writes, read_latency, single_writes
from bench.common import rows
from bench.postgres import RoundTrips, database
from memory_core import MemoryBackend, open_backend


async def round_trips(backend: MemoryBackend, session: str) -> dict[str, float]:
    """Round trips of one call of each kind on an existing session."""
    trips = RoundTrips(backend)
    calls = {
        "add_message": lambda: backend.add_message(session, "user", "counted"),
        "add_message (idempotency key)": lambda: backend.add_message(
            session, "user", "counted", idempotency_key="counted"
        ),
        "add_message (first of a session)": lambda: backend.add_message(
            f"{session}-new", "user", "counted"
        ),
        "add_messages_batch (100)": lambda: backend.add_messages_batch(session, rows(100)),
        "get_conversation": lambda: backend.get_conversation(session, limit=50),
        "search_messages": lambda: backend.search_messages("topic", session_id=session),
        "list_conversations": lambda: backend.list_conversations(limit=50),
    }
    found = {}
    for name, call in calls.items():
        before = trips.count
        await call()
        found[name] = trips.count - before
    return found


async def run(small: int, large: int, singles: int, rounds: int, size: int) -> None:
    async with database() as url, open_backend(url) as backend:
        print(f"backend: {backend.describe()}")
        await single_writes(backend, "warmup", WARMUP)  # prepare the statements
        await batch_writes(backend, "warmup", WARMUP, size)
        rate_small = await single_writes(backend, "bench", small)
        median_small, p95_small = await read_latency(backend, "bench", rounds)
        batch_rate = await batch_writes(backend, "bench", large - small - singles, size)
        rate_large = await single_writes(backend, "bench", singles)
        median_large, p95_large = await read_latency(backend, "bench", rounds)
        trips = await round_trips(backend, "bench")
    print(f"{'':32}{'at ' + str(small):>14}{'at ' + str(large):>14}")
    print(f"{'add_message (msgs/s)':32}{rate_small:14.0f}{rate_large:14.0f}")
    print(f"{'newest-50 read, median (ms)':32}{median_small:14.2f}{median_large:14.2f}")
    print(f"{'newest-50 read, p95 (ms)':32}{p95_small:14.2f}{p95_large:14.2f}")
    print(f"batch writes (batch_size={size}): {batch_rate:.0f} msgs/s")
    for name, count in trips.items():
        print(f"round trips of {name}: {count:g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1_000, help="first read point")
    parser.add_argument("--large", type=int, default=10_000, help="second read point")
    parser.add_argument("--singles", type=int, default=500, help="single writes at the end")
    parser.add_argument("--rounds", type=int, default=200, help="reads per measurement")
    parser.add_argument("--batch-size", type=int, default=500)
    args = parser.parse_args()
    asyncio.run(run(args.small, args.large, args.singles, args.rounds, args.batch_size))


if __name__ == "__main__":
    main()
