"""The embedded store's file deleted, moved away or replaced while the store is open.

SQLite keeps its file open: before the check, writes after a deletion were acknowledged
into a file no one could reach again (20 of 20), reads then failed with ``no such table``
(a new reader connection had created an empty file at the path), and after reopening the
store was empty. Now every call made once the store has looked again (at most
``FILE_CHECK_EVERY``, a millisecond, after the change) raises ``TransportError`` (not
retryable) naming the path, nothing more is written, and no file is created.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_core import MemoryBackend, TransportError, open_backend
from memory_core.backends.embedded import database

pytestmark = pytest.mark.anyio


def _delete(path: Path) -> None:
    path.unlink()


def _delete_with_log(path: Path) -> None:  # rm store.db*
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _move_away(path: Path) -> None:
    path.rename(path.with_name("moved.db"))


def _replace(path: Path) -> None:
    """Move the file away and put another store in its place (a restore from backup)."""
    other = path.with_name("other.db")
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE marker (x)")
    conn.execute("INSERT INTO marker VALUES (1)")
    conn.commit()
    conn.close()
    path.rename(path.with_name("moved.db"))
    other.rename(path)


CHANGES: dict[str, Callable[[Path], None]] = {
    "deleted": _delete,
    "deleted-with-log": _delete_with_log,
    "moved": _move_away,
    "replaced": _replace,
}


async def _refused(call: object, path: Path) -> TransportError:
    with pytest.raises(TransportError) as caught:
        await call  # type: ignore[misc]
    error = caught.value
    assert error.retryable is False
    assert str(path) in str(error)
    return error


def _count(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    finally:
        conn.close()


def _files(folder: Path) -> dict[str, bytes]:
    return {item.name: item.read_bytes() for item in sorted(folder.iterdir())}


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "threads"])
@pytest.mark.parametrize("change", list(CHANGES))
async def test_every_call_after_the_file_changed_is_refused(
    tmp_path: Path, change: str, inline: bool
) -> None:
    path = tmp_path / "store.db"
    backend = open_backend(f"sqlite:///{path}", inline_reads=inline, inline_writes=inline)
    async with backend:
        await backend.add_message("s", "user", "kept")
        CHANGES[change](path)
        time.sleep(2 * database.FILE_CHECK_EVERY)  # the next call looks
        changed = _files(tmp_path)
        first = await _refused(backend.add_message("s", "user", "lost?"), path)
        assert ("replaced" if change == "replaced" else "deleted or moved") in str(first)
        for _ in range(20):  # the 20 writes: none acknowledged
            await _refused(backend.add_message("s", "user", "lost?"), path)
        await _refused(backend.add_messages_batch("s", [{"role": "user", "content": "b"}]), path)
        await _refused(backend.get_conversation("s", limit=10), path)
        await _refused(backend.search_messages("kept"), path)
        await _refused(backend.list_sessions(), path)
        await _refused(backend.clear_session("s"), path)
        # Nothing written or created: not into the old file or its log, not at the path
        # (before, a new reader connection created an empty database there).
        assert _files(tmp_path) == changed
    if change.startswith("deleted"):
        assert not path.exists()


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "threads"])
async def test_a_read_right_after_a_deletion_creates_no_file(tmp_path: Path, inline: bool) -> None:
    """Within the millisecond before the next look, a new reader connection finds no
    file: it creates none, and the error still says why."""
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}", inline_reads=inline) as backend:
        await backend.add_message("s", "user", "kept")
        _delete(path)
        error = await _refused(backend.get_conversation("s"), path)
        assert "deleted or moved" in str(error)
        assert not path.exists()


async def test_a_new_backend_on_the_path_works(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}") as backend:
        await backend.add_message("s", "user", "gone with the file")
        _delete_with_log(path)
        time.sleep(2 * database.FILE_CHECK_EVERY)
        await _refused(backend.add_message("s", "user", "x"), path)
    async with open_backend(f"sqlite:///{path}") as backend:
        await backend.add_message("s", "user", "new")
        assert [m.content for m in (await backend.get_conversation("s")).messages] == ["new"]


async def test_a_chdir_after_opening_a_relative_url_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path is resolved once, when the store opens: no false alarm, and later
    connections (readers) open the same file, not one in the new working directory."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    backend: MemoryBackend = open_backend("sqlite:///store.db", inline_reads=False)
    async with backend:
        await backend.add_message("s", "user", "one")
        monkeypatch.chdir(tmp_path / "b")
        await backend.add_message("s", "user", "two")
        conversation = await backend.get_conversation("s")
        assert [m.content for m in conversation.messages] == ["one", "two"]
    assert os.listdir(tmp_path / "b") == []
    assert _count(tmp_path / "a" / "store.db") == 2


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "threads"])
async def test_the_path_is_looked_at_no_more_than_once_per_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inline: bool
) -> None:
    path = tmp_path / "store.db"
    looks: list[object] = []
    real_stat = os.stat

    def counting_stat(target: object, *args: object, **kwargs: object) -> os.stat_result:
        if str(target) == str(path):
            looks.append(target)
        return real_stat(target, *args, **kwargs)  # type: ignore[arg-type]

    backend = open_backend(f"sqlite:///{path}", inline_reads=inline, inline_writes=inline)
    async with backend:
        await backend.add_message("s", "user", "first")
        monkeypatch.setattr(database, "FILE_CHECK_EVERY", 3600.0)  # one look per hour at most
        time.sleep(2 * 0.001)  # the millisecond after the last look has passed
        monkeypatch.setattr(os, "stat", counting_stat)
        for i in range(50):
            await backend.add_message("s", "user", f"m{i}")
            await backend.get_conversation("s", limit=1)
        monkeypatch.setattr(os, "stat", real_stat)
    assert len(looks) == 1, f"{len(looks)} looks at the path for 100 calls"
