"""Concurrent writers lose nothing and duplicate nothing, and each session's sequence is
contiguous: 50 tasks into one session and into 50 sessions on every backend, 4 OS
processes on one embedded file and on one PostgreSQL database. What was stored is read
from the store itself (SQLite or PostgreSQL rows, Neo4j nodes), so the NAMS read cap of
200 does not hide anything."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import psycopg
import pytest
from neo4j import GraphDatabase
from psycopg import sql

from memory_core import open_backend
from memory_core_dev.postgres_schemas import new_schema, with_schema
from memory_core_dev.postgres_server import PostgresHandle

from .conftest import FULL
from .subjects import Subject
from .writers import process_writer

pytestmark = pytest.mark.anyio

TASKS = 50


def per_task(kind: str) -> int:
    """Messages each task writes: 100, except a shorter CI run on the server stores."""
    if FULL or kind == "embedded":
        return 100
    return {"nams": 10, "postgres": 20}.get(kind, 5)


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
    if subject.postgres is not None:
        return postgres_rows(*subject.postgres, handle)
    assert subject.neo4j is not None
    uri, auth, _ = subject.neo4j
    with GraphDatabase.driver(uri, auth=auth) as driver:
        records, _, _ = driver.execute_query(
            "MATCH (c:Conversation {session_id: $s})-[:HAS_MESSAGE]->(m) "
            "RETURN m.content AS content, m.seq AS seq ORDER BY m.seq",
            s=handle,
        )
    return [(r["content"], r["seq"]) for r in records]


def postgres_rows(url: str, schema: str, handle: str) -> list[tuple[str, int]]:
    """:func:`stored_rows` from the tables of a PostgreSQL schema."""
    query = sql.SQL(
        "SELECT m.content, m.seq FROM {}.messages m JOIN {}.conversations c "
        "ON c.id = m.conversation_id WHERE c.session_id = %s OR c.id::text = %s ORDER BY m.seq"
    ).format(sql.Identifier(schema), sql.Identifier(schema))
    with psycopg.connect(url) as conn:
        rows = conn.execute(query, (handle, handle)).fetchall()
    return [(str(c), int(s)) for c, s in rows]


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


def run_processes(url: str, names: list[str], count: int, **options: Any) -> None:
    """One writer process per name (spawned), opening the store at the same moment;
    each must exit cleanly."""
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(len(names))
    processes = [
        context.Process(target=process_writer, args=(url, n, count, start), kwargs=options)
        for n in names
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=240)
        assert process.exitcode == 0, f"writer process failed ({process.exitcode})"


def test_four_processes_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    url = f"sqlite:///{path}"
    count = 100 if FULL else 30
    names = [f"p{n}" for n in range(4)]
    run_processes(url, names, count, busy_timeout=60)
    subject: Any = Subject("embedded", open_backend(url), sqlite_path=path)
    check_session(stored_rows(subject, "shared"), names, count)
    for name in names:
        check_session(stored_rows(subject, f"own-{name}"), [name], count)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_four_processes_on_one_postgres_database(postgres_server: PostgresHandle) -> None:
    """Each process connects to a new schema at once (so they also race to apply the
    migrations, which the advisory lock serialises), then writes."""
    schema = new_schema("procs")
    count = 100 if FULL else 30
    names = [f"p{n}" for n in range(4)]
    run_processes(with_schema(postgres_server.url, schema), names, count)
    check_session(postgres_rows(postgres_server.url, schema, "shared"), names, count)
    for name in names:
        check_session(postgres_rows(postgres_server.url, schema, f"own-{name}"), [name], count)
