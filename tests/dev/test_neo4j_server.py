"""The real Neo4j server that the suite starts (memory_core_dev/neo4j_server.py)."""

from __future__ import annotations

import uuid

import pytest
from neo4j import GraphDatabase

from memory_core_dev.neo4j_fixtures import Neo4jHandle, neo4j_wipe

pytestmark = pytest.mark.neo4j


def _label() -> str:
    # A label of its own, so that the test never touches other tests' data.
    return "T_" + uuid.uuid4().hex


def test_return_1(neo4j_server: Neo4jHandle) -> None:
    with GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth) as driver:
        records, _, _ = driver.execute_query("RETURN 1 AS one")
    assert records[0]["one"] == 1


def test_write_then_read_node(neo4j_server: Neo4jHandle) -> None:
    label = _label()
    with GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth) as driver:
        try:
            driver.execute_query(f"CREATE (:`{label}` {{name: $name, n: $n}})", name="alpha", n=7)
            records, _, _ = driver.execute_query(
                f"MATCH (x:`{label}`) RETURN x.name AS name, x.n AS n"
            )
            assert [(r["name"], r["n"]) for r in records] == [("alpha", 7)]
        finally:
            driver.execute_query(f"MATCH (x:`{label}`) DETACH DELETE x")


@pytest.mark.neo4j_private
def test_own_server_has_usage_reporting_off(neo4j_server: Neo4jHandle) -> None:
    neo4j_server.require_own("it reads the configuration of the server it started")
    with GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth) as driver:
        records, _, _ = driver.execute_query(
            "SHOW SETTINGS YIELD name, value "
            "WHERE name IN ['dbms.usage_report.enabled', 'server.http.enabled', "
            "'server.https.enabled', 'dbms.security.auth_enabled', 'server.bolt.listen_address'] "
            "RETURN name, value"
        )
    settings = {r["name"]: r["value"] for r in records}
    assert settings["dbms.usage_report.enabled"] == "false"
    assert settings["server.http.enabled"] == "false"
    assert settings["server.https.enabled"] == "false"
    assert settings["dbms.security.auth_enabled"] == "false"
    assert settings["server.bolt.listen_address"].startswith("127.0.0.1:")


@pytest.mark.neo4j_private
def test_wipe_deletes_nodes_but_keeps_indexes(neo4j_server: Neo4jHandle) -> None:
    neo4j_server.require_own("it empties the database")
    label = _label()
    index = "idx_" + label
    with GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth) as driver:
        driver.execute_query(f"CREATE INDEX `{index}` IF NOT EXISTS FOR (x:`{label}`) ON (x.k)")
        try:
            driver.execute_query(
                f"UNWIND range(1, 2500) AS i CREATE (:`{label}` {{k: i}})-[:R]->(:`{label}`)"
            )
            neo4j_wipe(neo4j_server.uri, neo4j_server.auth)
            records, _, _ = driver.execute_query("MATCH (n) RETURN count(n) AS c")
            assert records[0]["c"] == 0
            records, _, _ = driver.execute_query(
                "SHOW INDEXES YIELD name WHERE name = $name RETURN name", name=index
            )
            assert len(records) == 1
        finally:
            driver.execute_query(f"DROP INDEX `{index}` IF EXISTS")


@pytest.mark.parametrize(
    ("throwaway", "wipeable"), [(False, False), (True, True)], ids=["external", "throwaway"]
)
def test_only_a_throwaway_external_server_is_wiped(throwaway: bool, wipeable: bool) -> None:
    """``NEO4J_URI`` names a server of the user's: never wiped; the mutation script's
    own server is marked ``NEO4J_THROWAWAY=1`` and wiped like the run's own."""
    handle = Neo4jHandle(uri="bolt://127.0.0.1:1", auth=None, throwaway=throwaway)
    assert handle.external and handle.wipeable is wipeable
