"""The schema a Bolt backend creates: the vector index an embedder needs, made when it is
missing with the documented label, property, size and similarity (elsewhere in a run it
already exists: a wipe keeps indexes), and the sizes it refuses."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_core import ConfigurationError, HashingEmbedder, MemoryBackend
from memory_core.backends.bolt.schema import VECTOR_INDEX, vector_dimensions, vector_index_statement
from memory_core_dev.neo4j_fixtures import Neo4jHandle

from .helpers import Graph

pytestmark = pytest.mark.anyio


@pytest.mark.neo4j_private
async def test_a_missing_vector_index_is_made_as_documented(
    neo4j_server: Neo4jHandle, open_bolt: Callable[..., MemoryBackend], graph: Graph
) -> None:
    neo4j_server.require_wipeable("it drops the database's indexes")
    graph(f"DROP INDEX {VECTOR_INDEX} IF EXISTS")
    async with open_bolt(embedder=HashingEmbedder()):
        pass
    [index] = graph(
        "SHOW VECTOR INDEXES YIELD name, labelsOrTypes, properties, options, state "
        "RETURN name, labelsOrTypes, properties, options, state"
    )
    assert index["name"] == VECTOR_INDEX == "message_embedding_idx"
    assert (index["labelsOrTypes"], index["properties"]) == (["Message"], ["embedding"])
    config = index["options"]["indexConfig"]
    assert config["vector.dimensions"] == HashingEmbedder().dimensions == 256
    assert config["vector.similarity_function"].lower() == "cosine"
    assert index["state"] == "ONLINE"  # waited for before the backend was handed over


@pytest.mark.parametrize("size", [0, -3, True, 2.0, "8"], ids=repr)
def test_a_vector_size_that_is_not_a_positive_int_is_refused(size: object) -> None:
    with pytest.raises(ConfigurationError, match=r"embedder\.dimensions"):
        vector_index_statement(size)  # type: ignore[arg-type]


def test_one_dimension_is_a_size() -> None:
    assert "`vector.dimensions`: 1," in vector_index_statement(1)


@pytest.mark.parametrize(
    "options",
    [
        None,
        {},
        {"indexConfig": None},
        {"indexConfig": {}},
        {"indexConfig": {"vector.dimensions": True}},
    ],
    ids=repr,
)
def test_an_index_whose_options_hold_no_size_has_none(options: object) -> None:
    # Another writer's vector index (or another server version's options) without a
    # readable size is neither a mismatch nor a crash.
    assert vector_dimensions(options) is None


def test_an_indexs_size_is_read_from_its_options() -> None:
    assert vector_dimensions({"indexConfig": {"vector.dimensions": 384}}) == 384


async def test_a_schema_statement_a_concurrent_set_up_deadlocked_is_run_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two processes connecting to one new database at once deadlock on a label's schema
    lock; Neo4j fails one with a transient error, not retried by an auto-commit
    transaction (seen in CI: a server's start-up failed). The statement runs again."""
    from neo4j.exceptions import TransientError

    from memory_core.backends.bolt import session
    from memory_core.backends.bolt.config import parse_config

    monkeypatch.setattr(session, "DDL_BACKOFF", 0.001)
    connection = session.Connection(parse_config("bolt://127.0.0.1:9", environ={}), "test")
    ran: list[str] = []

    async def auto(query: str, **params: object) -> list[dict[str, object]]:
        ran.append(query)
        if len(ran) < 3:
            raise TransientError("Neo.TransientError.Transaction.DeadlockDetected")
        return []

    monkeypatch.setattr(connection, "_auto", auto)
    await connection._ddl("CREATE INDEX x IF NOT EXISTS FOR (n:N) ON (n.p)")
    assert len(ran) == 3
    ran.clear()
    monkeypatch.setattr(session, "DDL_RETRIES", 1)
    with pytest.raises(TransientError):
        await connection._ddl("CREATE INDEX x IF NOT EXISTS FOR (n:N) ON (n.p)")
    assert len(ran) == 2
