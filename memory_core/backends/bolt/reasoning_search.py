"""Reading reasoning memory in aggregate on Neo4j: tool statistics, similar traces and
step search (the graph is described in :mod:`.reasoning`).

Tool statistics are aggregate queries over the ``ToolCall`` nodes in scope, never the
``Tool`` node's running totals: those are global (every user's calls together), count
only ``error`` and ``timeout`` as failures and average durations over every call (a call
without a duration as 0), so they cannot answer the contract's questions. They are kept
exact for the reference's readers (each call adds to them, ``forget_user`` recomputes
them). One user's statistics of every tool walk that user's traces; of one tool, the
planner starts from the user's traces or from the ``ToolCall(tool_name)`` index, as its
statistics favour. The whole store's read one tool's calls by that index (or every
call).

Similar traces and step search score the candidates of full-text indexes (and, with a
query vector, the cosine of ``task_embedding`` or a step's ``embedding``) as preference
search does (see :mod:`.long_term_search`).
"""

from __future__ import annotations

from typing import Any

from neo4j import AsyncManagedTransaction

from memory_core.store import (
    ReasoningStep,
    ReasoningTrace,
    ToolStats,
    candidate_pool,
    query_terms,
    text_score,
)
from memory_core.store import requests as rq

from .long_term_search import (
    TEXT_K_MAX,
    Found,
    Kind,
    Scope,
    load_ranked,
    lucene_queries,
    micros,
    ranked,
    vector_hits,
)
from .reasoning import HEADER, STEP_FIELDS, owned, to_step, to_trace
from .records import to_datetime
from .schema import STEP_SEARCH, TRACE_SEARCH
from .session import Connection, rows

TRACE_KIND = Kind(
    index=TRACE_SEARCH, fields=("task",), vector="task_embedding", created="started_at"
)
STEP_KIND = Kind(
    index=STEP_SEARCH, fields=("thought", "action", "observation"), created="timestamp"
)

_STATS = """
WITH c WHERE c.tool_name IS :: STRING NOT NULL AND ($tool IS NULL OR c.tool_name = $tool)
RETURN c.tool_name AS name, count(c) AS total,
       count(CASE WHEN c.status = 'success' THEN 1 END) AS successes,
       count(CASE WHEN c.status IN ['failure', 'error', 'timeout'] THEN 1 END) AS failures,
       sum(CASE WHEN c.duration_ms IS :: INTEGER NOT NULL THEN c.duration_ms ELSE 0 END)
           AS duration,
       count(CASE WHEN c.duration_ms IS :: INTEGER NOT NULL THEN 1 END) AS timed,
       max(c.timestamp) AS last
ORDER BY name
"""
USER_STATS = f"""
MATCH (t:ReasoningTrace {{user_identifier: $user}}) WHERE {owned("t")}
MATCH (t)-[:HAS_STEP]->(:ReasoningStep)-[:USES_TOOL]->(c:ToolCall)
{_STATS}"""
# The tool's name in the pattern, not after it: the planner may start from the
# ToolCall(tool_name) index and climb to each call's trace, so a rare tool's statistics
# do not read every call of the user.
USER_TOOL_STATS = f"""
MATCH (t:ReasoningTrace {{user_identifier: $user}})-[:HAS_STEP]->(:ReasoningStep)
      -[:USES_TOOL]->(c:ToolCall {{tool_name: $tool}})
WHERE {owned("t")}
{_STATS}"""
TOOL_STATS = f"MATCH (c:ToolCall {{tool_name: $tool}})\n{_STATS}"
ALL_STATS = f"MATCH (c:ToolCall)\n{_STATS}"

# The best candidates of the scope by Lucene's rank, at most $pool of them (the index read
# for $k matches, the scope's kept).
_TRACE_CANDIDATES = """
CALL db.index.fulltext.queryNodes($index, $lucene, {{limit: $k}}) YIELD node AS n
WITH n, n.id IS NOT NULL AND {keep} AS kept
RETURN count(*) AS seen, collect(CASE WHEN kept THEN [n.id, n.task, n.started_at] END)[..$pool]
    AS hits
"""
# How many times the pool the index is first asked for when the scope filters its
# matches (by user or success): asked for the pool alone, a store where a fifth of the
# matches were out of scope was short and asked again for four times as many. The
# candidates are the same either way: the scope's best pool by Lucene's rank.
FILTERED_FIRST_READ = 2

LOAD_TRACES = f"""
MATCH (t:ReasoningTrace) WHERE t.id IN $ids
RETURN {HEADER} AS trace
"""
LOAD_STEPS = f"""
MATCH (t:ReasoningTrace)-[:HAS_STEP]->(s:ReasoningStep) WHERE s.id IN $ids
RETURN s {{{STEP_FIELDS}, trace_id: t.id}} AS step
"""


async def tool_stats(conn: Connection, req: rq.ToolStatsQuery) -> list[ToolStats]:
    """The ``tool_stats`` hook: one aggregate query, by tool name."""
    if req.user_identifier is not None:
        statement = USER_STATS if req.tool_name is None else USER_TOOL_STATS
    else:
        statement = ALL_STATS if req.tool_name is None else TOOL_STATS
    found = await conn.run_read(
        statement, tool=req.tool_name, user=req.user_identifier, tenant=req.tenant
    )
    return [_stats(row) for row in found]


def _stats(row: Any) -> ToolStats:
    total, timed = row["total"], row["timed"]
    return ToolStats(
        name=row["name"],
        total_calls=total,
        successful_calls=row["successes"],
        failed_calls=row["failures"],
        success_rate=row["successes"] / total if total else 0.0,
        avg_duration_ms=row["duration"] / timed if timed else None,
        last_used_at=to_datetime(row["last"]),
    )


async def similar_traces(conn: Connection, req: rq.SimilarTraces) -> list[ReasoningTrace]:
    """The ``similar_traces`` hook: headers, best first, none below ``threshold``."""
    keep = f"{owned('n')} AND (NOT $success_only OR n.success = true)"
    match = (
        "MATCH (n:ReasoningTrace)"
        if req.user_identifier is None
        else "MATCH (n:ReasoningTrace {user_identifier: $user})"
    )
    params = {"tenant": req.tenant, "user": req.user_identifier, "success_only": req.success_only}
    scope = Scope(match=f"{match} WHERE {keep}", keep=keep, params=params)
    filtered = req.success_only or req.user_identifier is not None or req.tenant is not None

    async def work(tx: AsyncManagedTransaction) -> list[ReasoningTrace]:
        found = await _trace_hits(tx, scope, req.task, req.limit, filtered)
        if req.query_embedding is not None:
            await vector_hits(tx, TRACE_KIND, scope, req.query_embedding, req.limit, found)
        order = sorted(found.items(), key=lambda hit: (-hit[1][0], -hit[1][1], hit[0]))
        best = [(ident, score) for ident, (score, _) in order[: req.limit]]
        if req.threshold is not None:
            best = [(ident, score) for ident, score in best if score >= req.threshold]
        return await load_ranked(tx, best, LOAD_TRACES, to_trace)

    return await conn.read(work)


async def _trace_hits(
    tx: AsyncManagedTransaction, scope: Scope, task: str, limit: int, filtered: bool
) -> Found:
    """The traces sharing a word with ``task`` among the scope's best
    :func:`candidate_pool` by Lucene's rank, each with its score and start time (as
    :mod:`.long_term_search` finds them, with a first read sized for the scope)."""
    terms = query_terms(task)
    found: Found = {}
    for lucene in lucene_queries(task, len(TRACE_KIND.fields)):
        for ident, text, started in await _trace_candidates(tx, scope, lucene, limit, filtered):
            score = text_score(terms, text) if isinstance(text, str) else 0.0
            if score > 0:
                found[str(ident)] = (score, micros(started))
    return found


async def _trace_candidates(
    tx: AsyncManagedTransaction, scope: Scope, lucene: str, limit: int, filtered: bool
) -> list[list[Any]]:
    """The scope's best ``candidate_pool(limit)`` matches of ``lucene``: the index is
    asked for four times as many whenever those held fewer while more may exist."""
    pool = candidate_pool(limit)
    k = min(pool * (FILTERED_FIRST_READ if filtered else 1), TEXT_K_MAX)
    statement = _TRACE_CANDIDATES.format(keep=scope.keep)
    while True:
        params = {**scope.params, "index": TRACE_KIND.index, "lucene": lucene}
        [row] = await rows(tx, statement, **params, k=k, pool=pool)
        hits: list[list[Any]] = row["hits"]
        if len(hits) >= pool or row["seen"] < k or k >= TEXT_K_MAX:
            return hits
        k = min(k * 4, TEXT_K_MAX)


async def search_steps(conn: Connection, req: rq.SearchSteps) -> list[ReasoningStep]:
    """The ``search_steps`` hook: steps of the scope's traces, best first."""
    match = (
        "MATCH (t:ReasoningTrace)"
        if req.user_identifier is None
        else "MATCH (t:ReasoningTrace {user_identifier: $user})"
    )
    scope = Scope(
        match=f"{match} WHERE {owned('t')}\nMATCH (t)-[:HAS_STEP]->(n:ReasoningStep)",
        keep=f"EXISTS {{ MATCH (t:ReasoningTrace)-[:HAS_STEP]->(n) WHERE {owned('t')} }}",
        params={"tenant": req.tenant, "user": req.user_identifier},
    )

    async def work(tx: AsyncManagedTransaction) -> list[ReasoningStep]:
        best = await ranked(tx, STEP_KIND, scope, req.query, req.query_embedding, req.limit)
        return await load_ranked(tx, best, LOAD_STEPS, _loaded_step)

    return await conn.read(work)


def _loaded_step(props: dict[str, Any]) -> ReasoningStep:
    return to_step(props, str(props["trace_id"]))
