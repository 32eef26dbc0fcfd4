"""The run's own Neo4j is empty at the start of every Bolt test (tests/bolt/conftest.py)."""

from __future__ import annotations

import pytest

from memory_core_dev.neo4j_fixtures import Neo4jHandle

from .helpers import Graph

pytestmark = [pytest.mark.neo4j, pytest.mark.neo4j_private]


@pytest.mark.parametrize("turn", ["first", "second"])
def test_each_test_starts_on_an_empty_graph(
    turn: str, neo4j_server: Neo4jHandle, graph: Graph
) -> None:
    neo4j_server.require_wipeable("it empties the database")
    # whichever of the two runs second sees the node the other left, unless wiped
    assert graph("MATCH (n) RETURN count(n) AS n") == [{"n": 0}]
    graph("CREATE (:WipeCheck {turn: $turn})", turn=turn)
