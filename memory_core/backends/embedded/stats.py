"""``stats`` on SQLite: aggregate queries over the indexes, and the file's size.

Per user: conversations and their messages (``GROUP BY`` over the conversations and the
messages' ``(conversation_id, seq)`` index); entities: a multi-tenant store's by tenant, a
single-tenant store's by the one user whose messages alone mention them (what
``forget_user`` deletes with that user). Preferences and facts by their user (a
multi-tenant store's by tenant), relationships by tenant on a multi-tenant store and in
the total only otherwise; reasoning traces like preferences, where the store claims
``traces``. One user's counts read only that user's rows.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memory_core.store import LongTermCounts, StatsTotal, StoreStats, merge_counts, only_user
from memory_core.store import requests as rq

# The user a mention belongs to: its conversation's tenant and user, as one value (ids
# hold no control character, so char(1) cannot occur in either).
_OWNER = "c.tenant || char(1) || coalesce(c.user_identifier, char(2))"

# Single-tenant entities mentioned by the messages of exactly one user, by no message of
# a conversation without a user or of a tenant, and linked by no other's preference (what
# forget_user deletes with that user): {user: entities}.
_SOLE_MENTIONS = f"""
SELECT owner, count(*) FROM (
    SELECT mn.entity_id AS entity, min(c.user_identifier) AS owner
    FROM mentions mn
    JOIN entities e ON e.id = mn.entity_id AND e.tenant = ''
    JOIN messages m ON m.id = mn.message_id
    JOIN conversations c ON c.id = m.conversation_id
    {{where}}
    GROUP BY mn.entity_id
    HAVING count(DISTINCT {_OWNER}) = 1 AND max(c.tenant) = ''
        AND min(c.user_identifier) IS NOT NULL
) sole
WHERE NOT EXISTS (
    SELECT 1 FROM preference_entities pe JOIN preferences p ON p.id = pe.preference_id
    WHERE pe.entity_id = sole.entity AND (p.tenant != '' OR p.user_identifier IS NOT sole.owner)
)
GROUP BY owner
"""

_MENTIONED_BY_USER = """
WHERE mn.entity_id IN (
    SELECT mu.entity_id FROM conversations cu
    JOIN messages mm ON mm.conversation_id = cu.id
    JOIN mentions mu ON mu.message_id = mm.id
    WHERE cu.tenant = '' AND cu.user_identifier = ?
)
"""


def stats(
    conn: sqlite3.Connection, req: rq.Stats, multi_tenant: bool, name: str, traces: bool
) -> StoreStats:
    """The counts of ``req`` (one read transaction) and the store's size; ``traces``:
    whether the store claims the flag (its traces are counted, else ``None``)."""
    conversations = _conversations(conn, req.user, multi_tenant)
    entities = _tenant_entities(conn, req.user) if multi_tenant else _user_entities(conn, req.user)
    long_term = _long_term(conn, req.user, multi_tenant, traces)
    rows = merge_counts(conversations, entities, long_term)
    if req.user is not None:
        rows = only_user(rows, req.user, long_term)
    return StoreStats(
        backend=name,
        scope="tenant" if multi_tenant else "user",
        users=rows,
        total=None if req.user is not None else _total(conn, multi_tenant, traces),
        size_bytes=_size(conn),
    )


def _conversations(
    conn: sqlite3.Connection, user: str | None, multi_tenant: bool
) -> dict[str | None, tuple[int, int | None]]:
    """{user: (conversations, messages)} of every user, or of ``user`` only."""
    owner = "c.tenant" if multi_tenant else "c.user_identifier"
    where = "c.tenant != ''" if multi_tenant else "c.tenant = ''"
    params: tuple[str, ...] = ()
    if user is not None:
        where += f" AND {owner} = ?"
        params = (user,)
    found = conn.execute(
        f"SELECT {owner}, count(*), coalesce(sum((SELECT count(*) FROM messages m "
        f"WHERE m.conversation_id = c.id)), 0) FROM conversations c WHERE {where} "
        f"GROUP BY {owner}",
        params,
    )
    return {row[0]: (row[1], row[2]) for row in found}


def _long_term(
    conn: sqlite3.Connection, user: str | None, multi_tenant: bool, traces: bool
) -> LongTermCounts:
    """{kind: {user: count}} of preferences and facts (by the user indexes), traces
    (``traces``: by ``traces_by_user``), and a multi-tenant store's relationships (one
    tenant's by its entities)."""
    owner = "tenant" if multi_tenant else "user_identifier"
    where = "tenant != ''" if multi_tenant else "tenant = ''"
    params: tuple[str, ...] = ()
    if user is not None:
        where += f" AND {owner} = ?"
        params = (user,)
    counts = {
        kind: {
            row[0]: row[1]
            for row in conn.execute(
                f"SELECT {owner}, count(*) FROM {kind} WHERE {where} GROUP BY {owner}", params
            )
        }
        for kind in ("preferences", "facts", *(("traces",) if traces else ()))
    }
    if multi_tenant:
        sql = "SELECT tenant, count(*) FROM relationships WHERE tenant != '' GROUP BY tenant"
        if user is not None:
            sql = (
                "SELECT e.tenant, count(*) FROM entities e JOIN relationships r "
                "ON r.source_id = e.id WHERE e.tenant = ? GROUP BY e.tenant"
            )
        counts["relationships"] = {row[0]: row[1] for row in conn.execute(sql, params)}
    return counts


def _tenant_entities(conn: sqlite3.Connection, user: str | None) -> dict[str | None, int]:
    if user is not None:
        row = conn.execute("SELECT count(*) FROM entities WHERE tenant = ?", (user,)).fetchone()
        return {user: row[0]}
    found = conn.execute("SELECT tenant, count(*) FROM entities WHERE tenant != '' GROUP BY 1")
    return {row[0]: row[1] for row in found}


def _user_entities(conn: sqlite3.Connection, user: str | None) -> dict[str | None, int]:
    if user is None:
        found = conn.execute(_SOLE_MENTIONS.format(where=""))
    else:
        found = conn.execute(_SOLE_MENTIONS.format(where=_MENTIONED_BY_USER), (user,))
    return {row[0]: row[1] for row in found}


def _total(conn: sqlite3.Connection, multi_tenant: bool, traces: bool) -> StatsTotal:
    scope = "tenant != ''" if multi_tenant else "tenant = ''"
    row = conn.execute(
        f"SELECT (SELECT count(*) FROM conversations WHERE {scope}), "
        "(SELECT count(*) FROM messages m JOIN conversations c ON c.id = m.conversation_id "
        f"WHERE c.{scope}), (SELECT count(*) FROM entities WHERE {scope}), "
        f"(SELECT count(*) FROM preferences WHERE {scope}), "
        f"(SELECT count(*) FROM facts WHERE {scope}), "
        f"(SELECT count(*) FROM relationships WHERE {scope}), "
        f"(SELECT count(*) FROM traces WHERE {scope})"
    ).fetchone()
    return StatsTotal(
        conversations=row[0],
        messages=row[1],
        entities=row[2],
        preferences=row[3],
        facts=row[4],
        relationships=row[5],
        traces=row[6] if traces else None,
    )


def _size(conn: sqlite3.Connection) -> int:
    """The database file and its ``-wal`` file in bytes; an in-memory store's pages."""
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main" and row[2]:
            path = Path(row[2])
            return _bytes(path) + _bytes(path.with_name(path.name + "-wal"))
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    return int(pages) * int(conn.execute("PRAGMA page_size").fetchone()[0])


def _bytes(path: Path) -> int:
    """The size of a file; 0 when there is none (the last connection to close a store
    removes its ``-wal`` file)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
