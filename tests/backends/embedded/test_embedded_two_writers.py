"""Two processes writing one session of one SQLite file, one of them with a clock 10 s
behind: every reader sees the insertion order, each writer's messages in its own order,
and timestamps that never decrease (the store stamps ``max(now, the previous message's
time)``), whoever wrote the previous message."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memory_core import open_backend

pytestmark = pytest.mark.anyio

COUNT = 15
WRITER = textwrap.dedent(
    """
    import sys, time
    import anyio
    from memory_core import open_backend
    from memory_core.backends.embedded import messages

    url, session, label, count, lag = sys.argv[1:6]
    real = messages.now_micros
    messages.now_micros = lambda: real() - int(lag)

    async def main() -> None:
        async with open_backend(url) as backend:
            for i in range(int(count)):
                await backend.add_message(session, "user", f"{label}{i}")
                time.sleep(0.002)

    anyio.run(main)
    """
)


def _write(url: str, session: str, *writers: tuple[str, int]) -> None:
    """Run writer processes at once, each ``(label, lag in microseconds)``."""
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, url, session, label, str(COUNT), str(lag)],
            cwd=Path(__file__).resolve().parents[3],
        )
        for label, lag in writers
    ]
    assert [run.wait(timeout=120) for run in runs] == [0] * len(writers)


async def test_two_processes_one_order_and_a_clock_that_never_goes_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    _write(url, "shared", ("a", 0))  # so the late clock writes after messages it must follow
    _write(url, "shared", ("c", 0), ("b", 10_000_000))
    reads = []
    for _ in range(2):  # two reader objects (two "processes") read the same
        async with open_backend(url) as reader:
            reads.append((await reader.get_conversation("shared", limit=1000)).messages)
            newest = (await reader.get_conversation("shared", limit=5)).messages
    first, second = reads
    assert [m.id for m in first] == [m.id for m in second]
    assert newest == first[-5:]
    got = [m.content for m in first]
    assert sorted(got) == sorted(f"{w}{i}" for w in "abc" for i in range(COUNT))
    assert got[:COUNT] == [f"a{i}" for i in range(COUNT)]
    for w in "bc":
        assert [c for c in got if c[0] == w] == [f"{w}{i}" for i in range(COUNT)]
    for before, after in itertools.pairwise(first):
        assert before.created_at <= after.created_at, (
            f"{after.content} ({after.created_at}) is stamped before {before.content} "
            f"({before.created_at}) which it follows"
        )
