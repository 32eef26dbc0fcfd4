"""``stats`` on PostgreSQL: aggregate queries, and the size of the schema's tables.

The same counts as the embedded store's (see :mod:`memory_core.stats`): per user the
conversations and their messages (``GROUP BY`` over the conversations and the messages'
``(conversation_id, seq)`` index), the entities of a tenant, or on a single-tenant store
the entities only one user's messages mention; preferences and facts by their user (a
tenant's on a multi-tenant store), relationships by tenant on a multi-tenant store and in
the total only otherwise, reasoning traces like preferences. The size is ``pg_total_relation_size``
(table, indexes and TOAST) summed over the tables of the store's schema.
"""

from __future__ import annotations

from typing import Any

from memory_core.store import LongTermCounts, StatsTotal, StoreStats, merge_counts, only_user
from memory_core.store import requests as rq

from .tx import Tx

# Single-tenant entities mentioned by the messages of exactly one user, by no message of
# a conversation without a user or of a tenant, and linked by no other's preference
# or trace (what forget_user deletes with that user): (user, entities) rows.
_SOLE_MENTIONS = """
SELECT owner, count(*) FROM (
    SELECT mn.entity_id AS entity, min(c.user_identifier) AS owner
    FROM {{s}}.mentions mn
    JOIN {{s}}.entities e ON e.id = mn.entity_id AND e.tenant = ''
    JOIN {{s}}.messages m ON m.id = mn.message_id
    JOIN {{s}}.conversations c ON c.id = m.conversation_id
    {where}
    GROUP BY mn.entity_id
    HAVING count(DISTINCT (c.tenant, coalesce(c.user_identifier, ''))) = 1
        AND max(c.tenant) = '' AND min(c.user_identifier) IS NOT NULL
) sole
WHERE NOT EXISTS (
    SELECT 1 FROM {{s}}.preference_entities pe JOIN {{s}}.preferences p ON p.id = pe.preference_id
    WHERE pe.entity_id = sole.entity
      AND (p.tenant <> '' OR p.user_identifier IS DISTINCT FROM sole.owner)
) AND NOT EXISTS (
    SELECT 1 FROM {{s}}.trace_entities te JOIN {{s}}.traces t ON t.id = te.trace_id
    WHERE te.entity_id = sole.entity
      AND (t.tenant <> '' OR t.user_identifier IS DISTINCT FROM sole.owner)
)
GROUP BY owner
"""

_MENTIONED_BY_USER = """
WHERE mn.entity_id IN (
    SELECT mu.entity_id FROM {s}.conversations cu
    JOIN {s}.messages mm ON mm.conversation_id = cu.id
    JOIN {s}.mentions mu ON mu.message_id = mm.id
    WHERE cu.tenant = '' AND cu.user_identifier = %s
)
"""

_SIZE = """
SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relkind IN ('r', 'p')
"""


async def stats(tx: Tx, req: rq.Stats, multi_tenant: bool, name: str, traces: bool) -> StoreStats:
    """The counts of ``req`` and the size of the store's tables; ``traces``: whether the
    store claims the flag (its traces are counted, else ``None``)."""
    conversations = await _conversations(tx, req.user, multi_tenant)
    entities = await (
        _tenant_entities(tx, req.user) if multi_tenant else _user_entities(tx, req.user)
    )
    long_term = await _long_term(tx, req.user, multi_tenant, traces)
    rows = merge_counts(conversations, entities, long_term)
    if req.user is not None:
        rows = only_user(rows, req.user, long_term)
    size = await tx.row(_SIZE, (tx.schema,))
    return StoreStats(
        backend=name,
        scope="tenant" if multi_tenant else "user",
        users=rows,
        total=None if req.user is not None else await _total(tx, multi_tenant, traces),
        size_bytes=int(size[0]) if size else None,
    )


async def _conversations(
    tx: Tx, user: str | None, multi_tenant: bool
) -> dict[str | None, tuple[int, int | None]]:
    """{user: (conversations, messages)} of every user, or of ``user`` only."""
    owner = "c.tenant" if multi_tenant else "c.user_identifier"
    where = "c.tenant <> ''" if multi_tenant else "c.tenant = ''"
    params: tuple[Any, ...] = ()
    if user is not None:
        where += f" AND {owner} = %s"
        params = (user,)
    found = await tx.rows(
        f"SELECT {owner}, count(*), coalesce(sum((SELECT count(*) FROM {{s}}.messages m "
        f"WHERE m.conversation_id = c.id)), 0) FROM {{s}}.conversations c WHERE {where} "
        f"GROUP BY {owner}",
        params,
    )
    return {row[0]: (int(row[1]), int(row[2])) for row in found}


async def _long_term(tx: Tx, user: str | None, multi_tenant: bool, traces: bool) -> LongTermCounts:
    """{kind: {user: count}} of preferences and facts, traces (with ``traces``), and a
    multi-tenant store's relationships."""
    owner = "tenant" if multi_tenant else "user_identifier"
    where = "tenant <> ''" if multi_tenant else "tenant = ''"
    params: tuple[Any, ...] = ()
    if user is not None:
        where += f" AND {owner} = %s"
        params = (user,)
    kinds = ["preferences", "facts", *(["relationships"] if multi_tenant else [])]
    if traces:
        kinds.append("traces")
    counts: LongTermCounts = {}
    for kind in kinds:
        found = await tx.rows(
            f"SELECT {owner}, count(*) FROM {{s}}.{kind} WHERE {where} GROUP BY {owner}", params
        )
        counts[kind] = {row[0]: int(row[1]) for row in found}
    return counts


async def _tenant_entities(tx: Tx, user: str | None) -> dict[str | None, int]:
    if user is not None:
        row = await tx.row("SELECT count(*) FROM {s}.entities WHERE tenant = %s", (user,))
        return {user: int(row[0]) if row else 0}
    found = await tx.rows(
        "SELECT tenant, count(*) FROM {s}.entities WHERE tenant <> '' GROUP BY tenant"
    )
    return {row[0]: int(row[1]) for row in found}


async def _user_entities(tx: Tx, user: str | None) -> dict[str | None, int]:
    if user is None:
        found = await tx.rows(_SOLE_MENTIONS.format(where=""))
    else:
        found = await tx.rows(_SOLE_MENTIONS.format(where=_MENTIONED_BY_USER), (user,))
    return {row[0]: int(row[1]) for row in found}


async def _total(tx: Tx, multi_tenant: bool, traces: bool) -> StatsTotal:
    scope = "tenant <> ''" if multi_tenant else "tenant = ''"
    row = await tx.row(
        f"SELECT (SELECT count(*) FROM {{s}}.conversations WHERE {scope}), "
        "(SELECT count(*) FROM {s}.messages m JOIN {s}.conversations c "
        f"ON c.id = m.conversation_id WHERE c.{scope}), "
        f"(SELECT count(*) FROM {{s}}.entities WHERE {scope}), "
        f"(SELECT count(*) FROM {{s}}.preferences WHERE {scope}), "
        f"(SELECT count(*) FROM {{s}}.facts WHERE {scope}), "
        f"(SELECT count(*) FROM {{s}}.relationships WHERE {scope}), "
        f"(SELECT count(*) FROM {{s}}.traces WHERE {scope})"
    )
    assert row is not None
    counts = [int(value) for value in row]
    return StatsTotal(
        conversations=counts[0],
        messages=counts[1],
        entities=counts[2],
        preferences=counts[3],
        facts=counts[4],
        relationships=counts[5],
        traces=counts[6] if traces else None,
    )
