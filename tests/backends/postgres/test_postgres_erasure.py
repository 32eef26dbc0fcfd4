"""forget_user on PostgreSQL, proved by a scan of every table of the store's schema (each
row as text) for the user's identifiers and content."""

from __future__ import annotations

import uuid

import psycopg
import pytest

from memory_core import HashingEmbedder, open_backend
from memory_core_dev.postgres_server import PostgresHandle
from tests.backends.erasure_data import write_user

pytestmark = pytest.mark.anyio


def _url(server: PostgresHandle, schema: str) -> str:
    separator = "&" if "?" in server.url else "?"
    return f"{server.url}{separator}schema={schema}"


def _holding(url: str, schema: str, markers: list[str]) -> dict[str, list[str]]:
    """``{table: [markers]}`` over every table of ``schema``, rows compared as text."""
    found: dict[str, list[str]] = {}
    with psycopg.connect(url) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (schema,),
            )
        ]
        assert {"conversations", "messages", "entities", "mentions"} <= set(tables)
        for table in tables:
            for (text,) in conn.execute(f'SELECT x::text FROM "{schema}"."{table}" x'):
                hits = [m for m in markers if m.lower() in text.lower()]
                if hits:
                    found.setdefault(table, []).extend(hits)
    return found


@pytest.mark.parametrize("multi_tenant", [False, True], ids=["single-tenant", "multi-tenant"])
async def test_forget_user_leaves_no_row(
    postgres_server: PostgresHandle, multi_tenant: bool
) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    url = _url(postgres_server, schema)
    async with open_backend(url, multi_tenant=multi_tenant, embedder=HashingEmbedder()) as memory:
        gone = await write_user(memory, "userzed", "A")
        kept = await write_user(memory, "userkay", "B")
        assert _holding(postgres_server.url, schema, gone), "the scan must see A before"
        report = await memory.forget_user("userzed", batch_size=1)
        assert report.counts == {
            "conversations": 2,
            "messages": 4,
            "mentions": 4,
            "entities": 1 if not multi_tenant else 2,
            "idempotency_keys": 2,
        }
        assert _holding(postgres_server.url, schema, gone) == {}
        left = _holding(postgres_server.url, schema, kept)
        assert set(kept) <= {m for hits in left.values() for m in hits}
        assert (await memory.forget_user("userzed")).total == 0
