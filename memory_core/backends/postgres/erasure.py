"""``forget_user`` on PostgreSQL: bounded transactions, one conversation at a time.

The same plan as the embedded backend's: each transaction deletes at most
``batch_size`` messages of one of the user's conversations (with their mentions), or
the conversation once it is empty. On a single-tenant store an entity whose last mention
went in that transaction goes in it too; a multi-tenant store's entities belong to the
tenant and go last.
One call erases what the user has when it starts (the conversations then listed, their
messages numbered below their ``next_seq`` of then, the tenant's entities created by
then): what the user's writers add meanwhile is left to the next call
(``Erased.remaining``), so a call ends even while they keep writing.
A delete removes rows from every query, not from the files: the row versions stay in the
table's file after ``VACUUM`` too (until a later write reuses their space), and the GIN
index on ``words`` keeps every word it ever held. The store's ``forget_user`` ends by
rebuilding the planner statistics, which hold sampled values
(:func:`.residue.refresh_statistics`); :func:`.residue.purge` (``memory-core
postgres-schema URL --purge``) rewrites the files.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

from memory_core.store import Erased
from memory_core.store import requests as rq

from .tx import Tx

Run = Callable[[Callable[[Tx], Awaitable[Any]]], Awaitable[Any]]


async def forget_user(run: Run, req: rq.ForgetUser) -> Erased:
    """Erase ``req``'s user; ``run(work)`` runs ``work`` in one write transaction."""
    erased = Erased()
    started = datetime.now(UTC)
    for conversation, cut in await run(partial(_conversations, req=req)):
        step = partial(_step, req=req, conversation=conversation, cut=cut)
        while True:
            counts: dict[str, int] = await run(step)
            for kind, count in counts.items():
                erased.add(kind, count)
            if "conversations" in counts:
                break
    if req.tenant is not None:
        await _tenant_entities(run, req, started, erased)
    erased.remaining = await run(partial(_remaining, req=req))
    return erased


async def _tenant_entities(run: Run, req: rq.ForgetUser, cut: datetime, erased: Erased) -> None:
    """The tenant's entities created by ``cut``, in batches: as many as there were
    entities when it started, at most."""
    total: int = await run(partial(_count_entities, req=req))
    for _ in range(-(-total // req.batch_size)):
        gone: int = await run(partial(_entities, req=req, cut=cut))
        erased.add("entities", gone)
        if not gone:
            return


def _owned(req: rq.ForgetUser) -> tuple[str, tuple[str | None, ...]]:
    """The condition (on ``conversations``) and parameters that select the user's."""
    if req.tenant is not None:
        return "tenant = %s", (req.tenant,)
    return "tenant = '' AND user_identifier = %s", (req.user_identifier,)


async def _conversations(tx: Tx, req: rq.ForgetUser) -> list[tuple[Any, int]]:
    """The user's conversations now, each with the ``seq`` its next message will get."""
    where, params = _owned(req)
    rows = await tx.rows(f"SELECT id, next_seq FROM {{s}}.conversations WHERE {where}", params)
    return [(row[0], row[1]) for row in rows]


async def _remaining(tx: Tx, req: rq.ForgetUser) -> bool:
    """Whether the user has a conversation (or, multi-tenant, an entity) now."""
    where, params = _owned(req)
    query = f"SELECT EXISTS (SELECT 1 FROM {{s}}.conversations WHERE {where})"
    if req.tenant is not None:
        query += " OR EXISTS (SELECT 1 FROM {s}.entities WHERE tenant = %s)"
        params = (req.tenant, req.tenant)
    row = await tx.row(query, params)
    return bool(row and row[0])


async def _step(tx: Tx, req: rq.ForgetUser, conversation: Any, cut: int) -> dict[str, int]:
    """One transaction: a batch of ``conversation``'s messages numbered below ``cut``,
    or, once none is left, the conversation if it holds no message (one written since
    keeps it for the next call; the counts then hold ``conversations``)."""
    batch = await tx.rows(
        "SELECT id, idempotency_key IS NOT NULL FROM {s}.messages WHERE conversation_id = %s "
        "AND seq < %s ORDER BY seq DESC LIMIT %s FOR UPDATE",
        (conversation, cut, req.batch_size),
    )
    if not batch:
        gone = await tx.run(
            "DELETE FROM {s}.conversations c WHERE c.id = %s "
            "AND NOT EXISTS (SELECT 1 FROM {s}.messages m WHERE m.conversation_id = c.id)",
            (conversation,),
        )
        return {"conversations": gone}
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


async def _count_entities(tx: Tx, req: rq.ForgetUser) -> int:
    row = await tx.row("SELECT count(*) FROM {s}.entities WHERE tenant = %s", (req.tenant,))
    return int(row[0]) if row else 0


async def _entities(tx: Tx, req: rq.ForgetUser, cut: datetime) -> int:
    """One batch of a multi-tenant store's entities of the tenant created by ``cut``; how
    many went."""
    return await tx.run(
        "DELETE FROM {s}.entities WHERE id IN (SELECT id FROM {s}.entities "
        "WHERE tenant = %s AND created_at <= %s LIMIT %s)",
        (req.tenant, cut, req.batch_size),
    )
