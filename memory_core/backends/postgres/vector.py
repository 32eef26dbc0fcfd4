"""pgvector: the ``vector`` column and the nearest-neighbour candidates of a vector search.

On connect (in the migration transaction, under its advisory lock) :func:`enable` looks
for the ``vector`` extension. Installed in the database (in any schema), or available and
creatable by this role (``CREATE EXTENSION IF NOT EXISTS vector SCHEMA <our schema>``,
so nothing is created outside our schema), it adds ``messages.embedding_vector``: a stored
generated column, ``embedding`` (the exact float8 values, which stay the source of every
read) cast to ``vector``. Every writer fills it without knowing it exists; on an existing
store, adding it rewrites the table once.

When the extension is missing, or the role may not create it (pgvector is not a trusted
extension: creating it takes a superuser) or may not alter the table, nothing is changed
and vector search stays the Python fallback of :mod:`.search`. A later connect by a role
that may switches the store over. An extension installed in another schema (by an
administrator, or by another store of the database, which created it in its own schema)
is used from there.

Search on this path: pgvector's cosine distance ``<=>`` picks the best
:func:`~memory_core.scoring.candidate_pool` messages in scope whose stored vector has the
query's dimensions (others come from another model and are not comparable), without an
index (an exact scan: an HNSW index is approximate and would drop hits the scope filters
remove after it); each is then scored from its exact float8 values, so scores match the
fallback's and the other backends'. Vectors pgvector cannot hold (over 16,000 dimensions,
or not finite) get no ``embedding_vector`` and are not found by vector search here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import AsyncConnection

from .codec import sql_int
from .tx import Tx

COLUMN = "embedding_vector"
MAX_DIMENSIONS = 16000
"""The most dimensions a pgvector ``vector`` holds."""
# Cosine distance is computed on float4 copies: a message of similarity just above 0 may
# come back at a distance just above 1. The exact score decides afterwards.
_SLACK = 1e-5


def column_sql(schema: str, extension_schema: str) -> str:
    """The DDL adding :data:`COLUMN` to ``schema``'s messages (the type from
    ``extension_schema``)."""
    return (
        f"ALTER TABLE {schema}.messages ADD COLUMN IF NOT EXISTS {COLUMN} "
        f"{extension_schema}.vector GENERATED ALWAYS AS (CASE WHEN cardinality(embedding) "
        f"BETWEEN 1 AND {MAX_DIMENSIONS} AND NOT embedding && "
        "ARRAY['NaN', 'Infinity', '-Infinity']::float8[] "
        f"THEN embedding::{extension_schema}.vector END) STORED"
    )


def enable_sql(schema: str) -> str:
    """What :func:`enable` does, as one statement for teams that run DDL themselves: where
    the extension is installed (in any schema) or available, the column; a role that may
    not create the extension gets a notice and the Python fallback stays."""
    column = column_sql(schema, "%1$I")  # format(): the extension's schema, quoted
    return (
        "-- pgvector: vector search in SQL where the extension is installed or available\n"
        "DO $memory_core$\nDECLARE ext text;\nBEGIN\n"
        "  SELECT n.nspname INTO ext FROM pg_extension e\n"
        "    JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'vector';\n"
        "  IF ext IS NULL AND EXISTS (\n"
        "      SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN\n"
        f"    CREATE EXTENSION IF NOT EXISTS vector SCHEMA {schema};\n"
        f"    ext := '{schema}';\n"
        "  END IF;\n"
        "  IF ext IS NOT NULL THEN\n"
        f"    EXECUTE format($ddl${column}$ddl$, ext);\n"
        "  END IF;\n"
        "EXCEPTION WHEN insufficient_privilege THEN\n"
        "  RAISE NOTICE 'pgvector not enabled (%): vector search stays in Python', SQLERRM;\n"
        "END\n$memory_core$;\n"
    )


async def _value(conn: AsyncConnection[Any], sql: str, params: Sequence[Any] = ()) -> Any:
    cursor = await conn.execute(sql, params)
    row = await cursor.fetchone()
    return None if row is None else row[0]


async def extension_schema(conn: AsyncConnection[Any]) -> str | None:
    """The schema of the installed ``vector`` extension, or None."""
    found: str | None = await _value(
        conn,
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'vector'",
    )
    return found


async def enable(conn: AsyncConnection[Any], schema: str) -> None:
    """Create the extension (when possible) and the column; inside the caller's
    transaction, after the migrations. A refusal is not an error: the fallback stays."""
    if await active(conn, schema) is not None:
        return  # checked first: ALTER TABLE would lock the table on every connect
    installed = await extension_schema(conn)
    if installed is None and not await _value(
        conn, "SELECT count(*) > 0 FROM pg_available_extensions WHERE name = 'vector'"
    ):
        return
    try:
        async with conn.transaction():  # a savepoint: a refusal keeps the migrations
            if installed is None:
                await conn.execute(f"CREATE EXTENSION IF NOT EXISTS vector SCHEMA {schema}")
                installed = schema
            await conn.execute(column_sql(schema, installed))
    except psycopg.errors.InsufficientPrivilege:
        return


async def active(conn: AsyncConnection[Any], schema: str) -> str | None:
    """The schema of the ``vector`` type when ``schema``'s messages have the pgvector
    column (vector search in SQL), None otherwise (the Python fallback)."""
    found: str | None = await _value(
        conn,
        "SELECT n.nspname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
        "JOIN pg_namespace n ON n.oid = t.typnamespace WHERE a.attrelid = to_regclass(%s) "
        "AND a.attname = %s AND NOT a.attisdropped",
        (f"{schema}.messages", COLUMN),
    )
    return found


def literal(vector: Sequence[float]) -> str | None:
    """``vector`` as pgvector text (``[1.0,2.5]``); None when pgvector cannot hold it."""
    values = [float(x) for x in vector]
    if not 1 <= len(values) <= MAX_DIMENSIONS or not all(map(math.isfinite, values)):
        return None
    return "[" + ",".join(repr(x) for x in values) + "]"


async def nearest(
    tx: Tx, columns: str, source: str, where: str, params: list[object], query: str, pool: int
) -> list[tuple[Any, ...]]:
    """Rows of ``columns`` for the ``pool`` messages in scope nearest to ``query`` (a
    :func:`literal`) by cosine distance, nearest first, with a similarity above about 0."""
    ext = tx.vector_schema
    dims = query.count(",") + 1
    distance = (
        f"CASE WHEN {ext}.vector_dims(m.{COLUMN}) = %s "
        f"THEN m.{COLUMN} OPERATOR({ext}.<=>) %s::{ext}.vector END"
    )
    return await tx.rows(
        f"SELECT {columns} {source} CROSS JOIN LATERAL (SELECT {distance} AS distance) d "
        f"WHERE m.{COLUMN} IS NOT NULL AND {where} AND d.distance < %s "
        "ORDER BY d.distance ASC, m.num ASC LIMIT %s",
        [dims, query, *params, 1.0 + _SLACK, sql_int(pool)],
    )


async def nearest_cast(
    tx: Tx, columns: str, table: str, where: str, params: list[object], query: str, pool: int
) -> list[tuple[Any, ...]]:
    """Rows of ``columns`` (alias ``r``) for the ``pool`` rows of ``table`` in scope
    nearest to ``query`` (a :func:`literal`) by cosine distance, nearest first, each
    ``embedding`` cast to ``vector`` as it is read: the long-term tables have no stored
    vector column (their searches scan every embedding in scope, as message search
    does, and a column would tie their schema to the server's extensions)."""
    ext = tx.vector_schema
    dims = query.count(",") + 1
    distance = (
        "CASE WHEN cardinality(r.embedding) = %s AND NOT r.embedding && "
        "ARRAY['NaN', 'Infinity', '-Infinity']::float8[] "
        f"THEN r.embedding::{ext}.vector OPERATOR({ext}.<=>) %s::{ext}.vector END"
    )
    return await tx.rows(
        f"SELECT {columns} FROM {{s}}.{table} r CROSS JOIN LATERAL (SELECT {distance} AS "
        f"distance) d WHERE r.embedding IS NOT NULL AND {where} AND d.distance < %s "
        "ORDER BY d.distance ASC, r.created_at DESC, r.id LIMIT %s",
        [dims, query, *params, 1.0 + _SLACK, sql_int(pool)],
    )
