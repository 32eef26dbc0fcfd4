"""A backend under test plus the means to read its whole store (for before/after checks).

The dump reads the store from outside the backend: a second SQLite connection on the
file (embedded, and the NAMS server's backing file), a direct Cypher query (Bolt), a
connection of its own to the subject's schema (PostgreSQL). It is exact: rows or nodes
and relationships with every property, sorted.
"""

from __future__ import annotations

import atexit
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

import anyio
import psycopg
from neo4j import GraphDatabase
from psycopg import sql

from memory_core import MemoryBackend


def dump_sqlite(path: Path) -> list[str]:
    """Every row of every table of the database file (WAL included), as SQL text."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


_drivers: dict[str, Any] = {}


# On a shared server (NEO4J_URI): the nodes holding a string property with the test's
# tag, and every node one relationship from them; and their relationships.
_OWN = (
    "MATCH (t) WHERE any(k IN keys(t) WHERE t[k] IS :: STRING AND t[k] CONTAINS $tag) "
    "OPTIONAL MATCH (t)--(m) WITH collect(t) + collect(m) AS found UNWIND found AS n "
    "WITH DISTINCT n "
)


def dump_neo4j(uri: str, auth: Any, tag: str | None = None) -> list[str]:
    """Every node (labels, properties) and relationship (type, end ids), sorted; with a
    ``tag`` (a server others write to) only the test's own, as :data:`_OWN` finds them."""
    driver = _drivers.get(uri)
    if driver is None:
        driver = _drivers[uri] = GraphDatabase.driver(uri, auth=auth)
        atexit.register(driver.close)
    scope = "MATCH (n) " if tag is None else _OWN
    nodes, _, _ = driver.execute_query(
        f"{scope}RETURN labels(n) AS labels, properties(n) AS props", tag=tag
    )
    rels, _, _ = driver.execute_query(
        f"{scope}MATCH (n)-[r]-() WITH DISTINCT r, startNode(r) AS a, endNode(r) AS b "
        "RETURN type(r) AS type, properties(r) AS props, a.id AS a, b.id AS b",
        tag=tag,
    )
    out = [repr((sorted(r["labels"]), _props(r["props"]))) for r in nodes]
    out += [repr((r["type"], _props(r["props"]), r["a"], r["b"])) for r in rels]
    return sorted(out)


def _props(props: dict[str, Any]) -> list[tuple[str, Any]]:
    """Sorted properties; a value the driver cannot read (another test's year 20000,
    say) by its raw data: its placeholder object never equals a second read's."""
    return [
        (key, ("unreadable", repr(value.raw_data)) if hasattr(value, "raw_data") else value)
        for key, value in sorted(props.items())
    ]


_pg_connections: dict[str, psycopg.Connection[Any]] = {}


def dump_postgres(url: str, schema: str) -> list[str]:
    """Every row of every table of ``schema`` (the backend's tables and its migration
    record), each as its table name and values, sorted."""
    try:
        return _dump_postgres(_pg_connection(url), schema)
    except psycopg.OperationalError:
        # the kept connection was ended by another test (pg_terminate_backend, a
        # restart); the dump itself only reads, so one retry on a new one is safe
        _pg_connections.pop(url).close()
        return _dump_postgres(_pg_connection(url), schema)


def _pg_connection(url: str) -> psycopg.Connection[Any]:
    conn = _pg_connections.get(url)
    if conn is None or conn.closed:
        conn = _pg_connections[url] = psycopg.connect(url, autocommit=True)
        atexit.register(conn.close)
    return conn


def _dump_postgres(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    tables = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s "
        "ORDER BY table_name",
        (schema,),
    ).fetchall()
    out = []
    for (table,) in tables:
        query = sql.SQL("SELECT * FROM {}").format(sql.Identifier(schema, table))
        out += [repr((table, row)) for row in conn.execute(query)]
    return sorted(out)


@dataclass
class Subject:
    """An open backend of one kind and a dump of its store."""

    kind: str
    backend: MemoryBackend
    sqlite_path: Path | None = None
    neo4j: tuple[str, Any, bool] | None = None  # (URI, auth, shared with other writers)
    postgres: tuple[str, str] | None = None  # (server URL, schema)
    tag: str = field(default_factory=lambda: uuid4().hex[:10])

    async def dump(self) -> list[str]:
        if self.sqlite_path is not None:
            return await anyio.to_thread.run_sync(dump_sqlite, self.sqlite_path)
        if self.postgres is not None:
            return await anyio.to_thread.run_sync(dump_postgres, *self.postgres)
        assert self.neo4j is not None
        uri, auth, shared = self.neo4j
        tag = self.tag if shared else None
        return await anyio.to_thread.run_sync(dump_neo4j, uri, auth, tag)

    def name(self, kind: str = "s") -> str:
        """A session (or user) name no other test uses."""
        return f"rel-{kind}-{self.tag}-{uuid4().hex[:8]}"

    async def session(self, name: str | None = None) -> str:
        """A handle to write to: the name itself where the caller names sessions, else
        the id the store issued for a conversation created under that name."""
        name = name or self.name()
        if self.backend.capabilities.client_chosen_ids:
            return name
        created = await self.backend.create_conversation(session_id=name)
        return str(created.id)
