"""stats on PostgreSQL: exact counts per user and in total, on a single-tenant and a
multi-tenant store, the size of the schema's tables, and a dry-run erasure."""

from __future__ import annotations

import psycopg
import pytest

from memory_core import open_backend
from memory_core_dev.postgres_schemas import new_schema, with_schema
from memory_core_dev.postgres_server import PostgresHandle
from tests.backends.stats_cases import (
    check_counts,
    check_dry_run,
    check_long_term_counts,
    check_trace_counts,
)

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("multi_tenant", [False, True], ids=["single-tenant", "multi-tenant"])
async def test_counts_per_user_and_a_dry_run(
    postgres_server: PostgresHandle, multi_tenant: bool
) -> None:
    url = with_schema(postgres_server.url, new_schema("stats"))
    async with open_backend(url, multi_tenant=multi_tenant) as memory:
        await check_counts(memory, "ada", "bob")
        await check_dry_run(memory, "ada", "bob")


@pytest.mark.parametrize("multi_tenant", [False, True], ids=["single-tenant", "multi-tenant"])
async def test_long_term_counts_per_user(
    postgres_server: PostgresHandle, multi_tenant: bool
) -> None:
    url = with_schema(postgres_server.url, new_schema("stats"))
    async with open_backend(url, multi_tenant=multi_tenant) as memory:
        await check_long_term_counts(memory, "ada", "bob")


async def test_the_size_is_that_of_the_schemas_tables(postgres_server: PostgresHandle) -> None:
    schema = new_schema("stats")
    async with open_backend(with_schema(postgres_server.url, schema)) as memory:
        await memory.add_message("s", "user", "words " * 2000, user_identifier="ada")
        found = await memory.stats()
    with psycopg.connect(postgres_server.url) as conn:
        tables = conn.execute(
            "SELECT sum(pg_total_relation_size(format('%%I.%%I', table_schema, table_name))) "
            "FROM information_schema.tables WHERE table_schema = %s",
            (schema,),
        ).fetchone()
    assert tables is not None and found.size_bytes == tables[0] and tables[0] > 0


@pytest.mark.parametrize("multi_tenant", [False, True], ids=["single-tenant", "multi-tenant"])
async def test_trace_counts_per_user(postgres_server: PostgresHandle, multi_tenant: bool) -> None:
    url = with_schema(postgres_server.url, new_schema("stats"))
    async with open_backend(url, multi_tenant=multi_tenant) as memory:
        await check_trace_counts(memory, "ada", "bob")
