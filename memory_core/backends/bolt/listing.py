"""Keyset pages of conversations (``list_conversations``) and their cursors.

The order is ``updated_at`` then ``id``, both descending, over the dated conversations
(``updated_at`` a zoned DateTime), then the undated ones (another writer left
``updated_at`` missing or of another type) by ``id`` descending. A cursor holds the last
listed conversation's key: ``[0, nanoseconds since the epoch, id]`` for a dated one (the
exact instant: a DateTime another writer stored may carry nanoseconds), ``[1, id]`` for
an undated one. A dated page is one range seek (see :data:`cypher.LIST_DATED`); the page
on which the dated conversations run out also reads the undated ones, which costs one
scan of the scope's conversations (the user's, or every conversation without a user):
once per walk, on its last page or pages.
"""

from __future__ import annotations

from typing import Any

from memory_core.store import (
    Conversation,
    ConversationPage,
    cursor_error,
    decode_cursor,
    encode_cursor,
    parse_uuid,
)
from memory_core.store import requests as rq

from . import cypher
from .records import read_conversation
from .session import Connection, Rows

CURSOR_KIND = "bolt"
DATED, UNDATED = 0, 1
_NS_PER_S = 1_000_000_000
_NS_PER_MS = 1_000_000
# Nanoseconds a DateTime of Cypher can be from the epoch (years ±999,999,999), with room.
_NS_RANGE = 10**36


async def list_page(conn: Connection, req: rq.ListConversations) -> ConversationPage:
    """One page of ``req``: at most ``req.limit`` headers, exactly that many while more
    follow, and the cursor of the last one when something follows. A conversation another
    program left unreadable (see :func:`.records.read_conversation`) is passed over: the
    page reads on past it to stay full."""
    limit = min(req.limit, 2**62)  # a Cypher integer is 64-bit; + 1 must still fit
    after = _after(req.cursor)
    kept: list[Conversation] = []
    while True:
        rows, more = await _rows(conn, req.user_identifier, after, limit - len(kept))
        read = (read_conversation(row["conversation"]) for row in rows)
        kept += [conversation for conversation in read if conversation is not None]
        if not more:
            return ConversationPage(conversations=kept, next_cursor=None)
        if len(kept) == limit:  # then every row of this read was kept: the last is readable
            return ConversationPage(conversations=kept, next_cursor=_cursor(rows[-1]))
        after = _position(rows[-1])


Position = tuple[int, int | None, str | None]
"""Where a page starts: (phase, key in nanoseconds, id), after that conversation."""


async def _rows(
    conn: Connection, user: str | None, after: Position, limit: int
) -> tuple[Rows, bool]:
    """The next ``limit`` rows after ``after``, and whether more follow."""
    phase, key_ns, after_id = after
    scoped = user is not None
    found: Rows = []
    if phase == DATED:
        params: dict[str, Any] = {"user": user, "limit": limit + 1}
        if key_ns is not None:
            seconds, nanosecond = divmod(key_ns, _NS_PER_S)
            params.update(seconds=seconds, nanosecond=nanosecond, id=after_id)
        statement = cypher.LIST_DATED[scoped, key_ns is not None]
        found = await conn.run_read(statement, **params)
        if len(found) > limit:
            return found[:limit], True
        after_id = None  # the dated ones ran out: the undated ones follow, from the start
    # One more than what is missing: to tell whether another page follows.
    rest = await conn.run_read(
        cypher.LIST_UNDATED[scoped], user=user, id=after_id, limit=limit - len(found) + 1
    )
    rows = found + rest
    return rows[:limit], len(rows) > limit


def _position(row: dict[str, Any]) -> Position:
    conversation = row["conversation"]
    ms, ns = row.get("key_ms"), row.get("key_ns")
    if conversation.get("updated_at_us") is None or ms is None or ns is None:
        return UNDATED, None, str(conversation["id"])
    return DATED, ms * _NS_PER_MS + ns % _NS_PER_MS, str(conversation["id"])


def _cursor(row: dict[str, Any]) -> str:
    phase, key_ns, conversation_id = _position(row)
    if phase == UNDATED:
        return encode_cursor(CURSOR_KIND, [UNDATED, conversation_id])
    return encode_cursor(CURSOR_KIND, [DATED, key_ns, conversation_id])


def _after(cursor: str | None) -> Position:
    """(phase, key in nanoseconds, id) after which the page starts."""
    if cursor is None:
        return DATED, None, None
    value = decode_cursor(CURSOR_KIND, cursor)
    if not isinstance(value, list) or not value or type(value[0]) is not int:
        raise cursor_error()
    if value[0] == DATED and len(value) == 3:
        _, key_ns, conversation_id = value
        if isinstance(key_ns, bool) or not isinstance(key_ns, int) or abs(key_ns) > _NS_RANGE:
            raise cursor_error()
        return DATED, key_ns, _id(conversation_id)
    if value[0] == UNDATED and len(value) == 2:
        return UNDATED, None, _id(value[1])
    raise cursor_error()


def _id(value: Any) -> str:
    """A conversation id of a cursor: a UUID another writer may have spelt its own way
    (the order compares the stored string), so it is kept as written."""
    if not isinstance(value, str) or parse_uuid(value) is None:
        raise cursor_error()
    return value
