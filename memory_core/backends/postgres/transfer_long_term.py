"""The long-term records of the PostgreSQL bulk transfer: relationships, preferences and
facts (see :mod:`.transfer`), by the embedded hook's rules.

Export reads each kind of a tenant by id in byte order (the embedded export's order), in
keyset pages, each its own short transaction, with every stored field: ids, timestamps,
supersede links, the linked entities in order, embeddings. Import writes them in the
batch's transaction, keeping all of it (texts escaped by :mod:`.codec` as the adds do),
with their ``words`` (:mod:`.words`) so that search finds them at once. A record
touches only the tenant it names: an id another tenant holds gets an id of the record's
own tenant (:func:`~memory_core.archive.hooks.own_id`), and a link to an entity of
another tenant is never made.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from typing import Any

from memory_core.store import (
    FOREIGN_ID,
    ImportRules,
    ImportState,
    Record,
    TransferReport,
    candidates,
    choose_id,
    parse_stamp,
)
from memory_core.store import transfer_records as rec

from . import facts, preferences, relationships, words
from .codec import store_metadata, store_optional, store_text
from .entities import name_key
from .tx import Tx

PAGE = 1000
# Byte order, as SQLite compares text (the embedded export's order), whatever the
# database's collation.
BYTES = 'COLLATE "C"'
Row = tuple[Any, ...]
Reader = Callable[[str, list[object]], Awaitable[list[Row]]]


def conversation_scope(prefix: str | None, users: list[str] | None) -> tuple[str, list[object]]:
    """The conditions (on conversations ``c``) of an export narrowed to sessions whose id
    starts with ``prefix`` and to ``users``, and their parameters."""
    sql = ""
    params: list[object] = []
    if prefix:
        sql += " AND substr(c.session_id, 1, %s) = %s"
        params += [len(prefix), prefix]
    if users is not None:
        sql += " AND c.user_identifier = ANY(%s::text[])"
        params.append(users)
    return sql, params


def entity_in_scope(
    column: str, tenant: str, prefix: str | None, users: list[str] | None
) -> tuple[str, list[object]]:
    """SQL true for the entity whose id is ``column`` when a narrowed export holds it: a
    message of a conversation in scope mentions it, or (narrowed to ``users`` only) a
    preference of those users links it."""
    narrowed, params = conversation_scope(prefix, users)
    sql = (
        "EXISTS (SELECT 1 FROM {s}.mentions x JOIN {s}.messages m ON m.id = x.message_id"
        " JOIN {s}.conversations c ON c.id = m.conversation_id"
        f" WHERE x.entity_id = {column} AND c.tenant = %s{narrowed})"
    )
    args: list[object] = [tenant, *params]
    if users is not None and not prefix:
        sql = (
            f"({sql} OR EXISTS (SELECT 1 FROM {{s}}.preference_entities pe JOIN"
            " {s}.preferences p ON p.id = pe.preference_id"
            f" WHERE pe.entity_id = {column} AND p.tenant = %s"
            " AND p.user_identifier = ANY(%s::text[])))"
        )
        args += [tenant, users]
    return sql, args


# ---------------------------------------------------------------------------- export


async def export_long_term(
    read: Reader, tenant: str, owner: str | None, users: list[str] | None
) -> AsyncIterator[Record]:
    """A tenant's relationships, preferences and facts, each kind by id. ``users`` (a
    single-tenant store narrowed to them): their preferences and facts, and the
    relationships between entities the export holds."""
    kinds: list[tuple[tuple[str, list[object]], Callable[[Row], Record]]] = [
        (_relationships(tenant, users), lambda row: _relationship(row, owner)),
        (_owned("preferences", preferences.COLUMNS, tenant, users), _preference),
        (_owned("facts", facts.COLUMNS, tenant, users), _fact),
    ]
    for (sql, params), build in kinds:
        page = sql + f" AND r.id {BYTES} > %s ORDER BY r.id {BYTES} LIMIT %s"
        after = ""
        while True:
            rows = await read(page, [*params, after, PAGE])
            for row in rows:
                yield build(row)
            if len(rows) < PAGE:
                break
            after = rows[-1][0]


def _relationships(tenant: str, users: list[str] | None) -> tuple[str, list[object]]:
    sql = f"SELECT {relationships.COLUMNS} FROM {{s}}.relationships r WHERE r.tenant = %s"
    params: list[object] = [tenant]
    if users is not None:
        for end in ("r.source_id", "r.target_id"):
            held, args = entity_in_scope(end, tenant, None, users)
            sql += f" AND {held}"
            params += args
    return sql, params


def _owned(
    table: str, columns: str, tenant: str, users: list[str] | None
) -> tuple[str, list[object]]:
    """The rows of ``table`` of the tenant (of ``users`` only, when given): ``columns``,
    then the embedding."""
    sql = f"SELECT {columns}, r.embedding FROM {{s}}.{table} r WHERE r.tenant = %s"
    params: list[object] = [tenant]
    if users is not None:
        sql += " AND r.user_identifier = ANY(%s::text[])"
        params.append(users)
    return sql, params


def _relationship(row: Row, owner: str | None) -> Record:
    return rec.relationship(relationships.to_relationship(row), owner)


def _preference(row: Row) -> Record:
    return rec.preference(preferences.to_preference(row[:-1]), _floats(row[-1]))


def _fact(row: Row) -> Record:
    return rec.fact(facts.to_fact(row[:-1]), _floats(row[-1]))


def _floats(stored: list[float] | None) -> list[float] | None:
    return None if stored is None else [float(x) for x in stored]


# ---------------------------------------------------------------------------- import


def _when(value: str | None) -> datetime | None:
    return None if value is None else parse_stamp(value)


def _vector(values: list[float] | None) -> list[float] | None:
    """An embedding as a float8[] parameter: integers as the floats they equal."""
    return None if values is None else [float(x) for x in values]


class LongTermImporter:
    """The long-term records of one batch, written in its transaction, by the shared
    rules (:class:`~memory_core.archive.rules.ImportRules`). ``tenant`` is the caller's
    rule for a record's tenant; the shared one is applied (they agree: ``""`` in a
    single-tenant store, the user in a multi-tenant one, ``None`` without one)."""

    def __init__(
        self,
        state: ImportState,
        tally: TransferReport,
        tenant: Callable[[Record], str | None],
        multi_tenant: bool,
    ) -> None:
        self.state = state
        self.tenant = tenant
        self.rules = ImportRules(tally, state.on_conflict, state.entities, multi_tenant)

    async def write(self, tx: Tx, record: Record) -> None:
        """Write one record (or count why not): each is counted once, as copied or
        skipped."""
        kind = record["record"]
        tenant = self.rules.tenant(record)
        if tenant is None:
            return
        table = kind + "s"
        found = await _holders(tx, table, kind, record["id"], tenant)
        ident = self.rules.place(record, tenant, found)
        if ident is None:
            return
        ends = None
        if kind == "relationship":
            entities = await self._entities(tx, [record["source_id"], record["target_id"]], tenant)
            ends = self.rules.ends(record, entities.get)
            if ends is None:
                return  # checked before anything is replaced
        if ident in found:
            await tx.run(f"DELETE FROM {{s}}.{table} WHERE id = %s", (ident,))
        if kind == "preference":
            await self._preference(tx, record, ident, tenant)
        elif kind == "fact":
            await self._fact(tx, record, ident, tenant)
        elif ends is None or not await self._relationship(tx, record, ident, tenant, ends):
            return
        self.rules.copied(record, ident)

    async def _relationship(
        self, tx: Tx, record: Record, ident: str, tenant: str, ends: tuple[str, str]
    ) -> bool:
        source, target = ends
        same = await tx.row(
            "SELECT id FROM {s}.relationships WHERE source_id = %s AND type = %s "
            "AND target_id = %s",
            (source, record["type"], target),
        )
        if same is not None:
            if not self.rules.keeps_triple():
                return False
            await tx.run("DELETE FROM {s}.relationships WHERE id = %s", (same[0],))
        await tx.run(
            "INSERT INTO {s}.relationships (id, tenant, source_id, target_id, type, "
            "properties, confidence, valid_from, valid_until, created_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                ident,
                tenant,
                source,
                target,
                record["type"],
                store_metadata(record["properties"])[0],
                record["confidence"],
                _when(record.get("valid_from")),
                _when(record.get("valid_until")),
                parse_stamp(record["created_at"]),
            ),
        )
        return True

    async def _preference(self, tx: Tx, record: Record, ident: str, tenant: str) -> None:
        entities = await self._entities(tx, record["linked_entities"], tenant)
        linked = self.rules.linked(
            record["linked_entities"], entities.get, "preference.linked_entities"
        )
        successor = record.get("superseded_by")
        if successor is not None:
            found = await _holders(tx, "preferences", "preference", successor, tenant)
            successor, _ = choose_id(
                "preference", successor, tenant, found, self.rules.multi_tenant
            )
            if successor is None:  # it cannot be written into this tenant either
                self.rules.tally.lose("preference.superseded_by", FOREIGN_ID)
        texts = (record["category"], record["preference"], record.get("context"))
        await tx.run(
            "INSERT INTO {s}.preferences (id, tenant, user_identifier, category, preference, "
            "context, confidence, metadata, embedding, words, created_at, superseded_at, "
            "superseded_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::float8[], "
            "%s::text[], %s, %s, %s)",
            (
                ident,
                tenant,
                record["user_identifier"],
                store_text(texts[0]),
                store_text(texts[1]),
                store_optional(texts[2]),
                record["confidence"],
                store_metadata(record["metadata"])[0],
                _vector(record.get("embedding")),
                words.of(*texts),
                parse_stamp(record["created_at"]),
                _when(record.get("superseded_at")),
                successor,
            ),
        )
        if linked:
            await tx.run(
                "INSERT INTO {s}.preference_entities (preference_id, entity_id, position) "
                "SELECT %s, x.id, x.n - 1 FROM unnest(%s::text[]) WITH ORDINALITY AS x (id, n)",
                (ident, linked),
            )

    async def _fact(self, tx: Tx, record: Record, ident: str, tenant: str) -> None:
        texts = (record["subject"], record["predicate"], record["object"])
        await tx.run(
            "INSERT INTO {s}.facts (id, tenant, user_identifier, subject, subject_key, "
            "predicate, object, confidence, valid_from, valid_until, source_message_id, "
            "metadata, embedding, words, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, "
            "%s, %s, %s, %s, %s, %s::float8[], %s::text[], %s)",
            (
                ident,
                tenant,
                record["user_identifier"],
                store_text(texts[0]),
                name_key(texts[0]),
                store_text(texts[1]),
                store_text(texts[2]),
                record["confidence"],
                _when(record.get("valid_from")),
                _when(record.get("valid_until")),
                record.get("source_message_id"),
                store_metadata(record["metadata"])[0],
                _vector(record.get("embedding")),
                words.of(*texts),
                parse_stamp(record["created_at"]),
            ),
        )

    async def _entities(self, tx: Tx, archive_ids: list[str], tenant: str) -> dict[str, str]:
        """The target ids of the archive entities carried into ``tenant``, by archive id."""
        found: dict[str, str] = {}
        for archive_id in archive_ids:
            entity = self.state.entities.get(archive_id)
            if entity is None:
                continue
            row = await tx.row(
                "SELECT 1 FROM {s}.entities WHERE id = %s AND tenant = %s", (entity, tenant)
            )
            if row is not None:
                found[archive_id] = entity
        return found


async def _holders(
    tx: Tx, table: str, kind: str, archive_id: str, tenant: str
) -> dict[str, str | None]:
    """Who holds the ids a record of ``archive_id`` may take (:func:`candidates`): id ->
    tenant."""
    ids = list(candidates(kind, archive_id, tenant))
    found = await tx.rows(f"SELECT id, tenant FROM {{s}}.{table} WHERE id = ANY(%s)", (ids,))
    return {row[0]: row[1] for row in found}
