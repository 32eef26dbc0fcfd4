"""What portable session names cost on NAMS: list requests and time of a cold lookup, a
warm one, and the first write to a new name, with N conversations in the workspace.

Run ``python bench/bench_nams_names.py [--conversations 1000]``. Starts the
NAMS-compatible server over ``memory://`` on 127.0.0.1 and counts requests in its request
record; prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import math
import time

import anyio
import httpx

from memory_core import open_backend
from memory_core.server import BackgroundServer, Traffic, create_app

KEY = "bench-key"


def _lists(traffic: Traffic, mark: int) -> int:
    return sum(
        1 for r in traffic.records()[mark:] if r.method == "GET" and r.path == "/v1/conversations"
    )


async def _measure(url: str, traffic: Traffic, total: int) -> None:
    options = {"api_key": KEY, "trust_env": False}
    async with open_backend(url, **options) as writer:
        await writer.add_message("needle", "user", "here")
    async with open_backend(url, **options) as reader:
        mark, start = len(traffic.records()), time.perf_counter()
        await reader.get_conversation("needle", limit=1)
        cold = time.perf_counter() - start
        print(
            f"cold lookup + read: {_lists(traffic, mark)} list requests "
            f"(⌈{total}/200⌉ = {math.ceil(total / 200)}), {cold * 1000:.1f} ms"
        )
        mark, start = len(traffic.records()), time.perf_counter()
        for _ in range(20):
            await reader.get_conversation("needle", limit=1)
        warm = (time.perf_counter() - start) / 20
        print(f"warm read: {_lists(traffic, mark)} list requests, {warm * 1000:.1f} ms each")
        mark, start = len(traffic.records()), time.perf_counter()
        await reader.add_message("brand-new", "user", "first")
        first = time.perf_counter() - start
        print(
            f"first write to a new name: {_lists(traffic, mark)} list requests "
            f"+ 1 create, {first * 1000:.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=1000)
    args = parser.parse_args()
    logging.getLogger("memory_core.server").setLevel(logging.WARNING)
    traffic = Traffic(size=1_000_000)
    server = BackgroundServer(create_app("memory://", api_keys=[KEY], traffic=traffic)).start()
    try:
        with httpx.Client(
            base_url=server.base_url, headers={"Authorization": f"Bearer {KEY}"}, trust_env=False
        ) as client:
            for _ in range(args.conversations - 1):
                client.post("/conversations", json={})
        print(f"{args.conversations} conversations in the workspace")
        anyio.run(_measure, "nams+" + server.base_url, traffic, args.conversations)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
