"""Conversation rows: resolving a target, get-or-create, listing and clearing.

Every function runs inside a transaction opened by :class:`~.store.Database` and takes the
connection first. A session's conversation id is ``uuid5(NAMESPACE, tenant + NUL +
session_id)``, so the empty conversation of a session that has no row yet has the same id
on every call and keeps it once the first write creates the row. The pair is unambiguous
because the contract refuses control characters (NUL among them) in session ids and user
identifiers, and no caller can create a conversation under a version-5 id, so no tenant
can claim the id of another tenant's session.
"""

from __future__ import annotations

import sqlite3
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

from .codec import SQL_INT_MAX, dump_json, now_micros, sql_int
from .fts_purge import mark_pending
from .rows import to_conversation, to_conversations, to_session
from .trace_delete import delete_session_traces

NAMESPACE = UUID("76d6accc-5703-50c3-bfc3-6639b22e80f8")
CURSOR_KIND = "embedded"  # the prefix of this store's listing cursors

ORDER_COLUMNS = {
    "updated_at": "c.updated_at",
    "created_at": "c.created_at",
    "message_count": "message_count",
    "session_id": "c.session_id",
}


def tenant_key(tenant: str | None) -> str:
    """The stored tenant: the user of a multi-tenant backend, ``''`` otherwise."""
    return tenant or ""


def session_uuid(tenant: str | None, session_id: str) -> UUID:
    """The deterministic conversation id of ``session_id`` for ``tenant``."""
    return uuid5(NAMESPACE, f"{tenant_key(tenant)}\x00{session_id}")


def find(conn: sqlite3.Connection, target: rq.Target) -> sqlite3.Row | None:
    """The conversation ``target`` names in its tenant, or ``None`` (a session name that
    is the canonical string of the id of a conversation of the tenant names that one:
    :attr:`~memory_core.requests.Target.id_alias`)."""
    tenant = tenant_key(target.tenant)
    alias = target.id_alias
    if alias is not None:
        by_id: sqlite3.Row | None = conn.execute(
            "SELECT * FROM conversations WHERE tenant = ? AND id = ?", (tenant, str(alias))
        ).fetchone()
        if by_id is not None:
            return by_id
    if target.session_id is not None:
        sql = "SELECT * FROM conversations WHERE tenant = ? AND session_id = ?"
        key = target.session_id
    else:
        sql = "SELECT * FROM conversations WHERE tenant = ? AND id = ?"
        key = str(target.conversation_id)
    row: sqlite3.Row | None = conn.execute(sql, (tenant, key)).fetchone()
    return row


def require(conn: sqlite3.Connection, target: rq.Target) -> sqlite3.Row | None:
    """For reads: the row; ``None`` for a session with no conversation yet; an unknown
    ``conversation_id`` raises :class:`NotFoundError`."""
    row = find(conn, target)
    if row is None and target.session_id is None:
        raise _unknown(target)
    return row


def ensure(conn: sqlite3.Connection, target: rq.Target, now: int) -> sqlite3.Row:
    """For writes: the existing row, or a new one for a session; an unknown
    ``conversation_id`` raises :class:`NotFoundError` (never creates, never a no-op)."""
    row = require(conn, target)
    if row is not None:
        return row
    assert target.session_id is not None
    conversation_id = session_uuid(target.tenant, target.session_id)
    return insert(conn, target, conversation_id, target.session_id, None, {}, now)


def insert(
    conn: sqlite3.Connection,
    target: rq.Target,
    conversation_id: UUID,
    session_id: str,
    title: str | None,
    metadata: dict[str, object],
    now: int,
) -> sqlite3.Row:
    """Insert a conversation row and return it."""
    tenant = tenant_key(target.tenant)
    taken = conn.execute(
        "SELECT tenant, session_id FROM conversations WHERE id = ? OR "
        "(tenant = ? AND session_id = ?)",
        (str(conversation_id), tenant, session_id),
    ).fetchone()
    if taken is not None:
        raise InvalidRequestError(
            f"{conversation_id} cannot be used: that id, or session {session_id!r}, is taken",
            argument="conversation_id",
        )
    conn.execute(
        "INSERT INTO conversations (id, tenant, session_id, title, metadata, user_identifier, "
        "created_at, updated_at, next_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)",
        (
            str(conversation_id),
            tenant,
            session_id,
            title,
            dump_json(metadata),
            target.user_identifier,
            now,
            now,
        ),
    )
    row: sqlite3.Row = conn.execute(
        "SELECT * FROM conversations WHERE id = ?", (str(conversation_id),)
    ).fetchone()
    return row


def missing(target: rq.Target) -> Conversation:
    """The empty conversation of a session that has none yet (nothing is written)."""
    assert target.session_id is not None
    return Conversation(
        id=session_uuid(target.tenant, target.session_id),
        session_id=target.session_id,
        user_identifier=target.user_identifier,
    )


def create(conn: sqlite3.Connection, req: rq.CreateConversation) -> Conversation:
    """Get-or-create. An existing conversation keeps its title and metadata; a missing
    title, or empty metadata, is filled from this call (an auto-created conversation
    can be named afterwards)."""
    now = now_micros()
    target = req.target
    row = find(conn, target)
    if row is None:
        if target.session_id is not None:
            conversation_id = session_uuid(target.tenant, target.session_id)
            session_id = target.session_id
        else:
            assert target.conversation_id is not None
            _claimable(target.conversation_id)
            conversation_id, session_id = target.conversation_id, str(target.conversation_id)
        row = insert(conn, target, conversation_id, session_id, req.title, req.metadata, now)
        return to_conversation(row)
    fill_title = row["title"] is None and req.title is not None
    fill_meta = row["metadata"] in ("{}", "") and bool(req.metadata)
    fill_user = row["user_identifier"] is None and target.user_identifier is not None
    if fill_title or fill_meta or fill_user:
        conn.execute(
            "UPDATE conversations SET title = ?, metadata = ?, user_identifier = ?, "
            "updated_at = MAX(updated_at, ?) WHERE id = ?",
            (
                req.title if fill_title else row["title"],
                dump_json(req.metadata) if fill_meta else row["metadata"],
                target.user_identifier if fill_user else row["user_identifier"],
                now,
                row["id"],
            ),
        )
        row = conn.execute("SELECT * FROM conversations WHERE id = ?", (row["id"],)).fetchone()
    return to_conversation(row)


def advance(
    conn: sqlite3.Connection, target: rq.Target, count: int, now: int
) -> sqlite3.Row | None:
    """Before writing ``count`` messages: reserve their sequence numbers and advance
    ``updated_at`` (never backwards); the updated row, or ``None`` when there is none.

    This UPDATE also takes the row's place in the write transaction first, so it is the
    one statement every append starts with.
    """
    tenant = tenant_key(target.tenant)
    keys: list[tuple[str, str]] = []
    alias = target.id_alias
    if alias is not None:  # the id the name may stand for comes first, as in find()
        keys.append(("tenant = ? AND id = ?", str(alias)))
    if target.session_id is not None:
        keys.append(("tenant = ? AND session_id = ?", target.session_id))
    else:
        keys.append(("tenant = ? AND id = ?", str(target.conversation_id)))
    row: sqlite3.Row | None = None
    for where, key in keys:
        row = conn.execute(
            "UPDATE conversations SET next_seq = next_seq + ?, updated_at = MAX(updated_at, ?), "
            f"user_identifier = COALESCE(user_identifier, ?) WHERE {where} RETURNING *",
            (count, now, target.user_identifier, tenant, key),
        ).fetchone()
        if row is not None:
            break
    return row


def list_conversations(conn: sqlite3.Connection, req: rq.ListConversations) -> ConversationPage:
    """One page of headers (no messages), most recently updated first, ties by id (both
    descending), after ``req.cursor``: a seek on ``conversations_by_recency`` (or, for a
    user filter without tenants, ``conversations_by_user_recency``) that reads ``limit +
    1`` index entries, the last only to tell whether another page follows."""
    if req.tenant is None:
        # The constant (not a parameter) lets SQLite use the partial index of user listings.
        sql = "SELECT * FROM conversations WHERE tenant = ''"
        params: list[object] = []
    else:
        sql = "SELECT * FROM conversations WHERE tenant = ?"
        params = [req.tenant]
    if req.user_identifier is not None:
        sql += " AND user_identifier = ?"
        params.append(req.user_identifier)
    if req.cursor is not None:
        sql += " AND (updated_at, id) < (?, ?)"
        params += _after(req.cursor)
    sql += " ORDER BY updated_at DESC, id DESC LIMIT ?"
    limit = min(req.limit, SQL_INT_MAX - 1)
    params.append(limit + 1)
    rows = conn.execute(sql, params).fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = None
    if more:
        last = rows[-1]
        next_cursor = encode_cursor(CURSOR_KIND, [last["updated_at"], last["id"]])
    return ConversationPage(conversations=to_conversations(rows), next_cursor=next_cursor)


def _after(cursor: str) -> list[object]:
    """The (updated_at, id) a cursor of this store holds; ``cursor_error`` otherwise."""
    value = decode_cursor(CURSOR_KIND, cursor)
    if not (isinstance(value, list) and len(value) == 2):
        raise cursor_error()
    micros, conversation_id = value
    if isinstance(micros, bool) or not isinstance(micros, int) or abs(micros) > SQL_INT_MAX:
        raise cursor_error()
    if not isinstance(conversation_id, str) or parse_uuid(conversation_id) is None:
        raise cursor_error()
    return [micros, str(parse_uuid(conversation_id))]


def list_sessions(conn: sqlite3.Connection, req: rq.ListSessions) -> list[SessionInfo]:
    """One row per session with its message count and first/last previews.

    The prefix is compared with ``substr`` rather than ``LIKE``: it is matched literally
    (``%`` and ``_`` are plain characters) and case-sensitively.
    """
    # Previews need at most PREVIEW_CHARS + 1 characters; never load whole long messages.
    sql = (
        "SELECT c.*, "
        "(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count, "
        "(SELECT substr(m.content, 1, 101) FROM messages m WHERE m.conversation_id = c.id "
        "ORDER BY m.seq ASC LIMIT 1) AS first_content, "
        "(SELECT substr(m.content, 1, 101) FROM messages m WHERE m.conversation_id = c.id "
        "ORDER BY m.seq DESC LIMIT 1) AS last_content "
        "FROM conversations c WHERE c.tenant = ?"
    )
    params: list[object] = [tenant_key(req.tenant)]
    if req.user_identifier is not None:
        sql += " AND c.user_identifier = ?"
        params.append(req.user_identifier)
    if req.prefix:
        sql += " AND substr(c.session_id, 1, ?) = ?"
        params += [len(req.prefix), req.prefix]
    column = ORDER_COLUMNS[req.order_by]
    direction = "DESC" if req.order_dir == "desc" else "ASC"
    sql += f" ORDER BY {column} {direction}, c.session_id ASC LIMIT ? OFFSET ?"
    params += [sql_int(req.limit), sql_int(req.offset)]
    return [to_session(row) for row in conn.execute(sql, params)]


def clear(conn: sqlite3.Connection, target: rq.Target) -> bool:
    """Delete the conversation with its messages, mentions and index entries (their
    tokens stay in the index's segments until the caller's :func:`.fts_purge.purge`), and
    the reasoning traces of its session in the tenant. A session with traces and no
    conversation loses its traces; a ``conversation_id`` that names none deletes nothing.
    True when anything went."""
    row = find(conn, target)
    session = row["session_id"] if row is not None else target.session_id
    traces = 0
    if session is not None:
        traces = delete_session_traces(conn, tenant_key(target.tenant), session)
    if row is None:
        return traces > 0
    # Children first, explicitly, so nothing depends on foreign-key cascades; the FTS
    # delete trigger removes each message from the index.
    conn.execute(
        "DELETE FROM mentions WHERE message_id IN "
        "(SELECT id FROM messages WHERE conversation_id = ?)",
        (row["id"],),
    )
    gone = conn.execute("DELETE FROM messages WHERE conversation_id = ?", (row["id"],))
    if gone.rowcount:
        mark_pending(conn)  # the caller purges the index of their words
    conn.execute("DELETE FROM conversations WHERE id = ?", (row["id"],))
    return True


def _claimable(conversation_id: UUID) -> None:
    """A caller-chosen id must not be one derived from a session: those are version-5
    UUIDs anyone can compute, and claiming one (for any tenant) would block the first
    write of the session it belongs to."""
    if conversation_id.version == 5:
        raise InvalidRequestError(
            "version-5 UUIDs are reserved for the ids of sessions; create the conversation "
            "by session_id, or choose a random (version 4) UUID",
            argument="conversation_id",
        )


def _unknown(target: rq.Target) -> NotFoundError:
    return NotFoundError.missing(
        "embedded", "conversation", target.conversation_id, argument="conversation_id"
    )
