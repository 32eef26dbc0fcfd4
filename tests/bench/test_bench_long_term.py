"""The long-term group of the bench (``--workloads long_term``) runs at ``--smoke`` sizes
on embedded, PostgreSQL and Bolt: each workload beside its floor (and on Bolt's adds the
reference library), the readers finding as many records as their floor, and nothing
left behind in Neo4j or on the PostgreSQL server. Only shapes and counts are checked,
never a timing."""

from __future__ import annotations

import neo4j
import pytest

from bench.__main__ import run
from bench.bolt import _schema_names
from bench.core import Selection
from bench.sizes import SMOKE
from memory_core_dev.neo4j_fixtures import Neo4jHandle
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

WORKLOADS = {
    "add_preference",
    "add_fact",
    "search_preferences (one user's)",
    "related_entities (depth 2)",
}


async def _long_term_nodes(neo4j_server: Neo4jHandle) -> int:
    driver = neo4j.AsyncGraphDatabase.driver(
        neo4j_server.uri, auth=neo4j_server.auth, notifications_min_severity="OFF"
    )
    try:
        records, _, _ = await driver.execute_query(
            "MATCH (n) WHERE n:Preference OR n:Fact OR n:Entity OR n:User RETURN count(n) AS n"
        )
    finally:
        await driver.close()
    return int(records[0]["n"])


async def _peer_schema(uri: str) -> set[tuple[str, str]]:
    """Constraints and indexes other than memory-core's own (which a store keeps)."""
    return {(kind, name) for kind, name in await _schema_names(uri) if "memory_core" not in name}


@pytest.mark.neo4j_private
async def test_the_long_term_group_runs_beside_its_floors_and_leaves_nothing(
    neo4j_server: Neo4jHandle, postgres_server: PostgresHandle
) -> None:
    neo4j_server.require_wipeable("it compares the whole database before and after")
    nodes, schema = await _long_term_nodes(neo4j_server), await _peer_schema(neo4j_server.uri)
    result = await run(
        SMOKE,
        "smoke",
        ["embedded", "postgres", "bolt"],
        neo4j_uri=neo4j_server.uri,
        want=Selection(("long_term",)),
        postgres_url=postgres_server.url,
    )
    assert await _long_term_nodes(neo4j_server) == nodes, "the bench left long-term nodes"
    assert await _peer_schema(neo4j_server.uri) == schema, "the bench left the peer's schema"
    found = {(w["backend"], w["workload"]): w for w in result["workloads"]}
    assert set(found) == {(b, w) for b in ("embedded", "postgres", "bolt") for w in WORKLOADS}
    for (backend, name), entry in found.items():
        expected = {"memory-core", "floor"}
        if backend == "bolt" and name.startswith("add_"):
            expected.add("peer")
        assert set(entry["subjects"]) == expected, (backend, name)
        assert set(entry["ratios"]) == {f"vs_{s}" for s in expected - {"memory-core"}}
        assert entry["extra"]["target_vs_floor"] in (1.3, 2.0)
        if "results_count" in entry["subjects"]["memory-core"]:
            ours = entry["subjects"]["memory-core"]["results_count"]["median"]
            floor = entry["subjects"]["floor"]["results_count"]["median"]
            assert ours == floor > 0, (backend, name, ours, floor)
