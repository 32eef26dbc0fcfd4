"""What a delete leaves behind in PostgreSQL, and the steps that clear it.

A ``DELETE`` removes rows from every query, not from everything the server keeps:

- **Planner statistics** (``pg_stats``): ``ANALYZE`` (which autovacuum runs on any busy
  table) copies sampled values into them: whole contents, metadata, user identifiers,
  session names and the words of ``messages.words``. They stay until the next
  ``ANALYZE``, which samples only live rows. :func:`refresh_statistics` (the end of every
  ``forget_user``) analyzes each table of the schema; a table the erasure emptied is not
  analyzed (``ANALYZE`` keeps the statistics of a table it finds empty) but has its
  statistics dropped instead. Setting the user-text columns' statistics target to 0 was
  measured and rejected: without statistics on ``tenant`` and ``words`` the planner
  searches a single-tenant store of 100,000 messages by a nested loop, 84 times slower.
- **Files** (heap, TOAST and index files): ``VACUUM`` marks the space of deleted rows free
  but leaves their bytes until a later write reuses it, and a GIN index never drops a
  word from its entry tree; ``pg_statistic``'s file keeps the earlier versions of its
  rows. :func:`purge` rewrites every table of the schema with ``VACUUM (FULL,
  ANALYZE)``: new files holding only live rows, every index (GIN included) rebuilt; then
  ``pg_statistic`` where the role may (a superuser). It holds an ``ACCESS EXCLUSIVE``
  lock on each table while it rewrites it (reads and writes of that table wait), and a
  rewrite copies the rows a transaction older than their delete can still see: the
  purge names what may have done so (:attr:`Purged.held_back`).

Neither reaches the write-ahead log, archived WAL, backups or other servers: see
docs/erasure.md.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any

from psycopg import errors as pg_errors

from memory_core.store import ConfigurationError

from .tx import Tx

Run = Callable[[Callable[[Tx], Awaitable[Any]]], Awaitable[Any]]

CLEAR_LOCK_SECONDS = 2
"""How long dropping an emptied table's statistics waits for its lock (PostgreSQL before
18 takes an ``ACCESS EXCLUSIVE`` lock for it, which would queue every reader behind it)."""

# Whether this role may ANALYZE and VACUUM the table ``c``: its owner (or a member of the
# owning role, or a superuser), or on PostgreSQL 17+ a role holding MAINTAIN on it. CASE
# keeps an older server from parsing MAINTAIN.
_MAY = """pg_has_role(c.relowner, 'USAGE') OR CASE
    WHEN current_setting('server_version_num')::int >= 170000
    THEN has_table_privilege(c.oid, 'MAINTAIN') ELSE false END"""

_TABLES = f"""
SELECT c.relname, {_MAY} FROM pg_class c
WHERE c.relnamespace = %s::regnamespace AND c.relkind = 'r' ORDER BY c.relname
"""

_MAY_REWRITE_STATISTICS = f"SELECT {_MAY} FROM pg_class c WHERE c.oid = 'pg_statistic'::regclass"

STATISTICS_CATALOG_NOT_REACHED = (
    "PostgreSQL's statistics catalog file (pg_catalog.pg_statistic): earlier versions of "
    "the statistics rows, which held the user's values, stay in its file until it is "
    "rewritten, which takes a superuser: VACUUM FULL pg_catalog.pg_statistic"
)

# The analyzed columns of a table with their types, and whether a generated column is
# computed from them (PostgreSQL refuses to alter the type of such a column): the
# generation expression, a pg_attrdef row, depends on each column it reads.
_ANALYZED_COLUMNS = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod), EXISTS (
    SELECT 1 FROM pg_depend d
    JOIN pg_attrdef x ON x.oid = d.objid
    JOIN pg_attribute g ON g.attrelid = x.adrelid AND g.attnum = x.adnum
    WHERE d.classid = 'pg_attrdef'::regclass AND d.refclassid = 'pg_class'::regclass
      AND d.refobjid = a.attrelid AND d.refobjsubid = a.attnum
      AND g.attgenerated <> '' AND g.attnum <> a.attnum)
FROM pg_attribute a
WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped
  AND a.attname IN (SELECT attname FROM pg_stats WHERE schemaname = %s AND tablename = %s)
ORDER BY a.attnum
"""

# Sessions whose snapshot may predate a purge: a rewrite copies rows deleted while one of
# them could still see them. A walsender's is a standby's (hot_standby_feedback); an
# autovacuum worker gives way to the rewrite's lock before the rewrite looks. A role
# that may not see another role's xact_start (pg_read_all_stats) counts all its sessions.
_HOLDERS = """
SELECT format('session %%s (%%s%%s)', pid, backend_type,
    ', transaction open since ' || xact_start)
FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND backend_xmin IS NOT NULL
  AND backend_type <> 'autovacuum worker'
  AND (datname = current_database() OR datname IS NULL)
  AND (xact_start IS NULL OR xact_start < %s)
UNION ALL
SELECT format('prepared transaction %%L (since %%s)', gid, prepared)
FROM pg_prepared_xacts WHERE database = current_database() AND prepared < %s
UNION ALL
SELECT format('replication slot %%L', slot_name) FROM pg_replication_slots
WHERE xmin IS NOT NULL
"""


@dataclass
class Purged:
    """What :func:`purge` did. ``tables`` maps each table rewritten to the seconds it took
    (``pg_statistic`` included when this role may rewrite it). ``held_back`` names what
    may have kept deleted rows in the new files (a session with a transaction open since
    before the purge, a prepared transaction, a replication slot): run the purge again
    once they have ended. ``not_reached``: what this role could not rewrite, one sentence
    each."""

    tables: dict[str, float] = field(default_factory=dict)
    held_back: list[str] = field(default_factory=list)
    not_reached: list[str] = field(default_factory=list)


def quoted(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


async def _tables(tx: Tx) -> list[tuple[str, bool]]:
    """Each table of the schema, and whether this role may analyze and vacuum it."""
    return [(row[0], bool(row[1])) for row in await tx.rows(_TABLES, (tx.schema,))]


def _not_owned_sentence(schema: str, names: list[str]) -> str:
    listed = ", ".join(f"{schema}.{name}" for name in names)
    return (
        f"PostgreSQL's planner statistics (pg_stats) of {listed}: this role may not "
        "ANALYZE them, so they may hold this user's values until they are next analyzed; "
        "have their owner run memory-core postgres-schema URL --purge"
    )


async def refresh_statistics(run: Run, schema: str) -> list[str]:
    """Rebuild the statistics of each table of ``schema`` from its live rows (drop those of
    an empty table); ``run(work)`` runs ``work`` in a transaction. Returns what could not
    be reached, one sentence each."""
    found: list[tuple[str, bool]] = await run(_tables)
    not_reached: list[str] = []
    refused = [name for name, may in found if not may]
    if refused:
        not_reached.append(_not_owned_sentence(schema, refused))
    for name in (name for name, may in found if may):
        not_reached += await run(partial(_refresh, table=name))
    return not_reached


async def _refresh(tx: Tx, table: str) -> list[str]:
    """``ANALYZE`` the table, or drop its statistics when it holds no row."""
    relation = f"{tx.schema}.{quoted(table)}"
    if await tx.row(f"SELECT 1 FROM {relation} LIMIT 1") is not None:
        await tx.run(f"ANALYZE {relation}")
        return []
    return await clear_statistics(tx, table)


async def clear_statistics(tx: Tx, table: str) -> list[str]:
    """Drop every column statistic of ``table`` (in a transaction). PostgreSQL 18+:
    ``pg_clear_attribute_stats``. Before: ``ALTER COLUMN … TYPE`` to the column's own type,
    which drops its statistics and changes nothing else (no rewrite, indexes kept), but
    is refused for a column a generated column is computed from. Returns what stayed,
    one sentence each."""
    relation = f"{tx.schema}.{quoted(table)}"
    columns = await tx.rows(_ANALYZED_COLUMNS, (relation, tx.schema, table))
    if tx.cursor.connection.info.server_version >= 180000:
        for name, _, _ in columns:
            await tx.row(
                "SELECT pg_catalog.pg_clear_attribute_stats(%s, %s, %s, false)",
                (tx.schema, table, name),
            )
        return []
    alterable = [(name, kind) for name, kind, used in columns if not used]
    kept = [f"{tx.schema}.{table}.{name}" for name, _, used in columns if used]
    left = [_KEPT_BY_GENERATED.format(", ".join(kept))] if kept else []
    if not alterable:
        return left
    changes = ", ".join(f"ALTER COLUMN {quoted(name)} TYPE {kind}" for name, kind in alterable)
    try:
        async with tx.cursor.connection.transaction():
            await tx.run(f"SET LOCAL lock_timeout = '{CLEAR_LOCK_SECONDS}s'")
            await tx.run(f"ALTER TABLE {relation} {changes}")
    except pg_errors.LockNotAvailable:
        return [_KEPT_BY_LOCK.format(f"{tx.schema}.{table}")]
    return left


_KEPT_BY_GENERATED = (
    "PostgreSQL's planner statistics (pg_stats) of {}, left by the last rows of an emptied "
    "table: before PostgreSQL 18 the statistics of a column that a generated column is "
    "computed from cannot be dropped; they go when the table is next analyzed with rows in it"
)
_KEPT_BY_LOCK = (
    "PostgreSQL's planner statistics (pg_stats) of {}, left by the last rows of the "
    "emptied table: another transaction held the table for more than "
    f"{CLEAR_LOCK_SECONDS} s; run forget_user again once it has ended"
)


async def purge(run: Run, schema: str) -> Purged:
    """Rewrite each table of ``schema`` (``VACUUM (FULL, ANALYZE)``) and drop the
    statistics of the empty ones, then rewrite ``pg_statistic`` (whose file keeps earlier
    versions of statistics rows) where this role may. ``run(work)`` must run ``work``
    outside a transaction block (``VACUUM`` cannot run inside one).
    ``ConfigurationError`` names the tables this role may not rewrite, before anything is
    done."""
    found: list[tuple[str, bool]] = await run(_tables)
    refused = [name for name, may in found if not may]
    if refused:
        listed = ", ".join(f"{schema}.{name}" for name in refused)
        raise ConfigurationError(
            f"postgres: this role may not rewrite {listed}; run the purge as their owner"
        )
    purged = Purged()
    started: datetime = await run(_now)
    for name, _ in found:
        await _timed(run, purged, started, name, partial(_rewrite, table=name))
    if await run(_may_rewrite_statistics):
        work = partial(_vacuum_full, relation="pg_catalog.pg_statistic")
        await _timed(run, purged, started, "pg_statistic", work)
    else:
        purged.not_reached.append(STATISTICS_CATALOG_NOT_REACHED)
    return purged


async def _timed(
    run: Run,
    purged: Purged,
    since: datetime,
    name: str,
    work: Callable[[Tx], Awaitable[list[str]]],
) -> None:
    """Run one rewrite, noting first what may hold rows back from it, then what it left."""
    for holder in await run(partial(_holders, since=since)):
        if holder not in purged.held_back:
            purged.held_back.append(holder)
    began = time.perf_counter()
    purged.not_reached += await run(work)
    purged.tables[name] = round(time.perf_counter() - began, 3)


async def _now(tx: Tx) -> datetime:
    row = await tx.row("SELECT clock_timestamp()")
    return datetime.now(UTC) if row is None else row[0]


async def _holders(tx: Tx, since: datetime) -> list[str]:
    return [row[0] for row in await tx.rows(_HOLDERS, (since, since))]


async def _may_rewrite_statistics(tx: Tx) -> bool:
    row = await tx.row(_MAY_REWRITE_STATISTICS)
    return bool(row and row[0])


async def _vacuum_full(tx: Tx, relation: str) -> list[str]:
    await tx.run(f"VACUUM FULL {relation}")
    return []


async def _rewrite(tx: Tx, table: str) -> list[str]:
    """Rewrite the table; drop its statistics when it is empty. What stayed."""
    relation = f"{tx.schema}.{quoted(table)}"
    await tx.run(f"VACUUM (FULL, ANALYZE) {relation}")
    if await tx.row(f"SELECT 1 FROM {relation} LIMIT 1") is not None:
        return []
    async with tx.cursor.connection.transaction():
        return await clear_statistics(tx, table)
