"""``python -m bench.turn_latency [--latency S] [--turns N]``: agent turns on the
NAMS-compatible server with ``--latency`` seconds (default 0.02) added to every response,
as a service in another region would answer, printing the wall time and the requests of a
turn (a question naming one entity, then its reply).

What it shows is the number of round trips a turn waits: the requests a turn sends at once
share one wait. Not in CI (``tests/bench/test_bench_turn_latency.py`` runs it without
latency); the figures are in docs/benchmarks.md ("Before and after").
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass

from memory_core.turns import TurnMemory
from memory_core_dev.nams_server import start_nams_server


@dataclass(frozen=True)
class TurnCost:
    """Per turn: the wall time in milliseconds and the requests the server received."""

    wall_ms: float
    requests: float


async def measure(latency: float, turns: int) -> TurnCost:
    """Run ``turns`` turns against a server of its own, ``latency`` added to each response."""
    server = start_nams_server()
    try:
        async with server.backend(server.workspace("turns"), trust_env=False) as memory:
            entity = await memory.add_entity("Acme Corp", "ORGANIZATION")
            agent = await TurnMemory.start_conversation(memory, "bench")
            server.faults.set(latency=latency)
            mark = server.mark()
            began = time.perf_counter()
            for k in range(turns):
                await agent.open_turn(f"t{k}", f"What about {entity.name}? ({k})")
                await agent.close_turn(f"t{k}", f"It is a company ({k}).")
            wall = time.perf_counter() - began
            server.faults.reset()
            return TurnCost(wall / turns * 1000, len(server.since(mark)) / turns)
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.turn_latency")
    parser.add_argument("--latency", type=float, default=0.02, help="seconds a response waits")
    parser.add_argument("--turns", type=int, default=10)
    args = parser.parse_args()
    cost = asyncio.run(measure(args.latency, args.turns))
    print(
        f"NAMS turn, {args.latency * 1000:.0f} ms a response: {cost.wall_ms:.1f} ms a turn, "
        f"{cost.requests:.1f} requests a turn"
    )


if __name__ == "__main__":
    main()
