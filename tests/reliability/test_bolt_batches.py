"""Bolt: a whole ``add_messages_batch`` call is one transaction. A failure inside Neo4j
on the 5th of 6 messages (a uniqueness constraint this test adds) keeps none of them,
also when the call spans several statements; a call too large for Neo4j's transaction
memory fails at once; and a Neo4j restart during a batch ingest leaves every batch whole
or absent, with each acknowledged batch stored exactly once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from uuid import uuid4

import anyio
import pytest
from neo4j import GraphDatabase

from memory_core import MemoryCoreError, open_backend
from memory_core_dev.neo4j_fixtures import Neo4jHandle

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


@pytest.mark.neo4j_private
async def test_neo4j_restart_during_batch_ingest(neo4j_server: Neo4jHandle) -> None:
    neo4j_server.require_own("it restarts the server")
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


@pytest.fixture
def three_per_statement(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batch statements of 3 messages, so that small calls take the several-statement
    path a call of more than 1,000 messages takes."""
    from memory_core.backends.bolt import store as bolt_backend

    monkeypatch.setattr(bolt_backend, "STATEMENT_ROWS", 3)


async def test_a_call_of_several_statements_is_one_transaction(
    unique_content: Neo4jHandle, three_per_statement: None
) -> None:
    """8 messages = 3 statements in one transaction: they continue one another's sequence
    and chain; a failure in the last statement keeps none of the earlier ones."""
    from tests.backends.bolt.helpers import chain

    server = unique_content
    session = f"statements-{uuid4().hex}"
    graph = lambda query, **params: cypher(server, query, **params)  # noqa: E731
    async with open_backend(server.uri, auth=server.auth) as backend:
        await backend.add_message(session, "user", "before")
        contents = [f"m{i}-{session}" for i in range(8)]
        stored = await backend.add_messages_batch(
            session, [{"role": "user", "content": c} for c in contents]
        )
        read = (await backend.get_conversation(session)).messages
        assert stored == read[1:]
        assert [m.content for m in read] == ["before", *contents]
        assert chain(graph, session) == ["before", *contents]
        assert [m.created_at for m in read] == sorted({m.created_at for m in read})
        seqs = cypher(
            server,
            "MATCH (c:Conversation {session_id: $s})-[:HAS_MESSAGE]->(m) RETURN m.seq AS seq",
            s=session,
        )
        assert sorted(r["seq"] for r in seqs) == list(range(9))

        late_clash = [{"role": "user", "content": f"n{i}-{session}"} for i in range(7)]
        late_clash.append({"role": "user", "content": contents[0]})  # statement 3 fails
        with pytest.raises(MemoryCoreError):
            await backend.add_messages_batch(session, late_clash)
        assert (await backend.get_conversation(session)).messages == read


async def test_a_call_too_large_for_the_transaction_memory_fails_at_once(
    neo4j_server: Neo4jHandle, three_per_statement: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neo4j's transaction memory running out (a 90,000-message call on the 512 MB test
    server did) is a StoreError saying what to do, raised without the driver's 30 s of
    retries; nothing is written. The error is injected on the second statement."""
    from neo4j import exceptions as neo

    from memory_core import StoreError
    from memory_core.backends.bolt import store as bolt_backend

    statements = 0
    real_rows = bolt_backend.rows

    async def failing(tx: object, query: str, **params: object) -> object:
        nonlocal statements
        statements += 1
        if statements == 2:
            raise neo.Neo4jError._hydrate_neo4j(
                code=bolt_backend.OUT_OF_TRANSACTION_MEMORY, message="limit reached"
            )
        return await real_rows(tx, query, **params)  # type: ignore[arg-type]

    monkeypatch.setattr(bolt_backend, "rows", failing)
    session = f"too-large-{uuid4().hex}"
    async with open_backend(neo4j_server.uri, auth=neo4j_server.auth) as backend:
        with pytest.raises(StoreError, match="transaction memory") as raised:
            await backend.add_messages_batch(
                session, [{"role": "user", "content": f"m{i}"} for i in range(7)]
            )
        assert statements == 2  # not retried
        assert raised.value.written is None and not raised.value.maybe_applied
    found = cypher(
        neo4j_server, "MATCH (c:Conversation {session_id: $s}) RETURN count(c) AS n", s=session
    )
    assert found == [{"n": 0}]  # not even the conversation the first statement created
