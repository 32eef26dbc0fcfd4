"""Bolt workloads on a real Neo4j: memory-core, the peer and the raw driver floor.

The peer is neo4j-agent-memory 0.8.0's ``ShortTermMemory`` with no embedder and no
extractor (checked before use); its constraints and indexes are created at the start and
the ones it added are dropped at the end (so while the bench runs, our writes also
maintain the peer's extra ``Message`` indexes). The floor is the official driver running
the minimal Cypher for the same work in managed transactions (``execute_query``, as
memory-core runs one-statement calls: BEGIN travels with the statement): a single
``CREATE`` of the message linked to its conversation; an ``UNWIND`` of the batch doing the same; the
newest-100 rows by the ``(conversation_id, seq)`` index; the full-text and vector index
queries with the same limit. Floor writes create the same ``:Conversation`` /
``:Message`` nodes with the properties a read needs (so the same indexes, full-text
included, are maintained) but none of the bookkeeping: no get-or-create, no tail lookup,
no ``NEXT_MESSAGE`` chain, no mentions, nothing returned. They are deleted at the end.
"""

from __future__ import annotations

import os
import statistics
import warnings
from collections.abc import Callable
from typing import Any
from uuid import uuid4

import neo4j

from memory_core import HashingEmbedder, open_backend
from memory_core.backends.bolt import BoltStore, schema
from memory_core.backends.bolt.schema import FULLTEXT_INDEX

from .common import (
    SEARCH_QUERY,
    Counter,
    agent_turns,
    cursor_before,
    ingest_metrics,
    keyset_workload,
    latency_metrics,
    rows,
)
from .core import EVERY, FLOOR, OURS, PEER, Selection, Workload, measure, median_ms, timed
from .sizes import Sizes


def auth() -> tuple[str, str] | None:
    """``NEO4J_USERNAME`` / ``NEO4J_PASSWORD`` when set (the test server has no auth)."""
    user, password = os.environ.get("NEO4J_USERNAME"), os.environ.get("NEO4J_PASSWORD")
    return (user, password) if user and password else None


class Peer:
    """neo4j-agent-memory 0.8.0 short-term memory, no embedder, no extraction."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.added: list[tuple[str, str]] = []

    async def open(self) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from neo4j_agent_memory.config.settings import Neo4jConfig
            from neo4j_agent_memory.graph.client import Neo4jClient
            from neo4j_agent_memory.graph.schema import SchemaManager
            from neo4j_agent_memory.memory.short_term import ShortTermMemory
        from pydantic import SecretStr

        user, password = auth() or ("neo4j", "unused-auth-is-off")
        self.client = Neo4jClient(
            Neo4jConfig(uri=self.uri, username=user, password=SecretStr(password))
        )
        await self.client.connect()
        before = await _schema_names(self.uri)
        schema = SchemaManager(self.client)
        await schema.setup_constraints()
        await schema.setup_indexes()
        after = await _schema_names(self.uri)
        self.added = sorted(after - before)
        memory = ShortTermMemory(self.client)
        if memory._embedder is not None or memory._extractor is not None:
            raise RuntimeError("the peer must run with no embedder and no extractor")
        self.memory = memory
        return memory

    async def close(self) -> None:
        driver = neo4j.AsyncGraphDatabase.driver(self.uri, auth=auth())
        try:
            async with driver.session() as session:
                for kind, name in sorted(self.added, key=lambda a: a[0] != "CONSTRAINT"):
                    await session.run(f"DROP {kind} `{name}` IF EXISTS")
        finally:
            await driver.close()
            await self.client.close()


async def _schema_names(uri: str) -> set[tuple[str, str]]:
    driver = neo4j.AsyncGraphDatabase.driver(uri, auth=auth())
    try:
        async with driver.session() as session:
            constraints = await (await session.run("SHOW CONSTRAINTS YIELD name")).data()
            indexes = await (
                await session.run(
                    "SHOW INDEXES YIELD name, owningConstraint WHERE owningConstraint IS NULL"
                )
            ).data()
    finally:
        await driver.close()
    return {("CONSTRAINT", r["name"]) for r in constraints} | {
        ("INDEX", r["name"]) for r in indexes
    }


SETUP_CALL = 10_000  # messages per add_messages_batch call when filling a store


async def _consume(result: neo4j.AsyncResult) -> Any:
    return await result.consume()


async def _records(result: neo4j.AsyncResult) -> list[Any]:
    return [record async for record in result]


class Floor:
    """The raw driver doing the same work with minimal Cypher."""

    def __init__(self, uri: str, prefix: str) -> None:
        self.driver = neo4j.AsyncGraphDatabase.driver(uri, auth=auth())
        self.prefix = prefix
        self.seq: dict[str, int] = {}

    # ``execute_query``: a managed transaction whose BEGIN travels with the statement (two
    # round trips), the cheapest retrying way the driver offers, as memory-core uses.
    async def write(self, query: str, **params: Any) -> Any:
        return await self.driver.execute_query(
            query, params, routing_=neo4j.RoutingControl.WRITE, result_transformer_=_consume
        )

    async def read(self, query: str, **params: Any) -> list[Any]:
        return await self.driver.execute_query(
            query, params, routing_=neo4j.RoutingControl.READ, result_transformer_=_records
        )

    async def conversation(self, session: str) -> str:
        cid = str(uuid4())
        self.seq[cid] = 0
        await self.write(
            "CREATE (:Conversation {id: $id, session_id: $session, created_at: datetime()})",
            id=cid,
            session=session,
        )
        return cid

    async def add_one(self, cid: str, content: str) -> None:
        self.seq[cid] += 1
        await self.write(
            "MATCH (c:Conversation {id: $cid}) "
            "CREATE (c)-[:HAS_MESSAGE]->(:Message {id: $id, role: 'user', content: $content, "
            "timestamp: datetime(), conversation_id: $cid, seq: $seq})",
            cid=cid,
            id=str(uuid4()),
            content=content,
            seq=self.seq[cid],
        )

    async def add_many(self, cid: str, batch: list[dict[str, Any]]) -> None:
        start = self.seq[cid]
        self.seq[cid] += len(batch)
        items = [{"id": str(uuid4()), "seq": start + i, **row} for i, row in enumerate(batch)]
        await self.write(
            "MATCH (c:Conversation {id: $cid}) UNWIND $items AS item "
            "CREATE (c)-[:HAS_MESSAGE]->(:Message {id: item.id, role: item.role, "
            "content: item.content, timestamp: datetime(), conversation_id: $cid, "
            "seq: item.seq})",
            cid=cid,
            items=items,
        )

    async def close(self, prefix: str) -> None:
        """:meth:`purge` and close the driver."""
        await self.purge(prefix)
        await self.driver.close()

    async def purge(self, prefix: str) -> None:
        """Delete every conversation (with its messages) whose session starts with
        ``prefix`` (ours, the peer's and the floor's), in auto-commit batches."""
        async with self.driver.session() as session:
            for query in (
                "MATCH (c:Conversation)-[:HAS_MESSAGE]->(m) WHERE c.session_id STARTS WITH "
                "$prefix CALL (m) { DETACH DELETE m } IN TRANSACTIONS OF 5000 ROWS",
                "MATCH (c:Conversation) WHERE c.session_id STARTS WITH $prefix "
                "CALL (c) { DETACH DELETE c } IN TRANSACTIONS OF 5000 ROWS",
            ):
                await (await session.run(query, prefix=prefix)).consume()


async def run(
    uri: str, sizes: Sizes, log: Callable[[str], None], want: Selection = EVERY
) -> list[dict[str, Any]]:
    """Every Bolt workload (those ``want`` selects); report entries. Sessions are cleared
    at the end."""
    peer = Peer(uri)
    memory = await peer.open()
    tag = uuid4().hex[:8]
    floor = Floor(uri, f"bench-{tag}-")
    backend = open_backend(uri)
    assert isinstance(backend.store, BoltStore)
    sessions: list[str] = []
    peer_sessions: list[str] = []
    entries: list[dict[str, Any]] = []
    try:
        async with backend:
            if want("single"):
                entries.append(
                    await _single_add(
                        backend, memory, floor, sizes, tag, sessions, peer_sessions, log
                    )
                )
            if want("batch"):
                for size in sizes.batch_sizes:
                    entries.append(
                        await _batch(
                            backend, memory, floor, sizes, size, tag, sessions, peer_sessions, log
                        )
                    )
            # Reads and searches run on a store without the batches' 100k+ messages.
            await floor.purge(f"bench-{tag}-")
            if want("reads") or want("search"):
                entries += await _reads_and_searches(
                    backend, memory, floor, sizes, tag, sessions, peer_sessions, log, want
                )
            if want("vector"):
                entries.append(await _vector(uri, floor, sizes, tag, sessions, log))
            if want("list"):
                entries.append(
                    await _list(backend, memory, floor, sizes, tag, sessions, peer_sessions, log)
                )
            if want("agent"):
                entries.append(await _agent(backend, sizes, tag, sessions, log))
            if want("keyset"):
                entries.append(await _keyset(uri, floor, sizes, tag, log))
        if want("long_term"):
            from .long_term_backends import bolt

            entries += await bolt(uri, sizes, log)
        if want("reasoning"):
            from . import reasoning_backends

            entries += await reasoning_backends.bolt(uri, sizes, log)
    finally:
        await floor.close(f"bench-{tag}-")
        await peer.close()
    return entries


async def _single_add(backend, memory, floor, sizes, tag, sessions, peer_sessions, log):  # type: ignore[no-untyped-def]
    async def ours(r: int) -> dict[str, float]:
        session = f"bench-{tag}-single-{r}"
        sessions.append(session)
        await backend.add_message(session, "user", "warm up")
        spent = []
        for i in range(sizes.singles):
            spent.append(await timed(backend.add_message, session, "user", f"single {i}"))
        return latency_metrics(spent)

    async def peer(r: int) -> dict[str, float]:
        session = f"bench-{tag}-peer-single-{r}"
        peer_sessions.append(session)
        await memory.add_message(
            session, "user", "warm up", extract_entities=False, generate_embedding=False
        )
        spent = []
        for i in range(sizes.singles):
            spent.append(
                await timed(
                    memory.add_message,
                    session,
                    "user",
                    f"single {i}",
                    extract_entities=False,
                    generate_embedding=False,
                )
            )
        return latency_metrics(spent)

    async def raw(r: int) -> dict[str, float]:
        cid = await floor.conversation(f"bench-{tag}-floor-{r}-{uuid4().hex[:6]}")
        spent = [await timed(floor.add_one, cid, f"single {i}") for i in range(sizes.singles)]
        return latency_metrics(spent)

    workload = Workload(
        "bolt", "single add_message", f"x{sizes.singles}", {OURS: ours, PEER: peer, FLOOR: raw}
    )
    workload.notes.append("floor: MATCH conversation, CREATE message + HAS_MESSAGE, one tx")
    return await measure(workload, sizes, log)


async def _batch(backend, memory, floor, sizes, size, tag, sessions, peer_sessions, log):  # type: ignore[no-untyped-def]
    data = rows(sizes.batch_total)

    async def ours(r: int) -> dict[str, float]:
        session = f"bench-{tag}-batch-{size}-{r}"
        sessions.append(session)
        ms = await timed(lambda: backend.add_messages_batch(session, data, batch_size=size))
        return ingest_metrics(ms, sizes.batch_total)

    async def peer(r: int) -> dict[str, float]:
        session = f"bench-{tag}-peer-batch-{size}-{r}"
        peer_sessions.append(session)
        ms = await timed(
            lambda: memory.add_messages_batch(
                session, data, batch_size=size, generate_embeddings=False, extract_entities=False
            )
        )
        return ingest_metrics(ms, sizes.batch_total)

    async def raw(r: int) -> dict[str, float]:
        cid = await floor.conversation(f"bench-{tag}-floor-{r}-{uuid4().hex[:6]}")

        async def load() -> None:
            for k in range(0, len(data), size):
                await floor.add_many(cid, data[k : k + size])

        ms = await timed(load)
        return ingest_metrics(ms, sizes.batch_total)

    workload = Workload(
        "bolt",
        f"batch ingest (batch {size})",
        f"{sizes.batch_total}",
        {OURS: ours, PEER: peer, FLOOR: raw},
    )
    workload.notes.append("floor: UNWIND CREATE message + HAS_MESSAGE, one tx per batch")
    return await measure(workload, sizes, log)


async def _reads_and_searches(
    backend, memory, floor, sizes, tag, sessions, peer_sessions, log, want=EVERY
):  # type: ignore[no-untyped-def]
    entries = []
    session = f"bench-{tag}-long"
    peer_session = f"bench-{tag}-peer-long"
    sessions.append(session)
    peer_sessions.append(peer_session)
    written = 0
    for point in sorted(set(sizes.read_points) | set(sizes.search_points)):
        more = rows(point - written, written)
        # One call is one transaction: 90,000 messages do not fit the test server's
        # transaction memory, so the setup writes 10,000 per call.
        for k in range(0, len(more), SETUP_CALL):
            await backend.add_messages_batch(session, more[k : k + SETUP_CALL], batch_size=1000)
        if point in sizes.read_points:
            await memory.add_messages_batch(
                peer_session,
                more,
                batch_size=1000,
                generate_embeddings=False,
                extract_entities=False,
            )
        written = point
        cid = str((await backend.get_conversation(session, limit=1)).id)
        if point in sizes.read_points and want("reads"):
            entries.append(
                await _newest(backend, memory, floor, session, peer_session, cid, point, sizes, log)
            )
        if point in sizes.search_points and want("search"):
            entries.append(await _search(backend, floor, session, cid, point, sizes, log))
    return entries


async def _newest(backend, memory, floor, session, peer_session, cid, point, sizes, log):  # type: ignore[no-untyped-def]
    query = (
        "MATCH (m:Message) WHERE m.conversation_id = $cid AND m.seq IS NOT NULL "
        "WITH m ORDER BY m.conversation_id DESC, m.seq DESC LIMIT 100 RETURN m {.*} AS message"
    )

    async def ours(r: int) -> dict[str, float]:
        return await median_ms(sizes.reads, lambda: backend.get_conversation(session, limit=100))

    async def peer(r: int) -> dict[str, float]:
        return await median_ms(
            sizes.reads, lambda: memory.get_conversation(peer_session, limit=100)
        )

    async def raw(r: int) -> dict[str, float]:
        return await median_ms(sizes.reads, lambda: floor.read(query, cid=cid))

    workload = Workload("bolt", "newest-100 read", f"{point}", {OURS: ours, PEER: peer, FLOOR: raw})
    workload.notes.append("floor: the same 100 nodes by the (conversation_id, seq) index")
    return await measure(workload, sizes, log)


async def _search(backend, floor, session, cid, point, sizes, log):  # type: ignore[no-untyped-def]
    query = (
        "CALL db.index.fulltext.queryNodes($index, $q, {limit: 10}) YIELD node, score "
        "RETURN node {.id, .content} AS m, score"
    )

    async def ours(r: int) -> dict[str, float]:
        return await median_ms(
            sizes.searches,
            lambda: backend.search_messages(SEARCH_QUERY, session_id=session, limit=10),
        )

    async def raw(r: int) -> dict[str, float]:
        return await median_ms(
            sizes.searches, lambda: floor.read(query, index=FULLTEXT_INDEX, q=f'"{SEARCH_QUERY}"')
        )

    workload = Workload("bolt", "text search (matches all)", f"{point}", {OURS: ours, FLOOR: raw})
    workload.notes.append("peer: n/a (its search needs an embedder; without one it returns [])")
    workload.notes.append("floor: the full-text index query alone with LIMIT 10")
    return await measure(workload, sizes, log)


async def _vector(uri, floor, sizes, tag, sessions, log):  # type: ignore[no-untyped-def]
    # One vector index per database: use the size of one that exists already.
    found = await floor.read(schema.SHOW_VECTOR_INDEX)
    existing = [schema.vector_dimensions(r["options"]) for r in found]
    dimensions = next((d for d in existing if d), sizes.vector_dimensions)
    embedder = HashingEmbedder(dimensions)
    session = f"bench-{tag}-vector"
    sessions.append(session)
    point = sizes.search_points[0]
    async with open_backend(uri, embedder=embedder) as backend:
        data = rows(point)
        for k in range(0, len(data), SETUP_CALL):
            await backend.add_messages_batch(session, data[k : k + SETUP_CALL], batch_size=1000)
        [vector] = await embedder.embed([SEARCH_QUERY + " 42"])
        index = backend.store._conn.vector_index
        query = (
            "CALL db.index.vector.queryNodes($index, 10, $vector) YIELD node, score "
            "RETURN node {.id, .content} AS m, score"
        )

        async def ours(r: int) -> dict[str, float]:
            return await median_ms(
                sizes.searches, lambda: backend.search_messages(SEARCH_QUERY + " 42", limit=10)
            )

        async def raw(r: int) -> dict[str, float]:
            return await median_ms(
                sizes.searches, lambda: floor.read(query, index=index, vector=vector)
            )

        workload = Workload(
            "bolt", "vector search (all sessions)", f"{point}", {OURS: ours, FLOOR: raw}
        )
        workload.notes.append(f"HashingEmbedder({dimensions}); ours is hybrid (text + vector)")
        workload.notes.append("floor: the vector index query alone, k=10")
        try:
            return await measure(workload, sizes, log)
        finally:
            if not any(existing):  # the bench made the index: leave the schema as found
                await floor.write(f"DROP INDEX `{index}` IF EXISTS")


async def _list(backend, memory, floor, sizes, tag, sessions, peer_sessions, log):  # type: ignore[no-untyped-def]
    import anyio

    names = [f"bench-{tag}-conv-{i}" for i in range(sizes.conversations)]
    sessions.extend(names)
    limiter = anyio.Semaphore(8)

    async def create(name: str) -> None:
        async with limiter:
            await backend.create_conversation(name, title=name)

    async with anyio.create_task_group() as tg:
        for name in names:
            tg.start_soon(create, name)
    query = (
        "MATCH (c:Conversation) WITH c ORDER BY coalesce(c.updated_at, c.created_at) DESC, "
        "c.id LIMIT $limit RETURN c {.*} AS c"
    )

    async def ours(r: int) -> dict[str, float]:
        return await median_ms(sizes.lists, backend.list_conversations, limit=sizes.list_limit)

    async def peer(r: int) -> dict[str, float]:
        return await median_ms(sizes.lists, memory.list_conversations, limit=sizes.list_limit)

    async def raw(r: int) -> dict[str, float]:
        return await median_ms(sizes.lists, floor.read, query, limit=sizes.list_limit)

    size = f"{sizes.list_limit} of {sizes.conversations}+"
    workload = Workload("bolt", "list_conversations", size, {OURS: ours, PEER: peer, FLOOR: raw})
    return await measure(workload, sizes, log)


async def _keyset(uri, floor, sizes, tag, log):  # type: ignore[no-untyped-def]
    """The first page and a deep page of one user's conversations (a multi-tenant
    backend: the scope the server uses), by the ``(user_identifier, updated_at, id)``
    index; the floor runs the same seek with the raw driver."""
    import anyio

    user = f"bench-{tag}-keyset-user"
    size, deep = sizes.keyset_page, sizes.keyset_deep
    backend = open_backend(uri, multi_tenant=True)
    async with backend:
        limiter = anyio.Semaphore(8)

        async def create(i: int) -> None:
            async with limiter:
                await backend.create_conversation(f"bench-{tag}-keyset-{i}", user_identifier=user)

        async with anyio.create_task_group() as tg:
            for i in range(sizes.keyset_conversations):
                tg.start_soon(create, i)

        async def page(cursor: str | None) -> str | None:
            found = await backend.list_conversations_page(
                limit=size, cursor=cursor, user_identifier=user
            )
            return found.next_cursor

        far = await cursor_before(page, deep)
        order = "ORDER BY c.user_identifier DESC, c.updated_at DESC, c.id DESC LIMIT $limit"
        hint = "USING INDEX c:Conversation(user_identifier, updated_at, id) "
        first_query = (
            f"MATCH (c:Conversation) {hint}WHERE c.user_identifier = $user "
            "AND c.updated_at IS NOT NULL AND c.id IS NOT NULL "
            f"WITH c {order} RETURN c {{.*}} AS c"
        )
        seek_query = (
            f"MATCH (c:Conversation) {hint}WHERE c.user_identifier = $user "
            "AND c.updated_at <= $at "
            "AND c.id IS NOT NULL AND CASE WHEN c.updated_at < $at THEN true "
            "ELSE c.id < $id END "
            f"WITH c {order} RETURN c {{.*}} AS c"
        )

        async def raw_page(key: tuple[Any, str] | None) -> tuple[Any, str]:
            if key is None:
                found = await floor.read(first_query, user=user, limit=size)
            else:
                found = await floor.read(seek_query, user=user, at=key[0], id=key[1], limit=size)
            last = found[-1]["c"]
            return last["updated_at"], last["id"]

        raw_far = await cursor_before(raw_page, deep)
        note = "one user's conversations (multi_tenant); floor: the same index seek, RETURN c {.*}"
        workload = keyset_workload("bolt", sizes, (page, far), (raw_page, raw_far), note)
        try:
            return await measure(workload, sizes, log)
        finally:  # the conversations go with the run's sessions; the user node goes here
            await floor.write("MATCH (u:User {identifier: $user}) DETACH DELETE u", user=user)


async def _agent(backend, sizes, tag, sessions, log):  # type: ignore[no-untyped-def]
    counter = Counter(backend.store._conn, "read", "write", "_one_statement")

    async def ours(r: int) -> dict[str, float]:
        session = f"bench-{tag}-agent-{r}"
        sessions.append(session)
        before = counter.count
        spent = await agent_turns(backend, session, sizes.turns)
        trips = (counter.count - before) / sizes.turns
        return {"ms_per_turn": statistics.median(spent), "round_trips_per_turn": trips}

    workload = Workload("bolt", "agent turns (turn protocol)", f"{sizes.turns}", {OURS: ours})
    workload.notes.append("round trip = one managed transaction")
    return await measure(workload, sizes, log)
