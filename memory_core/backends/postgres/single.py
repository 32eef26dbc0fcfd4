"""The common calls as one SQL statement each: one round trip, no ``BEGIN``/``COMMIT``.

A statement outside a transaction block is its own transaction, so these are as atomic as
the transactional paths of :mod:`.messages` and read one snapshot. They cover adding
messages without mentions or an idempotency key to a session or a known conversation, and
reading a conversation's newest messages; a ``session_id`` that is a conversation id's
canonical text (see :attr:`~memory_core.requests.Target.id_alias`) takes the
transactional paths. A session's first write creates its conversation and writes in one
transaction (two statements more, once per session).

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

from memory_core import Conversation, Message
from memory_core import requests as rq
from memory_core.models import random_ids, trusted, trusted_many

from . import conversations
from .codec import load_metadata, sql_int, store_content, store_metadata, utc, words
from .messages import FROM
from .rows import (
    CONVERSATION_COLUMNS,
    MESSAGE_COLUMNS,
    to_conversation,
    to_message,
    to_messages,
)
from .tx import Tx

# The conversation row advanced (locked until the statement commits): by id, or by the
# session's key. A session with no row yet gets one first, in a transaction with the write
# (see _Write.__call__): an upsert here would cost every write its conflict path.
_ADVANCE = (
    "c AS (UPDATE {s}.conversations c SET next_seq = c.next_seq + %(count)s, "
    "updated_at = greatest(c.updated_at, %(now)s), "
    "user_identifier = coalesce(c.user_identifier, %(user)s) "
    "WHERE c.tenant = %(tenant)s AND {key} "
    "RETURNING c.id, c.session_id, c.next_seq, c.updated_at)"
)
_KEYS = {True: "c.session_id = %(key)s", False: "c.id = %(key)s"}
_PREVIOUS = (
    "(SELECT p.created_at FROM {s}.messages p WHERE p.conversation_id = c.id "
    "ORDER BY p.seq DESC LIMIT 1)"
)
_COLUMNS = (
    "INSERT INTO {s}.messages (id, conversation_id, seq, role, content, content_exact, "
    "metadata, metadata_doc, created_at, embedding, words) "
)
_ONE = (
    "WITH {conversation} "
    + _COLUMNS
    + "SELECT %(id)s, c.id, c.next_seq - 1, %(role)s, %(content)s, %(exact)s, %(metadata)s, "
    "%(doc)s::jsonb, greatest(c.updated_at, " + _PREVIOUS + "), %(embedding)s, "
    "array_to_tsvector(string_to_array(%(words)s, ' ')) FROM c "
    "RETURNING created_at, conversation_id, (SELECT c.session_id FROM c)"
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
    + _COLUMNS
    + "SELECT t.id, c.id, c.next_seq - %(count)s + t.n - 1, t.role, t.content, t.exact, "
    "t.metadata, t.doc::jsonb, coalesce(t.stamp, CASE WHEN t.after IS NULL THEN b.base "
    "ELSE greatest(c.updated_at, t.after) END), "
    "t.embedding::float8[], array_to_tsvector(string_to_array(t.words, ' ')) "
    "FROM c, b, t ORDER BY t.n "
    "RETURNING id, created_at, conversation_id, (SELECT c.session_id FROM c)"
)


_CTE = {by: _ADVANCE.replace("{key}", key) for by, key in _KEYS.items()}
_ONE_SQL = {cte: _ONE.replace("{conversation}", cte) for cte in _CTE.values()}
_MANY_SQL = {cte: _MANY.replace("{conversation}", cte) for cte in _CTE.values()}


def covers(target: rq.Target) -> bool:
    """Whether a call on ``target`` can be one statement (no id alias to try first)."""
    return target.session_id is None or target.id_alias is None


def add_covers(req: rq.AddMessage) -> bool:
    """Whether ``add_message`` can be one statement."""
    return req.idempotency_key is None and not req.mentions and covers(req.target)


def batch_covers(req: rq.AddMessages) -> bool:
    """Whether ``add_messages`` can be one statement."""
    return bool(req.messages) and covers(req.target) and not any(m.mentions for m in req.messages)


def _conversation(target: rq.Target, count: int, now: datetime) -> tuple[str, dict[str, Any]]:
    by_session = target.session_id is not None
    params: dict[str, Any] = {
        "tenant": conversations.tenant_key(target.tenant),
        "user": target.user_identifier,
        "now": now,
        "count": count,
        "key": target.session_id if by_session else target.conversation_id,
    }
    return _CTE[by_session], params


def _item(item: rq.AddMessage | rq.NewMessage) -> dict[str, Any]:
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
        # time it takes for a list
        "words": " ".join(words(item.content)),
    }


class _Write:
    """A write of one statement, made again inside a transaction that creates the
    session's conversation first when it has none; ``ids`` stay the same for every
    attempt (a replay finds them stored)."""

    def __init__(self, target: rq.Target, now: datetime, count: int) -> None:
        self.target = target
        self.now = now
        self.ids = random_ids(count)

    async def statement(self, tx: Tx) -> list[tuple[Any, ...]]:
        """Run the write; its rows (none: no conversation)."""
        raise NotImplementedError

    async def written(self, tx: Tx) -> list[tuple[Any, ...]]:
        """The statement's rows, after creating the session's conversation when it has
        none (then the statement runs again in that transaction)."""
        found = await self.statement(tx)
        if found or self.target.session_id is None:
            return found
        async with tx.cursor.connection.transaction():
            await conversations.insert_session(tx, self.target, self.now)
            return await self.statement(tx)


class AddOne(_Write):
    """``add_message`` as one statement (see :class:`_Write`)."""

    def __init__(self, req: rq.AddMessage, now: datetime) -> None:
        super().__init__(req.target, now, 1)
        self.req = req
        conversation, self.params = _conversation(req.target, 1, now)
        self.params.update(_item(req), id=self.ids[0])
        self.sql = _ONE_SQL[conversation]

    async def statement(self, tx: Tx) -> list[tuple[Any, ...]]:
        return await tx.rows(self.sql, self.params)

    async def __call__(self, tx: Tx) -> Message:
        try:
            found = await self.written(tx)
        except pg_errors.UniqueViolation as exc:
            return (await _replayed(tx, exc, self.ids))[0]
        if not found:
            raise conversations.unknown(self.target)
        return _message(self.ids[0], self.params, found[0], self.req)


class AddMany(_Write):
    """``add_messages`` as one statement (see :class:`_Write`)."""

    def __init__(self, req: rq.AddMessages, now: datetime) -> None:
        items = req.messages
        super().__init__(req.target, now, len(items))
        self.req = req
        conversation, self.params = _conversation(req.target, len(items), now)
        self.columns = [_item(item) for item in items]
        after = None  # the last caller stamp before each row
        rows = []
        for i, c, item in zip(self.ids, self.columns, items, strict=True):
            rows.append(_json_row(i, c, item.timestamp, after))
            after = item.timestamp or after
        self.params["rows"] = json.dumps(rows, ensure_ascii=False)
        self.sql = _MANY_SQL[conversation]

    async def statement(self, tx: Tx) -> list[tuple[Any, ...]]:
        return await tx.rows(self.sql, self.params)

    async def __call__(self, tx: Tx) -> list[Message]:
        try:
            found = await self.written(tx)
        except pg_errors.UniqueViolation as exc:
            return await _replayed(tx, exc, self.ids)
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


def _message(
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
        "idempotency_key": None,
        "mentions": [],
    }


async def _replayed(tx: Tx, exc: pg_errors.UniqueViolation, ids: list[UUID]) -> list[Message]:
    """The stored messages of a replayed write (``ids`` were written by an earlier attempt
    whose answer was lost); any other violation is raised again."""
    if exc.diag.constraint_name != "messages_id_key":
        raise exc
    rows = await tx.rows(
        f"SELECT {MESSAGE_COLUMNS} {FROM} WHERE m.id = ANY(%s) ORDER BY m.seq", (ids,)
    )
    return [to_message(row) for row in rows]


# The message columns named for r.*, without what the conversation gives (its id and
# session); the conversation's own columns only on one row: each value costs the driver
# time to parse, a hundred times over on a newest-100 read.
_LATERAL = (
    MESSAGE_COLUMNS.replace("m.conversation_id", "NULL::uuid AS conversation_id").replace(
        "c.session_id", "NULL::text AS session_id"
    )
    + " AS mentions"
)
_ONCE = ", ".join(
    f"CASE WHEN row_number() OVER () = 1 THEN {column.strip()} END"
    for column in CONVERSATION_COLUMNS.split(",")[1:]
)
_READ = (
    f"SELECT c.id, {_ONCE}, r.* FROM {{s}}.conversations c "
    f"LEFT JOIN LATERAL (SELECT m.seq AS seq_, {_LATERAL} FROM {{s}}.messages m "
    "WHERE m.conversation_id = c.id{since} ORDER BY m.seq DESC LIMIT %s) r ON true "
    "WHERE c.tenant = %s AND {key} ORDER BY r.seq_ DESC"
)
_WIDTH = CONVERSATION_COLUMNS.count(",") + 1


async def get_conversation(tx: Tx, req: rq.GetConversation) -> Conversation:
    """The newest ``limit`` messages (after ``since``), oldest first, read with their
    conversation in one statement."""
    target = req.target
    key, value = (
        ("c.id = %s", target.conversation_id)
        if target.session_id is None
        else ("c.session_id = %s", target.session_id)
    )
    since = "" if req.since is None else " AND m.created_at > %s"
    params: list[object] = [] if req.since is None else [req.since]
    params += [sql_int(req.limit), conversations.tenant_key(target.tenant), value]
    sql = _READ.replace("{since}", since).replace("{key}", key)
    rows = await tx.rows(sql, params)
    if not rows:
        if target.session_id is None:
            raise conversations.unknown(target)
        return conversations.missing(target)
    [conversation] = [row for row in rows if row[1] is not None]  # see _ONCE
    cid, session_id = conversation[0], conversation[1]
    messages = to_messages(
        [
            (row[_WIDTH + 1], cid, *row[_WIDTH + 3 : _WIDTH + 10], session_id, *row[_WIDTH + 11 :])
            for row in reversed(rows)
            if row[_WIDTH] is not None
        ]
    )
    return to_conversation(conversation, messages)
