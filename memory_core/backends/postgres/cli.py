"""``memory-core postgres-schema``: print or apply the PostgreSQL backend's migrations,
or purge what deleted rows left in the files and statistics.

For teams that run DDL separately from the application::

    memory-core postgres-schema                      # every migration's DDL (schema memory_core)
                                                     # and the pgvector column where available
    memory-core postgres-schema --schema team_memory  # the same, in another schema
    memory-core postgres-schema postgresql://…        # only what that database still lacks
    memory-core postgres-schema postgresql://… --apply  # apply it (advisory lock held)
    memory-core postgres-schema postgresql://… --purge  # rewrite the tables after an erasure

``--purge`` runs :func:`.residue.purge` (``VACUUM (FULL, ANALYZE)`` of each table, each
locked against reads and writes while it is rewritten) and prints the seconds each took
and what it could not reach. A session with a transaction open since before the purge
may have kept deleted rows in the new files: the command then names it and fails; run it
again once that transaction has ended.

Exit codes as for ``memory-core``: 0 success, 1 failure (one line), 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import anyio
import psycopg

from memory_core.store import ConfigurationError, MemoryCoreError, StoreError

from . import residue, vector
from .config import Settings, check_schema, parse_settings
from .errors import open_connection, translate
from .schema import LATEST, applied_version, migrate, migration_sql
from .tx import Tx


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memory-core postgres-schema",
        description=(
            "Print (default) or apply the PostgreSQL backend's schema migrations, or purge "
            "what deleted rows left in the tables' files and statistics."
        ),
    )
    parser.add_argument("url", nargs="?", help="database URL: print only what it lacks")
    parser.add_argument("--schema", default=None, help="PostgreSQL schema (default memory_core)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--apply", action="store_true", help="apply the missing migrations")
    action.add_argument(
        "--purge",
        action="store_true",
        help="rewrite every table (VACUUM FULL, ANALYZE): nothing deleted stays in its files",
    )
    return parser


def _settings(url: str, schema: str | None) -> Settings:
    return parse_settings(
        url,
        schema=schema,
        min_size=1,
        max_size=1,
        pool_timeout=30.0,
        connect_timeout=10.0,
        statement_timeout=None,
        prepared_statements=False,
    )


async def _purge(url: str, schema: str | None) -> str:
    """Purge the schema on one connection of its own; the report's lines. ``StoreError``
    when something may have kept deleted rows in the new files."""
    settings = _settings(url, schema)
    try:
        async with await open_connection(
            settings.conninfo, autocommit=True, connect_timeout=10
        ) as conn:
            run = lambda work: work(Tx(conn.cursor(), settings.schema))  # noqa: E731
            purged = await residue.purge(run, settings.schema)
    except psycopg.Error as exc:
        raise translate(exc, write=True, sent=True) from None
    took = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in purged.tables.items())
    lines = [f"-- schema {settings.schema}: rewritten {took}"]
    lines += [f"-- not reached: {sentence}" for sentence in purged.not_reached]
    if purged.held_back:
        sys.stdout.write("\n".join(lines) + "\n")
        raise StoreError(
            "postgres: what was open since before the purge may have kept deleted rows in "
            f"the rewritten files ({'; '.join(purged.held_back)}): run the purge again "
            "once it has ended"
        )
    return "\n".join(lines) + "\n"


async def _pending(url: str, schema: str | None, apply: bool) -> str:
    settings = _settings(url, schema)
    try:
        async with await open_connection(
            settings.conninfo, autocommit=True, connect_timeout=10
        ) as conn:
            if apply:
                before = await migrate(conn, settings.schema)
                return f"-- schema {settings.schema}: version {before} -> {LATEST}\n"
            found = await applied_version(conn, settings.schema)
            vector_missing = await _vector_missing(conn, settings.schema)
    except psycopg.Error as exc:
        raise translate(exc, write=apply, sent=True) from None
    if found >= LATEST and not vector_missing:
        return f"-- schema {settings.schema} is at version {found}: nothing to apply\n"
    ddl = migration_sql(settings.schema, since=found) if found < LATEST else ""
    return ddl + (vector.enable_sql(settings.schema) if vector_missing else "")


async def _vector_missing(conn: psycopg.AsyncConnection[Any], schema: str) -> bool:
    """Whether the database has or offers pgvector but ``schema``'s messages lack its
    column (what a connect would add)."""
    if await vector.active(conn, schema) is not None:
        return False
    cursor = await conn.execute(
        "SELECT count(*) > 0 FROM pg_available_extensions WHERE name = 'vector'"
    )
    row = await cursor.fetchone()
    return bool(row and row[0])


def main(argv: Sequence[str], *, debug: bool = False) -> int:
    """Run the command; returns the exit code."""
    try:
        args = _parser().parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        if args.url is None:
            if args.apply or args.purge:
                option = "--apply" if args.apply else "--purge"
                raise ConfigurationError(f"{option} needs the database URL")
            schema = check_schema(args.schema or "memory_core")
            text = migration_sql(schema) + vector.enable_sql(schema)
        elif args.purge:
            text = anyio.run(_purge, args.url, args.schema)
        else:
            text = anyio.run(_pending, args.url, args.schema, args.apply)
    except MemoryCoreError as exc:
        if debug:
            raise
        print(f"memory-core: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
