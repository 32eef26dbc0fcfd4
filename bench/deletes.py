"""``python -m bench.deletes``: what a delete costs on the embedded backend, which purges
the full-text index of the deleted words before the call returns.

    python -m bench.deletes                    # a store of 10,000 messages
    python -m bench.deletes --total 100000
    python -m bench.deletes --smoke            # tiny sizes: checks the harness works

A SQLite file in a temporary folder holds ``--total`` messages: conversations of 10
messages of 13 words (12 from a vocabulary of 3,000, one unique), written one
conversation per transaction, among 50 users. Then ``--calls`` conversations are deleted
one by one with ``clear_session``, one message each of ``--calls`` others with
``delete_message``, and the last user's conversations (a fiftieth of the store) with
``expire_conversations``; last, ``--calls`` single ``add_message`` calls. Figures are
medians and maxima per call. Results go to ``bench/results/deletes.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory_core import MemoryBackend, open_backend

RESULTS = Path(__file__).with_name("results")
VOCABULARY = [f"w{i:04d}x" for i in range(3000)]
USERS = 50


async def _load(backend: MemoryBackend, total: int) -> None:
    rng = random.Random(7)
    for session in range(total // 10):
        rows = [
            {
                "role": "user",
                "content": " ".join(rng.choice(VOCABULARY) for _ in range(12))
                + f" unique{session}m{i}",
            }
            for i in range(10)
        ]
        await backend.add_messages_batch(f"s{session}", rows, user_identifier=f"u{session % USERS}")


async def _timed(call: Callable[[int], Awaitable[object]], count: int) -> list[float]:
    """Milliseconds each of ``call(0)`` … ``call(count - 1)`` took, one after another."""
    spent = []
    for index in range(count):
        started = time.perf_counter()
        await call(index)
        spent.append((time.perf_counter() - started) * 1000)
    return spent


async def measure(total: int, calls: int) -> dict[str, str]:
    """One store of ``total`` messages; each figure as a table cell."""
    with tempfile.TemporaryDirectory() as folder:
        async with open_backend(f"sqlite:///{Path(folder) / 's.db'}") as backend:
            await _load(backend, total)
            cleared = await _timed(lambda i: backend.clear_session(f"s{i}"), calls)
            ids = [
                (await backend.get_conversation(f"s{i}", limit=1)).messages[0].id
                for i in range(calls, 2 * calls)
            ]
            deleted = await _timed(lambda i: backend.delete_message(ids[i]), calls)
            started = time.perf_counter()
            cutoff = datetime.now(UTC) + timedelta(minutes=1)
            report = await backend.expire_conversations(cutoff, user_identifier=f"u{USERS - 1}")
            expiry = (time.perf_counter() - started) * 1000
            added = await _timed(
                lambda i: backend.add_message("fresh", "user", f"fresh {i}"), calls
            )
    each = expiry / max(report.conversations, 1)
    return {
        "messages": f"{total:,}",
        "clear_session": _cell(cleared),
        "delete_message": _cell(deleted),
        "expire_conversations": f"{report.conversations} in {expiry:,.0f} ms ({each:.1f} ms each)",
        "add_message": _cell(added),
    }


def _cell(spent: list[float]) -> str:
    return f"{statistics.median(spent):.1f} ms (max {max(spent):.1f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.deletes", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes; writes no results")
    parser.add_argument("--total", type=int, default=10_000, help="messages in the store")
    parser.add_argument("--calls", type=int, default=30, help="calls of each kind")
    args = parser.parse_args(argv)
    total, calls = (500, 3) if args.smoke else (args.total, args.calls)
    load = os.getloadavg()[0]
    row = asyncio.run(measure(total, calls))
    line = "| " + " | ".join(row.values()) + " |"
    run = f"- {row['messages']}: `python -m bench.deletes --total {total} --calls {calls}` "
    run += f"(load average {load:.2f} on {os.cpu_count()} cores)"
    print(f"load average {load:.2f} on {os.cpu_count()} cores")
    print("| " + " | ".join(row) + " |\n" + line)
    if not args.smoke:
        _save(row, line, run)
    return 0


def _save(row: dict[str, str], line: str, run: str) -> None:
    """Keep one row (and its command) per store size, smallest first."""
    path = RESULTS / "deletes.md"
    rows, runs = {row["messages"]: line}, {row["messages"]: run}
    if path.exists():
        for old in path.read_text().splitlines():
            size = old.split(" | ")[0].lstrip("| ") if old.startswith("| ") else ""
            if size[:1].isdigit():
                rows.setdefault(size, old)
            elif old.startswith("- ") and old[2:3].isdigit():
                runs.setdefault(old[2:].split(":")[0], old)
    order = sorted(rows, key=lambda size: int(size.replace(",", "")))
    header = "| " + " | ".join(row) + " |\n|" + " --- |" * len(row)
    path.write_text(
        "# Deletes on the embedded backend\n\n"
        + header
        + "\n"
        + "\n".join(rows[size] for size in order)
        + "\n\n"
        + "\n".join(runs[size] for size in order if size in runs)
        + "\n"
    )


if __name__ == "__main__":
    raise SystemExit(main())
