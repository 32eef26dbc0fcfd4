"""The long-term records of the embedded bulk transfer: relationships, preferences and
facts (see :mod:`.transfer`).

Export reads each kind of a tenant by id, in keyset pages (each its own read
transaction), with every stored field: ids, timestamps, supersede links, the linked
entities in order, embeddings. Import writes them in the batch's transaction, keeping all
of it, and indexes their words (``long_term_words``) so that search finds them. A record
touches only the tenant it names: an id another tenant holds gets an id of the record's
own tenant (:func:`~memory_core.archive.hooks.own_id`), and a link to an entity of
another tenant is never made.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import TypeVar

from memory_core.store import (
    FOREIGN_ID,
    ImportRules,
    ImportState,
    Preference,
    Record,
    candidates,
    choose_id,
    parse_stamp,
)
from memory_core.store import transfer_records as rec

from . import words
from .codec import dump_json, from_micros, load_json, pack_vector, to_micros, unpack_vector
from .facts import to_fact
from .relationships import to_relationship

PAGE = 1000
T = TypeVar("T")
Reader = Callable[[Callable[[sqlite3.Connection], T]], Awaitable[T]]


def conversation_scope(prefix: str | None, users: list[str] | None) -> tuple[str, list[object]]:
    """The conditions (on conversations ``c``) of an export narrowed to sessions whose id
    starts with ``prefix`` and to ``users``, and their parameters."""
    sql = ""
    params: list[object] = []
    if prefix:
        sql += " AND substr(c.session_id, 1, ?) = ?"
        params += [len(prefix), prefix]
    if users is not None:
        sql += f" AND c.user_identifier IN ({','.join('?' * len(users))})"
        params += users
    return sql, params


def entity_in_scope(
    column: str, tenant: str, prefix: str | None, users: list[str] | None
) -> tuple[str, list[object]]:
    """SQL true for the entity whose id is ``column`` when a narrowed export holds it: a
    message of a conversation in scope mentions it, or (narrowed to ``users`` only) a
    preference of those users links it."""
    narrowed, params = conversation_scope(prefix, users)
    sql = (
        "EXISTS (SELECT 1 FROM mentions x JOIN messages m ON m.id = x.message_id"
        " JOIN conversations c ON c.id = m.conversation_id"
        f" WHERE x.entity_id = {column} AND c.tenant = ?{narrowed})"
    )
    args: list[object] = [tenant, *params]
    if users is not None and not prefix:
        sql = (
            f"({sql} OR EXISTS (SELECT 1 FROM preference_entities pe JOIN preferences p"
            f" ON p.id = pe.preference_id WHERE pe.entity_id = {column} AND p.tenant = ?"
            f" AND p.user_identifier IN ({','.join('?' * len(users))})))"
        )
        args += [tenant, *users]
    return sql, args


# ---------------------------------------------------------------------------- export


async def export_long_term(
    read: Reader[list[Record]], tenant: str, owner: str | None, users: list[str] | None
) -> AsyncIterator[Record]:
    """A tenant's relationships, preferences and facts, each kind by id. ``users`` (a
    single-tenant store narrowed to them): their preferences and facts, and the
    relationships between entities the export holds."""
    pages = (
        partial(_relationship_page, tenant=tenant, owner=owner, users=users),
        partial(_preference_page, tenant=tenant, users=users),
        partial(_fact_page, tenant=tenant, users=users),
    )
    for page in pages:
        after = ""
        while True:
            records = await read(partial(page, after=after))
            for record in records:
                yield record
            if len(records) < PAGE:
                break
            after = records[-1]["id"]


def _relationship_page(
    conn: sqlite3.Connection,
    *,
    tenant: str,
    owner: str | None,
    users: list[str] | None,
    after: str,
) -> list[Record]:
    sql = "SELECT * FROM relationships r WHERE r.tenant = ? AND r.id > ?"
    params: list[object] = [tenant, after]
    if users is not None:
        for end in ("r.source_id", "r.target_id"):
            held, args = entity_in_scope(end, tenant, None, users)
            sql += f" AND {held}"
            params += args
    rows = conn.execute(sql + " ORDER BY r.id LIMIT ?", [*params, PAGE]).fetchall()
    return [rec.relationship(to_relationship(row), owner) for row in rows]


def _owned_rows(
    conn: sqlite3.Connection, table: str, tenant: str, users: list[str] | None, after: str
) -> list[sqlite3.Row]:
    sql = f"SELECT * FROM {table} WHERE tenant = ? AND id > ?"
    params: list[object] = [tenant, after]
    if users is not None:
        sql += f" AND user_identifier IN ({','.join('?' * len(users))})"
        params += users
    return conn.execute(sql + " ORDER BY id LIMIT ?", [*params, PAGE]).fetchall()


def _preference_page(
    conn: sqlite3.Connection, *, tenant: str, users: list[str] | None, after: str
) -> list[Record]:
    rows = _owned_rows(conn, "preferences", tenant, users, after)
    linked: dict[str, list[str]] = {}
    ids = [row["id"] for row in rows]
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        for link in conn.execute(
            "SELECT preference_id, entity_id FROM preference_entities WHERE preference_id IN "
            f"({','.join('?' * len(chunk))}) ORDER BY preference_id, position",
            chunk,
        ):
            linked.setdefault(link[0], []).append(link[1])
    return [
        rec.preference(_preference(row, linked.get(row["id"], [])), unpack_vector(row["embedding"]))
        for row in rows
    ]


def _preference(row: sqlite3.Row, linked: list[str]) -> Preference:
    superseded = row["superseded_at"]
    return Preference(
        id=row["id"],
        category=row["category"],
        preference=row["preference"],
        context=row["context"],
        confidence=row["confidence"],
        linked_entities=linked,
        metadata=load_json(row["metadata"]),
        user_identifier=row["user_identifier"],
        created_at=from_micros(row["created_at"]),
        superseded_at=None if superseded is None else from_micros(superseded),
        superseded_by=row["superseded_by"],
    )


def _fact_page(
    conn: sqlite3.Connection, *, tenant: str, users: list[str] | None, after: str
) -> list[Record]:
    rows = _owned_rows(conn, "facts", tenant, users, after)
    return [rec.fact(to_fact(row), unpack_vector(row["embedding"])) for row in rows]


# ---------------------------------------------------------------------------- import


def micros(value: str | None) -> int | None:
    """An archive timestamp as the store keeps it (microseconds), ``None`` kept."""
    return None if value is None else to_micros(parse_stamp(value))


class LongTermImporter:
    """The long-term records of one batch, written in its transaction (the store's
    worker thread), by the shared rules (``rules``)."""

    def __init__(self, state: ImportState, rules: ImportRules) -> None:
        self.state = state
        self.rules = rules

    def write(self, conn: sqlite3.Connection, record: Record) -> None:
        kind = record["record"]
        tenant = self.rules.tenant(record)
        if tenant is None:
            return
        table = kind + "s"
        found = holders(conn, table, kind, record["id"], tenant)
        ident = self.rules.place(record, tenant, found)
        if ident is None:
            return
        present = ident in found
        ends = None
        if kind == "relationship":
            ends = self.rules.ends(record, lambda a: entity_of(conn, self.state, a, tenant))
            if ends is None:
                return  # checked before anything is replaced
        if present:
            conn.execute(f"DELETE FROM {table} WHERE id = ?", (ident,))
        if kind == "preference":
            self._preference(conn, record, ident, tenant)
        elif kind == "fact":
            self._fact(conn, record, ident, tenant)
        elif ends is None or not self._relationship(conn, record, ident, tenant, ends):
            return
        self.rules.copied(record, ident)

    def _relationship(
        self,
        conn: sqlite3.Connection,
        record: Record,
        ident: str,
        tenant: str,
        ends: tuple[str, str],
    ) -> bool:
        source, target = ends
        same = conn.execute(
            "SELECT id FROM relationships WHERE source_id = ? AND type = ? AND target_id = ?",
            (source, record["type"], target),
        ).fetchone()
        if same is not None:
            if not self.rules.keeps_triple():
                return False
            conn.execute("DELETE FROM relationships WHERE id = ?", (same[0],))
        conn.execute(
            "INSERT INTO relationships (id, tenant, source_id, target_id, type, properties, "
            "confidence, valid_from, valid_until, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                ident,
                tenant,
                source,
                target,
                record["type"],
                dump_json(record["properties"]),
                record["confidence"],
                micros(record.get("valid_from")),
                micros(record.get("valid_until")),
                micros(record["created_at"]),
            ),
        )
        return True

    def _preference(
        self, conn: sqlite3.Connection, record: Record, ident: str, tenant: str
    ) -> None:
        linked = self.rules.linked(
            record["linked_entities"],
            lambda a: entity_of(conn, self.state, a, tenant),
            "preference.linked_entities",
        )
        successor = record.get("superseded_by")
        if successor is not None:
            found = holders(conn, "preferences", "preference", successor, tenant)
            successor, _ = choose_id(
                "preference", successor, tenant, found, self.rules.multi_tenant
            )
            if successor is None:  # it cannot be written into this tenant either
                self.rules.tally.lose("preference.superseded_by", FOREIGN_ID)
        conn.execute(
            "INSERT INTO preferences (id, tenant, user_identifier, category, preference, context, "
            "confidence, metadata, embedding, created_at, superseded_at, superseded_by) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                ident,
                tenant,
                record["user_identifier"],
                record["category"],
                record["preference"],
                record.get("context"),
                record["confidence"],
                dump_json(record["metadata"]),
                pack_vector(record.get("embedding")),
                micros(record["created_at"]),
                micros(record.get("superseded_at")),
                successor,
            ),
        )
        conn.executemany(
            "INSERT INTO preference_entities (preference_id, entity_id, position) VALUES (?, ?, ?)",
            [(ident, entity, position) for position, entity in enumerate(linked)],
        )
        texts = (record["category"], record["preference"], record.get("context"))
        words.index(conn, words.PREFERENCE, tenant, ident, texts)

    def _fact(self, conn: sqlite3.Connection, record: Record, ident: str, tenant: str) -> None:
        conn.execute(
            "INSERT INTO facts (id, tenant, user_identifier, subject, subject_key, predicate, "
            "object, confidence, valid_from, valid_until, source_message_id, metadata, "
            "embedding, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                ident,
                tenant,
                record["user_identifier"],
                record["subject"],
                record["subject"].casefold(),
                record["predicate"],
                record["object"],
                record["confidence"],
                micros(record.get("valid_from")),
                micros(record.get("valid_until")),
                record.get("source_message_id"),
                dump_json(record["metadata"]),
                pack_vector(record.get("embedding")),
                micros(record["created_at"]),
            ),
        )
        texts = (record["subject"], record["predicate"], record["object"])
        words.index(conn, words.FACT, tenant, ident, texts)


def entity_of(
    conn: sqlite3.Connection, state: ImportState, archive_id: str, tenant: str
) -> str | None:
    """The target id of an archive entity, when it was carried into ``tenant``."""
    entity = state.entities.get(archive_id)
    if entity is None:
        return None
    row = conn.execute(
        "SELECT 1 FROM entities WHERE id = ? AND tenant = ?", (entity, tenant)
    ).fetchone()
    return entity if row is not None else None


def holders(
    conn: sqlite3.Connection, table: str, kind: str, archive_id: str, tenant: str
) -> dict[str, str | None]:
    """Who holds the ids a record of ``archive_id`` may take (:func:`candidates`): id ->
    tenant."""
    ids = candidates(kind, archive_id, tenant)
    rows = conn.execute(f"SELECT id, tenant FROM {table} WHERE id IN (?, ?)", ids).fetchall()
    return {row[0]: row[1] for row in rows}
