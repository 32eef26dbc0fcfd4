"""Concurrent writers lose nothing and duplicate nothing, and each session's sequence is
contiguous: 50 tasks into one session and into 50 sessions on every backend, and on
embedded 4 OS processes on one file. What was stored is read from the store itself
(SQLite rows, Neo4j nodes), so the NAMS read cap of 200 does not hide anything."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from neo4j import GraphDatabase

from memory_core import open_backend

from .conftest import FULL
from .subjects import Subject

pytestmark = pytest.mark.anyio

TASKS = 50


def per_task(kind: str) -> int:
    """Messages each task writes: 100, except a shorter CI run on the server stores."""
    if FULL or kind == "embedded":
        return 100
    return 10 if kind == "nams" else 5


def stored_rows(subject: Subject, handle: str) -> list[tuple[str, int]]:
    """(content, seq) of every message of a session, in sequence order, from the store."""
    if subject.sqlite_path is not None:
        conn = sqlite3.connect(subject.sqlite_path)
        try:
            rows = conn.execute(
                "SELECT m.content, m.seq FROM messages m JOIN conversations c "
                "ON c.id = m.conversation_id WHERE c.session_id = ? OR c.id = ? ORDER BY m.seq",
                (handle, handle),
            ).fetchall()
        finally:
            conn.close()
        return [(str(c), int(s)) for c, s in rows]
    assert subject.neo4j is not None
    uri, auth = subject.neo4j
    with GraphDatabase.driver(uri, auth=auth) as driver:
        records, _, _ = driver.execute_query(
            "MATCH (c:Conversation {session_id: $s})-[:HAS_MESSAGE]->(m) "
            "RETURN m.content AS content, m.seq AS seq ORDER BY m.seq",
            s=handle,
        )
    return [(r["content"], r["seq"]) for r in records]


def check_session(rows: list[tuple[str, int]], writers: list[str], count: int) -> None:
    contents = [c for c, _ in rows]
    assert len(contents) == len(writers) * count, "messages lost or duplicated"
    assert sorted(contents) == sorted(f"{w}-{i}" for w in writers for i in range(count))
    seqs = [s for _, s in rows]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "sequence has gaps"
    for writer in writers:
        mine = [int(c.rsplit("-", 1)[1]) for c in contents if c.rsplit("-", 1)[0] == writer]
        assert mine == list(range(count)), f"{writer}'s messages out of order"


async def test_fifty_tasks_into_one_session(subject: Subject) -> None:
    count = per_task(subject.kind)
    handle = await subject.session()
    writers = [f"t{n}" for n in range(TASKS)]

    async def write(writer: str) -> None:
        for i in range(count):
            await subject.backend.add_message(handle, "user", f"{writer}-{i}")

    async with anyio.create_task_group() as group:
        for writer in writers:
            group.start_soon(write, writer)
    rows = await anyio.to_thread.run_sync(stored_rows, subject, handle)
    check_session(rows, writers, count)


async def test_fifty_tasks_into_fifty_sessions(subject: Subject) -> None:
    count = per_task(subject.kind)
    handles = [await subject.session() for _ in range(TASKS)]

    async def write(handle: str) -> None:
        for i in range(count):
            await subject.backend.add_message(handle, "user", f"w-{i}")

    async with anyio.create_task_group() as group:
        for handle in handles:
            group.start_soon(write, handle)
    for handle in handles:
        rows = await anyio.to_thread.run_sync(stored_rows, subject, handle)
        check_session(rows, ["w"], count)


def _process_writer(url: str, name: str, count: int) -> None:
    async def main() -> None:
        async with open_backend(url, busy_timeout=60) as backend:
            for i in range(count):
                await backend.add_message("shared", "user", f"{name}-{i}")
                await backend.add_message(f"own-{name}", "user", f"{name}-{i}")

    anyio.run(main)


def test_four_processes_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    url = f"sqlite:///{path}"
    count = 100 if FULL else 30
    context = multiprocessing.get_context("spawn")
    names = [f"p{n}" for n in range(4)]
    processes = [context.Process(target=_process_writer, args=(url, n, count)) for n in names]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=240)
        assert process.exitcode == 0, f"writer process failed ({process.exitcode})"
    subject: Any = Subject("embedded", open_backend(url), sqlite_path=path)
    check_session(stored_rows(subject, "shared"), names, count)
    for name in names:
        check_session(stored_rows(subject, f"own-{name}"), [name], count)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
