"""``forget_user`` on NAMS: what the wire allows.

The hosted contract has one delete that reaches a user's data: ``DELETE
/conversations/{id}``. The adapter reads the whole listing of the user's conversations
(``GET /conversations?userId=…``, page by page, before deleting anything) and deletes
each, then drops the user's names from the portable-name cache and the optional SQLite
index. What the service keeps that no request can reach is reported in ``not_reached``.

One call deletes what the listing held when it was read. If the first page then lists a
conversation this call did not delete (the user's writers made it meanwhile), the call
says so (``Erased.remaining``) and is called again; a service that still lists a
conversation it deleted does not count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_core.store import Erased, NotFoundError, StoreError
from memory_core.store import nams_wire as wire
from memory_core.store import requests as rq

from .sessions import SessionNames, name_in, parse_page, portable_id

if TYPE_CHECKING:
    from .transport import NamsTransport

NOT_REACHED = [
    "entities (POST /entities): the service keeps them per workspace with no user, so "
    "which are the user's is unknown (delete_entity deletes one by id)",
    "observations, reflections and extraction records the service derived from the "
    "user's messages: no endpoint deletes them; whether deleting a conversation removes "
    "them is up to the service",
    "conversations created without a userId: the service cannot list them by user",
    "message counts: the service deletes a conversation's messages with it and does "
    "not say how many there were",
]

PAGES = 100_000  # a listing whose cursors never end stops the run


async def forget_user(
    http: NamsTransport, names: SessionNames | None, req: rq.ForgetUser
) -> Erased:
    """Delete every conversation the service lists for the user; purge the names."""
    user = req.user_identifier
    assert user is not None
    erased = Erased(counts={"conversations": 0, "session_names": 0}, not_reached=NOT_REACHED)
    deleted: set[str] = set()
    for header in await _listing(http, user):
        deleted.add(header["id"])
        if await _delete(http, header["id"]):
            erased.add("conversations", 1)
        erased.add("session_names", _forget_name(names, header, user))
    if names is not None:
        erased.add("session_names", names.forget_user(user))
    first = (await _page(http, user, None)).get("conversations", [])
    erased.remaining = any(h["id"] not in deleted for h in first)
    return erased


async def _listing(http: NamsTransport, user: str) -> list[dict[str, Any]]:
    """Every conversation the service lists for ``user``, each once, page by page."""
    found: dict[str, dict[str, Any]] = {}
    cursor: str | None = None
    for _ in range(PAGES):
        page = await _page(http, user, cursor)
        for header in page.get("conversations", []):
            found.setdefault(header["id"], header)
        cursor = page.get("next_cursor")
        if not cursor or not page.get("conversations"):
            return list(found.values())
    raise StoreError("nams: the service's listing of the user's conversations did not end")


async def _page(http: NamsTransport, user: str, cursor: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {"limit": wire.MAX_PAGE, "userId": user}
    if cursor:
        params["cursor"] = cursor
    body = await http.send("GET", wire.CONVERSATIONS, operation="forget_user", params=params)
    return parse_page(body, "GET", wire.CONVERSATIONS)


async def _delete(http: NamsTransport, server_id: str) -> bool:
    route = wire.path(wire.CONVERSATION, conversation_id=server_id)
    try:
        await http.send("DELETE", route, operation="forget_user")
    except NotFoundError:
        return False  # gone already (a re-run, or another process)
    return True


def _forget_name(names: SessionNames | None, header: dict[str, Any], user: str) -> int:
    """Drop the conversation's portable name from the cache and the index: 1 when it had
    one (cache entries and index rows are cheap to look up, so none is counted twice)."""
    name = None if names is None else name_in(header.get("metadata") or {})
    if names is None or name is None:
        return 0
    names.forget(name, user, portable_id(name, user))
    return 1
