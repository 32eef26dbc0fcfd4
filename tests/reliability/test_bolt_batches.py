"""Bolt: a whole ``add_messages_batch`` call is one transaction. A failure inside Neo4j
on the 5th of 6 messages (a uniqueness constraint this test adds) keeps none of them;
and a Neo4j restart during a batch ingest leaves every batch whole or absent, with each
acknowledged batch stored exactly once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from uuid import uuid4

import anyio
import pytest
from neo4j import GraphDatabase

from memory_core import MemoryCoreError, open_backend
from tests.support.neo4j_fixtures import Neo4jHandle

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]


def cypher(server: Neo4jHandle, query: str, **params: object) -> list[dict[str, object]]:
    with GraphDatabase.driver(server.uri, auth=server.auth) as driver:
        records, _, _ = driver.execute_query(query, params)
    return [r.data() for r in records]


@pytest.fixture
def unique_content(neo4j_clean: Neo4jHandle) -> Iterator[Neo4jHandle]:
    cypher(
        neo4j_clean,
        "CREATE CONSTRAINT reliability_unique_content IF NOT EXISTS "
        "FOR (m:Message) REQUIRE m.content IS UNIQUE",
    )
    try:
        yield neo4j_clean
    finally:
        cypher(neo4j_clean, "DROP CONSTRAINT reliability_unique_content IF EXISTS")


async def test_a_failure_inside_neo4j_keeps_none_of_the_call(
    unique_content: Neo4jHandle,
) -> None:
    server = unique_content
    session = f"atomic-{uuid4().hex}"
    async with open_backend(server.uri, auth=server.auth) as backend:
        await backend.add_message(session, "user", "before")
        messages = [{"role": "user", "content": f"m{i}-{session}"} for i in range(4)]
        messages += [{"role": "user", "content": "twice"}, {"role": "user", "content": "twice"}]
        with pytest.raises(MemoryCoreError):
            await backend.add_messages_batch(session, messages, batch_size=2)
        read = await backend.get_conversation(session)
        assert [m.content for m in read.messages] == ["before"]
    count = cypher(server, "MATCH (m:Message) RETURN count(m) AS n")[0]["n"]
    assert count == 1


async def test_neo4j_restart_during_batch_ingest(neo4j_server: Neo4jHandle) -> None:
    if not neo4j_server.can_restart:
        pytest.skip("an external NEO4J_URI cannot be restarted by the tests")
    session = f"ingest-{uuid4().hex}"
    size = 50
    acknowledged: list[int] = []
    failed: list[str] = []
    restarted = anyio.Event()
    after_restart: list[int] = []
    async with open_backend(
        neo4j_server.uri, auth=neo4j_server.auth, max_transaction_retry_time=5
    ) as backend:
        await backend.add_message(session, "user", "start")

        async def ingest() -> None:
            after = 0
            for number in range(1000):  # bounded; ends 5 batches after the restart
                items = [{"role": "user", "content": f"b{number}-{i}"} for i in range(size)]
                try:
                    await backend.add_messages_batch(session, items)
                    acknowledged.append(number)
                    if restarted.is_set():
                        after_restart.append(number)
                except MemoryCoreError as exc:
                    failed.append(type(exc).__name__)
                await anyio.sleep(0.05)
                if restarted.is_set():
                    after += 1
                    if after >= 5:
                        return

        async with anyio.create_task_group() as group:
            group.start_soon(ingest)
            await anyio.sleep(0.5)
            await anyio.to_thread.run_sync(neo4j_server.restart)
            restarted.set()
        assert acknowledged, "nothing was ingested"
        assert after_restart, "nothing was ingested after the restart"
        assert set(failed) <= {"TransportError"}, failed
    rows = cypher(
        neo4j_server,
        "MATCH (c:Conversation {session_id: $s})-[:HAS_MESSAGE]->(m) RETURN m.content AS c",
        s=session,
    )
    per_batch = Counter(str(r["c"]).split("-")[0] for r in rows if r["c"] != "start")
    for number in acknowledged:
        assert per_batch[f"b{number}"] == size, f"acknowledged batch {number} not whole"
    assert all(count == size for count in per_batch.values()), "a batch was half-written"
    contents = [r["c"] for r in rows]
    assert len(contents) == len(set(contents)), "a message was stored twice"
    print(f"{len(acknowledged)} batches acknowledged, {len(failed)} failed: {Counter(failed)}")
