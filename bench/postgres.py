"""PostgreSQL workloads: memory-core, two peers and the raw psycopg floor.

Everything runs in a database the bench creates for itself (and drops at the end) on the
server of ``PG_TEST_URL``, or on a throwaway server it starts (``memory_core_dev``).

The peers are what a team on PostgreSQL would pick instead, each with its documented
setup: ``langchain-postgres``'s ``PostgresChatMessageHistory`` (one psycopg connection,
one table, one history object per session; adds, and reads of a whole session) and
``langgraph-checkpoint-postgres``'s ``AsyncPostgresStore`` (a pooled key-value store; a
conversation is a namespace, a message an item; no embedder). Each runs the workloads it
has an operation for.

The floor is raw psycopg on memory-core's own pool and tables, each operation one
statement in autocommit (psycopg prepares them after a few runs, as for memory-core): an
add reserves the sequence number on the conversation row and inserts the message with
its search words (``to_tsvector``) in one statement; a batch does the same with
``unnest``; a read is the newest-100 ``SELECT`` by the ``(conversation_id, seq)`` index;
a search is the full-text query alone (``@@`` with ``ts_rank``, ``LIMIT 10``); listings
are the same ``ORDER BY … LIMIT`` on the recency index. Rows come back as tuples: no
models, no scoring, no idempotency, no entity links.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from uuid import UUID, uuid4

import psycopg
from psycopg_pool import AsyncConnectionPool

from memory_core import MemoryBackend, open_backend

from .common import (
    SEARCH_QUERY,
    agent_turns,
    cursor_before,
    ingest_metrics,
    keyset_workload,
    latency_metrics,
    rows,
)
from .core import EVERY, FLOOR, OURS, Selection, Workload, measure, median_ms, timed
from .sizes import Sizes

LANGCHAIN = "langchain-postgres"
LANGGRAPH = "langgraph store"
SETUP_CALL = 10_000  # messages per add_messages_batch call when filling a store
SCHEMA = "memory_core"


@asynccontextmanager
async def database(url: str | None = None) -> AsyncIterator[str]:
    """The URL of a fresh database on ``url``'s server (``PG_TEST_URL``, else a server
    started here), dropped afterwards."""
    url = url or os.environ.get("PG_TEST_URL")
    server = None
    if not url:
        from memory_core_dev.postgres_server import PostgresServer

        server = PostgresServer().start()
        url = server.url
    name = f"memory_core_bench_{uuid4().hex[:8]}"
    try:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as admin:
            await admin.execute(f"CREATE DATABASE {name}")
        try:
            yield _with_database(url, name)
        finally:
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as admin:
                await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    finally:
        if server is not None:
            server.close()


def _with_database(url: str, name: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, ""))


async def server_version(url: str) -> str:
    """The server's ``server_version``."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cursor = await conn.execute("SHOW server_version")
        row = await cursor.fetchone()
    return str(row[0]) if row else "unknown"


class Floor:
    """Raw psycopg on memory-core's pool and tables: one statement per operation."""

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self.pool = pool

    async def fetch(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(sql, params)
            return await cursor.fetchall()

    async def analyze(self) -> None:
        """``ANALYZE`` the database (every subject's tables)."""
        async with self.pool.connection() as conn:
            await conn.execute("ANALYZE")

    async def conversation(self, session: str) -> UUID:
        [(cid,)] = await self.fetch(
            f"INSERT INTO {SCHEMA}.conversations (id, tenant, session_id, created_at, "
            "updated_at) VALUES (%s, '', %s, now(), now()) RETURNING id",
            (uuid4(), session),
        )
        found: UUID = cid
        return found

    async def add_one(self, cid: UUID, content: str) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                f"WITH c AS (UPDATE {SCHEMA}.conversations SET next_seq = next_seq + 1, "
                "updated_at = now() WHERE id = %s RETURNING id, next_seq - 1 AS seq) "
                f"INSERT INTO {SCHEMA}.messages (id, conversation_id, seq, role, content, "
                "created_at, words) SELECT %s, c.id, c.seq, 'user', %s, now(), "
                "to_tsvector('simple', %s) FROM c",
                (cid, uuid4(), content, content),
            )

    async def add_many(self, cid: UUID, batch: list[dict[str, Any]]) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                f"WITH c AS (UPDATE {SCHEMA}.conversations SET next_seq = next_seq + %s, "
                "updated_at = now() WHERE id = %s RETURNING id, next_seq - %s AS first) "
                f"INSERT INTO {SCHEMA}.messages (id, conversation_id, seq, role, content, "
                "created_at, words) SELECT t.id, c.id, c.first + t.n - 1, t.role, t.content, "
                "now(), to_tsvector('simple', t.content) FROM c, unnest(%s::uuid[], "
                "%s::text[], %s::text[]) WITH ORDINALITY AS t(id, role, content, n)",
                (
                    len(batch),
                    cid,
                    len(batch),
                    [uuid4() for _ in batch],
                    [row["role"] for row in batch],
                    [row["content"] for row in batch],
                ),
            )


class LangChainPeer:
    """``PostgresChatMessageHistory`` on one psycopg connection (its documented use)."""

    TABLE = "chat_history"

    def __init__(self, url: str) -> None:
        self.url = url

    async def open(self) -> None:
        from langchain_postgres import PostgresChatMessageHistory

        self.conn = await psycopg.AsyncConnection.connect(self.url)
        await PostgresChatMessageHistory.acreate_tables(self.conn, self.TABLE)
        self.cls = PostgresChatMessageHistory

    def history(self) -> Any:
        """A history for a new session (its sessions are UUIDs)."""
        return self.cls(self.TABLE, str(uuid4()), async_connection=self.conn)

    @staticmethod
    def messages(data: list[dict[str, Any]]) -> list[Any]:
        from langchain_core.messages import AIMessage, HumanMessage

        kinds = {"user": HumanMessage, "assistant": AIMessage}
        return [kinds[row["role"]](content=row["content"]) for row in data]

    async def close(self) -> None:
        await self.conn.close()


class LangGraphPeer:
    """``AsyncPostgresStore`` with a pool, no index (no embedder): a conversation is the
    namespace ``("chat", session)``, a message an item keyed by a new UUID."""

    async def open(self, url: str) -> None:
        from langgraph.store.postgres.aio import AsyncPostgresStore
        from langgraph.store.postgres.base import PoolConfig

        self._context = AsyncPostgresStore.from_conn_string(
            url, pool_config=PoolConfig(min_size=1, max_size=10)
        )
        self.store = await self._context.__aenter__()
        await self.store.setup()

    async def add(self, session: str, row: dict[str, Any]) -> None:
        await self.store.aput(("chat", session), str(uuid4()), row)

    async def add_many(self, session: str, data: list[dict[str, Any]]) -> None:
        from langgraph.store.base import PutOp

        await self.store.abatch([PutOp(("chat", session), str(uuid4()), row) for row in data])

    async def close(self) -> None:
        await self._context.__aexit__(None, None, None)


async def run(
    sizes: Sizes, log: Callable[[str], None], want: Selection = EVERY, url: str | None = None
) -> tuple[list[dict[str, Any]], str]:
    """Every PostgreSQL workload (those ``want`` selects): report entries, and the
    server's version."""
    async with database(url) as bench_url:
        version = await server_version(bench_url)
        langchain, langgraph = LangChainPeer(bench_url), LangGraphPeer()
        await langchain.open()
        await langgraph.open(bench_url)
        try:
            async with open_backend(bench_url) as backend:
                floor = Floor(backend.store._pool)
                peers = (langchain, langgraph)
                entries = await _workloads(backend, floor, peers, sizes, log, want)
            if want("keyset"):
                entries.append(await _keyset(bench_url, sizes, log))
        finally:
            await langchain.close()
            await langgraph.close()
    return entries, version


async def _workloads(
    backend: MemoryBackend,
    floor: Floor,
    peers: tuple[LangChainPeer, LangGraphPeer],
    sizes: Sizes,
    log: Callable[[str], None],
    want: Selection,
) -> list[dict[str, Any]]:
    entries = []
    if want("single"):
        entries.append(await _single_add(backend, floor, peers, sizes, log))
    if want("batch"):
        for size in sizes.batch_sizes:
            entries.append(await _batch(backend, floor, peers, sizes, size, log))
    if want("reads") or want("search"):
        entries += await _reads_and_searches(backend, floor, peers, sizes, log, want)
    if want("list"):
        entries.append(await _list(backend, floor, peers[1], sizes, log))
    if want("agent"):
        entries.append(await _agent(backend, sizes, log))
    if want("long_term"):
        from .long_term_backends import postgres

        entries += await postgres(backend, sizes, log)
    if want("reasoning"):
        from . import reasoning_backends

        entries += await reasoning_backends.postgres(backend, sizes, log)
    return entries


async def _single_add(backend, floor, peers, sizes, log):  # type: ignore[no-untyped-def]
    langchain, langgraph = peers

    async def ours(r: int) -> dict[str, float]:
        session = f"single-{r}-{uuid4().hex[:6]}"
        await backend.add_message(session, "user", "warm up")
        spent = []
        for i in range(sizes.singles):
            spent.append(await timed(backend.add_message, session, "user", f"single {i}"))
        return latency_metrics(spent)

    async def chain(r: int) -> dict[str, float]:
        history = langchain.history()
        await history.aadd_messages(langchain.messages([{"role": "user", "content": "warm"}]))
        spent = []
        for i in range(sizes.singles):
            [message] = langchain.messages([{"role": "user", "content": f"single {i}"}])
            spent.append(await timed(history.aadd_messages, [message]))
        return latency_metrics(spent)

    async def graph(r: int) -> dict[str, float]:
        session = f"single-{r}-{uuid4().hex[:6]}"
        await langgraph.add(session, {"role": "user", "content": "warm up"})
        spent = []
        for i in range(sizes.singles):
            row = {"role": "user", "content": f"single {i}"}
            spent.append(await timed(langgraph.add, session, row))
        return latency_metrics(spent)

    async def raw(r: int) -> dict[str, float]:
        cid = await floor.conversation(f"floor-single-{r}-{uuid4().hex[:6]}")
        spent = [await timed(floor.add_one, cid, f"single {i}") for i in range(sizes.singles)]
        return latency_metrics(spent)

    subjects = {OURS: ours, LANGCHAIN: chain, LANGGRAPH: graph, FLOOR: raw}
    workload = Workload("postgres", "single add_message", f"x{sizes.singles}", subjects)
    workload.notes.append(
        "floor: one statement (CTE: UPDATE conversations next_seq, INSERT message + "
        "to_tsvector), autocommit"
    )
    workload.notes.append(f"{LANGCHAIN}: aadd_messages([one]); {LANGGRAPH}: aput")
    return await measure(workload, sizes, log)


async def _batch(backend, floor, peers, sizes, size, log):  # type: ignore[no-untyped-def]
    langchain, langgraph = peers
    data = rows(sizes.batch_total)

    async def ours(r: int) -> dict[str, float]:
        session = f"batch-{size}-{r}-{uuid4().hex[:6]}"
        ms = await timed(lambda: backend.add_messages_batch(session, data, batch_size=size))
        return ingest_metrics(ms, sizes.batch_total)

    async def chain(r: int) -> dict[str, float]:
        history = langchain.history()

        async def load() -> None:
            for k in range(0, len(data), size):
                await history.aadd_messages(langchain.messages(data[k : k + size]))

        return ingest_metrics(await timed(load), sizes.batch_total)

    async def graph(r: int) -> dict[str, float]:
        session = f"batch-{size}-{r}-{uuid4().hex[:6]}"

        async def load() -> None:
            for k in range(0, len(data), size):
                await langgraph.add_many(session, data[k : k + size])

        return ingest_metrics(await timed(load), sizes.batch_total)

    async def raw(r: int) -> dict[str, float]:
        cid = await floor.conversation(f"floor-batch-{r}-{uuid4().hex[:6]}")

        async def load() -> None:
            for k in range(0, len(data), size):
                await floor.add_many(cid, data[k : k + size])

        return ingest_metrics(await timed(load), sizes.batch_total)

    subjects = {OURS: ours, LANGCHAIN: chain, LANGGRAPH: graph, FLOOR: raw}
    name = f"batch ingest (batch {size})"
    workload = Workload("postgres", name, f"{sizes.batch_total}", subjects)
    workload.notes.append("floor: one statement per batch (CTE + INSERT … SELECT FROM unnest)")
    workload.notes.append(f"{LANGCHAIN}: aadd_messages(batch); {LANGGRAPH}: abatch of PutOps")
    return await measure(workload, sizes, log)


async def _reads_and_searches(backend, floor, peers, sizes, log, want):  # type: ignore[no-untyped-def]
    langchain, langgraph = peers
    entries = []
    session = "long"
    history = langchain.history()
    graph_session = f"long-{uuid4().hex[:6]}"
    written = 0
    for point in sorted(set(sizes.read_points) | set(sizes.search_points)):
        more = rows(point - written, written)
        for k in range(0, len(more), SETUP_CALL):
            await backend.add_messages_batch(session, more[k : k + SETUP_CALL], batch_size=1000)
        if point in sizes.read_points and want("reads"):
            for k in range(0, len(more), 1000):
                await history.aadd_messages(langchain.messages(more[k : k + 1000]))
                await langgraph.add_many(graph_session, more[k : k + 1000])
        written = point
        await floor.analyze()  # the planner's statistics as autovacuum would leave them
        cid = (await backend.get_conversation(session, limit=1)).id
        if point in sizes.read_points and want("reads"):
            peer_reads = (history, langgraph, graph_session)
            entries.append(
                await _newest(backend, floor, peer_reads, session, cid, point, sizes, log)
            )
        if point in sizes.search_points and want("search"):
            entries.append(await _search(backend, floor, session, cid, point, sizes, log))
    return entries


async def _newest(backend, floor, peer_reads, session, cid, point, sizes, log):  # type: ignore[no-untyped-def]
    history, langgraph, graph_session = peer_reads
    sql = (
        f"SELECT m.id, m.role, m.content, m.metadata, m.created_at FROM {SCHEMA}.messages m "
        "WHERE m.conversation_id = %s ORDER BY m.seq DESC LIMIT 100"
    )

    async def ours(r: int) -> dict[str, float]:
        return await median_ms(sizes.reads, lambda: backend.get_conversation(session, limit=100))

    async def chain_read() -> list[Any]:
        return list((await history.aget_messages())[-100:])

    async def chain(r: int) -> dict[str, float]:
        return await median_ms(chain_reads, chain_read)

    # it reads the whole session each time: a few reads make a median at large sizes
    chain_reads = sizes.reads if point <= 10_000 else min(sizes.reads, 3)

    async def graph(r: int) -> dict[str, float]:
        return await median_ms(
            sizes.reads, lambda: langgraph.store.asearch(("chat", graph_session), limit=100)
        )

    async def raw(r: int) -> dict[str, float]:
        return await median_ms(sizes.reads, floor.fetch, sql, (cid,))

    subjects = {OURS: ours, LANGCHAIN: chain, LANGGRAPH: graph, FLOOR: raw}
    workload = Workload("postgres", "newest-100 read", f"{point}", subjects)
    workload.notes.append("floor: the same 100 rows by the (conversation_id, seq) index, tuples")
    workload.notes.append(
        f"{LANGCHAIN}: aget_messages() reads the whole session (it has no limit), "
        f"then the last 100 ({chain_reads} reads per repeat); {LANGGRAPH}: "
        "asearch(namespace, limit=100), newest first"
    )
    return await measure(workload, sizes, log)


async def _search(backend, floor, session, cid, point, sizes, log):  # type: ignore[no-untyped-def]
    sql = (
        f"SELECT m.id, m.content FROM {SCHEMA}.messages m WHERE m.conversation_id = %s "
        "AND m.words @@ %s::tsquery ORDER BY ts_rank(m.words, %s::tsquery) DESC LIMIT 10"
    )
    query = f"'{SEARCH_QUERY}'"

    async def ours(r: int) -> dict[str, float]:
        return await median_ms(
            sizes.searches,
            lambda: backend.search_messages(SEARCH_QUERY, session_id=session, limit=10),
        )

    async def raw(r: int) -> dict[str, float]:
        return await median_ms(sizes.searches, floor.fetch, sql, (cid, query, query))

    workload = Workload(
        "postgres", "text search (matches all)", f"{point}", {OURS: ours, FLOOR: raw}
    )
    workload.notes.append("peers: n/a (neither has text search without an embedder)")
    workload.notes.append("floor: the full-text query alone (GIN @@, ts_rank, LIMIT 10)")
    return await measure(workload, sizes, log)


async def _list(backend, floor, langgraph, sizes, log):  # type: ignore[no-untyped-def]
    import anyio

    limiter = anyio.Semaphore(8)

    async def create(i: int) -> None:
        async with limiter:
            await backend.create_conversation(f"conv-{i}", title=f"conversation {i}")
            await langgraph.add(f"conv-{i}", {"title": f"conversation {i}"})

    async with anyio.create_task_group() as tg:
        for i in range(sizes.conversations):
            tg.start_soon(create, i)
    sql = (
        f"SELECT c.id, c.session_id, c.title, c.metadata, c.user_identifier, c.created_at, "
        f"c.updated_at FROM {SCHEMA}.conversations c WHERE c.tenant = '' "
        "ORDER BY c.updated_at DESC, c.id DESC LIMIT %s"
    )

    async def ours(r: int) -> dict[str, float]:
        return await median_ms(sizes.lists, backend.list_conversations, limit=sizes.list_limit)

    async def graph(r: int) -> dict[str, float]:
        return await median_ms(
            sizes.lists,
            lambda: langgraph.store.alist_namespaces(
                prefix=("chat",), max_depth=2, limit=sizes.list_limit
            ),
        )

    async def raw(r: int) -> dict[str, float]:
        return await median_ms(sizes.lists, floor.fetch, sql, (sizes.list_limit,))

    size = f"{sizes.list_limit} of {sizes.conversations}+"
    subjects = {OURS: ours, LANGGRAPH: graph, FLOOR: raw}
    workload = Workload("postgres", "list_conversations", size, subjects)
    workload.notes.append(
        f"{LANGGRAPH}: alist_namespaces(('chat',)), names only, in name order; "
        f"{LANGCHAIN}: n/a (no listing)"
    )
    return await measure(workload, sizes, log)


async def _keyset(url: str, sizes: Sizes, log: Callable[[str], None]) -> dict[str, Any]:
    """The first page and a deep page of one user's conversations (multi-tenant, the
    scope the server uses) in a schema of their own; the floor runs the same seek."""
    import anyio

    user = "keyset-user"
    size, deep = sizes.keyset_page, sizes.keyset_deep
    schema = "memory_core_keyset"
    async with open_backend(url, multi_tenant=True, schema=schema) as backend:
        limiter = anyio.Semaphore(8)

        async def create(i: int) -> None:
            async with limiter:
                await backend.create_conversation(f"keyset-{i}", user_identifier=user)

        async with anyio.create_task_group() as tg:
            for i in range(sizes.keyset_conversations):
                tg.start_soon(create, i)

        async def page(cursor: str | None) -> str | None:
            found = await backend.list_conversations_page(
                limit=size, cursor=cursor, user_identifier=user
            )
            return found.next_cursor

        far = await cursor_before(page, deep)
        floor = Floor(backend.store._pool)
        columns = "c.id, c.session_id, c.title, c.metadata, c.created_at, c.updated_at"
        order = "ORDER BY c.updated_at DESC, c.id DESC LIMIT %s"
        first_sql = f"SELECT {columns} FROM {schema}.conversations c WHERE c.tenant = %s {order}"
        seek_sql = (
            f"SELECT {columns} FROM {schema}.conversations c WHERE c.tenant = %s "
            f"AND (c.updated_at, c.id) < (%s, %s) {order}"
        )

        async def raw_page(key: tuple[Any, UUID] | None) -> tuple[Any, UUID]:
            if key is None:
                found = await floor.fetch(first_sql, (user, size))
            else:
                found = await floor.fetch(seek_sql, (user, *key, size))
            return found[-1][5], found[-1][0]

        raw_far = await cursor_before(raw_page, deep)
        note = "one user's conversations (multi_tenant); floor: the same seek, tuples"
        workload = keyset_workload("postgres", sizes, (page, far), (raw_page, raw_far), note)
        return await measure(workload, sizes, log)


async def _agent(
    backend: MemoryBackend, sizes: Sizes, log: Callable[[str], None]
) -> dict[str, Any]:
    counter = RoundTrips(backend)

    async def ours(r: int) -> dict[str, float]:
        before = counter.count
        spent = await agent_turns(backend, f"agent-{r}-{uuid4().hex[:6]}", sizes.turns)
        trips = (counter.count - before) / sizes.turns
        return {"ms_per_turn": statistics.median(spent), "round_trips_per_turn": trips}

    workload = Workload("postgres", "agent turns (turn protocol)", f"{sizes.turns}", {OURS: ours})
    workload.notes.append(
        "round trip = one statement, BEGIN or COMMIT (a call made in autocommit has neither)"
    )
    return await measure(workload, sizes, log)


class RoundTrips:
    """Counts what the store sends: each statement, and BEGIN and COMMIT of each call
    made as a transaction (a call made in autocommit has neither)."""

    def __init__(self, backend: MemoryBackend) -> None:
        self.count = 0
        store = backend.store
        once = store._once

        async def counted_once(work: Any, autocommit: bool = False, **options: Any) -> Any:
            self.count += 0 if autocommit else 2

            async def counted_work(tx: Any) -> Any:
                tx.cursor = _Counting(tx.cursor, self)
                return await work(tx)

            return await once(counted_work, autocommit, **options)

        store._once = counted_once


class _Counting:
    """A cursor whose ``execute`` and ``executemany`` calls are counted."""

    def __init__(self, cursor: Any, trips: RoundTrips) -> None:
        self._cursor = cursor
        self._trips = trips

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        self._trips.count += 1
        return await self._cursor.execute(*args, **kwargs)

    async def executemany(self, *args: Any, **kwargs: Any) -> Any:
        self._trips.count += 1
        return await self._cursor.executemany(*args, **kwargs)
