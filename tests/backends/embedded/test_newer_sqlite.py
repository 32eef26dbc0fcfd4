"""The embedded backend's erasure on a current SQLite, not only the system's (3.40 here;
Python 3.12+ on current distributions links 3.45 or later, whose FTS5 writes a second
layout of its structure record and whose b-tree leaves other bytes in unused space).

The tests that read the store's bytes and FTS5's structure run in a child process whose
``sqlite3`` module is ``pysqlite3`` (a wheel bundling SQLite 3.5x, in the dev extra)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FILES = [
    "tests/backends/embedded/test_embedded_fts_purge.py",
    "tests/backends/embedded/test_embedded_erasure.py",
]
CHILD = """
import sys
import pysqlite3.dbapi2 as newer
sys.modules["sqlite3"] = newer
sys.modules["sqlite3.dbapi2"] = newer
import pytest
print("sqlite", newer.sqlite_version, flush=True)
sys.exit(pytest.main(["-q", "-p", "no:randomly", "-p", "no:cacheprovider", *sys.argv[1:]]))
"""
LEVELS = """
import sys
import pysqlite3.dbapi2 as newer
sys.modules["sqlite3"] = newer
import anyio
from memory_core import open_backend
from memory_core.backends.embedded.fts_purge import read_levels

async def main(path):
    async with open_backend(f"sqlite:///{path}") as memory:
        for n in range(3):
            await memory.add_messages_batch("s", [{"role": "user", "content": f"w{n}"}])
    levels = read_levels(newer.connect(path))
    print(sum(len(level.segments) for level in levels) if levels is not None else "unread")

anyio.run(main, sys.argv[1])
"""


def test_erasure_tests_pass_on_a_current_sqlite() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *FILES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    first = done.stdout.splitlines()[0].split()
    assert first[0] == "sqlite" and tuple(map(int, first[1].split("."))) >= (3, 44), first
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_the_structure_record_of_a_current_fts5_is_read(tmp_path: Path) -> None:
    """SQLite 3.44+ writes FTS5's structure record in its second layout: the purge reads it
    (three writes, three segments) rather than falling back to one ``optimize``."""
    done = subprocess.run(
        [sys.executable, "-c", LEVELS, str(tmp_path / "store.db")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["3"]
