"""Reads across traces: tool statistics, similar traces and step search.

``tool_stats`` is one aggregate statement over ``tool_calls`` (one tool's calls come from
the ``tool_calls_by_tool`` index, which holds every column it adds up). Similar traces
(by task) and steps (by thought, action and observation) are searched as preferences are
(see :mod:`.words`): candidates sharing most words with the query, scored in Python with
:func:`~memory_core.scoring.text_score`, and with a query embedding the records of
positive cosine similarity.
"""

from __future__ import annotations

from memory_core.store import (
    ReasoningStep,
    ReasoningTrace,
    ToolStats,
    candidate_pool,
    query_terms,
)
from memory_core.store import requests as rq

from . import words
from .codec import load_text, sql_int, store_text, utc
from .trace_rows import STEP_COLUMNS, TRACE_COLUMNS, calls_of, to_step, to_trace
from .traces import scope
from .tx import Tx

_FAILED = ("failure", "error", "timeout")


async def tool_stats(tx: Tx, req: rq.ToolStatsQuery) -> list[ToolStats]:
    """The ``tool_stats`` hook: one row per tool, by name."""
    where, params = scope("tc", req.scope)
    if req.tool_name is not None:
        where += " AND tc.tool_name = %s"
        params.append(store_text(req.tool_name))
    rows = await tx.rows(
        "SELECT tc.tool_name, count(*), count(*) FILTER (WHERE tc.status = 'success'), "
        "count(*) FILTER (WHERE tc.status = ANY(%s::text[])), avg(tc.duration_ms)::float8, "
        f"max(tc.created_at) FROM {{s}}.tool_calls tc WHERE {where} GROUP BY tc.tool_name",
        [list(_FAILED), *params],
    )
    found = [
        ToolStats(
            name=load_text(name),
            total_calls=total,
            successful_calls=successes,
            failed_calls=failures,
            success_rate=successes / total,
            avg_duration_ms=mean,
            last_used_at=utc(last),
        )
        for name, total, successes, failures, mean, last in rows
    ]
    return sorted(found, key=lambda stats: stats.name)


async def similar(tx: Tx, req: rq.SimilarTraces) -> list[ReasoningTrace]:
    """The ``similar_traces`` hook: headers with their scores, best first."""
    where, params = scope("r", req.scope)
    if req.success_only:
        where += " AND r.success"
    terms = query_terms(req.task)
    found: words.Found = {}
    if terms:
        wanted = words.wanted(terms)
        rows = await tx.rows(
            words.matching(TRACE_COLUMNS, "traces", where),
            [wanted, *params, wanted, sql_int(candidate_pool(req.limit))],
        )
        found = words.by_text(rows, terms, lambda row: load_text(row[3]))
    if req.query_embedding is not None:
        await words.vector_hits(
            tx, TRACE_COLUMNS, "traces", (where, params), req.query_embedding, req.limit, found
        )
    _drop_below(found, req.threshold)
    return [to_trace(row, score) for row, score in words.best(found, req.limit)]


async def search_steps(tx: Tx, req: rq.SearchSteps) -> list[ReasoningStep]:
    """The ``search_steps`` hook: each step with its tool calls and score, best first."""
    where, params = scope("r", req.scope)
    terms = query_terms(req.query)
    found: words.Found = {}
    if terms:
        wanted = words.wanted(terms)
        rows = await tx.rows(
            words.matching(STEP_COLUMNS, "steps", where),
            [wanted, *params, wanted, sql_int(candidate_pool(req.limit))],
        )
        found = words.by_text(rows, terms, lambda row: words.joined(*row[4:7]))
    if req.query_embedding is not None:
        await words.vector_hits(
            tx, STEP_COLUMNS, "steps", (where, params), req.query_embedding, req.limit, found
        )
    hits = words.best(found, req.limit)
    if not hits:
        return []
    calls = await calls_of(tx, "tc.step_id = ANY(%s::text[])", [[row[0] for row, _ in hits]])
    return [to_step(row, calls.get(row[0], []), score) for row, score in hits]


def _drop_below(found: words.Found, threshold: float | None) -> None:
    if threshold is None:
        return
    for key in [key for key, (_, score) in found.items() if score < threshold]:
        del found[key]
