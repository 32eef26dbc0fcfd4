"""``python -m bench.postgres_purge``: what erasure on PostgreSQL costs: ``forget_user``
(with its statistics refresh) and the purge that rewrites the tables afterwards, and how
long other users' writes wait while it runs.

    python -m bench.postgres_purge                    # 100,000 messages
    python -m bench.postgres_purge --total 1000000
    python -m bench.postgres_purge --smoke            # tiny sizes: checks the harness works

A store holds ``--total`` messages of 12 words each (from 20,000 made-up words): the
forgotten user's ``--user-messages`` (10k, in 10 sessions) and the rest in other users'
sessions of 1,000 messages. The figures: ``forget_user``'s duration, the statistics
refresh it ends with (timed alone: a ``forget_user`` of a user with nothing), the purge
of each table, the schema's size before and after, and the latency of single adds by
other users made back to back during the purge (they wait while their table is
rewritten). Uses ``PG_BENCH_URL`` when
set, else starts the test suite's PostgreSQL (deleted at the end). Results go to
``bench/results/postgres-purge.json`` and ``postgres-purge.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

import psycopg

from memory_core import MemoryBackend, open_backend
from memory_core.backends.postgres.store import PostgresStore

from .core import percentile

RESULTS = Path(__file__).with_name("results")
BATCH = 1000
WORDS = [f"w{n:05d}x" for n in range(20_000)]


@dataclass
class Figures:
    total_messages: int
    user_messages: int
    load_seconds: float
    forget_seconds: float
    statistics_seconds: float
    purge_seconds: float
    purge_tables: dict[str, float]
    mb_before: float
    mb_after: float
    adds_during: int
    during_p50_ms: float
    during_max_ms: float
    server: str


def _rows(count: int, rng: random.Random) -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 else "assistant", "content": " ".join(rng.choices(WORDS, k=12))}
        for i in range(count)
    ]


async def _load(backend: MemoryBackend, user: str, total: int, mine: int) -> float:
    rng = random.Random(5)
    started = time.perf_counter()
    for session in range(10):
        rows = _rows(mine // 10, rng)
        await backend.add_messages_batch(f"{user}-s{session}", rows, user_identifier=user)
    others = total - mine
    for block in range(0, others, BATCH):
        owner = f"other-{block // BATCH % 500}"
        rows = _rows(min(BATCH, others - block), rng)
        await backend.add_messages_batch(f"{owner}-b{block}", rows, user_identifier=owner)
    return time.perf_counter() - started


async def _adds(backend: MemoryBackend, stop: asyncio.Event) -> list[float]:
    latencies: list[float] = []
    while not stop.is_set():
        owner = f"writer-{len(latencies) % 50}"
        started = time.perf_counter()
        await backend.add_message(f"{owner}-live", "user", "a live write", user_identifier=owner)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def _megabytes(url: str, schema: str) -> float:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "WHERE c.relnamespace = %s::regnamespace AND c.relkind = 'r'",
            (schema,),
        ).fetchone()
    return round(int(row[0] if row else 0) / 1e6, 1)


async def measure(server_url: str, total: int, mine: int) -> Figures:
    schema = f"purge_{uuid4().hex[:8]}"
    url = f"{server_url}{'&' if '?' in server_url else '?'}schema={schema}"
    user = f"forget-{uuid4().hex[:12]}"
    async with open_backend(url) as backend:
        store = backend.store
        assert isinstance(store, PostgresStore)
        load = await _load(backend, user, total, mine)
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f"VACUUM ANALYZE {schema}.messages")  # as autovacuum would have
            version = str(conn.info.server_version)
        started = time.perf_counter()
        await backend.forget_user(user)
        forget = time.perf_counter() - started
        started = time.perf_counter()
        await backend.forget_user(f"nobody-{uuid4().hex}")  # finds nothing: the refresh
        statistics = time.perf_counter() - started
        before = _megabytes(server_url, schema)
        stop = asyncio.Event()
        writer = asyncio.create_task(_adds(backend, stop))
        started = time.perf_counter()
        purged = await store.purge()
        purge = time.perf_counter() - started
        stop.set()
        during = await writer
        after = _megabytes(server_url, schema)
    return Figures(
        total_messages=total,
        user_messages=mine,
        load_seconds=round(load, 1),
        forget_seconds=round(forget, 2),
        statistics_seconds=round(statistics, 2),
        purge_seconds=round(purge, 2),
        purge_tables=purged.tables,
        mb_before=before,
        mb_after=after,
        adds_during=len(during),
        during_p50_ms=round(percentile(during, 0.5), 2),
        during_max_ms=round(max(during), 2),
        server=f"PostgreSQL {version[:-4]}.{int(version[-2:])}",
    )


def _run(total: int, mine: int) -> Figures:
    url = os.environ.get("PG_BENCH_URL")
    if url:
        return asyncio.run(measure(url, total, mine))
    from memory_core_dev.postgres_server import PostgresServer

    server = PostgresServer().start()
    try:
        return asyncio.run(measure(server.url, total, mine))
    finally:
        server.close()


def _table(rows: list[Figures]) -> list[str]:
    lines = [
        "| messages | forget_user | its statistics refresh | purge | purge of messages "
        "| size before → after | adds during the purge | p50 | longest |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for f in rows:
        lines.append(
            f"| {f.total_messages:,} | {f.forget_seconds} s | {f.statistics_seconds} s | "
            f"{f.purge_seconds} s | {f.purge_tables.get('messages', 0.0)} s | "
            f"{f.mb_before} → {f.mb_after} MB | {f.adds_during} | {f.during_p50_ms} ms | "
            f"{f.during_max_ms} ms |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.postgres_purge", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes; writes no results")
    parser.add_argument("--total", type=int, default=100_000, help="messages in the store")
    parser.add_argument("--user-messages", type=int, default=10_000, help="the user's messages")
    args = parser.parse_args(argv)
    total, mine = (2_000, 200) if args.smoke else (args.total, args.user_messages)
    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} cores", flush=True)
    figures = _run(total, mine)
    print("\n".join(_table([figures])))
    if not args.smoke:
        _save(f"python -m bench.postgres_purge --total {total}", load, figures)
    return 0


def _save(command: str, load: float, figures: Figures) -> None:
    """Keep the latest figures of each store size."""
    path = RESULTS / "postgres-purge.json"
    kept = json.loads(path.read_text())["results"] if path.exists() else []
    stamp = {"command": command, "load_average": round(load, 2), "cores": os.cpu_count()}
    results = [r for r in kept if r["total_messages"] != figures.total_messages]
    results.append({**asdict(figures), **stamp})
    results.sort(key=lambda r: int(r["total_messages"]))
    path.write_text(json.dumps({"results": results}, indent=2) + "\n")
    fields = Figures.__dataclass_fields__
    table = _table([Figures(**{k: r[k] for k in fields}) for r in results])
    runs = [
        f"- {r['total_messages']:,}: `{r['command']}` on {r['server']} (load average "
        f"{r['load_average']} on {r['cores']} cores)"
        for r in results
    ]
    (RESULTS / "postgres-purge.md").write_text(
        "# Erasure on PostgreSQL: forget_user and the purge\n\n"
        + "\n".join(table)
        + "\n\n"
        + "\n".join(runs)
        + "\n"
    )


if __name__ == "__main__":
    raise SystemExit(main())
