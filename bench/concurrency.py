"""Concurrent agents against one store: each agent runs turns (read context, search its
session, add the user message and the reply) on a session of its own, all at once.

In one process the agents are tasks sharing one backend object (its connection pool);
for embedded, ``in_processes`` also splits them over several OS processes sharing the
file store, as several workers of one application would. Figures: turns per second over
the wall time from the first turn to the last, p95 of a turn, errors (each one's first
message kept).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .core import percentile
from .scale_data import SEED, WORDS, Plan


def jobs(plan: Plan, agents: int, seed: int) -> list[tuple[str, str]]:
    """``(user, session)`` of each agent: distinct sessions, drawn with ``seed``."""
    rng = random.Random(seed)
    count = len(plan.lengths)
    picks = rng.sample(range(count), agents) if agents <= count else list(range(agents))
    return [(plan.user(i % count), plan.session(i % count)) for i in picks]


def turns_each(agents: int, total: int, least: int) -> int:
    """Turns per agent: ``total`` over all agents, at least ``least`` each."""
    return max(least, total // agents)


async def _agents(
    turn: Callable[[str, str, str], Any], work: list[tuple[str, str]], turns: int
) -> tuple[list[float], list[str]]:
    spent: list[float] = []
    errors: list[str] = []

    async def agent(user: str, session: str, k: int) -> None:
        for t in range(turns):
            start = time.perf_counter()
            try:
                await turn(user, session, WORDS[(k + t) % len(WORDS)])
            except Exception as exc:  # an error is a figure here, not a crash
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
            spent.append((time.perf_counter() - start) * 1000)

    await asyncio.gather(*(agent(u, s, k) for k, (u, s) in enumerate(work)))
    return spent, errors


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def processes_cpu_s(pids: list[int]) -> float:
    """CPU seconds (user + system, every thread) the processes ``pids`` and their live
    children have used so far (Linux ``/proc``; 0 for what cannot be read)."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}  # pid -> (parent, cpu seconds)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    chosen, total = set(pids), 0.0
    for pid, (parent, cpu) in stats.items():
        if pid in chosen or parent in chosen:
            total += cpu
    return total


def figures(spent: list[float], errors: list[str], wall_s: float, agents: int) -> dict[str, Any]:
    """One concurrency level's entry."""
    return {
        "agents": agents,
        "turns": len(spent),
        "turns_per_s": len(spent) / wall_s if wall_s else None,
        "p50_ms": percentile(spent, 0.5),
        "p95_ms": percentile(spent, 0.95),
        "errors": len(errors),
        "first_errors": sorted(set(errors))[:3],
    }


async def in_process(
    subject: Any, plan: Plan, agents: int, total: int, least: int
) -> dict[str, Any]:
    """``agents`` concurrent agents as tasks of this process on ``subject``."""
    work = jobs(plan, agents, SEED + agents)
    pids = subject.server_pids()
    client, server = _own_cpu_s(), processes_cpu_s(pids)
    start = time.perf_counter()
    spent, errors = await _agents(subject.agent_turn, work, turns_each(agents, total, least))
    entry = figures(spent, errors, time.perf_counter() - start, agents)
    # Where the CPU went (2 cores here): the bench process, and the store's server
    # processes (Neo4j's JVM, the NAMS server, PostgreSQL) where the subject knows them.
    entry["client_cpu_s"] = _own_cpu_s() - client
    entry["server_cpu_s"] = processes_cpu_s(pids) - server if pids else None
    return entry


def _worker(
    url: str, prefix: str, work: list[tuple[str, str]], turns: int, go: Any, out: Any
) -> None:
    from memory_core import open_backend

    from .scale_subjects import Ours

    async def main() -> None:
        async with open_backend(url, multi_tenant=True) as backend:
            subject = Ours("embedded", lambda u: (backend, prefix + u))
            first_user, first_session = work[0]
            await backend.get_conversation(
                first_session, limit=1, user_identifier=prefix + first_user
            )
            out.put(("ready", None))
            await asyncio.to_thread(go.wait)
            start = time.time()
            spent, errors = await _agents(subject.agent_turn, work, turns)
            out.put(("done", (start, time.time(), spent, errors)))

    asyncio.run(main())


def in_processes(
    url: str, prefix: str, plan: Plan, agents: int, processes: int, total: int, least: int
) -> dict[str, Any]:
    """``agents`` agents split over ``processes`` OS processes (spawned; timing starts
    when every one has its store open); each user's tenant is ``prefix`` + its name."""
    work = jobs(plan, agents, SEED + agents)
    count = min(processes, agents)
    context = multiprocessing.get_context("spawn")
    go, out = context.Event(), context.Queue()
    turns = turns_each(agents, total, least)
    workers = [
        context.Process(target=_worker, args=(url, prefix, work[p::count], turns, go, out))
        for p in range(count)
    ]
    for worker in workers:
        worker.start()
    try:
        for _ in workers:
            out.get(timeout=120)
        go.set()
        done = [out.get(timeout=1800)[1] for _ in workers]
    finally:
        for worker in workers:
            worker.join(60)
    spent = [ms for d in done for ms in d[2]]
    errors = [e for d in done for e in d[3]]
    wall = max(d[1] for d in done) - min(d[0] for d in done)
    entry = figures(spent, errors, wall, agents)
    entry["processes"] = count
    return entry
