"""``forget_user`` on PostgreSQL: bounded transactions, one conversation at a time.

The same plan as the embedded backend's: each transaction deletes at most
``batch_size`` messages of one of the user's conversations (with their mentions; the
GIN index on ``words`` loses their entries with the rows), or the conversation once it
is empty. On a single-tenant store an entity whose last mention went in that transaction
goes in it too; a multi-tenant store's entities belong to the tenant and go last.
Deleted row versions stay on disk until the table is vacuumed (autovacuum does it; run
``VACUUM`` to make it happen now).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from memory_core.store import Erased
from memory_core.store import requests as rq

from .tx import Tx

Run = Callable[[Callable[[Tx], Awaitable[Any]]], Awaitable[Any]]


async def forget_user(run: Run, req: rq.ForgetUser) -> Erased:
    """Erase ``req``'s user; ``run(work)`` runs ``work`` in one write transaction."""
    erased = Erased()
    while True:
        counts: dict[str, int] | None = await run(lambda tx: _step(tx, req))
        if counts is None:
            break
        for kind, count in counts.items():
            erased.add(kind, count)
    if req.tenant is not None:
        while gone := await run(lambda tx: _entities(tx, req)):
            erased.add("entities", gone)
    return erased


async def _step(tx: Tx, req: rq.ForgetUser) -> dict[str, int] | None:
    """One transaction: a batch of one conversation's messages, or the conversation once
    empty. ``None`` when the user has no conversation left."""
    if req.tenant is not None:
        row = await tx.row(
            "SELECT id FROM {s}.conversations WHERE tenant = %s LIMIT 1", (req.tenant,)
        )
    else:
        row = await tx.row(
            "SELECT id FROM {s}.conversations WHERE tenant = '' AND user_identifier = %s LIMIT 1",
            (req.user_identifier,),
        )
    if row is None:
        return None
    batch = await tx.rows(
        "SELECT id, idempotency_key IS NOT NULL FROM {s}.messages WHERE conversation_id = %s "
        "ORDER BY seq DESC LIMIT %s FOR UPDATE",
        (row[0], req.batch_size),
    )
    if not batch:
        await tx.run("DELETE FROM {s}.conversations WHERE id = %s", (row[0],))
        return {"conversations": 1}
    ids = [r[0] for r in batch]
    linked = [
        r[0]
        for r in await tx.rows(
            "SELECT DISTINCT entity_id FROM {s}.mentions WHERE message_id = ANY(%s)", (ids,)
        )
    ]
    mentions = await tx.run("DELETE FROM {s}.mentions WHERE message_id = ANY(%s)", (ids,))
    await tx.run("DELETE FROM {s}.messages WHERE id = ANY(%s)", (ids,))
    orphans = 0
    if req.tenant is None and linked:
        orphans = await tx.run(
            "DELETE FROM {s}.entities e WHERE e.tenant = '' AND e.id = ANY(%s) "
            "AND NOT EXISTS (SELECT 1 FROM {s}.mentions m WHERE m.entity_id = e.id)",
            (linked,),
        )
    return {
        "messages": len(batch),
        "mentions": mentions,
        "idempotency_keys": sum(1 for r in batch if r[1]),
        "entities": orphans,
    }


async def _entities(tx: Tx, req: rq.ForgetUser) -> int:
    """One batch of a multi-tenant store's entities of the tenant; how many went."""
    return await tx.run(
        "DELETE FROM {s}.entities WHERE id IN "
        "(SELECT id FROM {s}.entities WHERE tenant = %s LIMIT %s)",
        (req.tenant, req.batch_size),
    )
