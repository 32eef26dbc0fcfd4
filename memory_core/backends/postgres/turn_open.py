"""``open_turn`` as one SQL statement: the entities a turn's question names, and the
question stored with them as its mentions, in one round trip.

The statement is :mod:`.single`'s keyed write with three CTEs more: ``q`` (the
identifiers, in order), ``f`` (what ``find_entities`` finds for each, at most ``limit``,
the first ``limit`` distinct ones in order) and ``l`` (the mentions, written only when the
message is). It returns one row per entity found (one row when none), each carrying the
write's columns and then the entity's. The conversation's first write, a replay and a
lost answer go as in :mod:`.single`; the calls that module does not cover (long content,
a session named by a conversation id's text) run the default's calls in one transaction.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from psycopg import errors as pg_errors

from memory_core.store import Entity, EntityRef, Message, first_named, lookups
from memory_core.store import requests as rq

from . import conversations, entities, messages, single
from .codec import sql_int, store_optional
from .rows import ENTITY_COLUMNS, MESSAGE_COLUMNS, to_entity, to_message
from .tx import Tx

_FOUND = (
    "q AS (SELECT * FROM unnest(%(idents)s::text[], %(names)s::text[]) "
    "WITH ORDINALITY AS q (ident, name, at)), "
    "h AS (SELECT DISTINCT ON (x.id) x.*, q.at FROM q CROSS JOIN LATERAL (SELECT "
    + ENTITY_COLUMNS
    + ", row_number() OVER (ORDER BY (e.id = q.ident) DESC, (e.name_key = q.name) DESC, "
    "e.created_at, e.id) AS r FROM {s}.entities e WHERE e.tenant = %(tenant)s "
    "AND (e.id = q.ident OR e.name_key = q.name OR e.alias_keys @> ARRAY[q.name]) "
    "ORDER BY r LIMIT %(limit)s) x ORDER BY x.id, q.at, x.r), "
    "f AS MATERIALIZED (SELECT h.*, row_number() OVER (ORDER BY h.at, h.r) - 1 AS pos "
    "FROM h ORDER BY h.at, h.r LIMIT %(limit)s), "
)
_LINK = (
    ", l AS (INSERT INTO {s}.mentions (message_id, entity_id, position) "
    "SELECT %(id)s, f.id, f.pos FROM f WHERE EXISTS (SELECT FROM w) ON CONFLICT DO NOTHING)"
)
_ENTITY = "f.id, f.name, f.type, f.description, f.created_at, f.updated_at, f.aliases, f.attributes"
_OPEN = (
    "WITH "
    + _FOUND
    + "{conversation}, w AS ("
    + single.COLUMNS
    + single.VALUES
    + "ON CONFLICT (conversation_id, idempotency_key) DO NOTHING "
    "RETURNING created_at, conversation_id, (SELECT c.session_id FROM c) AS session_id)"
    + _LINK
    + " SELECT "
    + _ENTITY
    + ", w.created_at, w.conversation_id, w.session_id, (SELECT c.id FROM c), k.*"
    + " FROM (VALUES (1)) AS one (x) LEFT JOIN w ON true LEFT JOIN k ON true "
    "LEFT JOIN f ON true ORDER BY f.pos"
)
_OPEN_SQL = single.statements(_OPEN, True)
# Each row: the entity's columns (NULL: none found), then the write's as .single has them:
# what was written (stamp, conversation, session), the conversation advanced, then the
# message stored under the key (k.*), read in the statement's snapshot.
_WRITE_AT = _ENTITY.count(",") + 1


def covers(req: rq.OpenTurn) -> bool:
    """Whether ``open_turn`` can be one statement (as :func:`.single.add_covers`)."""
    return single.add_covers(req.message)


class OpenOne(single.Write):
    """``open_turn`` as one statement (see the module docstring)."""

    def __init__(self, req: rq.OpenTurn, now: datetime) -> None:
        super().__init__(req.message.target, now, 1)
        self.req = req
        message = req.message
        self.params.update(
            single.row_params(message),
            id=self.ids[0],
            ikey=store_optional(message.idempotency_key),
            idents=[entities.comparable_id(name) for name in req.identifiers],
            names=[entities.name_key(name) for name in req.identifiers],
            limit=sql_int(req.limit),
        )
        self.sql = _OPEN_SQL

    async def statement(self, tx: Tx, create: bool = False) -> list[tuple[Any, ...]]:
        rows = await super().statement(tx, create)
        # every row carries the write's columns; all NULL: no conversation
        row = rows[0][_WRITE_AT:]
        return [] if row[0] is None and row[3] is None and row[4] is None else rows

    async def __call__(self, tx: Tx) -> tuple[list[Entity], Message, bool]:
        try:
            found = await self.written(tx)
        except pg_errors.UniqueViolation as exc:
            # an earlier attempt of this call wrote it: read it, and what it names, again
            [stored] = await single.replayed_messages(tx, exc, self.ids)
            return await _named(tx, self.req), stored, False
        if not found:
            raise conversations.unknown(self.target)
        named = [to_entity(row[:_WRITE_AT]) for row in found if row[0] is not None]
        row = found[0][_WRITE_AT:]
        if row[0] is None:
            stored = await self._stored(tx, row)
            return named, stored, stored.id != self.ids[0]
        refs = [EntityRef(id=e.id, name=e.name, type=e.type) for e in named]
        written = single.built_message(self.ids[0], self.params, row[:3], self.req.message)
        return named, written.model_copy(update={"mentions": refs}), False

    async def _stored(self, tx: Tx, row: tuple[Any, ...]) -> Message:
        """The message stored under the key (see :meth:`.single.AddOne.keyed`)."""
        if row[4] is not None:
            return to_message(row[4:])
        stored = await tx.row(
            f"SELECT {MESSAGE_COLUMNS} {messages.FROM} "
            "WHERE m.conversation_id = %s AND m.idempotency_key = %s",
            (row[3], self.params["ikey"]),
        )
        assert stored is not None  # the key's unique index refused the write
        return to_message(stored)


async def _named(tx: Tx, req: rq.OpenTurn) -> list[Entity]:
    return first_named([await entities.find_entities(tx, look) for look in lookups(req)], req.limit)


async def in_transaction(
    tx: Tx, req: rq.OpenTurn, now: datetime
) -> tuple[list[Entity], Message, bool]:
    """``open_turn`` where one statement does not cover it: the lookups, then the keyed
    write, in one transaction."""
    named = await _named(tx, req)
    refs = [EntityRef(id=entity.id) for entity in named]
    stored, replayed = await messages.add_keyed(tx, replace(req.message, mentions=refs), now)
    return named, stored, replayed
