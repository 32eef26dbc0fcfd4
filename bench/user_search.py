"""``python -m bench.user_search [--messages N] [--path FILE]``: search across one user's
sessions in a multi-tenant SQLite store, for the busiest user and a small one.

The store holds ``--messages`` messages (default 300,000) in sessions of 30, owned by 100
users by a Zipf law (user 0 holds about a fifth of them); each message is 12 words drawn
from 3,000 rare words and 8 function words that together make a tenth of the text. Two
queries: one rare word, and a question of four function words and a rare word (which
matches most of the store). It prints the p50 and p95 of 50 searches of each. The store is
built once into ``--path`` (default: a temporary file) and reused when the file exists.
Not in CI (``tests/bench/test_bench_user_search.py`` runs it on a tiny store); the figures
are in docs/benchmarks.md ("Before and after").
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from memory_core import MemoryBackend, open_backend

USERS = 100
SESSION = 30
RARE = [f"w{n}" for n in range(3_000)]
VOCABULARY = RARE + "the a is my we and to of".split() * 40
SEARCHES = 50
WARMUP = 10


@dataclass(frozen=True)
class Timing:
    """One user's searches of one kind: p50 and p95 in milliseconds."""

    user: str
    query: str
    p50: float
    p95: float


async def build(memory: MemoryBackend, messages: int, rng: random.Random) -> None:
    """Write ``messages`` messages in sessions of :data:`SESSION`, users drawn by Zipf."""
    weights = [1 / (k + 1) for k in range(USERS)]
    owners = rng.choices(range(USERS), weights=weights, k=max(1, messages // SESSION))
    for number, owner in enumerate(owners):
        rows = [
            {"role": "user", "content": " ".join(rng.choices(VOCABULARY, k=12))}
            for _ in range(SESSION)
        ]
        await memory.add_messages_batch(f"s{number}", rows, user_identifier=f"user-{owner}")


async def _time(memory: MemoryBackend, user: str, queries: list[str]) -> tuple[float, float]:
    spent = []
    for query in queries:
        began = time.perf_counter()
        await memory.search_messages(query, user_identifier=user, limit=10)
        spent.append((time.perf_counter() - began) * 1000)
    kept = spent[WARMUP:] if len(spent) > WARMUP * 2 else spent
    p95 = statistics.quantiles(kept, n=20)[18] if len(kept) > 1 else kept[0]
    return statistics.median(kept), p95


async def measure(path: Path, messages: int, searches: int = SEARCHES) -> list[Timing]:
    """Build the store at ``path`` unless it exists, then time both queries for the
    busiest user and for the tenth."""
    rng = random.Random(5)
    fresh = not path.exists()
    async with open_backend(f"sqlite:///{path}", multi_tenant=True) as memory:
        if fresh:
            await build(memory, messages, rng)
        timings = []
        for user in ("user-0", "user-9"):
            words = [rng.choice(RARE) for _ in range(searches)]
            for kind, queries in (
                ("one rare word", words),
                ("question", [f"what is my {word} and" for word in words]),
            ):
                p50, p95 = await _time(memory, user, queries)
                timings.append(Timing(user, kind, p50, p95))
        return timings


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.user_search")
    parser.add_argument("--messages", type=int, default=300_000)
    parser.add_argument("--path", type=Path, help="the store (built when missing)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = args.path or Path(folder) / "users.db"
        for timing in asyncio.run(measure(path, args.messages)):
            print(
                f"{timing.user:7} {timing.query:13}  p50 {timing.p50:7.2f} ms  "
                f"p95 {timing.p95:7.2f} ms"
            )


if __name__ == "__main__":
    main()
