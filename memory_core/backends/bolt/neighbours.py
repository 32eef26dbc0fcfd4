"""The messages around search hits (``message_neighbours``), every hit in one statement,
in the order reads use (:func:`.cypher.around`)."""

from __future__ import annotations

from memory_core.store import Message
from memory_core.store import requests as rq

from . import cypher
from .records import read_message
from .session import Connection


async def neighbours(conn: Connection, req: rq.MessageNeighbours) -> list[list[Message]]:
    """The ``message_neighbours`` hook: around each message of the tenant, the
    ``req.count`` messages before and after it, oldest first, itself among them."""
    ids = [str(message_id) for message_id in req.message_ids]
    found = await conn.run_read(cypher.around(req.count), ids=ids, tenant=req.tenant)
    windows: list[list[Message]] = [[] for _ in ids]
    for row in found:
        window = (
            read_message(
                props, conversation_id=row["conversation_id"], session_id=row["session_id"]
            )
            for props in row["messages"]
        )
        windows[row["i"]] = [message for message in window if message is not None]
    return windows
