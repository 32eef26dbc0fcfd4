"""Writers creating one new session at once converge on one conversation row: the row's
id is derived from (tenant, session id), so an insert may clash on either unique key and
both must be taken as "already there". A clash on the primary key raised
``StoreError(UniqueViolation)`` (seen in the conformance run on PostgreSQL 18, the
``pgvector_server``, where this test runs: there 1 round in 5 hit it; it is a race, so a
run of the old code fails only most of the time)."""

from __future__ import annotations

import uuid

import anyio
import pytest

from memory_core import open_backend
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = pytest.mark.anyio

ROUNDS = 10
WRITERS = 20


async def test_writers_creating_one_session_at_once_all_succeed(
    pgvector_server: PostgresHandle,
) -> None:
    url = f"{pgvector_server.url}?schema=race_{uuid.uuid4().hex[:12]}"
    async with open_backend(url) as backend:
        for _ in range(ROUNDS):
            session = uuid.uuid4().hex

            async def write(n: int, session: str = session) -> None:
                await backend.add_message(session, "user", f"w{n}")
                await backend.add_messages_batch(session, [{"role": "user", "content": f"b{n}"}])

            async with anyio.create_task_group() as group:
                for n in range(WRITERS):
                    group.start_soon(write, n)
            read = await backend.get_conversation(session_id=session)
            assert len(read.messages) == 2 * WRITERS
