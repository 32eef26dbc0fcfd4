"""The bulk transfer hook of the Bolt backend (see :mod:`memory_core.transfer`).

Export reads in pages (entities by id, conversations by session id, messages by ``seq``
on the ``Message(conversation_id, seq)`` index), each page in its own read transaction.
A conversation another library wrote (no ``seq``) is read in its timestamp order and
numbered 1, 2, …. Each tenant's relationships, preferences and facts follow its
conversations (:mod:`.transfer_long_term`), then its traces with their steps and tool
calls (:mod:`.transfer_traces`). Import writes a batch of records in one write
transaction, in six phases (entities, conversations, messages, mentions, the long-term
records of :mod:`.transfer_long_term_import`, then the traces, steps and tool calls of
:mod:`.transfer_traces_import`: every record only refers to kinds of an earlier phase,
or, for a preference's successor, is linked once that is there), keeping ids, sequence
numbers, timestamps, embeddings, idempotency keys and the order of a message's mentions
(``MENTIONS.position``). The graph it writes is the one the backend itself writes:
HAS_MESSAGE, FIRST_MESSAGE, NEXT_MESSAGE chain, ``next_seq``/``message_count``, User
nodes, entity labels and keys.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from neo4j import AsyncManagedTransaction

from memory_core.store import (
    ALL_KINDS,
    DERIVED_ID,
    FOREIGN_ENTITY,
    FOREIGN_ID,
    NOT_CARRIED,
    RENAMED,
    SAME_SESSION,
    SAME_SESSION_MESSAGES,
    ImportState,
    Record,
    TraceRules,
    TransferReport,
    keeps_id,
    own_id,
    parse_stamp,
)
from memory_core.store import transfer_records as rec

from . import cypher
from .entity_updates import entity_extras
from .records import dump_metadata, read_conversation, read_message, session_uuid, to_entity
from .session import Connection, rows
from .transfer_long_term import entity_held, export_long_term
from .transfer_long_term_import import LongTermWriter
from .transfer_traces import export_traces
from .transfer_traces_import import TraceWriter

PAGE = 1000
LONG_TERM = ("relationship", "preference", "fact")
TRACE_KINDS = ("trace", "step", "tool_call")

TENANTS = """
CALL () {
    MATCH (c:Conversation) WHERE c.user_identifier IS NOT NULL RETURN c.user_identifier AS t
  UNION
    MATCH (e:Entity) WHERE e.tenant IS NOT NULL RETURN e.tenant AS t
  UNION
    MATCH (p:Preference) WHERE p.tenant IS NOT NULL RETURN p.tenant AS t
  UNION
    MATCH (f:Fact) WHERE f.tenant IS NOT NULL RETURN f.tenant AS t
  UNION
    MATCH (r:ReasoningTrace) WHERE r.tenant IS NOT NULL RETURN r.tenant AS t
}
RETURN t ORDER BY t
"""

# The entities in scope (see :func:`.transfer_long_term.entity_held`): a tenant's (every
# entity, single-tenant), by id.
ENTITY_PAGE = f"""
MATCH (e:Entity) WHERE e.id > $after AND ($tenant IS NULL OR e.tenant = $tenant)
  AND {entity_held("e")}
WITH e ORDER BY e.id LIMIT $limit
RETURN e {{.*}} AS entity
"""

CONVERSATION_PAGE = f"""
MATCH (c:Conversation)
WHERE ($tenant IS NULL OR c.user_identifier = $tenant)
  AND ($users IS NULL OR c.user_identifier IN $users)
  AND ($prefix IS NULL OR c.session_id STARTS WITH $prefix)
WITH c ORDER BY c.session_id, c.id SKIP $skip LIMIT $limit
WITH c, COUNT {{ (c)-[:HAS_MESSAGE]->() }} AS n
RETURN {cypher.CONVERSATION_PROJECTION} AS conversation, n,
       coalesce(c.message_count, 0) = n AS sequenced
"""

MENTION_LIST = (
    "[(m)-[r:MENTIONS]->(e:Entity) | {id: e.id, name: toLower(e.name), position: r.position}]"
)

SEQUENCED_PAGE = f"""
MATCH (m:Message)
WHERE m.conversation_id = $cid AND m.seq IS NOT NULL AND m.seq > $after
WITH m ORDER BY m.conversation_id, m.seq LIMIT $limit
RETURN {cypher.MESSAGE_FIELDS} AS message, m.seq AS seq, {MENTION_LIST} AS mentions
"""

FOREIGN_PAGE = f"""
MATCH (:Conversation {{id: $cid}})-[:HAS_MESSAGE]->(m:Message)
WITH m ORDER BY m.timestamp, m.seq, m.id SKIP $skip LIMIT $limit
RETURN {cypher.MESSAGE_FIELDS} AS message, null AS seq, {MENTION_LIST} AS mentions
"""

# ---------------------------------------------------------------------------- import

FIND_ENTITY = """
OPTIONAL MATCH (byid:Entity {id: $id})
OPTIONAL MATCH (same:Entity {name: $name, type: $type})
WHERE byid IS NULL AND (($tenant IS NULL AND same.tenant IS NULL) OR same.tenant = $tenant)
RETURN byid {.id, .tenant} AS byid, head(collect(same.id)) AS same
"""

WRITE_ENTITY = f"""
MERGE (e:Entity {{id: $id}})
SET e.name = $name, e.type = $type, e.description = $description,
    e.created_at = $created_at, e.updated_at = $updated_at, e.tenant = $tenant,
    e.confidence = coalesce(e.confidence, 1.0), e.aliases = $aliases, e.metadata = $metadata
SET {cypher.ENTITY_KEYS}
{cypher.TYPE_LABELS_FOREACH}
"""

FIND_CONVERSATION = """
OPTIONAL MATCH (byid:Conversation {id: $id})
OPTIONAL MATCH (same:Conversation {session_id: $session_id})
WHERE ($tenant IS NULL OR same.user_identifier = $tenant)
WITH byid, same ORDER BY (same.id = $id) DESC, same.created_at DESC
RETURN byid {.id, .session_id, .user_identifier,
             messages: EXISTS { (byid)-[:HAS_MESSAGE]->() }} AS byid,
       head(collect(same {.id, .user_identifier,
                          messages: EXISTS { (same)-[:HAS_MESSAGE]->() }})) AS same
"""

CREATE_CONVERSATION = """
CREATE (c:Conversation {
    id: $id, session_id: $session_id, title: $title, metadata: $metadata,
    created_at: $created_at, updated_at: $updated_at, next_seq: 0, message_count: 0,
    user_identifier: $user
})
FOREACH (user IN CASE WHEN $user IS NULL THEN [] ELSE [$user] END |
    MERGE (u:User {identifier: user})
    ON CREATE SET u.id = user, u.created_at = $created_at
    MERGE (u)-[:HAS_CONVERSATION]->(c)
)
"""

CONVERSATION_STATE = """
MATCH (c:Conversation {id: $cid})
WITH c, coalesce(c.message_count, 0) = COUNT { (c)-[:HAS_MESSAGE]->() } AS sequenced
RETURN coalesce(c.next_seq, 0) AS next_seq, sequenced, c.user_identifier AS tenant,
head(COLLECT {
    WITH c, sequenced WHERE sequenced
    MATCH (t:Message) WHERE t.conversation_id = c.id AND t.seq IS NOT NULL
    RETURN t.id AS id ORDER BY t.conversation_id DESC, t.seq DESC LIMIT 1
  UNION ALL
    WITH c, sequenced WHERE NOT sequenced
    MATCH (c)-[:HAS_MESSAGE]->(t:Message) WHERE NOT (t)-[:NEXT_MESSAGE]->()
    RETURN t.id AS id ORDER BY t.timestamp DESC, t.id DESC LIMIT 1
}) AS tail
"""

# Where message ids are: their conversation and its tenant.
EXISTING_MESSAGES = """
UNWIND $ids AS id
MATCH (m:Message {id: id})
OPTIONAL MATCH (c:Conversation)-[:HAS_MESSAGE]->(m)
WITH m, head(collect(c)) AS c
RETURN m.id AS id, coalesce(m.conversation_id, c.id) AS cid, c.user_identifier AS tenant
"""

EXISTING_SCOPES = """
UNWIND $scopes AS scope
MATCH (m:Message {idempotency_scope: scope})
RETURN scope
"""

# Appends ``$rows`` (in order) after the tail ``$tail`` (null: the conversation is empty)
# and updates the conversation's counters, in one statement.
APPEND_MESSAGES = """
MATCH (c:Conversation {id: $cid})
OPTIONAL MATCH (t:Message {id: $tail})
UNWIND range(0, size($rows) - 1) AS i
WITH c, t, i, $rows[i] AS row
CREATE (m:Message {
    id: row.id, role: row.role, content: row.content, embedding: row.embedding,
    metadata: row.metadata, timestamp: row.timestamp, seq: row.seq, conversation_id: c.id,
    idempotency_key: row.key, idempotency_scope: row.scope
})
CREATE (c)-[:HAS_MESSAGE]->(m)
WITH c, t, i, m ORDER BY i
WITH c, t, collect(m) AS ms
FOREACH (first IN CASE WHEN t IS NULL THEN [head(ms)] ELSE [] END |
    CREATE (c)-[:FIRST_MESSAGE]->(first))
WITH c, ms, CASE WHEN t IS NULL THEN ms ELSE [t] + ms END AS chain
FOREACH (j IN range(0, size(chain) - 2) |
    FOREACH (p IN [chain[j]] | FOREACH (n IN [chain[j + 1]] |
        CREATE (p)-[:NEXT_MESSAGE]->(n))))
SET c.next_seq = $next_seq,
    c.message_count = CASE WHEN $sequenced THEN coalesce(c.message_count, 0) + size(ms)
                           ELSE -1 END,
    c.updated_at = CASE WHEN c.updated_at IS NULL OR c.updated_at < $latest THEN $latest
                        ELSE c.updated_at END
"""

# Links a message of conversation ``row.cid`` to an entity, only one of that
# conversation's tenant where ``$scoped`` (multi-tenant); ``same`` says which rows were.
LINK_MENTIONS = """
UNWIND $rows AS row
MATCH (c:Conversation {id: row.cid})-[:HAS_MESSAGE]->(m:Message {id: row.message_id})
MATCH (e:Entity {id: row.entity_id})
WITH row, m, e, coalesce(NOT $scoped OR e.tenant = c.user_identifier, false) AS same
WITH row, m, e, same, EXISTS { (m)-[:MENTIONS]->(e) } AS had
FOREACH (_ IN CASE WHEN same THEN [1] ELSE [] END |
    MERGE (m)-[r:MENTIONS]->(e)
    ON CREATE SET r.confidence = 1.0, r.position = row.position)
RETURN row.i AS i, same, had
"""


def _when(value: str | None) -> datetime | None:
    return None if value is None else parse_stamp(value)


def _vector(values: list[float] | None) -> list[float] | None:
    """Embeddings are kept as given, zero vectors too (search skips those; dropping
    them would lose them on the way back)."""
    return None if values is None else [float(x) for x in values]


def _scope(conversation_id: str, key: str | None) -> str | None:
    if key is None:
        return None
    return f"{conversation_id}:{hashlib.sha256(key.encode()).hexdigest()}"


class BoltTransfer:
    """Reads and writes archive records straight from and to the graph."""

    # Every record kind, traces, steps and tool calls too.
    kinds = ALL_KINDS

    def __init__(self, conn: Connection, multi_tenant: bool) -> None:
        self.conn = conn
        self.multi_tenant = multi_tenant

    # ------------------------------------------------------------------ export

    async def export_records(
        self, users: list[str] | None, session_prefix: str | None, report: TransferReport
    ) -> AsyncIterator[Record]:
        tenants: list[str | None] = [None]
        if self.multi_tenant:
            if users is not None:
                tenants = list(users)
            else:
                tenants = [r["t"] for r in await self.conn.run_read(TENANTS)]
        only = None if self.multi_tenant else users
        for tenant in tenants:
            async for record in self._entities(tenant, session_prefix, only):
                yield record
            async for record in self._conversations(tenant, session_prefix, only, report):
                yield record
            if not session_prefix:  # long-term records belong to no session
                async for record in export_long_term(self.conn, tenant, only, PAGE):
                    yield record
            async for record in export_traces(self.conn, tenant, session_prefix, only, PAGE):
                yield record

    async def _entities(
        self, tenant: str | None, prefix: str | None, users: list[str] | None
    ) -> AsyncIterator[Record]:
        after = ""
        while True:
            page = await self.conn.run_read(
                ENTITY_PAGE,
                after=after,
                tenant=tenant,
                prefix=prefix or None,
                users=users,
                limit=PAGE,
            )
            for row in page:
                # Its own tenant, also when a single-tenant backend reads every tenant's.
                yield rec.entity(to_entity(row["entity"]), row["entity"].get("tenant"))
            if len(page) < PAGE:
                return
            after = page[-1]["entity"]["id"]

    async def _conversations(
        self,
        tenant: str | None,
        prefix: str | None,
        users: list[str] | None,
        report: TransferReport,
    ) -> AsyncIterator[Record]:
        skip = 0
        while True:
            page = await self.conn.run_read(
                CONVERSATION_PAGE,
                tenant=tenant,
                users=users,
                prefix=prefix,
                skip=skip,
                limit=PAGE,
            )
            for row in page:
                conversation = read_conversation(row["conversation"])
                if conversation is None:
                    report.unreadable.append(_unreadable("conversation", row["conversation"]))
                    continue
                yield rec.conversation(conversation, row["n"], False)
                cid = str(conversation.id)
                async for record in self._messages(cid, row["sequenced"], report):
                    yield record
            if len(page) < PAGE:
                return
            skip += len(page)

    async def _messages(
        self, cid: str, sequenced: bool, report: TransferReport
    ) -> AsyncIterator[Record]:
        after, skip = -(2**63), 0
        while True:
            if sequenced:
                page = await self.conn.run_read(SEQUENCED_PAGE, cid=cid, after=after, limit=PAGE)
            else:
                page = await self.conn.run_read(FOREIGN_PAGE, cid=cid, skip=skip, limit=PAGE)
            for number, row in enumerate(page, start=skip + 1):
                props = dict(row["message"])
                props.pop("mentions", None)
                message = read_message(props, conversation_id=cid)
                if message is None:
                    report.unreadable.append(_unreadable("message", props))
                    continue
                seq = row["seq"] if row["seq"] is not None else number
                yield rec.message(message, cid, seq)
                for position, entity_id in _ordered(row["mentions"]):
                    yield rec.mention(str(message.id), entity_id, position)
            if len(page) < PAGE:
                return
            skip += len(page)
            if sequenced:
                after = page[-1]["seq"]

    # ------------------------------------------------------------------ import

    async def import_records(self, records: list[Record], state: ImportState) -> None:
        writer = _Importer(state, self.multi_tenant, records)
        await self.conn.write(writer.run)
        # Committed: publish what the last (successful) attempt did.
        state.conversations.update(writer.conversations)
        state.entities.update(writer.entities)
        state.reasons.update(writer.reasons)
        state.current = writer.current
        state.renamed = {
            archive_id: target
            for archive_id, (owner, target) in writer.renamed.items()
            if owner == writer.current
        }
        state.messages = writer.moved
        if writer.traced is not None:
            state.traces, state.steps = writer.traced.traces, writer.traced.steps
            state.trace_tenant = writer.traced.trace_tenant
        state.report.merge(writer.tally)


def _ordered(mentions: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """A message's mentions in their stored order (``position``; mentions written
    without one, by name as the backend reads them), numbered 0, 1, …."""
    ranked = sorted(
        mentions,
        key=lambda m: (
            m["position"] is None,
            m["position"] or 0,
            m["name"] or "",
            m["id"] or "",
        ),
    )
    return [(i, str(m["id"])) for i, m in enumerate(ranked)]


class _Importer:
    """One batch in one write transaction. The managed transaction may be retried by
    the driver, so every attempt starts from a fresh tally and copies of the id maps;
    the caller publishes them once the transaction has committed.

    Tenancy (multi-tenant): every id is looked up with its tenant. A record whose id
    another tenant holds is never written over, deleted or linked to: it gets an id of
    its own tenant (:func:`~memory_core.archive.hooks.own_id`), and a derived
    (version-5) conversation id that is not the record's own is replaced by the target's
    own for the tenant and session."""

    def __init__(self, state: ImportState, multi_tenant: bool, records: list[Record]) -> None:
        self.state = state
        self.multi_tenant = multi_tenant
        self.records = records
        self.tally = TransferReport()
        self.conversations: dict[str, str | None] = {}
        self.entities: dict[str, str | None] = {}
        self.reasons: dict[str, str] = {}
        self.current: str | None = None
        # archive message id -> (its archive conversation, the id it got or None)
        self.renamed: dict[str, tuple[str, str | None]] = {}
        # Every message of the import that did not keep its archive id (see ImportState).
        self.moved: dict[str, str | None] = {}
        # The state the batch's reasoning records left (None: the batch had none).
        self.traced: ImportState | None = None

    def tenant(self, record: Record) -> tuple[bool, str | None]:
        """(placeable, tenant): a multi-tenant target needs a user on every record."""
        if not self.multi_tenant:
            return True, None
        user = record["user_identifier"]
        return (isinstance(user, str) and bool(user)), user

    def foreign(self, holder: str | None, tenant: str | None) -> bool:
        """Whether a record held by tenant ``holder`` is another tenant's than ``tenant``."""
        return self.multi_tenant and holder != tenant

    async def run(self, tx: AsyncManagedTransaction) -> None:
        self.tally = TransferReport()
        self.conversations = dict(self.state.conversations)
        self.entities = dict(self.state.entities)
        self.reasons = dict(self.state.reasons)
        self.moved = dict(self.state.messages)
        self.traced = None
        current = self.state.current
        self.renamed = {}
        if current is not None:
            self.renamed = {k: (current, v) for k, v in self.state.renamed.items()}
        by_kind: dict[str, list[Record]] = {}
        owners: list[str | None] = []  # the archive conversation of each mention
        for record in self.records:
            kind = record["record"]
            by_kind.setdefault(kind, []).append(record)
            if kind == "conversation":
                current = record["id"]
            elif kind == "mention":
                owners.append(current)
        self.current = current
        for record in by_kind.get("entity", []):
            await self.entity(tx, record)
        for record in by_kind.get("conversation", []):
            await self.conversation(tx, record)
        await self.messages(tx, by_kind.get("message", []))
        await self.mentions(tx, by_kind.get("mention", []), owners)
        long_term = [r for r in self.records if r["record"] in LONG_TERM]
        if long_term:
            writer = LongTermWriter(
                self.tally, self.entities, self.state.on_conflict, self.multi_tenant
            )
            await writer.run(tx, long_term)
        traces = [r for r in self.records if r["record"] in TRACE_KINDS]
        if traces:
            await self.reasoning(tx, traces)

    async def reasoning(self, tx: AsyncManagedTransaction, records: list[Record]) -> None:
        """The batch's traces, steps and tool calls, on copies of the state's maps."""
        work = replace(
            self.state,
            report=self.tally,
            entities=self.entities,
            messages=self.moved,
            traces=dict(self.state.traces),
            steps=dict(self.state.steps),
        )
        rules = TraceRules(work, self.tally, self.multi_tenant)
        await TraceWriter(work, rules, self.multi_tenant).run(tx, records)
        self.traced = work

    async def entity(self, tx: AsyncManagedTransaction, record: Record) -> None:
        placeable, tenant = self.tenant(record)
        archive_id = record["id"]
        if not placeable:
            self.tally.skip("entity", "no user_identifier and the target is multi-tenant")
            self.entities[archive_id] = None
            return
        # A single-tenant backend sees every tenant's entities: the entity keeps its own.
        tenant = record["user_identifier"] or None
        entity_id = archive_id
        found = await self.find_entity(tx, entity_id, record, tenant)
        byid = found["byid"]
        if byid is not None and self.foreign(byid.get("tenant"), tenant):
            # Another tenant's entity: this one gets an id of its own tenant.
            entity_id = own_id(tenant or "", "entity", archive_id)
            found = await self.find_entity(tx, entity_id, record, tenant)
            byid = found["byid"]
            if byid is not None and self.foreign(byid.get("tenant"), tenant):
                self.tally.skip("entity", FOREIGN_ID)
                self.entities[archive_id] = None
                return
        if byid is None and found["same"] is not None:
            self.entities[archive_id] = found["same"]
            self.tally.skip("entity", "an entity with this name and type is already in the target")
            return
        self.entities[archive_id] = entity_id
        if byid is not None and self.state.on_conflict != "overwrite":
            self.tally.skip("entity", "already in the target")
            return
        created = _when(record.get("created_at"))
        await rows(
            tx,
            WRITE_ENTITY,
            id=entity_id,
            name=record["name"],
            type=record["type"],
            description=record.get("description"),
            created_at=created,
            updated_at=_when(record.get("updated_at")) or created,
            tenant=tenant,
            **entity_extras(record),
        )
        if entity_id != archive_id and byid is None:
            self.tally.lose("entity.id", RENAMED)
        self.tally.copy("entity")

    async def find_entity(
        self, tx: AsyncManagedTransaction, entity_id: str, record: Record, tenant: str | None
    ) -> dict[str, Any]:
        [found] = await rows(
            tx, FIND_ENTITY, id=entity_id, name=record["name"], type=record["type"], tenant=tenant
        )
        return found

    async def conversation(self, tx: AsyncManagedTransaction, record: Record) -> None:
        placeable, tenant = self.tenant(record)
        archive_id = record["id"]
        if not placeable:
            self.tally.skip("conversation", "no user_identifier and the target is multi-tenant")
            self.conversations[archive_id] = None
            return
        placed = await self.conversation_target(tx, record, tenant)
        if placed is None:
            self.tally.skip("conversation", FOREIGN_ID)
            self.conversations[archive_id] = None
            return
        target_id, why, found = placed
        byid = found["byid"]
        if byid is not None and byid["session_id"] != record["session_id"]:
            self.tally.skip("conversation", "its id belongs to another session in the target")
            self.conversations[archive_id] = None
            return
        match = byid if byid is not None else found["same"]
        stored = None if match is None else match.get("user_identifier")
        user = record["user_identifier"]
        if stored is not None and user is not None and stored != user:
            # Two users' sessions of one name (a multi-tenant archive into a single-tenant
            # store) are never merged.
            self.tally.skip("conversation", "its session belongs to another user in the target")
            self.conversations[archive_id] = None
            return
        existing = None if match is None else match["id"]
        if existing is not None and self.state.on_conflict == "skip":
            if existing != archive_id and match.get("messages"):
                # The same session under another id (it went through a store that issues
                # its own ids, NAMS): its messages have other ids too, so they cannot be
                # matched one by one. The session is left as it is, messages included.
                self.conversations[archive_id] = None
                self.reasons[archive_id] = SAME_SESSION_MESSAGES
                self.tally.skip("conversation", SAME_SESSION)
                return
            # The same conversation (or an empty one of that session): its messages are
            # matched by id, so an interrupted import resumes.
            self.conversations[archive_id] = existing
            self.tally.skip("conversation", "already in the target")
            return
        if existing is not None:
            await rows(
                tx,
                cypher.CLEAR_SESSION_ID,
                conversation_id=existing,
                tenant=tenant if self.multi_tenant else None,
            )
        await self.create_conversation(tx, target_id, record)
        self.conversations[archive_id] = target_id
        if target_id != archive_id and why is not None:
            self.tally.lose("conversation.id", why)
        self.tally.copy("conversation")

    async def conversation_target(
        self, tx: AsyncManagedTransaction, record: Record, tenant: str | None
    ) -> tuple[str, str | None, dict[str, Any]] | None:
        """(the id a conversation record takes, why it is not the record's own, what
        :data:`FIND_CONVERSATION` found for it), or None where another tenant holds the id."""
        archive_id = record["id"]
        # The id it takes: never a derived (version-5) one that is not the record's own,
        # nor one another tenant holds; the target's own id of the tenant and session
        # instead.
        own = str(session_uuid(tenant, record["session_id"]))
        named = str(session_uuid(record["user_identifier"], record["session_id"]))
        target_id, why = (archive_id, None)
        if not keeps_id(archive_id, (own, named)):
            target_id, why = own, DERIVED_ID
        found = await self.find_conversation(tx, target_id, record, tenant)
        byid = found["byid"]
        if byid is not None and self.foreign(byid.get("user_identifier"), tenant):
            if target_id == own:
                return None
            target_id, why = own, RENAMED
            found = await self.find_conversation(tx, target_id, record, tenant)
            byid = found["byid"]
            if byid is not None and self.foreign(byid.get("user_identifier"), tenant):
                return None
        return target_id, why, found

    async def create_conversation(
        self, tx: AsyncManagedTransaction, conversation_id: str, record: Record
    ) -> None:
        """Creates the conversation of ``record`` under ``conversation_id``, empty."""
        created = _when(record["created_at"])
        await rows(
            tx,
            CREATE_CONVERSATION,
            id=conversation_id,
            session_id=record["session_id"],
            title=record.get("title"),
            metadata=dump_metadata(record["metadata"]),
            created_at=created,
            updated_at=_when(record.get("updated_at")) or created,
            user=record["user_identifier"],
        )

    async def find_conversation(
        self, tx: AsyncManagedTransaction, conversation_id: str, record: Record, tenant: str | None
    ) -> dict[str, Any]:
        [found] = await rows(
            tx,
            FIND_CONVERSATION,
            id=conversation_id,
            session_id=record["session_id"],
            tenant=tenant,
        )
        return found

    async def messages(self, tx: AsyncManagedTransaction, records: list[Record]) -> None:
        groups: dict[str, list[Record]] = {}
        for record in records:
            target = self.conversations.get(record["conversation_id"])
            if target is None:
                reason = self.reasons.get(record["conversation_id"], NOT_CARRIED)
                self.tally.skip("message", reason)
                continue
            groups.setdefault(target, []).append(record)
        for cid, group in groups.items():
            await self.append(tx, cid, group)

    async def places(self, tx: AsyncManagedTransaction, ids: list[str]) -> dict[str, Any]:
        """Where message ids are: ``{id: {cid, tenant}}``."""
        return {r["id"]: r for r in await rows(tx, EXISTING_MESSAGES, ids=ids)}

    async def append(self, tx: AsyncManagedTransaction, cid: str, group: list[Record]) -> None:
        [state] = await rows(tx, CONVERSATION_STATE, cid=cid)
        tenant = state["tenant"]
        targets, places = await self.message_targets(tx, cid, tenant, group)
        scopes = [_scope(cid, r.get("idempotency_key")) for r in group]
        taken = await self.taken_scopes(tx, scopes)
        floor: int = state["next_seq"]
        batch: list[dict[str, Any]] = []
        written: set[str] = set()
        latest: datetime | None = None
        for record, target, scope in zip(group, targets, scopes, strict=True):
            place = places.get(target)
            if target != record["id"]:
                if place is not None and self.foreign(place["tenant"], tenant):
                    self.renamed[record["id"]] = (record["conversation_id"], None)
                    self.moved[record["id"]] = None
                    self.tally.skip("message", FOREIGN_ID)
                    continue
                self.renamed[record["id"]] = (record["conversation_id"], target)
                self.moved[record["id"]] = target
            if target in written or (
                place is not None and (place["cid"] == cid or self.state.on_conflict != "overwrite")
            ):
                self.tally.skip("message", "already in the target")
                continue
            if scope is not None and scope in taken:
                self.tally.skip("message", "its idempotency key is already in the conversation")
                continue
            if scope is not None:
                taken.add(scope)
            if place is not None:
                # The same tenant's message in another conversation: moved here.
                await self.delete_message(tx, target, tenant)
            written.add(target)
            seq = max(record["seq"], floor)
            floor = seq + 1
            when = parse_stamp(record["created_at"])
            latest = when if latest is None or when > latest else latest
            batch.append(_message_row(record, target, when, seq, scope))
            if target != record["id"]:
                self.tally.lose("message.id", RENAMED)
        if not batch:
            return
        await rows(
            tx,
            APPEND_MESSAGES,
            cid=cid,
            tail=state["tail"],
            rows=batch,
            next_seq=floor,
            sequenced=state["sequenced"],
            latest=latest,
        )
        self.tally.copy("message", len(batch))

    async def message_targets(
        self, tx: AsyncManagedTransaction, cid: str, tenant: str | None, group: list[Record]
    ) -> tuple[list[str], dict[str, Any]]:
        """The id each message of ``group`` takes in conversation ``cid`` (its own, or one of
        the conversation's where another tenant holds it), and where those ids are found."""
        places = await self.places(tx, [r["id"] for r in group])
        targets = [
            own_id(cid, "message", r["id"])
            if r["id"] in places and self.foreign(places[r["id"]]["tenant"], tenant)
            else r["id"]
            for r in group
        ]
        renamed = [t for t, r in zip(targets, group, strict=True) if t != r["id"]]
        if renamed:
            places.update(await self.places(tx, renamed))
        return targets, places

    async def taken_scopes(self, tx: AsyncManagedTransaction, scopes: list[str | None]) -> set[str]:
        """The idempotency scopes among ``scopes`` that a message in the target already has."""
        keyed = [s for s in scopes if s is not None]
        if not keyed:
            return set()
        return {r["scope"] for r in await rows(tx, EXISTING_SCOPES, scopes=keyed)}

    async def delete_message(
        self, tx: AsyncManagedTransaction, message_id: str, tenant: str | None
    ) -> None:
        """Deletes a message from its conversation (only one of ``tenant``'s, multi-tenant)."""
        await rows(
            tx,
            cypher.DELETE_MESSAGE,
            message_id=message_id,
            tenant=tenant if self.multi_tenant else None,
        )

    async def mentions(
        self, tx: AsyncManagedTransaction, records: list[Record], owners: list[str | None]
    ) -> None:
        """Links a message of the conversation each mention follows (as written or matched
        in this run) to an entity of the same tenant; anything else is skipped."""
        links = []
        for i, (record, owner) in enumerate(zip(records, owners, strict=True)):
            entity_id = self.entities.get(record["entity_id"])
            if entity_id is None:
                self.tally.lose("mention", "its entity was not carried")
                continue
            cid = None if owner is None else self.conversations.get(owner)
            renamed = self.renamed.get(record["message_id"])
            message_id = record["message_id"] if renamed is None else renamed[1]
            if cid is None or message_id is None:
                self.tally.skip("mention", "its message was not carried")
                continue
            links.append(
                {
                    "i": i,
                    "cid": cid,
                    "message_id": message_id,
                    "entity_id": entity_id,
                    "position": record["position"],
                }
            )
        if not links:
            return
        done = await rows(tx, LINK_MENTIONS, rows=links, scoped=self.multi_tenant)
        linked = [r for r in done if r["same"]]
        had = sum(1 for r in linked if r["had"])
        self.tally.copy("mention", len(linked) - had)
        if had:
            self.tally.skip("mention", "already in the target", had)
        if len(done) > len(linked):
            self.tally.skip("mention", FOREIGN_ENTITY, len(done) - len(linked))
        missing = len(links) - len(done)
        if missing:
            self.tally.skip("mention", "its message was not carried", missing)


def _message_row(
    record: Record, target: str, when: datetime, seq: int, scope: str | None
) -> dict[str, Any]:
    """The :data:`APPEND_MESSAGES` row of a message record written under id ``target``."""
    return {
        "id": target,
        "role": record["role"],
        "content": record["content"],
        "embedding": _vector(record.get("embedding")),
        "metadata": dump_metadata(record["metadata"]),
        "timestamp": when,
        "seq": seq,
        "key": record.get("idempotency_key"),
        "scope": scope,
    }


def _unreadable(kind: str, props: Mapping[str, Any]) -> str:
    """The report's line for a record another program left unreadable (not exported)."""
    return f"{kind} {str(props.get('id'))[:80]!r}: another program's, unreadable (see the warning)"
