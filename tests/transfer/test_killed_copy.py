"""A copy killed at a random point (SIGKILL) and run again ends with exactly one copy of
every message — into Bolt (real Neo4j) and into an embedded file."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from neo4j import GraphDatabase

from memory_core import EntityRef, open_backend
from tests.transfer.sample import export_lines

pytestmark = pytest.mark.anyio

SESSIONS = 8
PER_SESSION = 1500
TOTAL = SESSIONS * PER_SESSION


async def _make_source(path: Path) -> str:
    url = f"sqlite:///{path}"
    async with open_backend(url) as source:
        await source.add_entity("Lisbon", "LOCATION")
        for s in range(SESSIONS):
            session = f"session-{s}"
            await source.add_message(
                session,
                "user",
                "keyed and linked",
                idempotency_key=f"{session}-first",
                extraction_mode="explicit",
                explicit_mentions=[EntityRef(name="Lisbon")],
            )
            await source.add_messages_batch(
                session,
                [
                    {
                        "role": "user" if i % 2 else "assistant",
                        "content": f"{s}/{i}",
                        "metadata": {"i": i},
                    }
                    for i in range(PER_SESSION - 1)
                ],
            )
    return url


def _copy(source: str, target: str, cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen(
        [sys.executable, "-m", "memory_core.cli", "copy", source, target, "--quiet"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_at_random(proc: subprocess.Popen[str], count: Callable[[], int], seed: int) -> int:
    """SIGKILL the copy once the target holds at least a random number of messages."""
    threshold = random.Random(seed).randint(1, TOTAL // 2)
    deadline = time.monotonic() + 240
    seen = 0
    while time.monotonic() < deadline and proc.poll() is None:
        seen = count()
        if seen >= threshold:
            break
        time.sleep(0.02)
    assert proc.poll() is None, f"the copy ended before the kill: {proc.communicate()}"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return seen


async def _check(source: str, target: str, tmp_path: Path, count: Callable[[], int]) -> None:
    seed = random.randrange(1_000_000)
    print(f"kill seed {seed}")
    first = _copy(source, target, tmp_path)
    at_kill = _kill_at_random(first, count, seed)
    assert first.returncode == -signal.SIGKILL
    assert 0 < at_kill < TOTAL
    second = _copy(source, target, tmp_path)
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    assert "already in the target" in out
    assert count() == TOTAL
    async with open_backend(source) as src, open_backend(target) as dst:
        assert await export_lines(dst) == await export_lines(src)


async def test_killed_copy_into_bolt_resumes_exactly(tmp_path: Path, bolt_url: str) -> None:
    source = await _make_source(tmp_path / "source.db")
    driver = GraphDatabase.driver(bolt_url)

    def count() -> int:
        records, _, _ = driver.execute_query("MATCH (m:Message) RETURN count(m) AS n")
        return int(records[0]["n"])

    try:
        await _check(source, bolt_url, tmp_path, count)
    finally:
        driver.close()


async def test_killed_copy_into_an_embedded_file_resumes_exactly(tmp_path: Path) -> None:
    source = await _make_source(tmp_path / "source.db")
    target_path = tmp_path / "target.db"
    target = f"sqlite:///{target_path}"

    def count() -> int:
        if not target_path.exists():
            return 0
        try:
            with sqlite3.connect(target_path, timeout=5) as conn:
                return int(conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
        except sqlite3.Error:
            return 0

    await _check(source, target, tmp_path, count)
