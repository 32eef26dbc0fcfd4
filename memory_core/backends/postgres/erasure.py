"""``forget_user`` on PostgreSQL: bounded transactions, one conversation at a time.

The same plan as the embedded backend's: first the user's traces, ``batch_size`` of them
per transaction with their steps, tool calls and links (see :func:`_trace_batch`); then
the user's preferences and facts (on a multi-tenant store every long-term record of the
tenant, relationships too) in batches of ``batch_size``. Then each transaction deletes
at most ``batch_size`` messages of one of the user's conversations (with their
mentions), or the conversation once it is empty. On a single-tenant store an entity
whose last mention went in that transaction goes in it too, with its relationships,
unless another user's preference or trace links it. A multi-tenant store's entities
belong to the tenant and go last.
One call erases what the user has when it starts (the conversations then listed, their
messages numbered below their ``next_seq`` of then, the traces, long-term records and
the tenant's entities created by then): what the user's writers add meanwhile is left to the
next call (``Erased.remaining``), so a call ends even while they keep writing.
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
# The user's long-term rows, deleted in batches before the conversations.
LONG_TERM = ("preferences", "facts", "relationships")


async def forget_user(run: Run, req: rq.ForgetUser) -> Erased:
    """Erase ``req``'s user; ``run(work)`` runs ``work`` in one write transaction."""
    erased = Erased()
    started = datetime.now(UTC)
    await _traces(run, req, started, erased)
    for table in LONG_TERM:
        await _long_term(run, req, table, started, erased)
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


async def _long_term(
    run: Run, req: rq.ForgetUser, table: str, cut: datetime, erased: Erased
) -> None:
    """The user's rows of ``table`` created by ``cut``, in batches: as many as there were
    rows when it started, at most. A single-tenant store's relationships are not the
    user's: they go with the user's entities (see :func:`_step`)."""
    if table == "relationships" and req.tenant is None:
        return
    total: int = await run(partial(_count_long_term, req=req, table=table))
    for _ in range(-(-total // req.batch_size)):
        gone: int = await run(partial(_long_term_batch, req=req, table=table, cut=cut))
        erased.add(table, gone)
        if not gone:
            return


async def _traces(run: Run, req: rq.ForgetUser, cut: datetime, erased: Erased) -> None:
    """The user's traces started by ``cut``, in batches: as many as there were traces
    when it started, at most."""
    total: int = await run(partial(_count_long_term, req=req, table="traces"))
    for _ in range(-(-total // req.batch_size)):
        counts: dict[str, int] = await run(partial(_trace_batch, req=req, cut=cut))
        for kind, count in counts.items():
            erased.add(kind, count)
        if not counts["traces"]:
            return


async def _trace_batch(tx: Tx, req: rq.ForgetUser, cut: datetime) -> dict[str, int]:
    """One transaction: a batch of the user's traces, locked first (a step waits for its
    trace), then their steps, locked (a tool call waits for its step), their tool calls,
    the steps and the traces (their links go with them: ``ON DELETE CASCADE``)."""
    where, params = _owned(req)
    traces = [
        row[0]
        for row in await tx.rows(
            f"SELECT id FROM {{s}}.traces WHERE {where} AND created_at <= %s LIMIT %s FOR UPDATE",
            (*params, cut, req.batch_size),
        )
    ]
    steps = [
        row[0]
        for row in await tx.rows(
            "SELECT id FROM {s}.steps WHERE trace_id = ANY(%s::text[]) FOR UPDATE", (traces,)
        )
    ]
    calls = await tx.run("DELETE FROM {s}.tool_calls WHERE step_id = ANY(%s::text[])", (steps,))
    gone = await tx.run("DELETE FROM {s}.steps WHERE id = ANY(%s::text[])", (steps,))
    return {
        "traces": await tx.run("DELETE FROM {s}.traces WHERE id = ANY(%s::text[])", (traces,)),
        "steps": gone,
        "tool_calls": calls,
    }


async def _count_long_term(tx: Tx, req: rq.ForgetUser, table: str) -> int:
    where, params = _owned(req)
    row = await tx.row(f"SELECT count(*) FROM {{s}}.{table} WHERE {where}", params)
    return int(row[0]) if row else 0


async def _long_term_batch(tx: Tx, req: rq.ForgetUser, table: str, cut: datetime) -> int:
    """One batch of the user's rows of ``table`` created by ``cut``; how many went (their
    links to entities go with them: ``ON DELETE CASCADE``)."""
    where, params = _owned(req)
    return await tx.run(
        f"DELETE FROM {{s}}.{table} WHERE id IN (SELECT id FROM {{s}}.{table} "
        f"WHERE {where} AND created_at <= %s LIMIT %s)",
        (*params, cut, req.batch_size),
    )


async def _tenant_entities(run: Run, req: rq.ForgetUser, cut: datetime, erased: Erased) -> None:
    """The tenant's entities created by ``cut``, in batches: as many as there were
    entities when it started, at most."""
    total: int = await run(partial(_count_entities, req=req))
    for _ in range(-(-total // req.batch_size)):
        gone, links = await run(partial(_entities, req=req, cut=cut))
        erased.add("entities", gone)
        erased.add("relationships", links)
        if not gone:
            return


def _owned(req: rq.ForgetUser) -> tuple[str, tuple[str | None, ...]]:
    """The condition (on ``conversations``, ``traces``, ``preferences`` or ``facts``, and
    on a multi-tenant store ``relationships`` and ``entities``) and parameters that select
    the user's."""
    if req.tenant is not None:
        return "tenant = %s", (req.tenant,)
    return "tenant = '' AND user_identifier = %s", (req.user_identifier,)


async def _conversations(tx: Tx, req: rq.ForgetUser) -> list[tuple[Any, int]]:
    """The user's conversations now, each with the ``seq`` its next message will get."""
    where, params = _owned(req)
    rows = await tx.rows(f"SELECT id, next_seq FROM {{s}}.conversations WHERE {where}", params)
    return [(row[0], row[1]) for row in rows]


async def _remaining(tx: Tx, req: rq.ForgetUser) -> bool:
    """Whether the user has a conversation, a trace, a preference or a fact (or,
    multi-tenant, an entity) now."""
    where, params = _owned(req)
    tables = ["conversations", "traces", "preferences", "facts"]
    if req.tenant is not None:
        tables.append("entities")
    query = " OR ".join(f"EXISTS (SELECT 1 FROM {{s}}.{t} WHERE {where})" for t in tables)
    row = await tx.row(f"SELECT {query}", params * len(tables))
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
    orphans = links = 0
    if req.tenant is None and linked:
        orphans, links = await _orphans(tx, linked)
    return {
        "messages": len(batch),
        "mentions": mentions,
        "idempotency_keys": sum(1 for r in batch if r[1]),
        "entities": orphans,
        "relationships": links,
    }


async def _orphans(tx: Tx, linked: list[Any]) -> tuple[int, int]:
    """Delete the single-tenant entities of ``linked`` no message mentions any more (see
    :func:`_deleted_with_links`)."""
    return await _deleted_with_links(
        tx,
        "DELETE FROM {s}.entities e WHERE e.tenant = '' AND e.id = ANY(%s) "
        "AND NOT EXISTS (SELECT 1 FROM {s}.mentions m WHERE m.entity_id = e.id) "
        "AND NOT EXISTS (SELECT 1 FROM {s}.preference_entities p WHERE p.entity_id = e.id) "
        "AND NOT EXISTS (SELECT 1 FROM {s}.trace_entities t WHERE t.entity_id = e.id) "
        "RETURNING e.id",
        (linked,),
    )


async def _deleted_with_links(tx: Tx, delete: str, params: tuple[Any, ...]) -> tuple[int, int]:
    """Run ``delete`` (of entities, returning their ids): how many entities went, and how
    many relationships with them (``ON DELETE CASCADE``). The statement's query counts
    them in its snapshot, from before its delete."""
    row = await tx.row(
        f"WITH gone AS ({delete}) SELECT (SELECT count(*) FROM gone), (SELECT count(*) "
        "FROM {s}.relationships r WHERE r.source_id IN (SELECT id FROM gone) "
        "OR r.target_id IN (SELECT id FROM gone))",
        params,
    )
    assert row is not None
    return int(row[0]), int(row[1])


async def _count_entities(tx: Tx, req: rq.ForgetUser) -> int:
    row = await tx.row("SELECT count(*) FROM {s}.entities WHERE tenant = %s", (req.tenant,))
    return int(row[0]) if row else 0


async def _entities(tx: Tx, req: rq.ForgetUser, cut: datetime) -> tuple[int, int]:
    """One batch of a multi-tenant store's entities of the tenant created by ``cut``; how
    many went, and the relationships written since the cut that went with them."""
    return await _deleted_with_links(
        tx,
        "DELETE FROM {s}.entities WHERE id IN (SELECT id FROM {s}.entities "
        "WHERE tenant = %s AND created_at <= %s LIMIT %s) RETURNING id",
        (req.tenant, cut, req.batch_size),
    )
