"""The FTS purge at the end of forget_user runs in short steps: other writers run between
two steps, the index stays sound, and its levels stay far from FTS5's limit."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from memory_core import MemoryBackend, open_backend

pytestmark = pytest.mark.anyio

GONE = "zebulonword"
KEPT = "keptword"


def _small_steps(monkeypatch: pytest.MonkeyPatch, **values: int) -> None:
    """Make each purge step as small as it can be (one leaf page), so a small store needs
    many of them."""
    try:
        from memory_core.backends.embedded import fts_purge
    except ImportError:  # a store that purges in one statement: nothing to make smaller
        return
    monkeypatch.setattr(fts_purge, "MERGE_PAGES", 1)
    for name, value in values.items():
        monkeypatch.setattr(fts_purge, name, value)


async def _fill(memory: MemoryBackend, batches: int = 24) -> None:
    """Messages of two users in many transactions: many index segments."""
    for batch in range(batches):
        user = "zebulon" if batch % 2 else "kay"
        word = GONE if batch % 2 else KEPT
        rows = [
            {"role": "user", "content": f"{word}{batch}x{i} common{i % 7} filler{batch * 97 + i}"}
            for i in range(40)
        ]
        await memory.add_messages_batch(f"{user}-{batch}", rows, user_identifier=user)


def _is_merge(sql: str) -> bool:
    return "INSERT INTO messages_fts (messages_fts" in sql and (
        "'merge'" in sql or "'optimize'" in sql or "'rebuild'" in sql
    )


def _check(path: Path) -> tuple[int, bool]:
    """The index's integrity check (raises if it fails), then its level count and whether
    the file's bytes still hold a forgotten word."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
        conn.execute("PRAGMA integrity_check").fetchall()
        record = conn.execute("SELECT block FROM messages_fts_data WHERE id = 10").fetchone()[0]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return record[4], GONE.encode() in path.read_bytes()  # nLevel: the byte after the cookie


async def test_a_write_runs_between_two_merge_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deterministic: once the first merge statement has run, a write is queued; it must
    run (on the one writer connection, in order) before the last merge statement."""
    _small_steps(monkeypatch)
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}", inline_writes=False) as memory:
        await _fill(memory)
        loop = asyncio.get_running_loop()
        statements: list[str] = []
        first_merge = threading.Event()
        writes: list[asyncio.Task[object]] = []

        def write() -> None:
            writes.append(
                loop.create_task(
                    memory.add_message("live", "user", "interleaved write", user_identifier="w")
                )
            )

        def trace(sql: str) -> None:
            statements.append(sql)
            if _is_merge(sql) and not first_merge.is_set():
                first_merge.set()
                loop.call_soon_threadsafe(write)

        memory.store._store._conn.set_trace_callback(trace)
        await memory.forget_user("zebulon")
        await asyncio.gather(*writes)
        memory.store._store._conn.set_trace_callback(None)
    merges = [i for i, sql in enumerate(statements) if _is_merge(sql)]
    written = [i for i, sql in enumerate(statements) if "interleaved write" in sql]
    assert written, "the concurrent write ran"
    assert len(merges) >= 2, f"the purge ran in steps, not one merge: {len(merges)}"
    assert merges[0] < written[0] < merges[-1], "the write waited for the whole merge"
    between = statements[written[0] : merges[-1]]
    assert "COMMIT" in between, "the write committed before the last merge step"
    _levels, holds_gone = _check(path)
    assert not holds_gone


async def test_index_sound_and_purged_with_writers_between_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other users write back to back while the purge runs (both writer connections): the
    FTS5 integrity check passes and no forgotten word is left in the file."""
    _small_steps(monkeypatch)
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}") as memory:
        await _fill(memory)
        stop = asyncio.Event()

        async def writer() -> int:
            count = 0
            while not stop.is_set():
                await memory.add_message(
                    f"live-{count % 3}", "user", f"live {KEPT} {count}", user_identifier="w"
                )
                count += 1
                await asyncio.sleep(0)
            return count

        task = asyncio.create_task(writer())
        report = await memory.forget_user("zebulon")
        stop.set()
        written = await task
        hits = await memory.search_messages(KEPT, user_identifier="w", limit=500)
    assert report.counts["messages"] == 12 * 40
    assert written > 0 and len(hits) == written
    _levels, holds_gone = _check(path)
    assert not holds_gone


async def test_levels_stay_bounded_over_many_erasures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each purge adds index levels (SQLite 3.40); past the limit the next purge rebuilds
    the index instead, so repeated erasures never reach FTS5's 2,000-level failure."""
    _small_steps(monkeypatch, MAX_LEVELS=8)
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}") as memory:
        for round_ in range(10):
            for i in range(5):
                word = f"{GONE}{round_}" if i == 0 else f"{KEPT}{i}"
                rows = [
                    {"role": "user", "content": f"{word} n{j} r{round_ * 100 + i * 20 + j}"}
                    for j in range(20)
                ]
                user = "zebulon" if i == 0 else "kay"
                await memory.add_messages_batch(f"s{round_}-{i}", rows, user_identifier=user)
            await memory.forget_user("zebulon")
        kept = await memory.search_messages(f"{KEPT}1", user_identifier="kay", limit=500)
    levels, holds_gone = _check(path)
    assert levels <= 8 + 2, f"{levels} index levels after 10 erasures"
    assert not holds_gone
    assert len(kept) == 10 * 20
