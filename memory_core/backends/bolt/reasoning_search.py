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

from memory_core.store import ReasoningStep, ReasoningTrace, ToolStats
from memory_core.store import requests as rq

from .long_term_search import Kind, Scope, load_ranked, ranked
from .reasoning import HEADER, STEP_FIELDS, owned, to_step, to_trace
from .records import to_datetime
from .schema import STEP_SEARCH, TRACE_SEARCH
from .session import Connection

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

    async def work(tx: AsyncManagedTransaction) -> list[ReasoningTrace]:
        best = await ranked(tx, TRACE_KIND, scope, req.task, req.query_embedding, req.limit)
        if req.threshold is not None:
            best = [(ident, score) for ident, score in best if score >= req.threshold]
        return await load_ranked(tx, best, LOAD_TRACES, to_trace)

    return await conn.read(work)


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
