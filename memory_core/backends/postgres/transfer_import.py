"""One import batch of the PostgreSQL hook, in one transaction.

The rules are the embedded hook's (ids, ``seq``, timestamps, metadata text, idempotency
keys, titles, entities and the order of mentions kept; tenancy as
:mod:`memory_core.archive.hooks` says). Entities and conversations are written one by
one (few); the messages of a conversation and their mentions are looked up with one
query per kind and written with multi-row inserts (one statement per 500 rows).

Ids travel as text here (``::uuid`` in SQL) so that they compare equal to the archive's.
"""

from __future__ import annotations

import json
from dataclasses import fields, replace
from datetime import UTC, datetime
from typing import Any

from memory_core.store import (
    DERIVED_ID,
    FOREIGN_ENTITY,
    FOREIGN_ID,
    RENAMED,
    SAME_SESSION,
    SAME_SESSION_MESSAGES,
    TENANT_LOST,
    ImportState,
    Record,
    TraceRules,
    TransferReport,
    keeps_id,
    own_id,
    parse_stamp,
)

from . import words
from .codec import load_text, store_content, store_metadata, store_optional, store_text, word_parts
from .conversations import session_uuid
from .entities import name_key
from .entity_updates import extras
from .messages import add_more_words
from .transfer_long_term import LongTermImporter
from .transfer_traces_import import TraceImporter
from .tx import Tx

NUL_ID = "PostgreSQL cannot hold an id with a NUL character: it got an id of its own"

TRACE_KINDS = ("trace", "step", "tool_call")

# Rows per multi-row INSERT.
CHUNK = 500

# A chunk of messages travels as one JSON array of row arrays (see _message_row): the
# statement text is the same for every chunk (psycopg parses and caches it once), and
# json.dumps is one call in C. Words are joined by spaces (a word is ``\w+``).
_INSERT_MESSAGES = (
    "INSERT INTO {s}.messages (id, conversation_id, seq, role, content, content_exact, "
    "metadata, metadata_doc, created_at, embedding, idempotency_key, words) "
    "SELECT (e->>0)::uuid, (e->>1)::uuid, (e->>2)::bigint, e->>3, e->>4, "
    "decode(e->>5, 'hex'), e->>6, (e->>7)::jsonb, (e->>8)::timestamptz, "
    "(e->>9)::float8[], e->>10, array_to_tsvector(string_to_array(e->>11, ' ')) "
    "FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS j (e, n) ORDER BY n"
)
_INSERT_MENTIONS = (
    "INSERT INTO {s}.mentions (message_id, entity_id, position) "
    "SELECT * FROM unnest(%s::uuid[], %s::text[], %s::integer[]) ON CONFLICT DO NOTHING"
)


def _when(value: str | None) -> datetime | None:
    return None if value is None else parse_stamp(value)


def _copy(state: ImportState) -> ImportState:
    """The state with a report of its own and copies of its maps."""
    work = replace(state, report=TransferReport())
    for item in fields(work):
        value = getattr(work, item.name)
        if isinstance(value, dict):
            setattr(work, item.name, dict(value))
    return work


class Importer:
    """One batch on a copy of the import's state; :meth:`publish` once committed (the
    store may run the transaction twice when a connection breaks before COMMIT)."""

    def __init__(self, state: ImportState, multi_tenant: bool) -> None:
        self.state = _copy(state)
        self.tally = self.state.report
        self.multi_tenant = multi_tenant
        self.messages: list[Record] = []
        self.mentions: list[Record] = []
        self.long_term = LongTermImporter(self.state, self.tally, self.tenant, multi_tenant)
        self.traces = TraceImporter(self.state, TraceRules(self.state, self.tally, multi_tenant))

    def publish(self, state: ImportState) -> None:
        """Hand what this batch did to the import's state."""
        for item in fields(state):
            if item.name != "report":
                setattr(state, item.name, getattr(self.state, item.name))
        state.report.merge(self.tally)

    def tenant(self, record: Record) -> str | None:
        """The stored tenant of a record, ``None`` when it cannot be placed."""
        if not self.multi_tenant:
            return ""
        user = record["user_identifier"]
        return user if isinstance(user, str) and user else None

    async def run(self, tx: Tx, records: list[Record]) -> None:
        """Write the batch: messages and mentions are gathered per conversation."""
        for record in records:
            kind = record["record"]
            if kind == "message":
                self.messages.append(record)
            elif kind == "mention":
                self.mentions.append(record)
            else:
                await self.flush(tx)
                if kind == "entity":
                    await self.entity(tx, record)
                elif kind == "conversation":
                    await self.conversation(tx, record)
                elif kind in TRACE_KINDS:
                    await self.traces.write(tx, record)
                else:
                    await self.long_term.write(tx, record)
        await self.flush(tx)

    async def flush(self, tx: Tx) -> None:
        """Write the gathered messages, then their mentions."""
        messages, self.messages = self.messages, []
        mentions, self.mentions = self.mentions, []
        if messages:
            await _Messages(self, tx).write(messages)
        if mentions:
            await self.link(tx, mentions)

    # ------------------------------------------------------------------ entities

    async def entity(self, tx: Tx, record: Record) -> None:
        state, tally = self.state, self.tally
        archive_id = record["id"]
        tenant = self.tenant(record)
        if tenant is None:
            tally.skip("entity", "no user_identifier and the target is multi-tenant")
            state.entities[archive_id] = None
            return
        entity_id = archive_id
        if "\x00" in archive_id:  # derived, so a re-run finds it
            entity_id = own_id(tenant, "entity", archive_id)
        holder = await _entity_tenant(tx, entity_id)
        if holder is not None and holder != tenant:
            # Another tenant's entity is never written over nor linked to: this one gets
            # an id of its own tenant (derived, so a re-run finds it).
            entity_id = own_id(tenant, "entity", archive_id)
            holder = await _entity_tenant(tx, entity_id)
            if holder is not None and holder != tenant:
                tally.skip("entity", FOREIGN_ID)
                state.entities[archive_id] = None
                return
        created = _when(record.get("created_at")) or datetime.now(UTC)
        values = (
            store_text(record["name"]),
            name_key(record["name"]),
            record["type"],
            store_optional(record.get("description")),
            created,
            _when(record.get("updated_at")) or created,
            words.of(record["name"], record.get("description")),
            *extras(record),
        )
        if holder is not None:
            state.entities[archive_id] = entity_id
            if state.on_conflict == "overwrite":
                await tx.run(
                    "UPDATE {s}.entities SET name = %s, name_key = %s, type = %s, "
                    "description = %s, created_at = %s, updated_at = %s, words = %s::text[], "
                    "aliases = %s, alias_keys = %s::text[], attributes = %s "
                    "WHERE id = %s AND tenant = %s",
                    (*values, entity_id, tenant),
                )
                self.copied_entity(record)
            else:
                tally.skip("entity", "already in the target")
            return
        same = await tx.row(
            "SELECT id FROM {s}.entities WHERE tenant = %s AND name_key = %s AND type = %s",
            (tenant, values[1], record["type"]),
        )
        if same is not None:
            state.entities[archive_id] = same[0]
            tally.skip("entity", "an entity with this name and type is already in the target")
            return
        await tx.run(
            "INSERT INTO {s}.entities (id, tenant, name, name_key, type, description, "
            "created_at, updated_at, words, aliases, alias_keys, attributes) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::text[], %s, %s::text[], %s)",
            (entity_id, tenant, *values),
        )
        state.entities[archive_id] = entity_id
        if entity_id != archive_id:
            tally.lose("entity.id", NUL_ID if "\x00" in archive_id else RENAMED)
        self.copied_entity(record)

    def copied_entity(self, record: Record) -> None:
        self.tally.copy("entity")
        if not self.multi_tenant and record["user_identifier"] is not None:
            self.tally.lose("entity.user_identifier", TENANT_LOST)

    # ------------------------------------------------------------------ conversations

    async def conversation(self, tx: Tx, record: Record) -> None:
        state, tally = self.state, self.tally
        archive_id = record["id"]
        state.current, state.renamed = archive_id, {}
        tenant = self.tenant(record)
        if tenant is None:
            tally.skip("conversation", "no user_identifier and the target is multi-tenant")
            state.conversations[archive_id] = None
            return
        target_id, changed = await _conversation_id(tx, record, tenant)
        if target_id is None:
            tally.skip("conversation", FOREIGN_ID)
            state.conversations[archive_id] = None
            return
        # The row under that id is of this tenant (or there is none).
        by_id = await _conversation(tx, "c.id = %s::uuid", target_id)
        if by_id is not None and by_id[1] != record["session_id"]:
            tally.skip("conversation", "its id belongs to another session in the target")
            state.conversations[archive_id] = None
            return
        row = by_id or await _conversation(
            tx, "c.tenant = %s AND c.session_id = %s", tenant, record["session_id"]
        )
        if row is not None and _other_user(row[2], record["user_identifier"]):
            tally.skip("conversation", "its session belongs to another user in the target")
            state.conversations[archive_id] = None
            return
        if row is not None and state.on_conflict == "skip":
            if row[0] != archive_id and row[3]:
                # The same session under another id (it went through a store that issues
                # its own ids, NAMS): its messages have other ids too, so they cannot be
                # matched one by one. The session is left as it is, messages included.
                state.conversations[archive_id] = None
                state.reasons[archive_id] = SAME_SESSION_MESSAGES
                tally.skip("conversation", SAME_SESSION)
                return
            # The same conversation (or an empty one of that session): its messages are
            # matched by id, so an interrupted import resumes.
            state.conversations[archive_id] = row[0]
            tally.skip("conversation", "already in the target")
            return
        if row is not None:
            # Its messages and their mentions go with it (ON DELETE CASCADE).
            await tx.run("DELETE FROM {s}.conversations WHERE id = %s::uuid", (row[0],))
        created = parse_stamp(record["created_at"])
        await tx.run(
            "INSERT INTO {s}.conversations (id, tenant, session_id, title, metadata, "
            "user_identifier, created_at, updated_at, next_seq) "
            "VALUES (%s::uuid, %s, %s, %s, %s, %s, %s, %s, 0)",
            (
                target_id,
                tenant,
                record["session_id"],
                store_optional(record.get("title")),
                store_metadata(record["metadata"])[0],
                record["user_identifier"],
                created,
                _when(record.get("updated_at")) or created,
            ),
        )
        state.conversations[archive_id] = target_id
        if changed is not None:
            tally.lose("conversation.id", changed)
        tally.copy("conversation")

    # ------------------------------------------------------------------ mentions

    async def link(self, tx: Tx, records: list[Record]) -> None:
        """Links messages of the current conversation (as written or matched in this
        run) to entities of the same tenant; anything else is skipped. The mentions
        gathered since the last conversation record all follow its messages."""
        state, tally = self.state, self.tally
        current = state.current
        conversation_id = None if current is None else state.conversations.get(current)
        wanted: list[tuple[str, str, int]] = []
        for record in records:
            entity_id = state.entities.get(record["entity_id"])
            if entity_id is None:
                tally.lose("mention", "its entity was not carried")
                continue
            message_id = state.renamed.get(record["message_id"], record["message_id"])
            if conversation_id is None or message_id is None:
                tally.skip("mention", "its message was not carried")
                continue
            wanted.append((message_id, entity_id, record["position"]))
        if not wanted or conversation_id is None:
            return
        held = await tx.rows(
            "SELECT id::text FROM {s}.messages WHERE conversation_id = %s::uuid "
            "AND id = ANY(%s::uuid[])",
            (conversation_id, sorted({m for m, _, _ in wanted})),
        )
        ours = await tx.rows(
            "SELECT e.id FROM {s}.entities e JOIN {s}.conversations c ON c.id = %s::uuid "
            "WHERE e.id = ANY(%s::text[]) AND e.tenant = c.tenant",
            (conversation_id, sorted({e for _, e, _ in wanted})),
        )
        messages, entities = {r[0] for r in held}, {r[0] for r in ours}
        rows = []
        for message_id, entity_id, position in wanted:
            if message_id not in messages:
                tally.skip("mention", "its message was not carried")
            elif entity_id not in entities:
                tally.skip("mention", FOREIGN_ENTITY)
            else:
                rows.append((message_id, entity_id, position))
        added = 0
        for start in range(0, len(rows), CHUNK):
            chunk = rows[start : start + CHUNK]
            columns = [[row[i] for row in chunk] for i in range(3)]
            added += await tx.run(_INSERT_MENTIONS, columns)
        if added:
            tally.copy("mention", added)
        if len(rows) > added:
            tally.skip("mention", "already in the target", len(rows) - added)


class _Messages:
    """The gathered messages of one batch, written per target conversation."""

    def __init__(self, importer: Importer, tx: Tx) -> None:
        self.importer = importer
        self.state = importer.state
        self.tally = importer.tally
        self.tx = tx

    async def write(self, records: list[Record]) -> None:
        groups: dict[str, list[Record]] = {}
        for record in records:
            target = self.state.conversations.get(record["conversation_id"])
            if target is None:
                self.tally.skip("message", self.state.message_reason(record["conversation_id"]))
                continue
            groups.setdefault(target, []).append(record)
        for conversation_id, group in groups.items():
            await self.append(conversation_id, group)

    async def places(self, ids: list[str], tenant: str) -> dict[str, tuple[str, bool]]:
        """Where message ids are: ``{id: (conversation id, of ``tenant``)}``."""
        rows = await self.tx.rows(
            "SELECT m.id::text, m.conversation_id::text, c.tenant = %s FROM {s}.messages m "
            "JOIN {s}.conversations c ON c.id = m.conversation_id WHERE m.id = ANY(%s::uuid[])",
            (tenant, ids),
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    async def append(self, conversation_id: str, group: list[Record]) -> None:
        tx, state, tally = self.tx, self.state, self.tally
        found = await tx.row(
            "SELECT tenant, next_seq FROM {s}.conversations WHERE id = %s::uuid",
            (conversation_id,),
        )
        assert found is not None
        tenant, floor = found
        places = await self.places([r["id"] for r in group], tenant)
        renamed = [
            own_id(conversation_id, "message", r["id"])
            for r in group
            if r["id"] in places and not places[r["id"]][1]
        ]
        if renamed:
            places.update(await self.places(renamed, tenant))
        taken = await self.keys(conversation_id, group)
        rows: list[tuple[list[Any], list[list[str]]]] = []
        written: set[str] = set()
        latest: datetime | None = None
        for record in group:
            message_id = record["id"]
            place = places.get(message_id)
            if place is not None and not place[1]:
                # Another tenant's message is never written over: this one gets an id of
                # its own, derived from its conversation (a re-run finds it again).
                message_id = own_id(conversation_id, "message", record["id"])
                place = places.get(message_id)
                if place is not None and not place[1]:
                    state.rename_message(record["id"], None)
                    tally.skip("message", FOREIGN_ID)
                    continue
                state.rename_message(record["id"], message_id)
            if message_id in written:
                tally.skip("message", "already in the target")
                continue
            if place is not None:
                if state.on_conflict != "overwrite" or place[0] == conversation_id:
                    tally.skip("message", "already in the target")
                    continue
                # The same tenant's message in another conversation: moved here.
                await tx.run("DELETE FROM {s}.messages WHERE id = %s::uuid", (message_id,))
            key = record.get("idempotency_key")
            if key is not None and key in taken:
                tally.skip("message", "its idempotency key is already in the conversation")
                continue
            if key is not None:
                taken.add(key)
            written.add(message_id)
            seq = max(record["seq"], floor)
            floor = seq + 1
            created = parse_stamp(record["created_at"])
            latest = created if latest is None or created > latest else latest
            rows.append(_message_row(record, message_id, conversation_id, seq, created))
            if message_id != record["id"]:
                tally.lose("message.id", RENAMED)
        if not rows:
            return
        await self.insert(rows)
        tally.copy("message", len(rows))
        await tx.run(
            "UPDATE {s}.conversations SET next_seq = greatest(next_seq, %s), "
            "updated_at = greatest(updated_at, coalesce(%s, updated_at)) WHERE id = %s::uuid",
            (floor, latest, conversation_id),
        )

    async def keys(self, conversation_id: str, group: list[Record]) -> set[str]:
        """The idempotency keys of ``group`` the conversation already holds."""
        keys = (r.get("idempotency_key") for r in group)
        wanted = sorted({store_text(k) for k in keys if k is not None})
        if not wanted:
            return set()
        rows = await self.tx.rows(
            "SELECT idempotency_key FROM {s}.messages WHERE conversation_id = %s::uuid "
            "AND idempotency_key = ANY(%s::text[])",
            (conversation_id, wanted),
        )
        return {load_text(r[0]) for r in rows}

    async def insert(self, rows: list[tuple[list[Any], list[list[str]]]]) -> None:
        """Insert the rows of :func:`_message_row`, then the words of each beyond one
        tsvector's worth (see :func:`~.codec.word_parts`)."""
        for start in range(0, len(rows), CHUNK):
            chunk = json.dumps([row for row, _ in rows[start : start + CHUNK]], ensure_ascii=False)
            await self.tx.run(_INSERT_MESSAGES, (chunk,))
        await add_more_words(self.tx, [(row[0], parts) for row, parts in rows if len(parts) > 1])


def _message_row(
    record: Record, message_id: str, conversation_id: str, seq: int, created: datetime
) -> tuple[list[Any], list[list[str]]]:
    """A row of :data:`_INSERT_MESSAGES`, as JSON values, and the content's word parts
    (:func:`~.codec.word_parts`: the first is the row's)."""
    text, exact = store_content(record["content"])
    metadata, doc = store_metadata(record["metadata"])
    parts = word_parts(record["content"])
    row = [
        message_id,
        conversation_id,
        seq,
        record["role"],
        text,
        None if exact is None else exact.hex(),
        metadata,
        doc,
        created.isoformat(),
        _vector(record.get("embedding")),
        store_optional(record.get("idempotency_key")),
        " ".join(parts[0]),
    ]
    return row, parts


def _vector(values: list[float] | None) -> str | None:
    """A float8[] literal (``repr`` round-trips every float): kept as given, zero and
    empty vectors too, integers as the floats they equal."""
    return None if values is None else "{" + ",".join(repr(float(x)) for x in values) + "}"


async def _entity_tenant(tx: Tx, entity_id: str) -> str | None:
    row = await tx.row("SELECT tenant FROM {s}.entities WHERE id = %s", (entity_id,))
    return None if row is None else str(row[0])


async def _conversation(tx: Tx, where: str, *params: object) -> tuple[Any, ...] | None:
    """(id, session_id, user_identifier, has messages) of the conversation ``where``
    finds (conditions on ``c``)."""
    return await tx.row(
        "SELECT c.id::text, c.session_id, c.user_identifier, EXISTS (SELECT 1 FROM "
        "{s}.messages m WHERE m.conversation_id = c.id) FROM {s}.conversations c "
        f"WHERE {where}",
        params,
    )


async def _conversation_id(tx: Tx, record: Record, tenant: str) -> tuple[str | None, str | None]:
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
    if not await _owned_by_other(tx, candidate, tenant):
        return candidate, (why if candidate != archive_id else None)
    if candidate != own and not await _owned_by_other(tx, own, tenant):
        return own, RENAMED
    return None, FOREIGN_ID


async def _owned_by_other(tx: Tx, conversation_id: str, tenant: str) -> bool:
    found = await tx.row(
        "SELECT tenant FROM {s}.conversations WHERE id = %s::uuid", (conversation_id,)
    )
    return found is not None and found[0] != tenant


def _other_user(stored: str | None, archived: str | None) -> bool:
    """Two different users' conversations with one session name (possible when a
    multi-tenant archive goes into a single-tenant store) are never merged."""
    return stored is not None and archived is not None and stored != archived
