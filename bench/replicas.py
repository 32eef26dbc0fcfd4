"""Read throughput on the primary alone and on a standby (``read_from="replica"``).

Run ``python -m bench.replicas`` from the repository root (``--readers``, ``--seconds``,
``--sessions``, ``--messages``, ``--standbys``). It starts a pg_auto_failover formation of
its own on 127.0.0.1 (:class:`memory_core_dev.pg_ha.HaFormation`: a monitor, a primary and
one synchronous standby, or two), loads ``--sessions`` conversations of ``--messages``
messages, waits for the standbys to replay them, then runs ``--readers`` concurrent
readers on one backend object for ``--seconds`` per case:

* ``newest-20``: ``get_conversation(session, limit=20)`` of a random session;
* ``search``: ``search_messages(word, session_id=session, limit=10)``;
* ``write+read``: ``add_message`` then ``get_conversation(limit=20)`` of the same session
  (each read waits for the standby to replay that write: read-your-writes).

each with ``read_from="primary"`` and ``read_from="replica"``. Printed, and written to
``bench/results/replicas.json`` (``replicas-2-standbys.json`` with two): calls per second
and the median and p95 latency. Figures, never assertions; every server shares the
machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg

from memory_core import MemoryBackend, open_backend
from memory_core_dev.pg_ha import HaFormation

RESULTS = Path(__file__).parent / "results" / "replicas.json"
WORDS = ("lisbon", "invoice", "meeting", "flight", "budget", "report", "hotel", "train")
Call = Callable[[MemoryBackend, str], Awaitable[object]]


async def _newest(backend: MemoryBackend, session: str) -> object:
    return await backend.get_conversation(session, limit=20)


async def _search(backend: MemoryBackend, session: str) -> object:
    return await backend.search_messages(random.choice(WORDS), session_id=session, limit=10)


async def _write_read(backend: MemoryBackend, session: str) -> object:
    await backend.add_message(session, "user", f"{random.choice(WORDS)} noted")
    return await backend.get_conversation(session, limit=20)


CASES: dict[str, Call] = {"newest-20": _newest, "search": _search, "write+read": _write_read}


async def _load(url: str, sessions: int, messages: int) -> list[str]:
    names = [f"s{n}" for n in range(sessions)]
    async with open_backend(url) as backend:
        for name in names:
            items = [
                {"role": "user", "content": f"{random.choice(WORDS)} item {k} {uuid.uuid4().hex}"}
                for k in range(messages)
            ]
            await backend.add_messages_batch(name, items)
    return names


def _caught_up(formation: HaFormation) -> None:
    with psycopg.connect(formation.url, autocommit=True) as primary:
        target = primary.execute("SELECT pg_current_wal_lsn()").fetchone()
    for standby in (n for n, (r, _) in formation.states().items() if r == "secondary"):
        with psycopg.connect(formation.node_url(standby), autocommit=True) as conn:
            query = "SELECT pg_last_wal_replay_lsn() >= %s"
            while not (conn.execute(query, target).fetchone() or (False,))[0]:
                time.sleep(0.05)


async def _reader(
    backend: MemoryBackend, call: Call, names: list[str], until: float, took: list[float]
) -> None:
    while time.monotonic() < until:
        began = time.perf_counter()
        await call(backend, random.choice(names))
        took.append(time.perf_counter() - began)


async def _case(
    url: str, call: Call, names: list[str], args: Any, **options: Any
) -> dict[str, float]:
    took: list[float] = []
    async with open_backend(
        url, max_size=args.readers, min_size=args.readers, **options
    ) as backend:
        for name in names:  # the pools open, the server's caches warm
            await _newest(backend, name)
        until = time.monotonic() + args.seconds
        await asyncio.gather(
            *(_reader(backend, call, names, until, took) for _ in range(args.readers))
        )
    took.sort()
    return {
        "calls_per_s": round(len(took) / args.seconds, 1),
        "p50_ms": round(statistics.median(took) * 1000, 2),
        "p95_ms": round(took[int(len(took) * 0.95)] * 1000, 2),
    }


async def _run(formation: HaFormation, args: argparse.Namespace) -> dict[str, Any]:
    url = f"{formation.url}&schema=bench_replicas"
    names = await _load(url, args.sessions, args.messages)
    await asyncio.to_thread(_caught_up, formation)
    figures: dict[str, Any] = {}
    for case, call in CASES.items():
        for read_from in ("primary", "replica"):
            result = await _case(url, call, names, args, read_from=read_from)
            figures[f"{case} / {read_from}"] = result
            print(f"{case:>11} on {read_from:<7}: {result}", flush=True)
    return figures


def main() -> None:
    """Start a formation, measure, print and write the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--standbys", type=int, choices=(1, 2), default=1)
    args = parser.parse_args()
    formation = HaFormation(standbys=args.standbys).start()
    try:
        figures = asyncio.run(_run(formation, args))
    finally:
        formation.stop()
    path = RESULTS if args.standbys == 1 else RESULTS.with_name("replicas-2-standbys.json")
    path.write_text(
        json.dumps(
            {"args": vars(args), "machine": platform.platform(), "figures": figures}, indent=2
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
