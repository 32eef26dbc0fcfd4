"""A server or role whose time zone is not UTC: timestamps at the ends of Python's range
read back as written (the session reads them in UTC)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from memory_core import open_backend
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = pytest.mark.anyio

FIRST = datetime(1, 1, 1, tzinfo=UTC)
LAST = datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Tokyo"])
async def test_a_role_in_another_time_zone_reads_the_first_and_last_moment(
    postgres_server: PostgresHandle, zone: str
) -> None:
    """West of UTC, year 1 at midnight UTC is in year 0 (1 BC), east of it 31 Dec 9999 is
    in year 10000: neither is a Python datetime, and psycopg refused to read them."""
    schema, role = f"t_{uuid.uuid4().hex[:12]}", f"tz_{uuid.uuid4().hex[:10]}"
    parts = conninfo_to_dict(postgres_server.url)
    url = f"postgresql://{role}@{parts['host']}:{parts['port']}/{parts['dbname']}?schema={schema}"
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"GRANT CREATE ON DATABASE {parts['dbname']} TO {role}")
        admin.execute(f"ALTER ROLE {role} SET TimeZone = '{zone}'")
        try:
            async with open_backend(url) as backend:
                old, new = await backend.add_messages_batch(
                    "s",
                    [
                        {"role": "user", "content": "first", "timestamp": FIRST},
                        {"role": "user", "content": "last", "timestamp": LAST},
                    ],
                )
                read = await backend.get_conversation(session_id="s")
            assert [(m.id, m.created_at) for m in read.messages] == [
                (old.id, FIRST),
                (new.id, LAST),
            ]
        finally:
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            admin.execute(f"REVOKE CREATE ON DATABASE {parts['dbname']} FROM {role}")
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")
