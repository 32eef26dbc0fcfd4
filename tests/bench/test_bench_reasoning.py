"""The reasoning group of the bench (``--workloads reasoning``) runs at ``--smoke`` sizes
on embedded, PostgreSQL and Bolt: each workload beside its floor (and on Bolt the
reference library on the step and the statistics), the statistics and the similar
traces finding as many rows as their floor, and nothing left behind in Neo4j. Only
shapes and counts are checked, never a timing."""

from __future__ import annotations

import neo4j
import pytest

from bench.__main__ import run
from bench.bolt import _schema_names
from bench.core import Selection
from bench.sizes import SMOKE
from memory_core.backends.bolt.schema import STATEMENTS
from memory_core_dev.neo4j_fixtures import Neo4jHandle
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

BACKENDS = ("embedded", "postgres", "bolt")
TRACES = SMOKE.reasoning_traces
WORKLOADS = {
    ("add_step + record_tool_call", f"x{SMOKE.reasoning_steps}"),
    ("tool_stats (common tool)", f"{TRACES // 10} traces"),
    ("tool_stats (rare tool)", f"{TRACES // 10} traces"),
    ("tool_stats (common tool)", f"{TRACES} traces"),
    ("tool_stats (rare tool)", f"{TRACES} traces"),
    ("tool_stats (all tools)", f"{TRACES} traces"),
    ("similar_traces (top 5)", f"{TRACES} traces"),
}


async def _reasoning_nodes(neo4j_server: Neo4jHandle) -> int:
    driver = neo4j.AsyncGraphDatabase.driver(
        neo4j_server.uri, auth=neo4j_server.auth, notifications_min_severity="OFF"
    )
    try:
        records, _, _ = await driver.execute_query(
            "MATCH (n) WHERE n:ReasoningTrace OR n:ReasoningStep OR n:ToolCall OR n:Tool "
            "OR n:User RETURN count(n) AS n"
        )
    finally:
        await driver.close()
    return int(records[0]["n"])


async def _peer_schema(uri: str) -> set[tuple[str, str]]:
    """Constraints and indexes other than memory-core's own (which a store keeps)."""
    return {(kind, name) for kind, name in await _schema_names(uri) if name not in STATEMENTS}


def _peers(backend: str, workload: str) -> set[str]:
    if backend == "bolt" and not workload.startswith("similar"):
        return {"peer"}
    return set()


@pytest.mark.neo4j_private
async def test_the_reasoning_group_runs_beside_its_floors_and_leaves_nothing(
    neo4j_server: Neo4jHandle, postgres_server: PostgresHandle
) -> None:
    neo4j_server.require_wipeable("it compares the whole database before and after")
    nodes = await _reasoning_nodes(neo4j_server)
    schema = await _peer_schema(neo4j_server.uri)
    result = await run(
        SMOKE,
        "smoke",
        list(BACKENDS),
        neo4j_uri=neo4j_server.uri,
        want=Selection(("reasoning",)),
        postgres_url=postgres_server.url,
    )
    assert await _reasoning_nodes(neo4j_server) == nodes, "the bench left reasoning nodes"
    assert await _peer_schema(neo4j_server.uri) == schema, "the bench left the peer's schema"
    found = {(w["backend"], w["workload"], w["size"]): w for w in result["workloads"]}
    assert set(found) == {(b, *w) for b in BACKENDS for w in WORKLOADS}
    for (backend, name, _), entry in found.items():
        expected = {"memory-core", "floor"} | _peers(backend, name)
        assert set(entry["subjects"]) == expected, (backend, name)
        assert set(entry["ratios"]) == {f"vs_{s}" for s in expected - {"memory-core"}}
        assert entry["extra"]["target_vs_floor"] in (1.3, 2.0)
        if "results_count" in entry["subjects"]["memory-core"]:
            ours = entry["subjects"]["memory-core"]["results_count"]["median"]
            floor = entry["subjects"]["floor"]["results_count"]["median"]
            assert ours == floor > 0, (backend, name, ours, floor)
