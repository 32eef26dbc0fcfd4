"""Reading across traces: tool statistics (one aggregate query over ``tool_calls``, on
``tool_calls_by_tool``), similar traces (their task's words and embedding) and step
search (a step's thought, action and observation), scored as preferences are
(:mod:`.ranking`)."""

from __future__ import annotations

import sqlite3

from memory_core.store import (
    ReasoningStep,
    ReasoningTrace,
    ToolCallStatus,
    ToolStats,
    candidate_pool,
    query_terms,
)
from memory_core.store import requests as rq

from . import ranking, traces, words
from .codec import from_micros
from .conversations import tenant_key

_FAILED = (ToolCallStatus.FAILURE, ToolCallStatus.ERROR, ToolCallStatus.TIMEOUT)
_FAILED_SQL = ", ".join(f"'{status.value}'" for status in _FAILED)


def tool_stats(conn: sqlite3.Connection, req: rq.ToolStatsQuery) -> list[ToolStats]:
    """The ``tool_stats`` hook."""
    where, params = traces.filters(tenant_key(req.tenant), req.user_identifier)
    if req.tool_name is not None:
        where += " AND r.tool_name = ?"
        params.append(req.tool_name)
    rows = conn.execute(
        "SELECT r.tool_name, COUNT(*), "
        f"SUM(r.status = '{ToolCallStatus.SUCCESS.value}'), "
        f"SUM(r.status IN ({_FAILED_SQL})), AVG(r.duration_ms), MAX(r.created_at) "
        f"FROM tool_calls r WHERE {where} GROUP BY r.tool_name ORDER BY r.tool_name",
        params,
    ).fetchall()
    return [
        ToolStats(
            name=row[0],
            total_calls=row[1],
            successful_calls=row[2],
            failed_calls=row[3],
            success_rate=row[2] / row[1],
            avg_duration_ms=row[4],
            last_used_at=from_micros(row[5]),
        )
        for row in rows
    ]


def similar(conn: sqlite3.Connection, req: rq.SimilarTraces) -> list[ReasoningTrace]:
    """The ``similar_traces`` hook."""
    tenant = tenant_key(req.tenant)
    where, params = traces.filters(tenant, req.user_identifier)
    if req.success_only:
        where += " AND r.completed_at IS NOT NULL AND r.success = 1"
    found = _scored(
        conn,
        (traces.TRACE, "traces", tenant),
        req.task,
        req.query_embedding,
        where,
        params,
        req.limit,
    )
    ranked = _kept(found, req.threshold, req.limit)
    loaded = traces.headers(conn, _full_rows(conn, "traces", ranked))
    for trace, (_, score) in zip(loaded, ranked, strict=True):
        trace.__dict__["score"] = score
    return loaded


def search_steps(conn: sqlite3.Connection, req: rq.SearchSteps) -> list[ReasoningStep]:
    """The ``search_steps`` hook."""
    tenant = tenant_key(req.tenant)
    where, params = traces.filters(tenant, req.user_identifier)
    found = _scored(
        conn,
        (traces.STEP, "steps", tenant),
        req.query,
        req.query_embedding,
        where,
        params,
        req.limit,
    )
    ranked = ranking.best(found, req.limit)
    loaded = traces.load_steps(conn, _full_rows(conn, "steps", ranked))
    for step, (_, score) in zip(loaded, ranked, strict=True):
        step.__dict__["score"] = score
    return loaded


def _scored(
    conn: sqlite3.Connection,
    source: tuple[str, str, str],
    query: str,
    vector: list[float] | None,
    where: str,
    params: list[object],
    limit: int,
) -> dict[str, tuple[sqlite3.Row, float]]:
    """The rows of ``source`` (word kind, table, tenant) sharing a word with ``query`` (the best
    :func:`candidate_pool`), or with a positive cosine to ``vector``, each with its
    score. Only the columns scoring and ordering need are read: of the few rows kept,
    :func:`_full_rows` reads the rest."""
    kind, table, tenant = source
    terms = query_terms(query)
    found: dict[str, tuple[sqlite3.Row, float]] = {}
    if terms:
        columns = f"r.id, r.created_at, {_TEXT_SQL[table]}"
        sql, args = words.matching(kind, table, tenant, terms, where, params, columns)
        rows = conn.execute(sql, [*args, candidate_pool(limit)])
        found = ranking.by_text(rows, terms, _TEXT[table])
    if vector is not None:
        rows = conn.execute(
            f"SELECT r.id, r.created_at, r.embedding FROM {table} r "
            f"WHERE {where} AND r.embedding IS NOT NULL",
            params,
        )
        ranking.add_vector_hits(found, rows, vector)
    return found


def _full_rows(conn: sqlite3.Connection, table: str, ranked: ranking.Scored) -> list[sqlite3.Row]:
    """The whole rows of the ``ranked`` ones, in that order."""
    ids = [row["id"] for row, _ in ranked]
    by_id: dict[str, sqlite3.Row] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found = conn.execute(f"SELECT * FROM {table} WHERE id IN ({marks})", chunk)
        by_id.update((row["id"], row) for row in found)
    return [by_id[ident] for ident in ids]


def _kept(
    found: dict[str, tuple[sqlite3.Row, float]], threshold: float | None, limit: int
) -> ranking.Scored:
    if threshold is not None:
        found = {key: hit for key, hit in found.items() if hit[1] >= threshold}
    return ranking.best(found, limit)


# The columns the text score reads, by table.
_TEXT_SQL = {"traces": "r.task", "steps": "r.thought, r.action, r.observation"}


def _task(row: sqlite3.Row) -> str:
    return str(row["task"])


def _step_text(row: sqlite3.Row) -> str:
    return " ".join(part for part in (row["thought"], row["action"], row["observation"]) if part)


_TEXT = {"traces": _task, "steps": _step_text}
