"""``python -m bench.erasure``: what ``forget_user`` costs, and what other users' writes
wait meanwhile.

    python -m bench.erasure                          # embedded and Bolt, 1M messages
    python -m bench.erasure --only embedded --total 200000
    python -m bench.erasure --smoke                  # tiny sizes: checks the harness works

A store holds ``--total`` messages: the forgotten user's ``--user-messages`` (10k, in 10
sessions) and the rest spread over other users' sessions of 1,000 messages. Then, while
``forget_user`` runs, one task adds single messages for other users back to back; the
figures are the erasure's duration and the latency of those adds (p50, p99, max), next
to the same adds with no erasure running. Embedded runs on a SQLite file in a temporary
folder; Bolt uses ``NEO4J_URI`` when set, else starts the test-suite's Neo4j (its data is
deleted at the end). Results go to ``bench/results/erasure.json`` and ``erasure.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

from memory_core import MemoryBackend, open_backend

from .core import percentile

RESULTS = Path(__file__).with_name("results")
BATCH = 1000


@dataclass
class Figures:
    backend: str
    total_messages: int
    user_messages: int
    load_seconds: float
    forget_seconds: float
    counts: dict[str, int]
    adds_during: int
    during_p50_ms: float
    during_p99_ms: float
    during_max_ms: float
    baseline_p50_ms: float
    baseline_p99_ms: float


def _rows(count: int, label: str) -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 else "assistant", "content": f"{label} message {i} lorem ipsum"}
        for i in range(count)
    ]


async def _load(backend: MemoryBackend, user: str, total: int, mine: int) -> float:
    started = time.perf_counter()
    for session in range(10):
        await backend.add_messages_batch(
            f"{user}-s{session}", _rows(mine // 10, user), user_identifier=user
        )
    others = total - mine
    for block in range(0, others, BATCH):
        owner = f"other-{block // BATCH % 500}"
        await backend.add_messages_batch(
            f"{owner}-b{block}", _rows(min(BATCH, others - block), owner), user_identifier=owner
        )
    return time.perf_counter() - started


async def _adds(backend: MemoryBackend, stop: asyncio.Event, limit: int | None) -> list[float]:
    """Single adds by other users, back to back, until ``stop`` (or ``limit`` adds)."""
    latencies: list[float] = []
    while not stop.is_set() and (limit is None or len(latencies) < limit):
        owner = f"writer-{len(latencies) % 50}"
        started = time.perf_counter()
        await backend.add_message(f"{owner}-live", "user", "a live write", user_identifier=owner)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


async def measure(url: str, name: str, total: int, mine: int) -> Figures:
    user = f"forget-{uuid4().hex[:12]}"
    async with open_backend(url) as backend:
        load = await _load(backend, user, total, mine)
        baseline = await _adds(backend, asyncio.Event(), 300)
        stop = asyncio.Event()
        writer = asyncio.create_task(_adds(backend, stop, None))
        started = time.perf_counter()
        report = await backend.forget_user(user)
        forget = time.perf_counter() - started
        stop.set()
        during = await writer
    return Figures(
        backend=name,
        total_messages=total,
        user_messages=mine,
        load_seconds=round(load, 1),
        forget_seconds=round(forget, 2),
        counts=report.counts,
        adds_during=len(during),
        during_p50_ms=round(percentile(during, 0.5), 2),
        during_p99_ms=round(percentile(during, 0.99), 2),
        during_max_ms=round(max(during), 2),
        baseline_p50_ms=round(percentile(baseline, 0.5), 2),
        baseline_p99_ms=round(percentile(baseline, 0.99), 2),
    )


async def _bolt(total: int, mine: int) -> Figures:
    uri = os.environ.get("NEO4J_URI")
    server = None
    if not uri:
        from memory_core_dev.neo4j_server import Neo4jServer

        server = Neo4jServer().start()
        uri = server.uri
    try:
        return await measure(uri, "bolt", total, mine)
    finally:
        if server is not None:
            server.close()


def _table(rows: list[Figures]) -> list[str]:
    lines = [
        "| backend | messages | user's | forget_user | adds during | p50 | p99 | max "
        "| p50 idle | p99 idle |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for f in rows:
        lines.append(
            f"| {f.backend} | {f.total_messages:,} | {f.user_messages:,} | "
            f"{f.forget_seconds} s | {f.adds_during} | {f.during_p50_ms} ms | "
            f"{f.during_p99_ms} ms | {f.during_max_ms} ms | {f.baseline_p50_ms} ms | "
            f"{f.baseline_p99_ms} ms |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.erasure", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes; writes no results")
    parser.add_argument("--only", default="embedded,bolt", help="embedded and/or bolt")
    parser.add_argument("--total", type=int, default=1_000_000, help="messages in the store")
    parser.add_argument("--bolt-total", type=int, default=None, help="--total for Bolt only")
    parser.add_argument("--user-messages", type=int, default=10_000, help="the user's messages")
    args = parser.parse_args(argv)
    total, mine = (2_000, 200) if args.smoke else (args.total, args.user_messages)
    only = set(args.only.split(","))
    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} cores", flush=True)
    rows: list[Figures] = []
    if "embedded" in only:
        with tempfile.TemporaryDirectory() as folder:
            url = f"sqlite:///{Path(folder) / 'erasure.db'}"
            rows.append(asyncio.run(measure(url, "embedded", total, mine)))
            print(_table(rows)[-1], flush=True)
    if "bolt" in only:
        rows.append(asyncio.run(_bolt(args.bolt_total or total, mine)))
    lines = _table(rows)
    print("\n".join(lines))
    if not args.smoke:
        heap = os.environ.get("NEO4J_TEST_HEAP") if "bolt" in only else None
        words = [f"NEO4J_TEST_HEAP={heap}"] if heap else []
        command = " ".join([*words, "python -m bench.erasure", *(argv or sys.argv[1:])])
        _save(command, load, rows)
    return 0


def _save(command: str, load: float, rows: list[Figures]) -> None:
    """Keep the latest figures of each backend and store size (a run of one backend or
    size keeps the others', so the results show how the cost grows)."""
    path = RESULTS / "erasure.json"
    kept = json.loads(path.read_text())["results"] if path.exists() else []
    new = {(r.backend, r.total_messages) for r in rows}
    stamp = {"command": command, "load_average": round(load, 2), "cores": os.cpu_count()}
    results = [r for r in kept if (r["backend"], r["total_messages"]) not in new]
    results += [{**asdict(r), **stamp} for r in rows]
    results.sort(key=lambda r: (r["backend"], r["total_messages"]))
    path.write_text(json.dumps({"results": results}, indent=2) + "\n")
    table = _table([Figures(**{k: r[k] for k in Figures.__dataclass_fields__}) for r in results])
    runs = [
        f"- {r['backend']} {r['total_messages']:,}: `{r['command']}` (load average "
        f"{r['load_average']} on "
        f"{r['cores']} cores)"
        for r in results
    ]
    (RESULTS / "erasure.md").write_text(
        "# forget_user cost\n\n" + "\n".join(table) + "\n\n" + "\n".join(runs) + "\n"
    )


if __name__ == "__main__":
    raise SystemExit(main())
