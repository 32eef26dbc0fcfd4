"""Helpers for checking what the Bolt backend stored in the graph."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import neo4j

from memory_core import Entity, EntityRef, MemoryBackend, Message

Graph = Callable[..., list[dict[str, Any]]]


async def mentioning(
    bolt: MemoryBackend, session: str, name: str, kind: str
) -> tuple[Entity, Message]:
    """A new entity ``name`` of ``kind``, and a message "hi" of ``session`` mentioning it
    by id."""
    entity = await bolt.add_entity(name, kind)
    message = await bolt.add_message(
        session,
        "user",
        "hi",
        extraction_mode="explicit",
        explicit_mentions=[EntityRef(id=entity.id)],
    )
    return entity, message


def chain(graph: Graph, session_id: str) -> list[str]:
    """The contents along FIRST_MESSAGE / NEXT_MESSAGE of a session's conversation,
    asserting the chain is one simple path covering every message exactly once."""
    [row] = graph(
        "MATCH (c:Conversation {session_id: $s}) "
        "RETURN COUNT { (c)-[:FIRST_MESSAGE]->() } AS firsts, "
        "COUNT { (c)-[:HAS_MESSAGE]->() } AS total, "
        "[p = (c)-[:FIRST_MESSAGE]->(:Message)-[:NEXT_MESSAGE*0..]->(last:Message) "
        " WHERE NOT (last)-[:NEXT_MESSAGE]->() | [n IN tail(nodes(p)) | n.content]] AS paths, "
        "COUNT { (c)-[:HAS_MESSAGE]->(m)-[:NEXT_MESSAGE]->(n) WHERE NOT (c)-[:HAS_MESSAGE]->(n) } "
        " AS outside, "
        "COUNT { (c)-[:HAS_MESSAGE]->(m) WHERE COUNT { (m)-[:NEXT_MESSAGE]->() } > 1 "
        " OR COUNT { ()-[:NEXT_MESSAGE]->(m) } > 1 } AS forks",
        s=session_id,
    )
    if row["total"] == 0:
        assert row["firsts"] == 0 and row["paths"] == []
        return []
    assert row["firsts"] == 1, f"{row['firsts']} FIRST_MESSAGE edges"
    assert row["forks"] == 0 and row["outside"] == 0, row
    [path] = row["paths"]
    assert len(path) == row["total"], f"chain covers {len(path)} of {row['total']} messages"
    return list(path)


def foreign_message(graph: Graph, conversation_id: object, **props: Any) -> None:
    """Link a message node another library wrote (only ``props``, a Neo4j ``timestamp``,
    no ``seq`` or ``conversation_id``) to a conversation, as the reference does."""
    graph(
        "MATCH (c:Conversation {id: $cid}) "
        "CREATE (c)-[:HAS_MESSAGE]->(m:Message {timestamp: datetime()}) SET m += $props",
        cid=str(conversation_id),
        props=props,
    )


def fresh_statistics(driver: neo4j.Driver, label: str, timeout: float = 30.0) -> None:
    """Resample every index on ``label`` and wait until its statistics count every update.

    A plan test must not depend on when Neo4j last sampled: an index created on an empty
    database reports no entries until it is resampled in the background, and then the
    planner weighs a seek and a scan by statistics that describe nothing. On a database
    other tests write to at the same time (the external-Neo4j pass), updates arrive after
    a resample: the indexes are resampled again every half second until one sample
    counts them all. The query caches are then cleared: a plan cached under older
    statistics (by another test's run of the same statement) is otherwise reused until
    they have diverged enough, and for at least the replan interval."""
    records, _, _ = driver.execute_query(
        "SHOW INDEXES YIELD name, labelsOrTypes WHERE $label IN labelsOrTypes RETURN name",
        label=label,
    )
    names = [record["name"] for record in records]
    deadline = time.monotonic() + timeout
    resampled = 0.0
    while True:
        if time.monotonic() - resampled >= 0.5:
            for name in names:
                driver.execute_query("CALL db.resampleIndex($name)", name=name)
            resampled = time.monotonic()
        records, _, _ = driver.execute_query(
            "CALL db.stats.retrieve('GRAPH COUNTS') YIELD data RETURN data.indexes AS indexes"
        )
        stale = [
            i
            for i in records[0]["indexes"]
            if label in i.get("labels", []) and i.get("updatesSinceEstimation")
        ]
        if not stale:
            driver.execute_query("CALL db.clearQueryCaches()")
            return
        assert time.monotonic() < deadline, f"index statistics still stale: {stale}"
        time.sleep(0.1)
