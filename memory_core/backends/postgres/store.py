"""``PostgresStore``: conversation memory in PostgreSQL 14+, on psycopg 3 (async)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memory_core.store import (
    Capabilities,
    Conversation,
    ConversationPage,
    Entity,
    Erased,
    Message,
    SessionInfo,
    Store,
    StoreStats,
    TransportError,
)
from memory_core.store import requests as rq

from . import (
    conversations,
    entities,
    erasure,
    messages,
    neighbours,
    reads,
    residue,
    search,
    single,
    stats,
    turn_open,
    vector,
)
from .config import Settings, parse_settings
from .errors import open_connection, translate
from .long_term import PostgresLongTerm
from .reasoning import PostgresReasoning
from .replicas import Lagging, Replicas, primary_position
from .schema import migrate
from .standby import confirm as confirm_standby
from .transfer import PostgresTransfer
from .tx import Tx

T = TypeVar("T")
Work = Callable[[Tx], Awaitable[T]]
READ_LIFETIME = 60.0  # seconds a reads' connection lives (so a promoted standby is left)

# psycopg_pool logs each failed connection attempt (a failover, a restart) at WARNING;
# with logging unconfigured Python would print every one to stderr. An application that
# configures logging still receives them ("psycopg.pool" propagates).
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())


async def in_utc(conn: psycopg.AsyncConnection[Any]) -> None:
    """Make ``conn`` read every time in UTC, whatever the server's or role's zone: in
    another zone the first or last moment a Python datetime holds is in year 0 or
    10000, which psycopg cannot read. A ``SET``, not a startup option, which PgBouncer
    refuses (it replays ``TimeZone`` on each server connection it lends)."""
    await conn.execute("SET TimeZone TO 'UTC'")
    await conn.commit()


class PostgresStore(PostgresLongTerm, PostgresReasoning, Store):
    """Conversation memory in PostgreSQL: ``postgresql://user:pass@host:5432/db``
    (``postgres://`` too). What the URL leaves out comes from the ``PG*`` environment
    variables, as with ``psql``. Each call is one transaction on a pooled connection.

    Options (besides the shared ones of :class:`~memory_core.interface.Store`):

    ``schema``
        the PostgreSQL schema holding the tables (default ``memory_core``; also
        ``?schema=`` in the URL). Created when missing; nothing is created outside it.
    ``min_size`` / ``max_size``
        connections the pool keeps open / may open (default 1 / 10).
    ``pool_timeout``
        seconds a call waits for a free connection (default 30) before
        :class:`~memory_core.TransportError`.
    ``connect_timeout``
        seconds to wait for the server when connecting (default 10).
    ``statement_timeout``
        seconds after which the server cancels a statement (default: the server's own
        setting); a cancelled call raises a retryable ``TransportError``, nothing written.
    ``prepared_statements``
        ``True`` (default): psycopg prepares statements it runs often. ``False`` for
        PgBouncer in transaction mode.
    ``read_from``
        ``"primary"`` (default) or ``"replica"``: reads on a standby among the URL's
        hosts (see :mod:`.replicas`), each after this store's writes.
    ``replica_wait``
        seconds a read waits for a standby to replay this store's last write before it
        reads from the primary instead (default 1).
    ``require_standby``
        ``True``: a write is acknowledged only if the server that committed it waits for
        a synchronous standby; otherwise it raises a retryable ``TransportError`` with
        ``maybe_applied`` (see :mod:`.standby`). Default ``False``; the URL may say
        ``require_standby=true`` too.

    Migrations are applied on :meth:`connect` under an advisory lock (see
    :mod:`memory_core.backends.postgres.schema`).
    """

    name: ClassVar[str] = "postgres"
    capabilities = Capabilities(
        delete_message=True,
        list_sessions=True,
        message_neighbours=True,
        conversation_summary=True,
        conversation_titles=True,
        message_metadata=True,
        explicit_mentions=True,
        idempotency_keys=True,
        client_chosen_ids=True,
        auto_create_conversation=True,
        full_history=True,
        server_side_since=True,
        caller_timestamps=True,
        search_global=True,
        search_threshold=True,
        search_metadata_filters=True,
        vector_search=True,
        entities=True,
        delete_entity=True,
        entity_search=True,
        entity_updates=True,
        entity_merge=True,
        preferences=True,
        facts=True,
        relationships=True,
        entity_graph=True,
        traces=True,
        tool_stats=True,
        similar_traces=True,
        trace_links=True,
        multi_tenant=True,
        trio=False,
        max_messages_per_read=None,
        default_messages_per_read=1000,
        max_page_size=None,
        max_bulk_messages=None,
        max_indexed_bytes=1024,
        user_erasure=True,
        store_stats=True,
    )

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        pool_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        statement_timeout: float | None = None,
        prepared_statements: bool = True,
        read_from: str = "primary",
        replica_wait: float = 1.0,
        require_standby: bool | None = None,
        **options: Any,
    ) -> None:
        self.settings: Settings = parse_settings(
            url,
            schema=schema,
            min_size=min_size,
            max_size=max_size,
            pool_timeout=pool_timeout,
            connect_timeout=connect_timeout,
            statement_timeout=statement_timeout,
            prepared_statements=prepared_statements,
            read_from=read_from,
            replica_wait=replica_wait,
            require_standby=require_standby,
        )
        super().__init__(**options)
        self.durable_acks = self.settings.require_standby
        self._pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] | None = None
        self._replicas: Replicas | None = None
        if self.settings.read_from == "replica":
            self._replicas = Replicas(self.settings.replica_wait)
        self._vector_schema: str | None = None

    @property
    def vector_engine(self) -> str:
        """How vector search runs: ``"pgvector"`` (in SQL, once connected to a store
        with the extension) or ``"python"`` (the fallback; see :mod:`.vector`)."""
        return "pgvector" if self._vector_schema is not None else "python"

    def pool_stats(self) -> dict[str, int] | None:
        """The psycopg pool's connections (see :meth:`Store.pool_stats`): ``None`` before
        it is open."""
        pool = self._pool
        if pool is None:
            return None
        return _counts(pool)

    def pools(self) -> dict[str, dict[str, int]]:
        """The writes' pool (named by :meth:`describe`) and, with ``read_from="replica"``,
        the reads' pool (the same name, then ``reads``)."""
        found = super().pools()
        reads = None if self._replicas is None else self._replicas.pool
        if reads is not None and found:
            found[f"{self.describe()} reads"] = _counts(reads)
        return found

    def describe(self) -> str:
        """The URL with any password hidden, the schema and the vector search engine."""
        where = f"{self.settings.safe_url} (schema {self.settings.schema}"
        if self._pool is None:
            return where + ")"
        return f"{where}; vector search: {self.vector_engine})"

    def _connection_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": int(self.settings.connect_timeout),
        }
        if not self.settings.prepared_statements:
            options["prepare_threshold"] = None
        if self.settings.statement_timeout is not None:
            millis = int(self.settings.statement_timeout * 1000)
            options["options"] = f"-c statement_timeout={millis}"
        return options

    def _new_pool(
        self, conninfo: str, name: str, **more: Any
    ) -> AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
        return AsyncConnectionPool(
            conninfo,
            min_size=self.settings.min_size,
            max_size=self.settings.max_size,
            timeout=self.settings.pool_timeout,
            kwargs=self._connection_options(),
            configure=in_utc,
            open=False,
            name=name,
            **more,
        )

    async def connect(self) -> None:
        pool = self._new_pool(self.settings.conninfo, "memory-core")
        try:
            # One connection of our own first: the pool would report a refused password
            # or an unreachable server only as a timeout, after connect_timeout.
            async with await open_connection(
                self.settings.conninfo, **self._connection_options()
            ) as conn:
                await in_utc(conn)
                await migrate(conn, self.settings.schema)
                self._vector_schema = await vector.active(conn, self.settings.schema)
                if self._replicas is not None:  # reads wait for the migrations too
                    await self._replicas.note_write(conn)
            await pool.open(wait=self.settings.min_size > 0, timeout=self.settings.connect_timeout)
            await self._open_replicas()
        except (psycopg.Error, PoolTimeout) as exc:
            await pool.close()
            raise translate(exc, write=False, sent=False) from None
        except BaseException:
            await pool.close()
            raise
        self._pool = pool

    async def _open_replicas(self) -> None:
        """The reads' pool. Its connections live at most :data:`READ_LIFETIME` seconds, so
        that after a failover (the standby promoted) reads find a standby again."""
        if self._replicas is None:
            return
        conninfo = self.settings.replica_conninfo
        pool = self._new_pool(conninfo, "memory-core-replica", max_lifetime=READ_LIFETIME)
        try:
            await pool.open(wait=self.settings.min_size > 0, timeout=self.settings.connect_timeout)
        except BaseException:
            await pool.close()
            raise
        self._replicas.pool = pool

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
        if self._replicas is not None:
            replica_pool, self._replicas.pool = self._replicas.pool, None
            if replica_pool is not None:
                await replica_pool.close()

    async def _run(self, work: Work[T], *, write: bool, autocommit: bool = False) -> T:
        """``work`` in one transaction on a pooled connection, errors translated.

        A connection found broken before COMMIT was sent (a restarted server, an idle
        connection the server or a proxy closed) cannot have applied anything: the pool's
        idle connections are checked and the call is made once more on a good one. A
        connection lost during COMMIT may have applied a write: that is a
        ``TransportError`` with ``maybe_applied``, never retried here.

        ``autocommit``: ``work`` runs outside a transaction block, each statement its own
        transaction: a read, or a write of one replayable statement (see :mod:`.single`).
        Lost once, it is made once more; lost twice, a write may have been applied.

        With ``read_from="replica"``, a read runs on the reads' pool once its server has
        replayed this store's writes, else on the primary (see :mod:`.replicas`)."""
        replicas = self._replicas
        if replicas is None:
            return await self._attempts(work, write, autocommit)
        if write:
            try:
                return await self._attempts(work, write, autocommit)
            except BaseException:
                replicas.write_failed()
                raise
        doubt = replicas.in_doubt
        if doubt:
            replicas.learn(await self._attempts(primary_position, False, True), doubt)
        try:
            routed = replicas.after_catch_up(work)
            return await self._attempts(routed, write, autocommit, replica=True)
        except Lagging:
            return await self._attempts(work, write, autocommit)

    def _pool_for(self, replica: bool) -> AsyncConnectionPool[psycopg.AsyncConnection[Any]] | None:
        return self._replicas.pool if replica and self._replicas is not None else self._pool

    async def _attempts(
        self, work: Work[T], write: bool, autocommit: bool, *, replica: bool = False
    ) -> T:
        for attempt in range(2):
            try:
                return await self._once(work, autocommit, write=write, replica=replica)
            except _Broken as broken:
                pool = self._pool_for(replica)
                if broken.at_commit or attempt == 1 or pool is None:
                    sent = broken.at_commit or autocommit
                    raise translate(broken.cause, write=write, sent=sent) from None
                await pool.check()
            except (psycopg.Error, PoolTimeout) as exc:
                raise translate(exc, write=write, sent=True) from None
        raise AssertionError("unreachable")

    async def _once(
        self, work: Work[T], autocommit: bool = False, *, write: bool = False, replica: bool = False
    ) -> T:
        """One attempt on a connection of the primary's pool (of the reads' pool:
        ``replica``); after a ``write``, with ``require_standby`` the server's commits are
        checked, and with replicas the primary's position is noted. The one place every
        call runs through: tests and the bench's round-trip counter wrap it."""
        pool = self._pool_for(replica)
        if pool is None:
            raise TransportError("postgres: the backend is closed", retryable=False)
        async with pool.connection() as conn:
            at_commit = False
            try:
                tx = Tx(conn.cursor(), self.settings.schema, self._vector_schema)
                if autocommit:
                    result = await work(tx)
                else:
                    async with conn.transaction():
                        result = await work(tx)
                        at_commit = True
            except psycopg.errors.ReadOnlySqlTransaction as exc:
                # A standby (the old primary after a failover): refused, nothing written.
                # Closed, the pool discards it; the next connection is the primary's.
                await conn.close()
                raise _Broken(exc, at_commit=False) from None
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                if isinstance(exc, psycopg.errors.QueryCanceled) or not conn.broken:
                    raise
                raise _Broken(exc, at_commit) from None
            if write and self.settings.require_standby:
                await confirm_standby(conn)
            if write and self._replicas is not None:
                await self._replicas.note_write(conn)
            return result

    async def add_message(self, req: rq.AddMessage) -> Message:
        now = datetime.now(UTC)
        if single.add_covers(req):
            return await self._run(single.AddOne(req, now), write=True, autocommit=True)
        return await self._run(lambda tx: messages.add_message(tx, req, now), write=True)

    async def add_keyed_message(self, req: rq.AddMessage) -> tuple[Message, bool | None]:
        now = datetime.now(UTC)
        if single.add_covers(req):
            # Its id is chosen once for both attempts: the first attempt's write, found
            # by the second, is this call's.
            one = single.AddOne(req, now)
            stored = await self._run(one, write=True, autocommit=True)
            return stored, stored.id != one.ids[0]
        return await self._run(lambda tx: messages.add_keyed(tx, req, now), write=True)

    async def open_turn(self, req: rq.OpenTurn) -> tuple[list[Entity], Message, bool | None]:
        now = datetime.now(UTC)
        if turn_open.covers(req):
            return await self._run(turn_open.OpenOne(req, now), write=True, autocommit=True)
        return await self._run(lambda tx: turn_open.in_transaction(tx, req, now), write=True)

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        now = datetime.now(UTC)
        if single.batch_covers(req):
            return await self._run(single.AddMany(req, now), write=True, autocommit=True)
        return await self._run(lambda tx: messages.add_messages(tx, req, now), write=True)

    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        now = datetime.now(UTC)
        return await self._run(lambda tx: conversations.create(tx, req, now), write=True)

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        if single.covers(req.target):
            work = lambda tx: reads.get_conversation(tx, req)  # noqa: E731
            return await self._run(work, write=False, autocommit=True)
        return await self._run(lambda tx: messages.get_conversation(tx, req), write=False)

    async def list_conversations(self, req: rq.ListConversations) -> ConversationPage:
        work = lambda tx: conversations.list_conversations(tx, req)  # noqa: E731
        return await self._run(work, write=False, autocommit=True)

    async def list_sessions(self, req: rq.ListSessions) -> list[SessionInfo]:
        work = lambda tx: conversations.list_sessions(tx, req)  # noqa: E731
        return await self._run(work, write=False, autocommit=True)

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        return await self._run(lambda tx: search.search(tx, req), write=False, autocommit=True)

    async def clear_session(self, target: rq.Target) -> bool:
        return await self._run(lambda tx: conversations.clear(tx, target), write=True)

    async def message_neighbours(self, req: rq.MessageNeighbours) -> list[list[Message]]:
        work = lambda tx: neighbours.neighbours(tx, req)  # noqa: E731
        return await self._run(work, write=False, autocommit=True)

    async def delete_message(self, req: rq.DeleteMessage) -> bool:
        return await self._run(lambda tx: messages.delete_message(tx, req), write=True)

    async def add_entity(self, req: rq.AddEntity) -> Entity:
        now = datetime.now(UTC)
        return await self._run(lambda tx: entities.add_entity(tx, req, now), write=True)

    async def find_entities(self, req: rq.FindEntities) -> list[Entity]:
        work = lambda tx: entities.find_entities(tx, req)  # noqa: E731
        return await self._run(work, write=False, autocommit=True)

    async def delete_entity(self, req: rq.DeleteEntity) -> bool:
        return await self._run(lambda tx: entities.delete_entity(tx, req), write=True)

    async def forget_user(self, req: rq.ForgetUser) -> Erased:
        run = lambda work: self._run(work, write=True)  # noqa: E731
        erased = await erasure.forget_user(run, req)
        erased.not_reached += await residue.refresh_statistics(run, self.settings.schema)
        return erased

    async def stats(self, req: rq.Stats) -> StoreStats:
        traces = self.capabilities.traces
        work = lambda tx: stats.stats(tx, req, self.multi_tenant, self.name, traces)  # noqa: E731
        return await self._run(work, write=False)

    async def purge(self) -> residue.Purged:
        """Rewrite every table of the store's schema so that nothing deleted stays in its
        files or statistics (``VACUUM (FULL, ANALYZE)``: each table is locked against
        reads and writes while it is rewritten), then ``pg_statistic`` where this role
        may. PostgreSQL only; what ``memory-core postgres-schema URL --purge`` runs (see
        :mod:`memory_core.backends.postgres.residue` and docs/erasure.md). Needs the
        tables' owner: ``ConfigurationError`` otherwise, before anything is done. Check
        the result's ``held_back``: when it names anything, run the purge again once that
        has ended."""
        run = lambda work: self._run(work, write=True, autocommit=True)  # noqa: E731
        return await residue.purge(run, self.settings.schema)

    def bulk_transfer(self) -> PostgresTransfer:
        """The fast, lossless path of :mod:`memory_core.transfer`."""
        return PostgresTransfer(self._run, self.multi_tenant)


class _Broken(Exception):
    """The connection broke during a call; ``at_commit``: while COMMIT was being sent."""

    def __init__(self, cause: psycopg.Error, at_commit: bool) -> None:
        super().__init__()
        self.cause = cause
        self.at_commit = at_commit


def _counts(pool: AsyncConnectionPool[Any]) -> dict[str, int]:
    """A pool's idle, used and most connections."""
    stats = pool.get_stats()
    size, idle = int(stats.get("pool_size", 0)), int(stats.get("pool_available", 0))
    return {"idle": idle, "used": size - idle, "max": pool.max_size}
