"""The driver wrapper: managed transactions, error translation and schema set-up.

Every call runs in a managed transaction (``execute_read`` / ``execute_write``), so the
driver retries transient failures and lost connections (a transaction that failed
before COMMIT was rolled back by the server, so rerunning it cannot apply a write
twice; a connection lost *during* COMMIT raises ``IncompleteCommit``, which the driver
never retries and which becomes a :class:`~memory_core.TransportError` saying so). A
write that runs out of retries is ``maybe_applied`` when one of its attempts reached
COMMIT (:class:`_Commits`). Reads run in read transactions (a cluster may serve them from
any member), writes in write transactions (the leader). All sessions of one connection
share one bookmark manager, so a read after a write sees it on a cluster too; two
backend objects share none (docs/production.md).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
import neo4j
from neo4j import AsyncDriver, AsyncGraphDatabase, AsyncManagedTransaction
from neo4j import exceptions as neo

from memory_core.store import VERSION, ConfigurationError, round_trip

from . import schema
from .config import BoltConfig
from .errors import DRIVER_ERRORS, is_constraint_race, translate

T = TypeVar("T")
A = TypeVar("A")
Rows = list[dict[str, Any]]
Work = Callable[[AsyncManagedTransaction], Awaitable[T]]

USER_AGENT = f"memory-core-bolt/{VERSION}"
"""How the driver introduces itself to Neo4j (listed with each connection)."""
CONSTRAINT_RETRIES = 3
DDL_RETRIES = 8
DDL_BACKOFF = 0.05
"""Seconds before the first rerun of a schema statement a concurrent set-up deadlocked."""
INDEX_WAIT_SECONDS = 300


_GRAPH_VALUES = (neo4j.graph.Node, neo4j.graph.Relationship, neo4j.graph.Path)


# The server's processors, from its JVM (Neo4j 4 and 5, Community and Enterprise).
_PROCESSORS = (
    'CALL dbms.queryJmx("java.lang:type=OperatingSystem") YIELD attributes '
    "RETURN attributes.AvailableProcessors.value AS processors"
)
POOL_PER_PROCESSOR = 4
MIN_POOL = 8
DRIVER_POOL = 100  # the driver's own default


def pool_size(processors: int | None) -> int | None:
    """The connections per server when the caller does not set
    ``max_connection_pool_size``: :data:`POOL_PER_PROCESSOR` per processor of the server,
    at least :data:`MIN_POOL`, at most the driver's default; None (the driver's default)
    when the server does not say. A transaction mostly uses the server's CPU, so more at
    once than a few per core only queue there, and compete: on the 2-core test machine,
    128 agents made half the turns a second with 100 connections that they made with 8
    (``python -m bench.bolt_pool``)."""
    if processors is None:
        return None
    return max(MIN_POOL, min(DRIVER_POOL, POOL_PER_PROCESSOR * processors))


def plain(record: neo4j.Record) -> dict[str, Any]:
    """``record`` as a dict. Statements return map projections, lists and scalars, which
    need no conversion: ``Record.data()`` walks every nested value looking for nodes (0.8
    ms for a hundred messages, a third of a newest-100 read), so it is kept for a record
    that does carry a node, relationship or path at the top."""
    values = record.values()
    if any(isinstance(value, _GRAPH_VALUES) for value in values):
        return record.data()
    return dict(zip(record.keys(), values, strict=True))


async def rows(tx: AsyncManagedTransaction, query: str, **params: Any) -> Rows:
    """Run one statement in ``tx`` and return its records as dicts."""
    result = await tx.run(query, params)
    return [plain(record) async for record in result]


async def _all_rows(result: neo4j.AsyncResult) -> Rows:
    return [plain(record) async for record in result]


class _Commits:
    """Whether an attempt of one write got as far as its COMMIT. Only then may the write
    have been applied when the driver gives up: a transaction that never sent COMMIT is
    rolled back by the server, but a COMMIT answered with an error (a cluster's leader
    switching) may still be applied, and the driver reports only its last attempt's
    error."""

    def __init__(self) -> None:
        self.sent = False

    def before_commit(self, step: Callable[[A], Awaitable[T]]) -> Callable[[A], Awaitable[T]]:
        """``step`` (the transaction function, or ``execute_query``'s result transformer,
        which runs inside it), noting when it completes: the driver commits next."""

        async def run(arg: A) -> T:
            result = await step(arg)
            self.sent = True
            return result

        return run


class Connection:
    """One driver for one backend instance."""

    def __init__(self, config: BoltConfig, where: str) -> None:
        self.config = config
        self.where = where
        self.vector_index: str | None = None
        self._driver: AsyncDriver | None = None
        self._bookmarks = AsyncGraphDatabase.bookmark_manager()
        address = urlsplit(config.uri)
        self._server = (address.hostname or "localhost", address.port or 7687)

    def _round_trip(self, query: str | None = None) -> contextlib.AbstractContextManager[None]:
        return round_trip("neo4j", namespace=self.config.database, server=self._server, query=query)

    def pool_stats(self) -> dict[str, int] | None:
        """The driver pool's idle, used and maximum connections (None when closed)."""
        pool = getattr(self._driver, "_pool", None)
        if pool is None:
            return None
        connections = [c for queue in pool.connections.values() for c in queue]
        used = sum(1 for c in connections if c.in_use)
        return {
            "idle": len(connections) - used,
            "used": used,
            "max": int(pool.pool_config.max_connection_pool_size),
        }

    def _new_driver(self, **options: Any) -> AsyncDriver:
        return AsyncGraphDatabase.driver(
            self.config.uri,
            auth=self.config.auth,
            user_agent=USER_AGENT,
            notifications_min_severity="OFF",
            **{**self.config.driver_options, **options},
        )

    async def open(self, vector_dimensions: int | None, create_schema: bool) -> None:
        """Create the driver, check the server answers, size the pool (see
        :func:`pool_size`), set up the schema."""
        try:
            self._driver = self._new_driver()
            await self._driver.verify_connectivity()
            if "max_connection_pool_size" not in self.config.driver_options:
                size = pool_size(await self._server_processors())
                if size is not None:
                    await self._driver.close()
                    self._driver = self._new_driver(max_connection_pool_size=size)
            if create_schema:
                await self._setup_schema(vector_dimensions)
            elif vector_dimensions is not None:
                self.vector_index = await self._find_vector_index(vector_dimensions)
        except BaseException as exc:
            await self.close()
            if isinstance(exc, DRIVER_ERRORS):
                raise translate(exc, self.where) from None
            if isinstance(exc, ValueError | TypeError):
                # The driver refused the URL or an option (the URL carries no password).
                raise ConfigurationError(f"{self.where}: {exc}") from None
            raise

    async def _server_processors(self) -> int | None:
        """The processors the server's JVM reports, or None when it does not say (the
        procedure is refused or missing, as on managed services)."""
        try:
            found = await self._auto(_PROCESSORS)
        except neo.Neo4jError:
            return None
        value = found[0].get("processors") if found else None
        return value if isinstance(value, int) and value > 0 else None

    async def close(self) -> None:
        driver, self._driver = self._driver, None
        if driver is not None:
            # Closing a driver whose server is gone is not an error.
            with contextlib.suppress(*DRIVER_ERRORS):
                await driver.close()

    def _session(self, mode: str, fetch_size: int | None = None) -> neo4j.AsyncSession:
        if self._driver is None:
            raise ConfigurationError(f"{self.where}: not connected")
        if fetch_size is None:
            return self._driver.session(
                database=self.config.database,
                default_access_mode=mode,
                bookmark_manager=self._bookmarks,
            )
        return self._driver.session(
            database=self.config.database,
            default_access_mode=mode,
            bookmark_manager=self._bookmarks,
            fetch_size=fetch_size,
        )

    async def read(self, work: Work[T], *, fetch_size: int | None = None) -> T:
        """Run ``work`` in a managed read transaction (``fetch_size``: records per network
        fetch when ``work`` may stop reading a result early)."""
        try:
            with self._round_trip():
                async with self._session(neo4j.READ_ACCESS, fetch_size) as session:
                    return await session.execute_read(work)
        except DRIVER_ERRORS as exc:
            raise translate(exc, self.where) from None

    async def write(self, work: Work[T]) -> T:
        """Run ``work`` in a managed write transaction (see :meth:`_rerun_after_race`)."""

        async def attempt(commits: _Commits) -> T:
            async with self._session(neo4j.WRITE_ACCESS) as session:
                return await session.execute_write(commits.before_commit(work))

        with self._round_trip():
            return await self._rerun_after_race(attempt)

    async def run_write(self, query: str, **params: Any) -> Rows:
        """One statement in one write transaction (see :meth:`_rerun_after_race`)."""
        with self._round_trip(query):
            return await self._rerun_after_race(
                lambda commits: self._one_statement(
                    query, params, neo4j.RoutingControl.WRITE, commits.before_commit(_all_rows)
                )
            )

    async def _rerun_after_race(self, attempt: Callable[[_Commits], Awaitable[T]]) -> T:
        """A unique-constraint failure rolled the transaction back, so it is rerun (a
        concurrent writer created the conversation, or stored the same idempotency key,
        first; the rerun finds what it wrote). Driver errors become memory-core errors,
        ``maybe_applied`` when an attempt reached its COMMIT (see :class:`_Commits`)."""
        for tries in range(CONSTRAINT_RETRIES + 1):
            commits = _Commits()
            try:
                return await attempt(commits)
            except DRIVER_ERRORS as exc:
                if is_constraint_race(exc) and tries < CONSTRAINT_RETRIES:
                    continue
                raise translate(exc, self.where, commit_sent=commits.sent) from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def run_read(self, query: str, **params: Any) -> Rows:
        """One statement in one read transaction."""
        try:
            with self._round_trip(query):
                return await self._one_statement(query, params, neo4j.RoutingControl.READ)
        except DRIVER_ERRORS as exc:
            raise translate(exc, self.where) from None

    async def _one_statement(
        self,
        query: str,
        params: dict[str, Any],
        routing: neo4j.RoutingControl,
        transform: Callable[[neo4j.AsyncResult], Awaitable[Rows]] = _all_rows,
    ) -> Rows:
        # ``execute_query`` is a managed transaction like ``execute_read``/``_write`` (same
        # retries), but it sends BEGIN with the statement: two round trips, not three.
        if self._driver is None:
            raise ConfigurationError(f"{self.where}: not connected")
        found: Rows = await self._driver.execute_query(
            query,
            params,
            routing_=routing,
            database_=self.config.database,
            bookmark_manager_=self._bookmarks,
            result_transformer_=transform,
        )
        return found

    # ------------------------------------------------------------------ schema

    async def _setup_schema(self, dimensions: int | None) -> None:
        """Create what is missing (one ``SHOW INDEXES`` when nothing is), then wait until
        new indexes are online."""
        [row] = await self._auto(schema.SHOW_INDEX_NAMES)
        existing = set(row["names"])
        missing = [ddl for name, ddl in schema.STATEMENTS.items() if name not in existing]
        missing += [ddl for name, ddl in schema.RETIRED.items() if name in existing]
        if dimensions is not None:
            self.vector_index = await self._find_vector_index(dimensions)
            if self.vector_index is None:
                missing.append(schema.vector_index_statement(dimensions))
        for statement in missing:
            await self._ddl(statement)
        if missing:
            await self._auto(schema.AWAIT_INDEXES, seconds=INDEX_WAIT_SECONDS)
            if dimensions is not None:
                self.vector_index = await self._find_vector_index(dimensions)

    async def _find_vector_index(self, dimensions: int) -> str | None:
        """The name of the vector index on ``Message.embedding``; a different size is a
        configuration error (the embedder does not fit the stored vectors)."""
        found = await self._auto(schema.SHOW_VECTOR_INDEX)
        for row in found:
            size = schema.vector_dimensions(row.get("options"))
            if size is not None and size != dimensions:
                raise ConfigurationError(
                    f"{self.where}: the vector index {row['name']!r} on :Message(embedding) "
                    f"has {size} dimensions but the embedder has {dimensions}; use an "
                    "embedder of that size or drop the index"
                )
            return str(row["name"])
        return None

    async def _ddl(self, statement: str) -> None:
        """One schema statement (``IF NOT EXISTS``: running it again is harmless). Two
        processes setting up one database at once deadlock on a label's schema lock and
        Neo4j fails one of them with a transient error, which an auto-commit transaction
        does not retry: it is run again after a short, jittered wait."""
        for attempt in range(DDL_RETRIES + 1):
            try:
                await self._auto(statement)
                return
            except neo.TransientError:
                if attempt == DDL_RETRIES:
                    raise
                await anyio.sleep(DDL_BACKOFF * 2**attempt * (0.5 + random.random()))
            except neo.ClientError as exc:
                # Another process created the same index a moment earlier.
                if "AlreadyExists" not in str(getattr(exc, "code", "")):
                    raise
                return

    async def _auto(self, query: str, **params: Any) -> Rows:
        """Schema commands run in auto-commit transactions."""
        with self._round_trip(query):
            async with self._session(neo4j.WRITE_ACCESS) as session:
                result = await session.run(query, params)
                return [plain(record) async for record in result]
