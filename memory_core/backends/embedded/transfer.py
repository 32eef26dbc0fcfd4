"""The bulk transfer hook of the embedded backend (see :mod:`memory_core.transfer`).

Export reads in pages (keyset on entity id, session id and ``seq``; the long-term
records of :mod:`.transfer_long_term` by id; the traces of :mod:`.transfer_traces` by
start time and id, their steps by number), each page in its own short read
transaction, so memory stays bounded and writers are not blocked for long; it is not a
snapshot of a store being written meanwhile. Import writes each batch of records in one
transaction, keeping ids, sequence numbers, timestamps, embeddings, idempotency keys and
mention order, and indexes the words of entities, preferences, facts, traces and steps
for search. It carries every record kind (``kinds``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import TypeVar

from memory_core.store import (
    ALL_KINDS,
    DERIVED_ID,
    FOREIGN_ENTITY,
    FOREIGN_ID,
    RENAMED,
    SAME_SESSION,
    SAME_SESSION_MESSAGES,
    TENANT_LOST,
    ImportRules,
    ImportState,
    Record,
    TraceRules,
    TransferReport,
    keeps_id,
    own_id,
)
from memory_core.store import transfer_records as rec

from .codec import dump_json, now_micros, pack_vector
from .conversations import session_uuid
from .database import Database
from .entity_updates import put_extras
from .fts_purge import mark_pending, purge
from .rows import MESSAGE_COLUMNS, read_messages, to_conversation, to_entity
from .transfer_long_term import (
    LongTermImporter,
    conversation_scope,
    entity_in_scope,
    export_long_term,
    micros,
)
from .transfer_traces import TraceImporter, export_traces
from .words import ENTITY, index

PAGE = 1000
T = TypeVar("T")
REASONING = frozenset(rec.REASONING)


class EmbeddedTransfer:
    """Reads and writes archive records straight from and to the SQLite store."""

    kinds = ALL_KINDS

    def __init__(self, store: Database, multi_tenant: bool) -> None:
        self.store = store
        self.multi_tenant = multi_tenant

    async def _read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await self.store.call(work, write=False)

    # ------------------------------------------------------------------ export

    async def export_records(
        self, users: list[str] | None, session_prefix: str | None, report: TransferReport
    ) -> AsyncIterator[Record]:
        only = None if self.multi_tenant else users
        for tenant in await self._tenants(users):
            owner = tenant or None
            async for record in self._entities(tenant, owner, session_prefix, only):
                yield record
            async for record in self._conversations(tenant, session_prefix, only):
                yield record
            if not session_prefix:  # long-term records belong to no session
                async for record in export_long_term(self._read, tenant, owner, only):
                    yield record
            async for record in export_traces(self._read, tenant, session_prefix, only):
                yield record

    async def _tenants(self, users: list[str] | None) -> list[str]:
        if not self.multi_tenant:
            return [""]
        if users is not None:
            return list(users)
        rows = await self._read(
            lambda c: c.execute(
                "SELECT tenant FROM conversations WHERE tenant <> '' UNION "
                "SELECT tenant FROM entities WHERE tenant <> '' UNION "
                "SELECT tenant FROM preferences WHERE tenant <> '' UNION "
                "SELECT tenant FROM facts WHERE tenant <> '' UNION "
                "SELECT tenant FROM traces WHERE tenant <> '' ORDER BY 1"
            ).fetchall()
        )
        return [r[0] for r in rows]

    async def _entities(
        self, tenant: str, owner: str | None, prefix: str | None, users: list[str] | None
    ) -> AsyncIterator[Record]:
        """The tenant's entities in scope: all of them when the export is not narrowed
        to sessions (``prefix``) or users (``users``, single-tenant store: entities belong
        to no user there); otherwise those a message of a conversation in scope mentions,
        and (narrowed to users only) those their preferences link."""
        sql = "SELECT * FROM entities e WHERE e.tenant = ? AND e.id > ?"
        scope: list[object] = []
        if prefix or users is not None:
            held, scope = entity_in_scope("e.id", tenant, prefix, users)
            sql += f" AND {held}"
        sql += " ORDER BY e.id LIMIT ?"
        after = ""
        while True:
            rows = await self._read(partial(_fetch, sql, [tenant, after, *scope, PAGE]))
            for row in rows:
                yield rec.entity(to_entity(row), owner)
            if len(rows) < PAGE:
                return
            after = rows[-1]["id"]

    async def _conversations(
        self, tenant: str, prefix: str | None, users: list[str] | None
    ) -> AsyncIterator[Record]:
        narrowed, scope = conversation_scope(prefix, users)
        sql = (
            "SELECT c.*, (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS n "
            f"FROM conversations c WHERE c.tenant = ? AND c.session_id > ?{narrowed} "
            "ORDER BY c.session_id LIMIT ?"
        )
        after: str | None = ""
        while after is not None:
            rows = await self._read(partial(_fetch, sql, [tenant, after, *scope, PAGE]))
            after = rows[-1]["session_id"] if len(rows) == PAGE else None
            for row in rows:
                yield rec.conversation(to_conversation(row), row["n"], False)
                async for record in self._messages(row["id"]):
                    yield record

    async def _messages(self, conversation_id: str) -> AsyncIterator[Record]:
        after = -(2**63)
        while True:
            page = await self._read(
                partial(_message_page, conversation_id=conversation_id, after=after)
            )
            # mentions travel as records of their own
            built = read_messages(tuple(row) for row, _ in page)
            for (row, mentions), message in zip(page, built, strict=True):
                yield rec.message(message, conversation_id, row["seq"])
                for entity_id, position in mentions:
                    yield rec.mention(row["id"], entity_id, position)
            if len(page) < PAGE:
                return
            after = page[-1][0]["seq"]

    # ------------------------------------------------------------------ import

    async def import_records(self, records: list[Record], state: ImportState) -> None:
        tally = TransferReport()
        writer = _Importer(state, tally, self.multi_tenant)
        await self.store.call(lambda conn: writer.run(conn, records), write=True)
        await purge(self.store)  # a replaced conversation's words leave the index
        state.report.merge(tally)


def _fetch(sql: str, params: list[object], conn: sqlite3.Connection) -> list[sqlite3.Row]:
    return conn.execute(sql, params).fetchall()


def _message_page(
    conn: sqlite3.Connection, *, conversation_id: str, after: int
) -> list[tuple[sqlite3.Row, list[tuple[str, int]]]]:
    rows = conn.execute(
        f"SELECT {MESSAGE_COLUMNS} FROM messages m JOIN conversations c "
        "ON c.id = m.conversation_id WHERE m.conversation_id = ? AND m.seq > ? "
        "ORDER BY m.seq LIMIT ?",
        (conversation_id, after, PAGE),
    ).fetchall()
    mentions: dict[str, list[tuple[str, int]]] = {}
    ids = [r["id"] for r in rows]
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        for m in conn.execute(
            "SELECT message_id, entity_id, position FROM mentions WHERE message_id IN "
            f"({','.join('?' * len(chunk))}) ORDER BY message_id, position",
            chunk,
        ):
            mentions.setdefault(m["message_id"], []).append((m["entity_id"], m["position"]))
    return [(r, mentions.get(r["id"], [])) for r in rows]


class _Importer:
    """One batch of records in one transaction (runs in the store's worker thread)."""

    def __init__(self, state: ImportState, tally: TransferReport, multi_tenant: bool) -> None:
        self.state = state
        self.tally = tally
        self.multi_tenant = multi_tenant
        self.next_seq: dict[str, int] = {}
        self.latest: dict[str, int] = {}
        self.rules = ImportRules(tally, state.on_conflict, state.entities, multi_tenant)
        self.long_term = LongTermImporter(state, self.rules)
        self.traces = TraceImporter(state, TraceRules(state, tally, multi_tenant))

    def tenant(self, record: Record) -> str | None:
        """The stored tenant of a record, ``None`` when it cannot be placed."""
        if not self.multi_tenant:
            return ""
        user = record["user_identifier"]
        return user if isinstance(user, str) and user else None

    def run(self, conn: sqlite3.Connection, records: list[Record]) -> None:
        for record in records:
            kind = record["record"]
            if kind == "entity":
                self.entity(conn, record)
            elif kind == "conversation":
                self.conversation(conn, record)
            elif kind == "message":
                self.message(conn, record)
            elif kind == "mention":
                self.mention(conn, record)
            elif kind in REASONING:
                self.traces.write(conn, record)
            else:
                self.long_term.write(conn, record)
        for conversation_id, seq in self.next_seq.items():
            conn.execute(
                "UPDATE conversations SET next_seq = MAX(next_seq, ?), "
                "updated_at = MAX(updated_at, ?) WHERE id = ?",
                (seq, self.latest.get(conversation_id, 0), conversation_id),
            )

    def entity(self, conn: sqlite3.Connection, record: Record) -> None:
        state, tally = self.state, self.tally
        archive_id = record["id"]
        tenant = self.tenant(record)
        if tenant is None:
            tally.skip("entity", "no user_identifier and the target is multi-tenant")
            state.entities[archive_id] = None
            return
        entity_id = archive_id
        row = _entity_row(conn, entity_id)
        if row is not None and row["tenant"] != tenant:
            # Another tenant's entity is never written over nor linked to: this one gets
            # an id of its own tenant (derived, so a re-run finds it).
            entity_id = own_id(tenant, "entity", archive_id)
            row = _entity_row(conn, entity_id)
            if row is not None and row["tenant"] != tenant:
                tally.skip("entity", FOREIGN_ID)
                state.entities[archive_id] = None
                return
        created = micros(record.get("created_at")) or now_micros()
        updated = micros(record.get("updated_at")) or created
        values = (
            record["name"],
            record["name"].casefold(),
            record["type"],
            record.get("description"),
            created,
            updated,
        )
        if row is not None:
            state.entities[archive_id] = entity_id
            if state.on_conflict == "overwrite":
                conn.execute(
                    "UPDATE entities SET name = ?, name_key = ?, type = ?, description = ?, "
                    "created_at = ?, updated_at = ? WHERE id = ? AND tenant = ?",
                    (*values, entity_id, tenant),
                )
                conn.execute(
                    "DELETE FROM long_term_words WHERE kind = ? AND record_id = ?",
                    (ENTITY, entity_id),
                )
                index(conn, ENTITY, tenant, entity_id, (record["name"], record.get("description")))
                put_extras(conn, tenant, entity_id, record["name"], record)
                self.copied_entity(record)
            else:
                tally.skip("entity", "already in the target")
            return
        same = conn.execute(
            "SELECT id FROM entities WHERE tenant = ? AND name_key = ? AND type = ?",
            (tenant, values[1], record["type"]),
        ).fetchone()
        if same is not None:
            state.entities[archive_id] = same["id"]
            tally.skip("entity", "an entity with this name and type is already in the target")
            return
        conn.execute(
            "INSERT INTO entities (id, tenant, name, name_key, type, description, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (entity_id, tenant, *values),
        )
        index(conn, ENTITY, tenant, entity_id, (record["name"], record.get("description")))
        put_extras(conn, tenant, entity_id, record["name"], record)
        state.entities[archive_id] = entity_id
        if entity_id != archive_id:
            tally.lose("entity.id", RENAMED)
        self.copied_entity(record)

    def copied_entity(self, record: Record) -> None:
        self.tally.copy("entity")
        if not self.multi_tenant and record["user_identifier"] is not None:
            self.tally.lose("entity.user_identifier", TENANT_LOST)

    def conversation(self, conn: sqlite3.Connection, record: Record) -> None:
        state, tally = self.state, self.tally
        archive_id = record["id"]
        state.current, state.renamed = archive_id, {}
        tenant = self.tenant(record)
        if tenant is None:
            tally.skip("conversation", "no user_identifier and the target is multi-tenant")
            state.conversations[archive_id] = None
            return
        target_id, changed = _conversation_id(conn, record, tenant)
        if target_id is None:
            tally.skip("conversation", FOREIGN_ID)
            state.conversations[archive_id] = None
            return
        # The row under that id is of this tenant (or there is none).
        by_id = conn.execute("SELECT * FROM conversations WHERE id = ?", (target_id,)).fetchone()
        if by_id is not None and by_id["session_id"] != record["session_id"]:
            tally.skip("conversation", "its id belongs to another session in the target")
            state.conversations[archive_id] = None
            return
        row = (
            by_id
            or conn.execute(
                "SELECT * FROM conversations WHERE tenant = ? AND session_id = ?",
                (tenant, record["session_id"]),
            ).fetchone()
        )
        if row is not None and _other_user(row["user_identifier"], record["user_identifier"]):
            tally.skip("conversation", "its session belongs to another user in the target")
            state.conversations[archive_id] = None
            return
        if row is not None and state.on_conflict == "skip":
            if row["id"] != archive_id and _has_messages(conn, row["id"]):
                # The same session under another id (it went through a store that issues
                # its own ids, NAMS): its messages have other ids too, so they cannot be
                # matched one by one. The session is left as it is, messages included.
                state.conversations[archive_id] = None
                state.reasons[archive_id] = SAME_SESSION_MESSAGES
                tally.skip("conversation", SAME_SESSION)
                return
            # The same conversation (or an empty one of that session): its messages are
            # matched by id, so an interrupted import resumes.
            state.conversations[archive_id] = row["id"]
            tally.skip("conversation", "already in the target")
            return
        if row is not None:
            _delete_conversation(conn, row["id"])
        created = micros(record["created_at"])
        conn.execute(
            "INSERT INTO conversations (id, tenant, session_id, title, metadata, user_identifier, "
            "created_at, updated_at, next_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)",
            (
                target_id,
                tenant,
                record["session_id"],
                record.get("title"),
                dump_json(record["metadata"]),
                record["user_identifier"],
                created,
                micros(record.get("updated_at")) or created,
            ),
        )
        state.conversations[archive_id] = target_id
        if changed is not None:
            tally.lose("conversation.id", changed)
        tally.copy("conversation")

    def message(self, conn: sqlite3.Connection, record: Record) -> None:
        tally = self.tally
        conversation_id = self.state.conversations.get(record["conversation_id"])
        if conversation_id is None:
            tally.skip("message", self.state.message_reason(record["conversation_id"]))
            return
        message_id = record["id"]
        found = _message_place(conn, message_id, conversation_id)
        if found is not None and not found["ours"]:
            # Another tenant's message is never written over: this one gets an id of its
            # own, derived from its conversation (a re-run finds it again).
            message_id = own_id(conversation_id, "message", record["id"])
            found = _message_place(conn, message_id, conversation_id)
            if found is not None and not found["ours"]:
                self.state.rename_message(record["id"], None)
                tally.skip("message", FOREIGN_ID)
                return
            self.state.rename_message(record["id"], message_id)
        if found is not None:
            if self.state.on_conflict != "overwrite" or found["cid"] == conversation_id:
                tally.skip("message", "already in the target")
                return
            # The same tenant's message in another conversation: moved here.
            conn.execute("DELETE FROM mentions WHERE message_id = ?", (message_id,))
            conn.execute("DELETE FROM messages WHERE id = ?", (message_id,))
            mark_pending(conn)
        key = record.get("idempotency_key")
        if (
            key is not None
            and conn.execute(
                "SELECT 1 FROM messages WHERE conversation_id = ? AND idempotency_key = ?",
                (conversation_id, key),
            ).fetchone()
        ):
            tally.skip("message", "its idempotency key is already in the conversation")
            return
        floor = self.next_seq.get(conversation_id)
        if floor is None:
            floor = conn.execute(
                "SELECT next_seq FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()[0]
        seq = max(record["seq"], floor)
        created = micros(record["created_at"])
        assert created is not None
        conn.execute(
            "INSERT INTO messages (id, conversation_id, seq, role, content, metadata, "
            "created_at, embedding, idempotency_key, tenant) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
            "?, (SELECT tenant FROM conversations WHERE id = ?2))",
            (
                message_id,
                conversation_id,
                seq,
                record["role"],
                record["content"],
                dump_json(record["metadata"]),
                created,
                pack_vector(record.get("embedding")),
                key,
            ),
        )
        self.next_seq[conversation_id] = seq + 1
        self.latest[conversation_id] = max(self.latest.get(conversation_id, 0), created)
        if message_id != record["id"]:
            tally.lose("message.id", RENAMED)
        tally.copy("message")

    def mention(self, conn: sqlite3.Connection, record: Record) -> None:
        """Links a message of the current conversation (as written or matched in this
        run) to an entity of the same tenant; anything else is skipped."""
        state, tally = self.state, self.tally
        entity_id = state.entities.get(record["entity_id"])
        if entity_id is None:
            tally.lose("mention", "its entity was not carried")
            return
        current = state.current
        conversation_id = None if current is None else state.conversations.get(current)
        message_id = state.renamed.get(record["message_id"], record["message_id"])
        if (
            conversation_id is None
            or message_id is None
            or not conn.execute(
                "SELECT 1 FROM messages WHERE id = ? AND conversation_id = ?",
                (message_id, conversation_id),
            ).fetchone()
        ):
            tally.skip("mention", "its message was not carried")
            return
        if not conn.execute(
            "SELECT 1 FROM entities e JOIN conversations c ON c.id = ? "
            "WHERE e.id = ? AND e.tenant = c.tenant",
            (conversation_id, entity_id),
        ).fetchone():
            tally.skip("mention", FOREIGN_ENTITY)
            return
        cursor = conn.execute(
            "INSERT OR IGNORE INTO mentions (message_id, entity_id, position) VALUES (?, ?, ?)",
            (message_id, entity_id, record["position"]),
        )
        if cursor.rowcount:
            tally.copy("mention")
        else:
            tally.skip("mention", "already in the target")


def _entity_row(conn: sqlite3.Connection, entity_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM entities WHERE id = ?", (entity_id,)
    ).fetchone()
    return row


def _conversation_id(
    conn: sqlite3.Connection, record: Record, tenant: str
) -> tuple[str | None, str | None]:
    """The id an archive conversation takes in ``tenant``, and why it is not the archive's
    (``None`` when it is). A derived (version-5) id is kept only when it is the record's
    own (:func:`~memory_core.archive.hooks.keeps_id`), else the target's own id of the
    tenant and session is used, so no archive can take the id of another tenant's
    session. An id another tenant holds is not taken either (the session's own id then);
    ``(None, ...)`` when even that is another tenant's."""
    archive_id = record["id"]
    own = str(session_uuid(tenant, record["session_id"]))
    named = str(session_uuid(record["user_identifier"], record["session_id"]))
    candidate, why = (archive_id, None) if keeps_id(archive_id, (own, named)) else (own, DERIVED_ID)
    if not _owned_by_other(conn, candidate, tenant):
        return candidate, (why if candidate != archive_id else None)
    if candidate != own and not _owned_by_other(conn, own, tenant):
        return own, RENAMED
    return None, FOREIGN_ID


def _owned_by_other(conn: sqlite3.Connection, conversation_id: str, tenant: str) -> bool:
    found = conn.execute(
        "SELECT tenant FROM conversations WHERE id = ?", (conversation_id,)
    ).fetchone()
    return found is not None and found[0] != tenant


def _message_place(
    conn: sqlite3.Connection, message_id: str, conversation_id: str
) -> sqlite3.Row | None:
    """Where a message id is in the target: its conversation (``cid``) and whether that
    is of the tenant of ``conversation_id`` (``ours``); ``None`` when it is nowhere."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT m.conversation_id AS cid, "
        "c.tenant = (SELECT tenant FROM conversations WHERE id = ?) AS ours "
        "FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE m.id = ?",
        (conversation_id, message_id),
    ).fetchone()
    return row


def _has_messages(conn: sqlite3.Connection, conversation_id: str) -> bool:
    found = conn.execute(
        "SELECT 1 FROM messages WHERE conversation_id = ? LIMIT 1", (conversation_id,)
    ).fetchone()
    return found is not None


def _other_user(stored: str | None, archived: str | None) -> bool:
    """Two different users' conversations with one session name (possible when a
    multi-tenant archive goes into a single-tenant store) are never merged."""
    return stored is not None and archived is not None and stored != archived


def _delete_conversation(conn: sqlite3.Connection, conversation_id: str) -> None:
    conn.execute(
        "DELETE FROM mentions WHERE message_id IN "
        "(SELECT id FROM messages WHERE conversation_id = ?)",
        (conversation_id,),
    )
    if conn.execute("DELETE FROM messages WHERE conversation_id = ?", (conversation_id,)).rowcount:
        mark_pending(conn)
    conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
