"""The floors of the long-term workloads (:mod:`bench.long_term`): the same work written
directly against each driver, on the store's own tables or graph.

An add is one ``INSERT`` (SQLite, PostgreSQL) or one ``CREATE`` (Neo4j) of the record with
the columns or properties a read needs, in a transaction of its own: no argument checks,
no word index beyond the column PostgreSQL requires, no user link, nothing read back. A
search is one query of the store's index (the word table, the ``words`` array, the
full-text index) for the user's current preferences, the 10 sharing most words, with no
scoring. The walk is one hand-written query: a recursive CTE following relationships both
ways (a join on either end) to depth 2 (SQL), a variable-length pattern
``-[:RELATED_TO*1..2]-`` (Cypher); each returns the distinct entities reached, at most
100, unordered.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any
from uuid import uuid4

import neo4j
from psycopg_pool import AsyncConnectionPool

SQLITE_SEARCH = (
    "SELECT r.id, r.category, r.preference, r.context FROM preferences r JOIN ("
    "SELECT record_id, COUNT(*) AS hits FROM long_term_words WHERE kind = 'p' AND tenant = '' "
    "AND word IN ({marks}) GROUP BY record_id) w ON w.record_id = r.id "
    "WHERE r.tenant = '' AND r.user_identifier = ? AND r.superseded_at IS NULL "
    "ORDER BY w.hits DESC LIMIT 10"
)
SQLITE_WALK = (
    "WITH RECURSIVE walk (id, depth) AS (SELECT ?, 0 UNION "
    "SELECT CASE WHEN r.source_id = w.id THEN r.target_id ELSE r.source_id END, w.depth + 1 "
    "FROM walk w JOIN relationships r ON r.source_id = w.id OR r.target_id = w.id "
    "WHERE w.depth < 2) "
    "SELECT e.id, e.name, e.type, e.description FROM entities e "
    "WHERE e.id IN (SELECT id FROM walk) AND e.id != ? LIMIT 100"
)


class SqliteFloor:
    """Raw sqlite3: adds on a file of their own with the store's schema (``writer``),
    reads on the store memory-core filled (``reader``)."""

    def __init__(self, writer: sqlite3.Connection, reader: sqlite3.Connection) -> None:
        self.writer = writer
        self.reader = reader

    def add_preference(self, user: str, category: str, statement: str) -> None:
        self.writer.execute("BEGIN IMMEDIATE")
        self.writer.execute(
            "INSERT INTO preferences (id, tenant, user_identifier, category, preference, "
            "confidence, created_at) VALUES (?, '', ?, ?, ?, 1.0, ?)",
            (str(uuid4()), user, category, statement, time.time_ns() // 1000),
        )
        self.writer.execute("COMMIT")

    def add_fact(self, user: str, subject: str, predicate: str, obj: str) -> None:
        self.writer.execute("BEGIN IMMEDIATE")
        self.writer.execute(
            "INSERT INTO facts (id, tenant, user_identifier, subject, subject_key, predicate, "
            "object, confidence, created_at) VALUES (?, '', ?, ?, ?, ?, ?, 1.0, ?)",
            (
                str(uuid4()),
                user,
                subject,
                subject.casefold(),
                predicate,
                obj,
                time.time_ns() // 1000,
            ),
        )
        self.writer.execute("COMMIT")

    def search(self, user: str, words: list[str]) -> list[Any]:
        sql = SQLITE_SEARCH.format(marks=",".join("?" * len(words)))
        return self.reader.execute(sql, [*words, user]).fetchall()

    def walk(self, start: str) -> list[Any]:
        return self.reader.execute(SQLITE_WALK, (start, start)).fetchall()


SCHEMA = "memory_core"
PG_SEARCH = (
    f"SELECT r.id, r.category, r.preference, r.context FROM {SCHEMA}.preferences r "
    "WHERE r.words && %(words)s::text[] AND r.tenant = '' AND r.user_identifier = %(user)s "
    "AND r.superseded_at IS NULL ORDER BY (SELECT count(*) FROM unnest(r.words) w "
    "WHERE w = ANY(%(words)s::text[])) DESC LIMIT 10"
)
PG_WALK = f"""
WITH RECURSIVE walk (id, depth) AS (
    SELECT %(start)s::text, 0
    UNION
    SELECT CASE WHEN r.source_id = w.id THEN r.target_id ELSE r.source_id END, w.depth + 1
    FROM walk w JOIN {SCHEMA}.relationships r ON r.source_id = w.id OR r.target_id = w.id
    WHERE w.depth < 2
)
SELECT e.id, e.name, e.type, e.description FROM {SCHEMA}.entities e
WHERE e.id IN (SELECT id FROM walk) AND e.id <> %(start)s LIMIT 100
"""


class PostgresFloor:
    """Raw psycopg on memory-core's pool and tables."""

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self.pool = pool

    async def execute(self, sql: str, params: Any) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(sql, params)

    async def fetch(self, sql: str, params: Any) -> list[tuple[Any, ...]]:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(sql, params)
            rows: list[tuple[Any, ...]] = await cursor.fetchall()
            return rows

    async def analyze(self) -> None:
        """``ANALYZE`` the database: the planner's statistics as autovacuum leaves them."""
        async with self.pool.connection() as conn:
            await conn.execute("ANALYZE")

    async def add_preference(self, user: str, category: str, statement: str) -> None:
        await self.execute(
            f"INSERT INTO {SCHEMA}.preferences (id, tenant, user_identifier, category, "
            "preference, confidence, words, created_at) "
            "VALUES (%s, '', %s, %s, %s, 1.0, %s, now())",
            (str(uuid4()), user, category, statement, statement.split()),
        )

    async def add_fact(self, user: str, subject: str, predicate: str, obj: str) -> None:
        await self.execute(
            f"INSERT INTO {SCHEMA}.facts (id, tenant, user_identifier, subject, subject_key, "
            "predicate, object, confidence, words, created_at) "
            "VALUES (%s, '', %s, %s, %s, %s, %s, 1.0, %s, now())",
            (str(uuid4()), user, subject, subject.casefold(), predicate, obj, obj.split()),
        )

    async def search(self, user: str, words: list[str]) -> list[Any]:
        return await self.fetch(PG_SEARCH, {"user": user, "words": words})

    async def walk(self, start: str) -> list[Any]:
        return await self.fetch(PG_WALK, {"start": start})


BOLT_SEARCH = (
    "CALL db.index.fulltext.queryNodes($index, $words) YIELD node, score "
    "WHERE node.user_identifier = $user AND node.valid_until IS NULL "
    "RETURN node.id AS id, node.category AS category, node.preference AS preference, "
    "node.context AS context ORDER BY score DESC LIMIT 10"
)
BOLT_WALK = (
    "MATCH (s:Entity {id: $start})-[:RELATED_TO*1..2]-(o:Entity) WHERE o <> s "
    "RETURN DISTINCT o.id AS id, o.name AS name, o.type AS type, "
    "o.description AS description LIMIT 100"
)


async def _consume(result: neo4j.AsyncResult) -> Any:
    return await result.consume()


async def _records(result: neo4j.AsyncResult) -> list[Any]:
    return [record async for record in result]


class BoltFloor:
    """The official driver, managed transactions (``execute_query``) as memory-core runs
    its one-statement calls."""

    def __init__(self, uri: str, auth: tuple[str, str] | None, index: str) -> None:
        # A node without ``valid_until`` is a current preference: Neo4j's warning that
        # the property key may not exist yet is expected.
        self.driver = neo4j.AsyncGraphDatabase.driver(
            uri, auth=auth, notifications_min_severity="OFF"
        )
        self.index = index

    async def write(self, query: str, **params: Any) -> Any:
        return await self.driver.execute_query(
            query, params, routing_=neo4j.RoutingControl.WRITE, result_transformer_=_consume
        )

    async def read(self, query: str, **params: Any) -> list[Any]:
        return await self.driver.execute_query(
            query, params, routing_=neo4j.RoutingControl.READ, result_transformer_=_records
        )

    async def add_preference(self, user: str, category: str, statement: str) -> None:
        await self.write(
            "CREATE (:Preference {id: $id, category: $category, preference: $preference, "
            "confidence: 1.0, created_at: datetime(), user_identifier: $user})",
            id=str(uuid4()),
            category=category,
            preference=statement,
            user=user,
        )

    async def add_fact(self, user: str, subject: str, predicate: str, obj: str) -> None:
        await self.write(
            "CREATE (:Fact {id: $id, subject: $subject, predicate: $predicate, "
            "object: $object, confidence: 1.0, created_at: datetime(), user_identifier: $user})",
            id=str(uuid4()),
            subject=subject,
            predicate=predicate,
            object=obj,
            user=user,
        )

    async def search(self, user: str, words: list[str]) -> list[Any]:
        return await self.read(BOLT_SEARCH, index=self.index, words=" ".join(words), user=user)

    async def walk(self, start: str) -> list[Any]:
        return await self.read(BOLT_WALK, start=start)

    async def purge(self, prefix: str) -> None:
        """Delete every preference, fact, user and entity the run wrote (each named with
        ``prefix``: ours, the peer's and the floor's), in auto-commit batches."""
        async with self.driver.session() as session:
            for query in (
                "MATCH (u:User)-[:HAS_PREFERENCE]->(p:Preference) "
                "WHERE u.identifier STARTS WITH $prefix "
                "CALL (p) { DETACH DELETE p } IN TRANSACTIONS OF 5000 ROWS",
                "MATCH (u:User) WHERE u.identifier STARTS WITH $prefix "
                "CALL (u) { DETACH DELETE u } IN TRANSACTIONS OF 5000 ROWS",
                "MATCH (n:Preference) WHERE n.user_identifier STARTS WITH $prefix "
                "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS",
                "MATCH (n:Fact) WHERE n.subject STARTS WITH $prefix "
                "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS",
                "MATCH (n:Entity) WHERE n.name STARTS WITH $prefix "
                "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS",
            ):
                await (await session.run(query, prefix=prefix)).consume()

    async def close(self) -> None:
        await self.driver.close()
