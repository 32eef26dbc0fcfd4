"""Benchmark of memory_core.transfer: export at 100k messages with its peak RSS, and the
copy rate embedded → Bolt (and embedded → embedded for comparison).

Run ``python bench/bench_transfer.py`` from the repository root. Uses the Neo4j at
``NEO4J_URI`` (with ``NEO4J_USERNAME`` / ``NEO4J_PASSWORD``) when set, else starts the
test-suite's local Neo4j. Each measured step runs in a child process of its own so its
peak RSS (``ru_maxrss``) is that step's alone. Sessions get a unique prefix and are
cleared from Neo4j at the end. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from uuid import uuid4

from memory_core import open_backend
from memory_core.transfer import copy_memory, export_memory


async def build_source(url: str, messages: int, sessions: int, prefix: str) -> None:
    per = messages // sessions
    async with open_backend(url) as backend:
        for s in range(sessions):
            rows = [
                {
                    "role": "user" if i % 2 else "assistant",
                    "content": f"message {i} of session {s}: " + "lorem ipsum dolor " * 5,
                    "metadata": {"i": i, "turn_key": f"{s}:{i // 2}"},
                }
                for i in range(per)
            ]
            await backend.add_messages_batch(f"{prefix}{s}", rows, batch_size=1000)


def child(argv: list[str]) -> None:
    """Run one step and print {seconds, messages, rss_mib} as JSON."""
    step, source, target, prefix = argv

    async def work() -> int:
        async with open_backend(source) as src:
            if step == "export":
                report = await export_memory(src, target, session_prefix=prefix)
            else:
                async with open_backend(target) as dst:
                    report = await copy_memory(src, dst, session_prefix=prefix)
            return report.copied["message"]

    start = time.perf_counter()
    count = asyncio.run(work())
    seconds = time.perf_counter() - start
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "messages": count, "rss_mib": rss_mib}))


def measure(step: str, source: str, target: str, prefix: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run(
        [sys.executable, __file__, "--child", step, source, target, prefix],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def line(name: str, result: dict[str, float]) -> str:
    rate = result["messages"] / result["seconds"]
    return (
        f"{name:34}{int(result['messages']):>10,} msgs {result['seconds']:8.1f} s "
        f"{rate:10,.0f} msgs/s   peak RSS {result['rss_mib']:6.0f} MiB"
    )


async def clear(url: str, prefix: str, sessions: int) -> None:
    async with open_backend(url) as backend:
        for s in range(sessions):
            await backend.clear_session(f"{prefix}{s}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    prefix = f"bench-transfer-{uuid4().hex[:8]}-"
    with tempfile.TemporaryDirectory() as scratch:
        source = f"sqlite:///{Path(scratch) / 'source.db'}"
        start = time.perf_counter()
        asyncio.run(build_source(source, args.messages, args.sessions, prefix))
        print(
            f"source: {args.messages:,} messages in {args.sessions} sessions "
            f"({time.perf_counter() - start:.1f} s to build)"
        )
        archive = Path(scratch) / "memory.jsonl"
        result = measure("export", source, str(archive), prefix)
        print(line("export embedded → .jsonl", result))
        print(f"{'':34}archive {archive.stat().st_size / 2**20:,.0f} MiB")
        copy = f"sqlite:///{Path(scratch) / 'copy.db'}"
        print(line("copy embedded → embedded", measure("copy", source, copy, prefix)))
        url = os.environ.get("NEO4J_URI")
        server = None
        if not url:
            sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
            from memory_core_dev.neo4j_server import Neo4jServer

            server = Neo4jServer().start()
            url = server.uri
        try:
            print(line("copy embedded → Bolt", measure("copy", source, url, prefix)))
            print(line("export Bolt → .jsonl", measure("export", url, str(archive), prefix)))
            asyncio.run(clear(url, prefix, args.sessions))
        finally:
            if server is not None:
                server.close()


if __name__ == "__main__":
    main()
