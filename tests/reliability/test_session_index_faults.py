"""A broken session index never fails a call (issue 25, item 11), against the real server.

The index file is a cache of what the service holds. Corrupt (garbage from the first
byte, or its table's pages), read-only, locked by another connection holding
``BEGIN EXCLUSIVE``, or on a full disk: the call goes on with the service lookup and
one warning names the file. A row the adapter did not write (a conversation id that is
not a UUID) is ignored and replaced.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from memory_core import MemoryBackend
from memory_core.backends.nams import NamsStore
from memory_core.backends.nams.sessions import Entry, NameIndex
from memory_core_dev.nams_server import NamsTestServer

pytestmark = [pytest.mark.nams, pytest.mark.anyio]

LIST = "/v1/conversations"
LOGGER = "memory_core.backends.nams"


def portable(server: NamsTestServer, workspace: str, index: Path) -> MemoryBackend:
    return server.backend(workspace, session_names="portable", session_index=index)


def index_warnings(caplog: pytest.LogCaptureFixture, index: Path) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == LOGGER and r.levelno == logging.WARNING and str(index) in r.getMessage()
    ]


def list_requests(server: NamsTestServer, workspace: str, mark: int) -> int:
    return sum(
        1
        for r in server.since(mark)
        if r.workspace == workspace and r.method == "GET" and r.path == LIST
    )


async def seed(server: NamsTestServer, workspace: str, index: Path) -> None:
    """Session "kept" written through a first object, so the index holds its row."""
    async with portable(server, workspace, index) as first:
        await first.add_message("kept", "user", "one")
    assert not Path(f"{index}-wal").exists()  # all of it is in the file itself


async def use_it(memory: MemoryBackend) -> None:
    """A known name and a new one, written and read: what must keep working."""
    await memory.add_message("kept", "user", "two")
    await memory.add_message("new", "user", "first")
    await memory.add_message("new", "user", "second")
    assert [m.content for m in (await memory.get_conversation("kept")).messages] == [
        "one",
        "two",
    ]
    assert [m.content for m in (await memory.get_conversation("new")).messages] == [
        "first",
        "second",
    ]


@pytest.fixture
def index(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Path:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    folder = tmp_path / "index"
    folder.mkdir()
    return folder / "names.db"


def garbage(index: Path) -> None:
    """Not a database from the first byte."""
    index.write_bytes(b"not a database " * 400)


def corrupt_pages(index: Path) -> None:
    """Every page after the schema's overwritten."""
    data = bytearray(index.read_bytes())
    page = int.from_bytes(data[16:18], "big")  # the header's page size
    data[page:] = b"\xa5" * (len(data) - page)
    index.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("damage", "reported"),
    [(garbage, "not a database"), (corrupt_pages, "malformed")],
    ids=["garbage-file", "corrupt-pages"],
)
async def test_a_damaged_file_falls_back_to_the_service(
    nams_server: NamsTestServer,
    workspace: str,
    index: Path,
    caplog: pytest.LogCaptureFixture,
    damage: Callable[[Path], None],
    reported: str,
) -> None:
    await seed(nams_server, workspace, index)
    damage(index)
    async with portable(nams_server, workspace, index) as memory:
        await use_it(memory)
    [warning] = index_warnings(caplog, index)
    assert reported in warning


async def test_a_row_with_a_non_uuid_id_is_ignored_and_replaced(
    nams_server: NamsTestServer, workspace: str, index: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await seed(nams_server, workspace, index)
    with closing(sqlite3.connect(index)) as db, db:
        tables = [
            name
            for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if any(c[1] == "conversation_id" for c in db.execute(f"PRAGMA table_info({name})"))
        ]
        for name in tables:
            db.execute(f"UPDATE {name} SET conversation_id = 'not-a-uuid'")
    async with portable(nams_server, workspace, index) as memory:
        await use_it(memory)
    assert index_warnings(caplog, index) == []
    with closing(sqlite3.connect(index)) as db:
        ids = [
            value
            for name in tables
            for (value,) in db.execute(f"SELECT conversation_id FROM {name}")
        ]
    assert ids and all(UUID(value) for value in ids)
    mark = nams_server.mark()
    async with portable(nams_server, workspace, index) as again:  # the row was replaced
        assert len((await again.get_conversation("kept")).messages) == 2
    assert list_requests(nams_server, workspace, mark) == 1  # the connect probe only


@pytest.fixture
def frozen(index: Path) -> Iterator[list[Path]]:
    """Files made unchangeable (``chattr +i`` as root, who ignores file modes; plain
    modes otherwise), thawed afterwards."""
    files: list[Path] = []
    yield files
    if files and os.geteuid() == 0:
        subprocess.run(["chattr", "-i", *map(str, files)], check=True)
    for path in files:
        os.chmod(path, 0o644)


def freeze(files: list[Path], path: Path) -> None:
    files.append(path)
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(path)], check=True)
    else:
        os.chmod(path, 0o444)


async def test_read_only_file_falls_back_to_the_service(
    nams_server: NamsTestServer,
    workspace: str,
    index: Path,
    frozen: list[Path],
    caplog: pytest.LogCaptureFixture,
) -> None:
    await seed(nams_server, workspace, index)
    freeze(frozen, index)
    async with portable(nams_server, workspace, index) as memory:
        await use_it(memory)
    assert len(index_warnings(caplog, index)) == 1


async def test_a_lock_held_by_another_connection_is_not_waited_out(
    nams_server: NamsTestServer, workspace: str, index: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await seed(nams_server, workspace, index)
    holder = sqlite3.connect(index, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        async with portable(nams_server, workspace, index) as memory:
            await use_it(memory)
    finally:
        holder.close()
    [warning] = index_warnings(caplog, index)
    assert "locked" in warning


class DiskFull:
    """A connection whose writes fail as on a full disk; reads go through."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if not sql.lstrip().upper().startswith("SELECT"):
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)

    def __enter__(self) -> DiskFull:
        self.db.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self.db.__exit__(*exc)

    def close(self) -> None:
        self.db.close()


async def test_a_full_disk_falls_back_to_the_service(
    nams_server: NamsTestServer, workspace: str, index: Path, caplog: pytest.LogCaptureFixture
) -> None:
    await seed(nams_server, workspace, index)
    async with portable(nams_server, workspace, index) as memory:
        store = memory.store
        assert isinstance(store, NamsStore) and store._names is not None
        names = store._names.index
        assert names is not None
        names._db = DiskFull(names._db)  # type: ignore[assignment,arg-type]
        await use_it(memory)
        assert await memory.clear_session("new") is True  # the row cannot be dropped
        await memory.add_message("new", "user", "after clear")
        assert [m.content for m in (await memory.get_conversation("new")).messages] == [
            "after clear"
        ]
    [warning] = index_warnings(caplog, index)
    assert "disk is full" in warning


def test_a_path_sqlite_cannot_take_is_a_warning_not_an_error(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    broken = NameIndex(tmp_path / "a\0b.db", "scope")
    assert broken.get(("", "kept")) is None
    broken.put(("", "kept"), Entry("x", UUID(int=1)))
    broken.pop(("", "kept"))
    broken.close()
    assert len([r for r in caplog.records if "session_index" in r.getMessage()]) == 1
