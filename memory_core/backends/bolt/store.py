"""``BoltBackend``: conversation memory in Neo4j through the official async driver."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any, ClassVar
from uuid import UUID, uuid4

from neo4j import AsyncManagedTransaction
from neo4j import exceptions as neo

from memory_core.store import (
    Capabilities,
    ConfigurationError,
    Conversation,
    ConversationPage,
    Entity,
    EntityRef,
    Erased,
    Message,
    NotFoundError,
    NotSupportedError,
    ReasoningStep,
    ReasoningTrace,
    SessionInfo,
    Store,
    StoreError,
    StoreStats,
    ToolCall,
    ToolStats,
    TracePage,
    first_named,
    lookups,
    random_ids,
)
from memory_core.store import requests as rq

from . import cypher, erasure, reasoning, reasoning_search, stats
from .config import POOL_OPTIONS, parse_config
from .listing import list_page
from .long_term import BoltLongTerm
from .neighbours import neighbours
from .records import (
    batch_messages,
    dump_metadata,
    readable_messages,
    session_params,
    session_uuid,
    storable_embedding,
    to_conversation,
    to_entity,
    to_message,
    to_session,
)
from .search import search
from .session import Connection, Rows, rows
from .transfer import BoltTransfer

# Messages per statement of a batch write (a larger call is several statements in one
# transaction).
STATEMENT_ROWS = 1000
OUT_OF_TRANSACTION_MEMORY = "Neo.TransientError.General.MemoryPoolOutOfMemoryError"


class BoltStore(BoltLongTerm, Store):
    """Conversation memory in Neo4j 5 (Community is enough), graph-compatible with
    neo4j-agent-memory 0.8.0.

    URLs: ``bolt://``, ``bolt+s://``, ``bolt+ssc://`` (one server) and ``neo4j://``,
    ``neo4j+s://``, ``neo4j+ssc://`` (routing: clusters, Aura), e.g.
    ``bolt://user:password@localhost:7687?database=memory``.

    Options (besides the shared ones of :class:`~memory_core.interface.Store`):

    ``database``
        the database to use (also ``?database=`` in the URL, else ``NEO4J_DATABASE``,
        else the server's default).
    ``username`` / ``password`` or ``auth=(user, password)``
        credentials when they are not in the URL (else ``NEO4J_USERNAME`` /
        ``NEO4J_PASSWORD``; none of them means no auth).
    ``max_connection_pool_size``, ``connection_timeout``, ``connection_acquisition_timeout``,
    ``max_transaction_retry_time``, ``max_connection_lifetime``, ``liveness_check_timeout``
        passed to the driver.
    ``create_schema``
        create constraints and indexes on connect (default True; needs schema rights).

    The backend runs under asyncio only (the neo4j driver does).

    Behaviour worth knowing:

    * A session's conversation id is ``uuid5(NAMESPACE, tenant + NUL + session_id)``;
      conversations another writer (neo4j-agent-memory) created are found by
      ``session_id`` and used as they are.
    * Messages are ordered by a per-conversation ``seq``; a conversation another writer
      appended to is read in that writer's order (timestamp, then id) instead.
    * Search is full-text (Lucene score ``s`` reported as ``s / (1 + s)``) plus, with an
      embedder, vector similarity (cosine clipped to 0..1); a hit keeps its higher score.
      One vector index per database: every embedder used on it must have its size.
    * Metadata filters compare JSON values exactly (``True`` is not ``1``, ``1`` is not
      ``"1"``; ``1`` equals ``1.0``), applied after the scoped search.
    * Without ``multi_tenant`` entities are global, as in the reference: every entity in
      the database is found and linked, and the ones made get no ``tenant`` property.
      Under ``multi_tenant=True`` entities belong to a tenant like conversations and
      messages: they carry ``tenant`` (the user identifier) and ``add_entity``,
      ``find_entities`` and mentions see only the caller's (another tenant's entity id is
      unknown: ``NotFoundError``, nothing written). There an entity name and the user
      identifier together must fit in 7,900 bytes of UTF-8 (one index key).
    * ``delete_message`` always removes the message's relationships (``cascade`` cannot
      keep them: a relationship cannot outlive its node); entities are never deleted.
    * Listings are keyset pages (``updated_at``, then id, newest first) read by a range
      seek on ``Conversation(user_identifier, updated_at, id)`` (per user or tenant) or
      ``Conversation(updated_at)``. A conversation whose ``updated_at`` another writer
      left missing, or stored as something other than a zoned DateTime, comes after all
      the others, by id; the page where a walk reaches those scans the conversations in
      scope once (see :mod:`memory_core.backends.bolt.listing`).
      ``list_conversations(user_identifier=…)`` keeps that user's conversations also
      without ``multi_tenant`` (it listed every conversation before).
    * ``clear_session`` deletes the conversation and its messages, the reasoning traces
      of its session (with their steps and tool calls), and a ``(:User)`` node linked to
      any of them, or a ``(:Tool)`` node of those calls, once nothing else is attached to
      it (a User with other conversations, or any other relationship, stays; a Tool that
      stays gets its running totals recomputed from the calls left).
    * Preferences, facts and relationships between entities keep the reference's graph
      too (see :mod:`~memory_core.backends.bolt.preferences`,
      :mod:`~memory_core.backends.bolt.facts`,
      :mod:`~memory_core.backends.bolt.relationships`); their searches score candidates
      of full-text indexes as message search does.
    * Reasoning traces, steps and tool calls keep the reference's graph too (see
      :mod:`~memory_core.backends.bolt.reasoning`): the reference reads ours and we read
      its. Tool statistics are aggregate queries over the calls; the ``Tool`` node's
      running totals are kept for the reference's readers (see
      :mod:`~memory_core.backends.bolt.reasoning_search`).
    """

    name: ClassVar[str] = "bolt"
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
        observations=False,
        reflections=False,
        extraction_status=False,
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
        # Neo4j's index key limit is about 8 KB; a per-tenant entity key holds the tenant
        # and the name together, so each may take half of it.
        max_indexed_bytes=3950,
        max_bulk_messages=None,
        user_erasure=True,
        store_stats=True,
    )

    def __init__(
        self,
        url: str = "bolt://localhost:7687",
        *,
        database: str | None = None,
        username: str | None = None,
        password: str | None = None,
        auth: tuple[str, str] | None = None,
        max_connection_pool_size: int | None = None,
        connection_timeout: float | None = None,
        connection_acquisition_timeout: float | None = None,
        max_transaction_retry_time: float | None = None,
        max_connection_lifetime: float | None = None,
        liveness_check_timeout: float | None = None,
        create_schema: bool = True,
        **options: Any,
    ) -> None:
        driver_options = {
            "max_connection_pool_size": max_connection_pool_size,
            "connection_timeout": connection_timeout,
            "connection_acquisition_timeout": connection_acquisition_timeout,
            "max_transaction_retry_time": max_transaction_retry_time,
            "max_connection_lifetime": max_connection_lifetime,
            "liveness_check_timeout": liveness_check_timeout,
        }
        assert set(driver_options) == set(POOL_OPTIONS)
        self._config = parse_config(
            url,
            database=database,
            username=username,
            password=password,
            auth=auth,
            driver_options=driver_options,
        )
        super().__init__(**options)
        if not isinstance(create_schema, bool):
            raise ConfigurationError("bolt backend: create_schema must be a bool")
        self._create_schema = create_schema
        self._conn = Connection(self._config, f"{self.name} backend at {self.describe()}")

    def describe(self) -> str:
        """``scheme://[user@]host:port[/database]`` (never the password)."""
        return self._config.describe()

    def pool_stats(self) -> dict[str, int] | None:
        """The driver's connection pool (see :meth:`Store.pool_stats`)."""
        return self._conn.pool_stats()

    # ------------------------------------------------------------------ lifecycle

    async def connect(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise NotSupportedError(
                self.name,
                "connect",
                "the neo4j driver runs under asyncio only (this is another event loop)",
                "run this backend under asyncio (anyio's default backend)",
            ) from None
        dimensions = None if self.embedder is None else self.embedder.dimensions
        await self._conn.open(dimensions, self._create_schema)

    async def close(self) -> None:
        await self._conn.close()

    # ------------------------------------------------------------------ writes

    async def add_message(self, req: rq.AddMessage) -> Message:
        return (await self._add(req))[0]

    async def add_keyed_message(self, req: rq.AddMessage) -> tuple[Message, bool | None]:
        return await self._add(req)

    async def _add(self, req: rq.AddMessage) -> tuple[Message, bool]:
        # The id is chosen once for every attempt: a retry that finds the first
        # attempt's message stored under the key finds this call's own write.
        params = _message_params(req)
        scoped = cypher.scoped(req.target.tenant)
        query = scoped.message(bool(req.target.session_id), bool(req.mentions))
        found = await self._conn.run_write(query, **params)
        stored = _stored(found, req.target)
        return stored, str(stored.id) != params["id"]

    async def open_turn(self, req: rq.OpenTurn) -> tuple[list[Entity], Message, bool | None]:
        # One statement finds the entities and writes the question with them; a replay
        # writes nothing and links nothing, and its entities are looked up after.
        message = req.message
        params = {**_message_params(message), "identifiers": req.identifiers, "limit": req.limit}
        scoped = cypher.scoped(message.target.tenant)
        query = scoped.open_message_session if message.target.session_id else scoped.open_message_id
        found = await self._conn.run_write(query, **params)
        stored = _stored(found, message.target)
        if str(stored.id) == params["id"]:
            return [to_entity(entity) for entity in found[0]["linked"]], stored, False
        named = first_named([await self.find_entities(look) for look in lookups(req)], req.limit)
        return named, stored, True

    async def add_messages(self, req: rq.AddMessages) -> list[Message]:
        ids = random_ids(len(req.messages))
        items = [_batch_item(i, m) for i, m in zip(ids, req.messages, strict=True)]
        with_mentions = any(message.mentions for message in req.messages)
        params = {
            **_target_params(req.target),
            **_conversation_params(req.target, None, {}),
            "with_mentions": with_mentions,
        }
        query = cypher.scoped(req.target.tenant).batch(bool(req.target.session_id), with_mentions)
        if len(items) <= STATEMENT_ROWS:
            found = await self._conn.run_write(
                query, **params, messages=items, mention_ids=_mention_ids(items)
            )
            return batch_messages(found, items, ids, req.target, _missing)

        async def work(tx: AsyncManagedTransaction) -> list[Message]:
            # Still one transaction (all or nothing), cut into statements so that no one
            # statement's parameters and intermediate lists grow with the call. Each
            # statement continues the previous one's sequence and chain (it sees them),
            # and a missing entity or conversation raises here, which rolls back.
            stored: list[Message] = []
            for start in range(0, len(items), STATEMENT_ROWS):
                chunk = items[start : start + STATEMENT_ROWS]
                mentioned = _mention_ids(chunk)
                try:
                    found = await rows(tx, query, **params, messages=chunk, mention_ids=mentioned)
                except neo.TransientError as exc:
                    if exc.code != OUT_OF_TRANSACTION_MEMORY:
                        raise
                    # Not retried: rerunning the same large transaction meets the same end.
                    raise StoreError(
                        f"{self._conn.where}: a batch of {len(items)} messages is one "
                        "transaction (all or nothing) and Neo4j ran out of transaction "
                        "memory (dbms.memory.transaction.total.max) before its end; nothing "
                        "was written. Store it in several add_messages_batch calls, or raise "
                        "that limit on the server."
                    ) from None
                stored += batch_messages(
                    found, chunk, ids[start : start + STATEMENT_ROWS], req.target, _missing
                )
            return stored

        return await self._conn.write(work)

    async def create_conversation(self, req: rq.CreateConversation) -> Conversation:
        params = {
            **_target_params(req.target),
            **_conversation_params(req.target, req.title, req.metadata),
            "mention_ids": [],
        }
        query = (
            cypher.CREATE_CONVERSATION_SESSION
            if req.target.session_id
            else cypher.CREATE_CONVERSATION_ID
        )
        found = await self._conn.run_write(query, **params)
        row = found[0]
        if row["conversation"] is None:
            raise _missing(req.target)
        return to_conversation(row["conversation"])

    # ------------------------------------------------------------------ reads

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        target = req.target
        query = cypher.GET_CONVERSATION_SESSION if target.session_id else cypher.GET_CONVERSATION_ID
        found = await self._conn.run_read(
            query, **_target_params(target), limit=req.limit, since=req.since
        )
        row = found[0]
        props = row["conversation"]
        if props is None:
            if target.session_id is None:
                raise _missing(target)
            return Conversation(
                id=session_uuid(target.tenant, target.session_id),
                session_id=target.session_id,
                user_identifier=target.user_identifier,
            )
        messages = readable_messages(
            reversed(row["messages"]),
            conversation_id=props["id"],
            session_id=props.get("session_id"),
        )
        return to_conversation(props, messages)

    async def list_conversations(self, req: rq.ListConversations) -> ConversationPage:
        return await list_page(self._conn, req)

    async def list_sessions(self, req: rq.ListSessions) -> list[SessionInfo]:
        found = await self._conn.run_read(
            cypher.list_sessions(req.order_by, req.order_dir),
            user=req.user_identifier,
            prefix=req.prefix,
            offset=req.offset,
            limit=req.limit,
        )
        sessions = (to_session(row) for row in found)
        return [session for session in sessions if session is not None]

    async def search_messages(self, req: rq.SearchMessages) -> list[Message]:
        index = self._conn.vector_index

        async def work(tx: AsyncManagedTransaction) -> list[Message]:
            return await search(tx, req, index)

        return await self._conn.read(work)

    # ------------------------------------------------------------------ deletes

    async def message_neighbours(self, req: rq.MessageNeighbours) -> list[list[Message]]:
        return await neighbours(self._conn, req)

    async def delete_message(self, req: rq.DeleteMessage) -> bool:
        found = await self._conn.run_write(
            cypher.DELETE_MESSAGE, message_id=str(req.message_id), tenant=req.tenant
        )
        return bool(found and found[0]["deleted"])

    async def clear_session(self, target: rq.Target) -> bool:
        """The conversation and its session's traces, in one transaction."""
        params = _target_params(target)
        if target.session_id:
            of_session, clear = cypher.SESSION_OF_SESSION, cypher.CLEAR_SESSION_SESSION
        else:
            of_session, clear = cypher.SESSION_OF_ID, cypher.CLEAR_SESSION_ID

        async def work(tx: AsyncManagedTransaction) -> bool:
            [found] = await rows(tx, of_session, **params)
            traces = 0
            if isinstance(found["session"], str):
                [gone] = await rows(
                    tx, cypher.DELETE_SESSION_TRACES, session=found["session"], tenant=target.tenant
                )
                traces = gone["deleted"]
            cleared = await rows(tx, clear, **params)
            return bool(traces or (cleared and cleared[0]["deleted"]))

        return await self._conn.write(work)

    # ------------------------------------------------------------------ entities

    async def add_entity(self, req: rq.AddEntity) -> Entity:
        found = await self._conn.run_write(
            cypher.scoped(req.tenant).add_entity,
            id=str(uuid4()),
            name=req.name,
            type=req.type,
            description=req.description,
            tenant=req.tenant,
        )
        return to_entity(found[0]["entity"])

    async def find_entities(self, req: rq.FindEntities) -> list[Entity]:
        found = await self._conn.run_read(
            cypher.scoped(req.tenant).find_entities,
            identifier=req.identifier,
            type=req.type,
            limit=req.limit,
            tenant=req.tenant,
        )
        return [to_entity(row["entity"]) for row in found]

    async def delete_entity(self, req: rq.DeleteEntity) -> bool:
        found = await self._conn.run_write(
            cypher.scoped(req.tenant).delete_entity, entity_id=req.entity_id, tenant=req.tenant
        )
        return bool(found and found[0]["found"])

    # ------------------------------------------------------------------ reasoning

    async def start_trace(self, req: rq.StartTrace) -> ReasoningTrace:
        return await reasoning.start(self._conn, req)

    async def add_step(self, req: rq.AddStep) -> ReasoningStep:
        return await reasoning.add_step(self._conn, req)

    async def record_tool_call(self, req: rq.RecordToolCall) -> ToolCall:
        return await reasoning.record_tool_call(self._conn, req)

    async def complete_trace(self, req: rq.CompleteTrace) -> ReasoningTrace:
        return await reasoning.complete(self._conn, req)

    async def get_trace(self, req: rq.GetTrace) -> ReasoningTrace | None:
        return await reasoning.get(self._conn, req)

    async def list_traces(self, req: rq.ListTraces) -> TracePage:
        return await reasoning.list_traces(self._conn, req)

    async def link_trace(self, req: rq.LinkTrace) -> ReasoningTrace:
        return await reasoning.link(self._conn, req)

    async def tool_stats(self, req: rq.ToolStatsQuery) -> list[ToolStats]:
        return await reasoning_search.tool_stats(self._conn, req)

    async def similar_traces(self, req: rq.SimilarTraces) -> list[ReasoningTrace]:
        return await reasoning_search.similar_traces(self._conn, req)

    async def search_steps(self, req: rq.SearchSteps) -> list[ReasoningStep]:
        return await reasoning_search.search_steps(self._conn, req)

    async def forget_user(self, req: rq.ForgetUser) -> Erased:
        return await erasure.forget_user(self._conn, req)

    async def stats(self, req: rq.Stats) -> StoreStats:
        traces = self.capabilities.traces
        return await stats.stats(self._conn, req, self.multi_tenant, self.name, traces)

    def bulk_transfer(self) -> BoltTransfer:
        """The fast, lossless path of :mod:`memory_core.transfer`."""
        return BoltTransfer(self._conn, self.multi_tenant)


# Neo4j's range indexes hold keys of at most 8 KiB; stay well below it.
def _message_params(req: rq.AddMessage) -> dict[str, Any]:
    """The parameters of the statements that write one message."""
    key = req.idempotency_key
    mentions = _mention_params(req.mentions)
    return {
        **_target_params(req.target),
        **_conversation_params(req.target, None, {}),
        "id": str(uuid4()),
        "role": req.role.value,
        "content": req.content,
        "embedding": storable_embedding(req.embedding),
        "metadata": dump_metadata(req.metadata),
        "key": key,
        "key_hash": None if key is None else hashlib.sha256(key.encode()).hexdigest(),
        "mentions": mentions,
        "mention_ids": mentions["mention_ids"],
    }


def _target_params(target: rq.Target) -> dict[str, Any]:
    if target.session_id is not None:
        return session_params(target)
    return {"conversation_id": str(target.conversation_id), "tenant": target.tenant}


def _conversation_params(
    target: rq.Target, title: str | None, metadata: dict[str, Any]
) -> dict[str, Any]:
    return {
        "title": title,
        "conversation_metadata": dump_metadata(metadata),
        "user": target.user_identifier,
    }


def _mention_params(refs: list[EntityRef]) -> dict[str, list[Any]]:
    """Split references: ids link existing entities, typed ones MERGE on (name, type),
    bare names link the single entity with that name (case-insensitive); the statement
    keeps all of them in the caller's tenant (``$tenant``, see :func:`_target_params`).
    Each carries its place in ``refs`` (``MENTIONS.position``), so reads return a
    message's mentions in the order given."""
    ids: list[str] = []
    id_positions: list[int] = []
    typed: list[dict[str, Any]] = []
    names: list[dict[str, Any]] = []
    for position, ref in enumerate(refs):
        if ref.id:
            ids.append(ref.id)
            id_positions.append(position)
        elif ref.type and ref.name:
            typed.append(
                {"name": ref.name.strip(), "type": ref.type, "id": str(uuid4()), "at": position}
            )
        elif ref.name:
            names.append({"name": ref.name.strip(), "at": position})
    return {"mention_ids": ids, "id_positions": id_positions, "typed": typed, "names": names}


def _batch_item(message_id: UUID, message: rq.NewMessage) -> dict[str, Any]:
    """One message of a batch as the statement's ``$messages[i]``: only the keys that have
    a value (a missing key reads as null in Cypher, and every key is packed and sent: the
    empty ones were a third of a batch's bytes and most of its packing time)."""
    item: dict[str, Any] = {
        "id": str(message_id),
        "role": message.role.value,
        "content": message.content,
    }
    embedding = storable_embedding(message.embedding)
    if embedding is not None:
        item["embedding"] = embedding
    metadata = dump_metadata(message.metadata)
    if metadata is not None:
        item["metadata"] = metadata
    if message.timestamp is not None:
        item["timestamp"] = message.timestamp
    if message.mentions:
        item.update(_mention_params(message.mentions))
    return item


def _mention_ids(items: list[dict[str, Any]]) -> list[str]:
    """Every entity id the batch ``items`` mention (the statement checks they exist)."""
    return [eid for item in items for eid in item.get("mention_ids", ())]


def _missing(target: rq.Target) -> NotFoundError:
    return NotFoundError.missing(
        "bolt", "conversation", target.conversation_id, argument="conversation_id"
    )


def _stored(found: Rows, target: rq.Target) -> Message:
    """The message a write statement returned (its one row), or the error it signalled."""
    [row] = found
    if row["missing"]:
        unknown = ", ".join(sorted(set(row["missing"])))
        raise NotFoundError.missing(
            "bolt", "entity", unknown, argument="explicit_mentions", hint="nothing was written"
        )
    if row["message"] is None:
        raise _missing(target)
    return to_message(
        row["message"],
        conversation_id=row["conversation"]["id"],
        session_id=row["conversation"]["session_id"],
    )
