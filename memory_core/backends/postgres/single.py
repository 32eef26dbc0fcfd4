"""The common calls as one SQL statement each: one round trip, no ``BEGIN``/``COMMIT``.

A statement outside a transaction block is its own transaction, so these are as atomic as
the transactional paths of :mod:`.messages` and read one snapshot. They cover adding
messages without mentions to a session or a known conversation, with or without an
idempotency key, and reading a conversation's newest messages; a ``session_id`` that is a
conversation id's canonical text (see :attr:`~memory_core.requests.Target.id_alias`)
takes the transactional paths. A session's first write is two statements: the write
finds no conversation, then is made again with the conversation's insert.

Idempotency keys: the statement reads the message stored under the key in its snapshot
and, when there is one, returns it and writes nothing; a replay that committed after the
snapshot is stopped by the key's unique index, and its message read by one statement
more.

Writes are replayable: message ids are chosen before the first attempt, so a replay after
a connection lost mid-statement either writes (the first attempt was not applied) or
violates ``messages_id_key`` (it was), and then returns what is stored.

Times follow :mod:`.messages`: a message the store stamps gets at least the previous
message's time. The statement reads that in a snapshot taken before it waited for the
conversation's row lock, so the row's ``updated_at``, raised by every write under that
lock, bounds it too: a writer that waited never goes back behind the one it waited for.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import errors as pg_errors

from memory_core.store import Message, random_ids, trusted, trusted_many
from memory_core.store import requests as rq

from . import conversations
from .codec import (
    SAFE_CHARS,
    load_metadata,
    load_optional,
    store_content,
    store_metadata,
    store_optional,
    utc,
    word_parts,
)
from .messages import FROM
from .rows import MESSAGE_COLUMNS, read_messages, to_message
from .tx import Tx

# The conversation row advanced (locked until the statement commits): by id, or by the
# session's key. A session with no row yet gets one from the same statement made again
# with ``n`` (see Write.written): an insert that runs only when the update found nothing.
# Not in every write: it costs each write a few per cent of the statement's time. Two
# first writers racing: the loser's insert finds the winner's row (ON CONFLICT DO
# NOTHING) and writes nothing; then the write is made in a transaction.
_ADVANCE = (
    "{name} AS (UPDATE {s}.conversations c SET next_seq = c.next_seq + %(count)s, "
    "updated_at = greatest(c.updated_at, %(now)s), "
    "user_identifier = coalesce(c.user_identifier, %(user)s) "
    "WHERE c.tenant = %(tenant)s AND {key}{unless_stored} "
    "RETURNING c.id, c.session_id, c.next_seq, c.updated_at)"
)
_CREATE = (
    ", n AS (INSERT INTO {s}.conversations (id, tenant, session_id, metadata, "
    "user_identifier, created_at, updated_at, next_seq) SELECT %(new)s, %(tenant)s, %(key)s, "
    "'{}', %(user)s, %(now)s, %(now)s, %(count)s + 1 WHERE NOT EXISTS (SELECT FROM u)"
    "{unless_stored} ON CONFLICT DO NOTHING RETURNING id, session_id, next_seq, updated_at), "
    "c AS (SELECT * FROM u UNION ALL SELECT * FROM n)"
)
_KEYS = {True: "c.session_id = %(key)s", False: "c.id = %(key)s"}
# A write with an idempotency key: the message stored under it, read in the statement's
# snapshot; when there is one, nothing is advanced, created or written. The conversation
# is found first, in a subquery: an equality on both columns of the key's unique index
# is a plan no table's statistics can turn into a scan.
_STORED = (
    "k AS (SELECT " + MESSAGE_COLUMNS + " FROM {s}.messages m JOIN {s}.conversations c "
    "ON c.id = m.conversation_id WHERE m.conversation_id = (SELECT c.id FROM "
    "{s}.conversations c WHERE c.tenant = %(tenant)s AND {key}) "
    "AND m.idempotency_key = %(ikey)s), "
)
_UNLESS_STORED = " AND NOT EXISTS (SELECT FROM k)"


def _conversation_cte(by_session: bool, keyed: bool, create: bool) -> str:
    """The CTEs ending in ``c``: the target's conversation row, advanced (or created)."""
    advance = _ADVANCE.replace("{name}", "u" if create else "c")
    sql = (_STORED if keyed else "") + advance + (_CREATE if create else "")
    unless = _UNLESS_STORED if keyed else ""
    return sql.replace("{unless_stored}", unless).replace("{key}", _KEYS[by_session])


_PREVIOUS = (
    "(SELECT p.created_at FROM {s}.messages p WHERE p.conversation_id = c.id "
    "ORDER BY p.seq DESC LIMIT 1)"
)
COLUMNS = (
    "INSERT INTO {s}.messages (id, conversation_id, seq, role, content, content_exact, "
    "metadata, metadata_doc, created_at, embedding, words, idempotency_key) "
)
VALUES = (
    "SELECT %(id)s, c.id, c.next_seq - 1, %(role)s, %(content)s, %(exact)s, %(metadata)s, "
    "%(doc)s::jsonb, greatest(c.updated_at, " + _PREVIOUS + "), %(embedding)s, "
    "array_to_tsvector(string_to_array(%(words)s, ' ')), %(ikey)s FROM c "
)
_ONE = (
    "WITH {conversation} "
    + COLUMNS
    + VALUES
    + "RETURNING created_at, conversation_id, (SELECT c.session_id FROM c)"
)
# With a key: one row, whichever way it went (see AddOne.keyed). The key's unique index
# settles a replay that committed after this statement's snapshot: nothing is written,
# the conversation was advanced, and the stored message is read by another statement.
_ONE_KEYED = (
    "WITH {conversation}, w AS ("
    + COLUMNS
    + VALUES
    + "ON CONFLICT (conversation_id, idempotency_key) DO NOTHING "
    "RETURNING created_at, conversation_id, (SELECT c.session_id FROM c) AS session_id) "
    "SELECT w.created_at, w.conversation_id, w.session_id, (SELECT c.id FROM c), k.* "
    "FROM (VALUES (1)) AS one (x) LEFT JOIN w ON true LEFT JOIN k ON true"
)
# The batch travels as one JSON array of row arrays (see AddMany): psycopg adapts nine
# lists of a batch element by element in Python; json.dumps is one call in C. An
# unstamped row gets the base time or, when a caller-stamped row comes before it, the
# later of the conversation's clock and the last such stamp (``after``): what each would
# get written one after the other. The base is MATERIALIZED: inlined, its subquery ran
# once per row.
_MANY = (
    "WITH {conversation}, "
    "b AS MATERIALIZED (SELECT greatest(c.updated_at, " + _PREVIOUS + ") AS base FROM c), "
    "t AS (SELECT (e->>0)::uuid AS id, e->>1 AS role, e->>2 AS content, "
    "decode(e->>3, 'hex') AS exact, e->>4 AS metadata, e->>5 AS doc, "
    "(e->>6)::timestamptz AS stamp, e->>7 AS embedding, e->>8 AS words, "
    "(e->>9)::timestamptz AS after, n "
    "FROM jsonb_array_elements(%(rows)s::jsonb) WITH ORDINALITY AS j(e, n)) "
    + COLUMNS
    + "SELECT t.id, c.id, c.next_seq - %(count)s + t.n - 1, t.role, t.content, t.exact, "
    "t.metadata, t.doc::jsonb, coalesce(t.stamp, CASE WHEN t.after IS NULL THEN b.base "
    "ELSE greatest(c.updated_at, t.after) END), "
    "t.embedding::float8[], array_to_tsvector(string_to_array(t.words, ' ')), NULL "
    "FROM c, b, t ORDER BY t.n "
    "RETURNING id, created_at, conversation_id, (SELECT c.session_id FROM c)"
)

# (by session, creating it) → SQL; by conversation id, nothing is created.
_WAYS = ((True, False), (True, True), (False, False))


def statements(template: str, keyed: bool) -> dict[tuple[bool, bool], str]:
    return {
        way: template.replace("{conversation}", _conversation_cte(way[0], keyed, way[1]))
        for way in _WAYS
    }


_ONE_SQL = statements(_ONE, False)
_KEYED_SQL = statements(_ONE_KEYED, True)
_MANY_SQL = statements(_MANY, False)


def covers(target: rq.Target) -> bool:
    """Whether a call on ``target`` can be one statement (no id alias to try first)."""
    return target.session_id is None or target.id_alias is None


def add_covers(req: rq.AddMessage) -> bool:
    """Whether ``add_message`` can be one statement (not for content whose words may need
    rows of ``message_words``: see :data:`~.codec.SAFE_CHARS`)."""
    return not req.mentions and len(req.content) <= SAFE_CHARS and covers(req.target)


def batch_covers(req: rq.AddMessages) -> bool:
    """Whether ``add_messages`` can be one statement."""
    return (
        bool(req.messages)
        and covers(req.target)
        and not any(m.mentions or len(m.content) > SAFE_CHARS for m in req.messages)
    )


def _conversation(target: rq.Target, count: int, now: datetime) -> dict[str, Any]:
    """The parameters of the conversation's CTEs (see :func:`_conversation_cte`)."""
    session = target.session_id
    params: dict[str, Any] = {
        "tenant": conversations.tenant_key(target.tenant),
        "user": target.user_identifier,
        "now": now,
        "count": count,
        "key": target.conversation_id if session is None else session,
    }
    if session is not None:
        params["new"] = conversations.session_uuid(target.tenant, session)
    return params


def row_params(item: rq.AddMessage | rq.NewMessage) -> dict[str, Any]:
    text, exact = store_content(item.content)
    meta_text, doc = store_metadata(item.metadata)
    return {
        "role": item.role.value,
        "content": text,
        "exact": exact,
        "metadata": meta_text,
        "doc": doc,
        "embedding": item.embedding,
        # joined: words never hold a space, and psycopg adapts a str in a third of the
        # time it takes for a list (one part: the content is at most SAFE_CHARS long)
        "words": " ".join(word_parts(item.content)[0]),
    }


class Write:
    """A write of one statement; for a session with no conversation yet, made again with
    the conversation's insert, then (two first writers racing) in a transaction that
    creates it first. ``ids`` stay the same for every attempt (a replay finds them
    stored)."""

    def __init__(self, target: rq.Target, now: datetime, count: int) -> None:
        self.target = target
        self.now = now
        self.ids = random_ids(count)
        self.params = _conversation(target, count, now)
        self.sql: dict[tuple[bool, bool], str] = {}  # (by session, creating) → SQL

    async def statement(self, tx: Tx, create: bool = False) -> list[tuple[Any, ...]]:
        """Run the write; its rows (none: no conversation)."""
        return await tx.rows(self.sql[self.target.session_id is not None, create], self.params)

    async def written(self, tx: Tx) -> list[tuple[Any, ...]]:
        """The statement's rows, after creating the session's conversation when it has
        none (see :class:`Write`)."""
        found = await self.statement(tx)
        if found or self.target.session_id is None:
            return found
        found = await self.statement(tx, create=True)
        if found:
            return found
        async with tx.cursor.connection.transaction():
            await conversations.insert_session(tx, self.target, self.now)
            return await self.statement(tx)


class AddOne(Write):
    """``add_message`` as one statement (see :class:`Write`)."""

    def __init__(self, req: rq.AddMessage, now: datetime) -> None:
        super().__init__(req.target, now, 1)
        self.req = req
        self.key = req.idempotency_key
        self.params.update(row_params(req), id=self.ids[0], ikey=store_optional(self.key))
        self.sql = _ONE_SQL if self.key is None else _KEYED_SQL

    async def statement(self, tx: Tx, create: bool = False) -> list[tuple[Any, ...]]:
        rows = await super().statement(tx, create)
        if self.key is None:
            return rows
        # one row: what was written (stamp, conversation, session), the conversation
        # advanced, then the message stored under the key; all NULL: no conversation
        [row] = rows
        return [] if row[0] is None and row[3] is None and row[4] is None else rows

    async def __call__(self, tx: Tx) -> Message:
        try:
            found = await self.written(tx)
        except pg_errors.UniqueViolation as exc:
            return (await replayed_messages(tx, exc, self.ids))[0]
        if not found:
            raise conversations.unknown(self.target)
        row = found[0]
        if self.key is not None and row[0] is None:
            return await self.keyed(tx, row)
        return built_message(self.ids[0], self.params, row[:3], self.req)

    async def keyed(self, tx: Tx, row: tuple[Any, ...]) -> Message:
        """The message stored under the key: read in the statement's snapshot, or, when
        a replay committed it after that, by one more statement."""
        if row[4] is not None:
            return to_message(row[4:])
        stored = await tx.row(
            f"SELECT {MESSAGE_COLUMNS} {FROM} "
            "WHERE m.conversation_id = %s AND m.idempotency_key = %s",
            (row[3], store_optional(self.key)),
        )
        assert stored is not None  # the key's unique index refused the write
        return to_message(stored)


class AddMany(Write):
    """``add_messages`` as one statement (see :class:`Write`)."""

    def __init__(self, req: rq.AddMessages, now: datetime) -> None:
        items = req.messages
        super().__init__(req.target, now, len(items))
        self.req = req
        self.columns = [row_params(item) for item in items]
        after = None  # the last caller stamp before each row
        rows = []
        for i, c, item in zip(self.ids, self.columns, items, strict=True):
            rows.append(_json_row(i, c, item.timestamp, after))
            after = item.timestamp or after
        self.params["rows"] = json.dumps(rows, ensure_ascii=False)
        self.sql = _MANY_SQL

    async def __call__(self, tx: Tx) -> list[Message]:
        try:
            found = await self.written(tx)
        except pg_errors.UniqueViolation as exc:
            return await replayed_messages(tx, exc, self.ids)
        if not found:
            raise conversations.unknown(self.target)
        written = {row[0]: row[1:] for row in found}
        items = self.req.messages
        return trusted_many(
            Message,
            [
                _fields(i, c, written[i], item)
                for i, c, item in zip(self.ids, self.columns, items, strict=True)
            ],
        )


def _json_row(
    message_id: UUID, c: dict[str, Any], stamp: datetime | None, after: datetime | None
) -> list[Any]:
    exact = c["exact"]
    return [
        str(message_id),
        c["role"],
        c["content"],
        None if exact is None else exact.hex(),
        c["metadata"],
        c["doc"],
        None if stamp is None else stamp.isoformat(),
        _array(c["embedding"]),
        c["words"],
        None if after is None else after.isoformat(),
    ]


def _array(vector: list[float] | None) -> str | None:
    """A float8[] literal (``repr`` round-trips every float)."""
    return None if vector is None else "{" + ",".join(repr(float(x)) for x in vector) + "}"


def built_message(
    message_id: UUID,
    params: dict[str, Any],
    written: tuple[Any, ...],
    item: rq.AddMessage | rq.NewMessage,
) -> Message:
    """The message as written; ``written``: (created_at, conversation id, session id)."""
    return trusted(Message, _fields(message_id, params, written, item))


def _fields(
    message_id: UUID,
    params: dict[str, Any],
    written: tuple[Any, ...],
    item: rq.AddMessage | rq.NewMessage,
) -> dict[str, Any]:
    stamp, conversation_id, session_id = written
    embedding = item.embedding
    return {
        "id": message_id,
        "created_at": utc(stamp),
        "updated_at": None,
        "embedding": None if embedding is None else [float(x) for x in embedding],
        "metadata": load_metadata(params["metadata"]),
        "role": item.role,
        "content": item.content,
        "conversation_id": conversation_id,
        "session_id": session_id,
        "tool_calls": None,
        "score": None,
        "idempotency_key": load_optional(params.get("ikey")),
        "mentions": [],
    }


async def replayed_messages(
    tx: Tx, exc: pg_errors.UniqueViolation, ids: list[UUID]
) -> list[Message]:
    """The stored messages of a replayed write (``ids`` were written by an earlier attempt
    whose answer was lost); any other violation is raised again."""
    if exc.diag.constraint_name != "messages_id_key":
        raise exc
    rows = await tx.rows(
        f"SELECT {MESSAGE_COLUMNS} {FROM} WHERE m.id = ANY(%s) ORDER BY m.seq", (ids,)
    )
    return read_messages(rows)
