"""``python -m bench.bolt_pool [NEO4J_URI]``: agent turns on Bolt at 1, 8 and 128 agents,
with memory-core's default pool (sized from the server's processors), with the driver's
default of 100 connections and with a pool of 8, printing turns per second and Neo4j's
CPU per turn (when the bench starts the Neo4j, or ``--pid`` names it).

Each agent works on a session of its own (20 messages to start) and each turn reads 20
messages, searches the session and adds two messages, as the scale bench's agents do.
Not in CI; the figures are in docs/benchmarks.md ("Scale").
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from memory_core import open_backend

from .concurrency import processes_cpu_s
from .scale_data import rows
from .scale_stores import neo4j_uri

USERS = 7
LEVELS = (1, 8, 128)
POOLS: tuple[int | None, ...] = (None, 100, 8)  # None: no option, memory-core's default


async def _turn(backend: Any, session: str, user: str) -> None:
    await backend.get_conversation(session, limit=20, user_identifier=user)
    await backend.search_messages("meadow", session_id=session, limit=5, user_identifier=user)
    await backend.add_message(session, "user", "tell me about meadow", user_identifier=user)
    await backend.add_message(session, "assistant", "meadow: noted", user_identifier=user)


async def _level(backend: Any, tag: str, agents: int, pids: list[int]) -> str:
    each = max(3, 128 // agents)

    async def agent(k: int) -> None:
        for _ in range(each):
            await _turn(backend, f"{tag}-{k}", f"u{k % USERS}")

    cpu, start = processes_cpu_s(pids), time.perf_counter()
    await asyncio.gather(*(agent(k) for k in range(agents)))
    wall, turns = time.perf_counter() - start, agents * each
    server = (
        f"  Neo4j CPU {(processes_cpu_s(pids) - cpu) * 1000 / turns:.1f} ms/turn" if pids else ""
    )
    return f"{agents:>4} agents  {turns / wall:6.1f} turns/s{server}"


async def run(uri: str | None, pids: list[int], rounds: int) -> None:
    async with neo4j_uri(uri) as (found, _, started):
        pids = pids or started
        for _ in range(rounds):
            for pool in POOLS:
                tag = f"pool-{pool}-{time.time_ns()}"
                option = {} if pool is None else {"max_connection_pool_size": pool}
                async with open_backend(found, multi_tenant=True, **option) as backend:
                    size = backend.store.pool_stats()["max"]
                    label = f"{'default' if pool is None else 'set'} {size:>3}"
                    for k in range(max(LEVELS)):
                        await backend.bulk_add_messages(
                            f"{tag}-{k}", rows(k, 0, 20), user_identifier=f"u{k % USERS}"
                        )
                    for agents in LEVELS:
                        print(f"pool {label}  " + await _level(backend, tag, agents, pids))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bolt_pool")
    parser.add_argument("uri", nargs="?", help="a Neo4j to use (default: start one)")
    parser.add_argument("--pid", type=int, action="append", default=[], help="its process")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    asyncio.run(run(args.uri, args.pid, args.rounds))


if __name__ == "__main__":
    main()
