"""A conversation's newest messages and the conversation, in one statement.

The read runs outside a transaction block (one snapshot, one round trip) and walks the
``(conversation_id, seq)`` index backwards from the end, so its cost does not grow with
the conversation's length. A ``session_id`` that is a conversation id's canonical text
takes the transactional path of :mod:`.messages` (see :func:`.single.covers`).

The limit is written into the statement, not passed as a parameter. psycopg prepares a
statement run often, and PostgreSQL then runs it with a generic plan once that plan costs
no more than the ones made for the parameters. With ``LIMIT $1`` the generic plan cannot
know the limit and costs it as a tenth of the conversation's rows: in a conversation of
1,000 messages 45 of 50 reads used the generic plan, in one of 100,000 none did, and each
read was planned anew (0.72 ms a read, raw psycopg). With the limit written in, the
generic plan is used at both sizes (0.43 ms).
"""

from __future__ import annotations

from memory_core.store import Conversation
from memory_core.store import requests as rq

from . import conversations
from .codec import sql_int
from .rows import CONVERSATION_COLUMNS, MESSAGE_COLUMNS, newest, to_conversation
from .tx import Tx

# The message columns named for r.*, less what a read does not parse (NULL instead): the
# conversation's id and session, and the row number. The conversation's columns are
# only on one row. Each value costs the driver time to parse, a hundred times over on a
# newest-100 read.
_LATERAL = (
    MESSAGE_COLUMNS.replace("m.conversation_id", "NULL::uuid AS conversation_id")
    .replace("c.session_id", "NULL::text AS session_id")
    .replace("m.num", "NULL::bigint AS num")
    + " AS mentions"
)
_ONCE = ", ".join(
    f"CASE WHEN row_number() OVER () = 1 THEN {column.strip()} END AS {column.strip()[2:]}"
    for column in CONVERSATION_COLUMNS.split(",")
)
_READ = (
    f"SELECT {_ONCE}, r.* FROM {{s}}.conversations c "
    f"LEFT JOIN LATERAL (SELECT m.seq AS seq_, {_LATERAL} FROM {{s}}.messages m "
    "WHERE m.conversation_id = c.id{since} ORDER BY m.seq DESC LIMIT {limit}) r ON true "
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
    params += [conversations.tenant_key(target.tenant), value]
    limit = str(sql_int(req.limit))  # a literal: see the module docstring
    sql = _READ.replace("{since}", since).replace("{key}", key).replace("{limit}", limit)
    rows = await tx.rows(sql, params)
    if not rows:
        if target.session_id is None:
            raise conversations.unknown(target)
        return conversations.missing(target)
    [conversation] = [row for row in rows if row[0] is not None]  # see _ONCE
    cid, session_id = conversation[0], conversation[1]
    messages = newest(reversed(rows), _WIDTH, cid, session_id)
    return to_conversation(conversation, messages)
