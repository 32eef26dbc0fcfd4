"""The floors of the reasoning workloads (:mod:`bench.reasoning`): the same work written
directly against each driver, on the store's own tables or graph.

A step with one tool call is two statements, each in a transaction of its own: an
``INSERT`` of the step (its number given by the caller) and an ``INSERT`` of the call
(SQLite, PostgreSQL); on Neo4j a ``CREATE`` of the step linked to its trace and a
``CREATE`` of the call linked to its step. No argument checks, no word index beyond the
column PostgreSQL's search needs, no owner check, nothing read back. Tool statistics are
one hand-written aggregate query over the user's calls (of one tool, or grouped by tool).
Similar traces are one query of the store's index (the word table, the ``words`` array,
the full-text index) for the user's successful traces, the 5 sharing most words (Neo4j:
of best Lucene score), with no scoring.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any
from uuid import uuid4

from .long_term_floors import SCHEMA, BoltFloor, PostgresFloor

_FAILED = "('failure', 'error', 'timeout')"
SQLITE_STATS = (
    "SELECT tool_name, COUNT(*), SUM(status = 'success'), "
    f"SUM(status IN {_FAILED}), AVG(duration_ms), MAX(created_at) FROM tool_calls "
    "WHERE tenant = '' AND user_identifier = ? {tool} GROUP BY tool_name"
)
SQLITE_SIMILAR = (
    "SELECT r.id, r.session_id, r.task, r.outcome FROM traces r JOIN ("
    "SELECT record_id, COUNT(*) AS hits FROM long_term_words WHERE kind = 't' AND tenant = '' "
    "AND word IN ({marks}) GROUP BY record_id) w ON w.record_id = r.id "
    "WHERE r.tenant = '' AND r.user_identifier = ? AND r.success = 1 "
    "ORDER BY w.hits DESC LIMIT 5"
)


class SqliteFloor:
    """Raw sqlite3: writes on a file of their own with the store's schema (``writer``),
    reads on the store memory-core filled (``reader``)."""

    def __init__(self, writer: sqlite3.Connection, reader: sqlite3.Connection) -> None:
        self.writer = writer
        self.reader = reader

    def start(self, user: str, session: str, task: str) -> str:
        ident = str(uuid4())
        self.writer.execute(
            "INSERT INTO traces (id, tenant, user_identifier, session_id, task, created_at) "
            "VALUES (?, '', ?, ?, ?, ?)",
            (ident, user, session, task, time.time_ns() // 1000),
        )
        return ident

    def step(self, user: str, trace: str, i: int, tool: str) -> None:
        step = str(uuid4())
        self.writer.execute("BEGIN IMMEDIATE")
        self.writer.execute(
            "INSERT INTO steps (id, trace_id, tenant, user_identifier, step_number, thought, "
            "action, created_at) VALUES (?, ?, '', ?, ?, ?, ?, ?)",
            (step, trace, user, i + 1, f"think {i}", f"call {tool}", time.time_ns() // 1000),
        )
        self.writer.execute("COMMIT")
        self.writer.execute("BEGIN IMMEDIATE")
        self.writer.execute(
            "INSERT INTO tool_calls (id, step_id, tenant, user_identifier, tool_name, "
            "arguments, result, status, duration_ms, created_at) "
            "VALUES (?, ?, '', ?, ?, ?, ?, 'success', ?, ?)",
            (
                str(uuid4()),
                step,
                user,
                tool,
                f'{{"q":{i}}}',
                f'{{"hits":{i % 7}}}',
                i % 500,
                time.time_ns() // 1000,
            ),
        )
        self.writer.execute("COMMIT")

    def stats(self, user: str, tool: str | None) -> list[Any]:
        if tool is None:
            return self.reader.execute(SQLITE_STATS.format(tool=""), (user,)).fetchall()
        sql = SQLITE_STATS.format(tool="AND tool_name = ?")
        return self.reader.execute(sql, (user, tool)).fetchall()

    def similar(self, user: str, words: list[str]) -> list[Any]:
        sql = SQLITE_SIMILAR.format(marks=",".join("?" * len(words)))
        return self.reader.execute(sql, [*words, user]).fetchall()


PG_STATS = (
    "SELECT tool_name, count(*), count(*) FILTER (WHERE status = 'success'), "
    f"count(*) FILTER (WHERE status IN {_FAILED}), avg(duration_ms), max(created_at) "
    f"FROM {SCHEMA}.tool_calls WHERE tenant = '' AND user_identifier = %(user)s "
    "AND (%(tool)s::text IS NULL OR tool_name = %(tool)s) GROUP BY tool_name"
)
PG_STATS_ONE = PG_STATS.replace(
    "(%(tool)s::text IS NULL OR tool_name = %(tool)s)", "tool_name = %(tool)s"
)
PG_SIMILAR = (
    f"SELECT r.id, r.session_id, r.task, r.outcome FROM {SCHEMA}.traces r "
    "WHERE r.words && %(words)s::text[] AND r.tenant = '' AND r.user_identifier = %(user)s "
    "AND r.success ORDER BY (SELECT count(*) FROM unnest(r.words) w "
    "WHERE w = ANY(%(words)s::text[])) DESC LIMIT 5"
)


class PostgresReasoningFloor(PostgresFloor):
    """Raw psycopg on memory-core's pool and tables, each statement autocommitted."""

    async def start(self, user: str, session: str, task: str) -> str:
        ident = str(uuid4())
        await self.execute(
            f"INSERT INTO {SCHEMA}.traces (id, tenant, user_identifier, session_id, task, "
            "words, created_at) VALUES (%s, '', %s, %s, %s, %s, now())",
            (ident, user, session, task, task.split()),
        )
        return ident

    async def step(self, user: str, trace: str, i: int, tool: str) -> None:
        step = str(uuid4())
        await self.execute(
            f"INSERT INTO {SCHEMA}.steps (id, trace_id, tenant, user_identifier, step_number, "
            "thought, action, words, created_at) VALUES (%s, %s, '', %s, %s, %s, %s, %s, now())",
            (step, trace, user, i + 1, f"think {i}", f"call {tool}", ["think", str(i)]),
        )
        await self.execute(
            f"INSERT INTO {SCHEMA}.tool_calls (id, step_id, tenant, user_identifier, "
            "tool_name, arguments, result, status, duration_ms, created_at) "
            "VALUES (%s, %s, '', %s, %s, %s, %s, 'success', %s, now())",
            (str(uuid4()), step, user, tool, f'{{"q":{i}}}', f'{{"hits":{i % 7}}}', i % 500),
        )

    async def stats(self, user: str, tool: str | None) -> list[Any]:
        return await self.fetch(
            PG_STATS if tool is None else PG_STATS_ONE, {"user": user, "tool": tool}
        )

    async def similar(self, user: str, words: list[str]) -> list[Any]:
        return await self.fetch(PG_SIMILAR, {"user": user, "words": words})


_BOLT_AGGREGATE = """RETURN c.tool_name AS name, count(c) AS total,
       count(CASE WHEN c.status = 'success' THEN 1 END) AS successes,
       count(CASE WHEN c.status IN ['failure', 'error', 'timeout'] THEN 1 END) AS failures,
       avg(c.duration_ms) AS mean, max(c.timestamp) AS last"""
BOLT_STATS_ONE = (
    "MATCH (t:ReasoningTrace)-[:HAS_STEP]->(:ReasoningStep)-[:USES_TOOL]->"
    "(c:ToolCall {tool_name: $tool}) WHERE t.user_identifier = $user\n" + _BOLT_AGGREGATE
)
BOLT_STATS_ALL = (
    "MATCH (t:ReasoningTrace {user_identifier: $user})-[:HAS_STEP]->(:ReasoningStep)"
    "-[:USES_TOOL]->(c:ToolCall)\n" + _BOLT_AGGREGATE
)
BOLT_SIMILAR = (
    "CALL db.index.fulltext.queryNodes($index, $words) YIELD node, score "
    "WHERE node.user_identifier = $user AND node.success = true "
    "RETURN node.id AS id, node.session_id AS session_id, node.task AS task, "
    "node.outcome AS outcome ORDER BY score DESC LIMIT 5"
)


class BoltReasoningFloor(BoltFloor):
    """The official driver, managed transactions (``execute_query``)."""

    async def start(self, user: str, session: str, task: str) -> str:
        ident = str(uuid4())
        await self.write(
            "CREATE (:ReasoningTrace {id: $id, session_id: $session, task: $task, "
            "started_at: datetime(), user_identifier: $user})",
            id=ident,
            session=session,
            task=task,
            user=user,
        )
        return ident

    async def step(self, user: str, trace: str, i: int, tool: str) -> None:
        step = str(uuid4())
        await self.write(
            "MATCH (t:ReasoningTrace {id: $trace}) "
            "CREATE (t)-[:HAS_STEP {order: $number}]->(:ReasoningStep {id: $id, "
            "step_number: $number, thought: $thought, action: $action, timestamp: datetime()})",
            trace=trace,
            id=step,
            number=i + 1,
            thought=f"think {i}",
            action=f"call {tool}",
        )
        await self.write(
            "MATCH (s:ReasoningStep {id: $step}) "
            "CREATE (s)-[:USES_TOOL]->(:ToolCall {id: $id, tool_name: $tool, "
            "arguments: $arguments, result: $result, status: 'success', "
            "duration_ms: $duration, timestamp: datetime()})",
            step=step,
            id=str(uuid4()),
            tool=tool,
            arguments=f'{{"q":{i}}}',
            result=f'{{"hits":{i % 7}}}',
            duration=i % 500,
        )

    async def stats(self, user: str, tool: str | None) -> list[Any]:
        if tool is None:
            return await self.read(BOLT_STATS_ALL, user=user)
        return await self.read(BOLT_STATS_ONE, user=user, tool=tool)

    async def similar(self, user: str, words: list[str]) -> list[Any]:
        return await self.read(BOLT_SIMILAR, index=self.index, words=" ".join(words), user=user)

    async def purge_reasoning(self, prefix: str) -> None:
        """Delete every trace, step, tool call, tool and user the run wrote (each named
        with ``prefix``: ours, the peer's and the floor's), in auto-commit batches."""
        traces = "MATCH (t:ReasoningTrace) WHERE t.session_id STARTS WITH $prefix "
        async with self.driver.session() as session:
            for query in (
                traces + "MATCH (t)-[:HAS_STEP]->(:ReasoningStep)-[:USES_TOOL]->(c:ToolCall) "
                "CALL (c) { DETACH DELETE c } IN TRANSACTIONS OF 5000 ROWS",
                traces + "MATCH (t)-[:HAS_STEP]->(s:ReasoningStep) "
                "CALL (s) { DETACH DELETE s } IN TRANSACTIONS OF 5000 ROWS",
                traces + "CALL (t) { DETACH DELETE t } IN TRANSACTIONS OF 5000 ROWS",
                "MATCH (n:Tool) WHERE n.name STARTS WITH $prefix DETACH DELETE n",
                "MATCH (u:User) WHERE u.identifier STARTS WITH $prefix DETACH DELETE u",
            ):
                await (await session.run(query, prefix=prefix)).consume()
