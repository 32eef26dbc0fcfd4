"""``stats`` on NAMS: what the listing says.

The hosted contract counts nothing: the adapter walks ``GET /conversations`` (with
``userId`` for one user), 200 headers a request, and counts the conversations per
``userId``. A header does not say how many messages its conversation holds, and entities
are per workspace, not per user, so those counts are ``None``, as is the size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_core.store import StatsTotal, StoreError, StoreStats, merge_counts
from memory_core.store import nams_wire as wire
from memory_core.store import requests as rq

from .sessions import parse_page

if TYPE_CHECKING:
    from .transport import NamsTransport

PAGES = 100_000  # a listing whose cursors never end stops the run


async def stats(http: NamsTransport, req: rq.Stats, name: str) -> StoreStats:
    """Conversations per user, from the listing."""
    counts: dict[str | None, tuple[int, int | None]] = {}
    for user in await _owners(http, req.user):
        counts[user] = (counts.get(user, (0, None))[0] + 1, None)
    if req.user is not None:
        counts = {req.user: (counts.get(req.user, (0, None))[0], None)}
    rows = merge_counts(counts, None)
    total = None
    if req.user is None:
        total = StatsTotal(
            conversations=sum(r.conversations for r in rows), messages=None, entities=None
        )
    return StoreStats(backend=name, scope="user", users=rows, total=total, size_bytes=None)


async def _owners(http: NamsTransport, user: str | None) -> list[str | None]:
    """The ``userId`` of every conversation the listing holds (of ``user`` when given),
    each conversation once."""
    found: dict[str, str | None] = {}
    cursor: str | None = None
    for _ in range(PAGES):
        params: dict[str, Any] = {"limit": wire.MAX_PAGE}
        if user is not None:
            params["userId"] = user
        if cursor:
            params["cursor"] = cursor
        body = await http.send("GET", wire.CONVERSATIONS, operation="stats", params=params)
        page = parse_page(body, "GET", wire.CONVERSATIONS)
        for header in page.get("conversations", []):
            found.setdefault(header["id"], header.get("user_id"))
        cursor = page.get("next_cursor")
        if not cursor or not page.get("conversations"):
            return list(found.values())
    raise StoreError("nams: the service's listing of conversations did not end")
