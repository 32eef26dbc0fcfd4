"""The messages around search hits (``message_neighbours``), every hit in one statement.

Each hit's window is two seeks on the ``(conversation_id, seq)`` index: the hit and the
messages before it, newest first, and the messages after it, oldest first.
"""

from __future__ import annotations

from memory_core.store import Message
from memory_core.store import requests as rq

from . import conversations
from .codec import sql_int
from .rows import MESSAGE_COLUMNS, read_messages
from .tx import Tx

_AROUND = (
    f"SELECT {MESSAGE_COLUMNS}, h.ord "
    "FROM unnest(%s::uuid[]) WITH ORDINALITY AS h(id, ord) "
    "JOIN {s}.messages hit ON hit.id = h.id "
    "JOIN {s}.conversations c ON c.id = hit.conversation_id AND c.tenant = %s "
    "CROSS JOIN LATERAL ("
    "(SELECT b.* FROM {s}.messages b WHERE b.conversation_id = hit.conversation_id "
    "AND b.seq <= hit.seq ORDER BY b.seq DESC LIMIT %s) UNION ALL "
    "(SELECT a.* FROM {s}.messages a WHERE a.conversation_id = hit.conversation_id "
    "AND a.seq > hit.seq ORDER BY a.seq ASC LIMIT %s)) m "
    "ORDER BY h.ord, m.seq"
)


async def neighbours(tx: Tx, req: rq.MessageNeighbours) -> list[list[Message]]:
    """The ``message_neighbours`` hook: around each message of the tenant, the
    ``req.count`` messages before and after it in its conversation, oldest first, itself
    among them."""
    ids = list(req.message_ids)
    tenant = conversations.tenant_key(req.tenant)
    count = sql_int(req.count)
    rows = await tx.rows(_AROUND, [ids, tenant, sql_int(req.count + 1), count])
    windows: list[list[tuple[object, ...]]] = [[] for _ in ids]
    for row in rows:
        windows[int(row[-1]) - 1].append(row[:-1])
    return [read_messages(window) for window in windows]
