"""Conversation rows: resolving a target, get-or-create, listing and clearing.

A session's conversation id is ``uuid5(NAMESPACE, tenant + NUL + session_id)`` with the
embedded backend's namespace, so a session has the same id on both (and before its first
write). Caller-chosen conversation ids may not be version 5 (those belong to sessions).
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache
from typing import Any
from uuid import UUID, uuid5

from memory_core.store import (
    Conversation,
    ConversationPage,
    InvalidRequestError,
    NotFoundError,
    SessionInfo,
    cursor_error,
    decode_cursor,
    encode_cursor,
    parse_uuid,
)
from memory_core.store import requests as rq

from .codec import SQL_INT_MAX, micros, sql_int, store_metadata, store_optional
from .rows import CONVERSATION_COLUMNS, to_conversation, to_session
from .trace_delete import delete_session_traces
from .tx import Tx

NAMESPACE = UUID("76d6accc-5703-50c3-bfc3-6639b22e80f8")
CURSOR_KIND = "postgres"
BACKEND = "postgres"

ORDER_COLUMNS = {
    "updated_at": "c.updated_at",
    "created_at": "c.created_at",
    "message_count": "message_count",
    "session_id": 'c.session_id COLLATE "C"',
}

Row = tuple[Any, ...]


def tenant_key(tenant: str | None) -> str:
    """The stored tenant: the user of a multi-tenant backend, ``''`` otherwise."""
    return tenant or ""


@lru_cache(maxsize=4096)  # a hash per call otherwise; sessions are written again and again
def session_uuid(tenant: str | None, session_id: str) -> UUID:
    """The deterministic conversation id of ``session_id`` for ``tenant``."""
    return uuid5(NAMESPACE, f"{tenant_key(tenant)}\x00{session_id}")


def _keys(target: rq.Target) -> list[tuple[str, object]]:
    """How to find the target's row, in order: the id a session name stands for first."""
    keys: list[tuple[str, object]] = []
    alias = target.id_alias
    if alias is not None:
        keys.append(("c.id = %s", alias))
    if target.session_id is not None:
        keys.append(("c.session_id = %s", target.session_id))
    else:
        keys.append(("c.id = %s", target.conversation_id))
    return keys


async def find(tx: Tx, target: rq.Target) -> Row | None:
    """The conversation ``target`` names in its tenant (columns of CONVERSATION_COLUMNS)."""
    tenant = tenant_key(target.tenant)
    for where, key in _keys(target):
        row = await tx.row(
            f"SELECT {CONVERSATION_COLUMNS} FROM {{s}}.conversations c "
            f"WHERE c.tenant = %s AND {where}",
            (tenant, key),
        )
        if row is not None:
            return row
    return None


async def require(tx: Tx, target: rq.Target) -> Row | None:
    """For reads: the row; None for a session with none yet; an unknown
    ``conversation_id`` raises NotFoundError."""
    row = await find(tx, target)
    if row is None and target.session_id is None:
        raise unknown(target)
    return row


async def advance(tx: Tx, target: rq.Target, count: int, now: datetime) -> Row | None:
    """Reserve ``count`` sequence numbers (locking the row for this transaction) and
    advance ``updated_at``: (id, session_id, next_seq after, tenant), or None."""
    tenant = tenant_key(target.tenant)
    for where, key in _keys(target):
        row = await tx.row(
            "UPDATE {s}.conversations c SET next_seq = next_seq + %s, "
            "updated_at = greatest(updated_at, %s), "
            f"user_identifier = coalesce(user_identifier, %s) WHERE c.tenant = %s AND {where} "
            "RETURNING c.id, c.session_id, c.next_seq, c.tenant",
            (count, now, target.user_identifier, tenant, key),
        )
        if row is not None:
            return row
    return None


async def advance_or_create(tx: Tx, target: rq.Target, count: int, now: datetime) -> Row:
    """:func:`advance`, creating the session's conversation first when it has none (two
    writers creating it at once converge on one row); an unknown ``conversation_id``
    raises NotFoundError."""
    row = await advance(tx, target, count, now)
    if row is not None:
        return row
    if target.session_id is None:
        raise unknown(target)
    await insert_session(tx, target, now)
    row = await advance(tx, target, count, now)
    assert row is not None
    return row


async def insert_session(tx: Tx, target: rq.Target, now: datetime) -> None:
    """Create the conversation of ``target``'s session unless it has one (two writers
    creating it at once converge on one row)."""
    assert target.session_id is not None
    await tx.run(
        "INSERT INTO {s}.conversations (id, tenant, session_id, metadata, user_identifier, "
        "created_at, updated_at) VALUES (%s, %s, %s, '{}', %s, %s, %s) "
        "ON CONFLICT DO NOTHING",  # the id is derived from (tenant, session_id): either may clash
        (
            session_uuid(target.tenant, target.session_id),
            tenant_key(target.tenant),
            target.session_id,
            target.user_identifier,
            now,
            now,
        ),
    )


def missing(target: rq.Target) -> Conversation:
    """The empty conversation of a session that has none yet (nothing is written)."""
    assert target.session_id is not None
    return Conversation(
        id=session_uuid(target.tenant, target.session_id),
        session_id=target.session_id,
        user_identifier=target.user_identifier,
    )


async def create(tx: Tx, req: rq.CreateConversation, now: datetime) -> Conversation:
    """Get-or-create; an existing conversation's missing title, empty metadata or
    missing user is filled from this call."""
    target = req.target
    row = await find(tx, target)
    if row is None:
        if target.session_id is not None:
            conversation_id = session_uuid(target.tenant, target.session_id)
            session_id = target.session_id
        else:
            assert target.conversation_id is not None
            _claimable(target.conversation_id)
            conversation_id = target.conversation_id
            session_id = str(target.conversation_id)
        row = await tx.row(
            "INSERT INTO {s}.conversations AS c (id, tenant, session_id, title, metadata, "
            "user_identifier, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
            f"ON CONFLICT DO NOTHING RETURNING {CONVERSATION_COLUMNS}",
            (
                conversation_id,
                tenant_key(target.tenant),
                session_id,
                store_optional(req.title),
                store_metadata(req.metadata)[0],
                target.user_identifier,
                now,
                now,
            ),
        )
        if row is None:
            raced = await find(tx, target)
            if raced is None:
                raise InvalidRequestError(
                    f"{conversation_id} cannot be used: that id, or session {session_id!r}, "
                    "is taken",
                    argument="conversation_id",
                )
            row = raced
        return to_conversation(row)
    fill_title = row[2] is None and req.title is not None
    fill_meta = row[3] in ("{}", "") and bool(req.metadata)
    fill_user = row[4] is None and target.user_identifier is not None
    if fill_title or fill_meta or fill_user:
        row = await tx.row(
            "UPDATE {s}.conversations c SET title = %s, metadata = %s, user_identifier = %s, "
            "updated_at = greatest(updated_at, %s) WHERE c.id = %s "
            f"RETURNING {CONVERSATION_COLUMNS}",
            (
                store_optional(req.title) if fill_title else row[2],
                store_metadata(req.metadata)[0] if fill_meta else row[3],
                target.user_identifier if fill_user else row[4],
                now,
                row[0],
            ),
        )
        assert row is not None
    return to_conversation(row)


async def list_conversations(tx: Tx, req: rq.ListConversations) -> ConversationPage:
    """One keyset page, most recently updated first, ties by id (both descending)."""
    columns = f"{CONVERSATION_COLUMNS}, {_OUTSIDE_KEY}"
    if req.tenant is None:
        sql = f"SELECT {columns} FROM {{s}}.conversations c WHERE c.tenant = ''"
        params: list[object] = []
    else:
        sql = f"SELECT {columns} FROM {{s}}.conversations c WHERE c.tenant = %s"
        params = [req.tenant]
    if req.user_identifier is not None:
        sql += " AND c.user_identifier = %s"
        params.append(req.user_identifier)
    if req.cursor is not None:
        sql += " AND (c.updated_at, c.id) < (%s::timestamptz, %s)"
        params += _after(req.cursor)
    sql += " ORDER BY c.updated_at DESC, c.id DESC LIMIT %s"
    limit = min(req.limit, SQL_INT_MAX - 1)
    params.append(limit + 1)
    rows = await tx.rows(sql, params)
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = None
    if more:
        last = rows[-1]
        key = micros(last[6]) if last[7] is None else last[7]
        next_cursor = encode_cursor(CURSOR_KIND, [key, str(last[0])])
    return ConversationPage(
        conversations=[to_conversation(r) for r in rows], next_cursor=next_cursor
    )


# The cursor key of an updated_at outside Python's range (which only another program
# writes, read as the nearest time Python has: see .times): PostgreSQL's own text of it,
# which it reads back as exactly that time; NULL otherwise.
_OUTSIDE_KEY = (
    "CASE WHEN NOT isfinite(c.updated_at) OR c.updated_at < '0001-01-01 00:00:00+00' "
    "OR c.updated_at >= '10000-01-01 00:00:00+00' THEN c.updated_at::text END"
)
# That text as PostgreSQL writes it (DateStyle ISO, which psycopg needs anyway).
_STORED_TEXT = re.compile(
    r"(\d{4,6})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.\d{1,6})?[+-]\d\d(?::\d\d){0,2}( BC)?"
)
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _after(cursor: str) -> list[object]:
    from datetime import UTC, timedelta

    value = decode_cursor(CURSOR_KIND, cursor)
    if not (isinstance(value, list) and len(value) == 2):
        raise cursor_error()
    key, conversation_id = value
    if not isinstance(conversation_id, str) or parse_uuid(conversation_id) is None:
        raise cursor_error()
    if isinstance(key, str):
        return [_stored_text(key), parse_uuid(conversation_id)]
    if isinstance(key, bool) or not isinstance(key, int):
        raise cursor_error()
    try:
        moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=key)
    except OverflowError:
        raise cursor_error() from None
    return [moment, parse_uuid(conversation_id)]


def _stored_text(key: str) -> str:
    """A cursor's key for a time outside Python's range: checked to be a time PostgreSQL
    reads (a date of the calendar from 4714-11-24 BC to 294276), never sent unchecked."""
    if key in ("infinity", "-infinity"):
        return key
    found = _STORED_TEXT.fullmatch(key)
    if found is None:
        raise cursor_error()
    year, month, day, hour, minute, second = (int(found[i]) for i in range(1, 7))
    before_christ = found[7] is not None
    if before_christ:
        in_range = year < 4714 or (year == 4714 and (month, day) >= (11, 24))
    else:
        in_range = year <= 294276
    if not (
        year >= 1
        and in_range
        and 1 <= month <= 12
        and 1 <= day <= _days_in(month, 1 - year if before_christ else year)
        and hour < 24
        and minute < 60
        and second < 60
    ):
        raise cursor_error()
    return key


def _days_in(month: int, year: int) -> int:
    """Days of ``month`` in the proleptic Gregorian ``year`` (0 is 1 BC, a leap year)."""
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 29 if month == 2 and leap else _DAYS[month - 1]


async def list_sessions(tx: Tx, req: rq.ListSessions) -> list[SessionInfo]:
    """One row per session with its message count and first/last previews. A prefix with
    a NUL finds none: no session id holds one (the contract refuses it)."""
    if "\x00" in (req.prefix or ""):
        return []
    sql = (
        f"SELECT {CONVERSATION_COLUMNS}, "
        "(SELECT count(*) FROM {s}.messages m WHERE m.conversation_id = c.id) AS message_count, "
        "f.content, f.content_exact, l.content, l.content_exact "
        "FROM {s}.conversations c "
        "LEFT JOIN LATERAL (SELECT substr(m.content, 1, 101) AS content, m.content_exact "
        "FROM {s}.messages m WHERE m.conversation_id = c.id ORDER BY m.seq ASC LIMIT 1) f "
        "ON true "
        "LEFT JOIN LATERAL (SELECT substr(m.content, 1, 101) AS content, m.content_exact "
        "FROM {s}.messages m WHERE m.conversation_id = c.id ORDER BY m.seq DESC LIMIT 1) l "
        "ON true WHERE c.tenant = %s"
    )
    params: list[object] = [tenant_key(req.tenant)]
    if req.user_identifier is not None:
        sql += " AND c.user_identifier = %s"
        params.append(req.user_identifier)
    if req.prefix:
        sql += " AND substr(c.session_id, 1, %s) = %s"
        params += [len(req.prefix), req.prefix]
    column = ORDER_COLUMNS[req.order_by]
    direction = "DESC" if req.order_dir == "desc" else "ASC"
    sql += f' ORDER BY {column} {direction}, c.session_id COLLATE "C" ASC LIMIT %s OFFSET %s'
    params += [sql_int(req.limit), sql_int(req.offset)]
    return [to_session(row) for row in await tx.rows(sql, params)]


async def clear(tx: Tx, target: rq.Target) -> bool:
    """Delete the conversation with its messages, and the reasoning traces of its session
    in the tenant. A session with traces and no conversation loses its traces; a
    ``conversation_id`` that names none deletes nothing. True when anything went."""
    row = await find(tx, target)
    session = row[1] if row is not None else target.session_id
    traces = 0
    if session is not None:
        traces = await delete_session_traces(tx, tenant_key(target.tenant), session)
    if row is None:
        return traces > 0
    await tx.run("DELETE FROM {s}.messages WHERE conversation_id = %s", (row[0],))
    await tx.run("DELETE FROM {s}.conversations WHERE id = %s", (row[0],))
    return True


def _claimable(conversation_id: UUID) -> None:
    if conversation_id.version == 5:
        raise InvalidRequestError(
            "version-5 UUIDs are reserved for the ids of sessions; create the conversation "
            "by session_id, or choose a random (version 4) UUID",
            argument="conversation_id",
        )


def unknown(target: rq.Target) -> NotFoundError:
    """The error for a ``conversation_id`` that names no conversation of the scope."""
    return NotFoundError.missing(
        BACKEND, "conversation", target.conversation_id, argument="conversation_id"
    )
