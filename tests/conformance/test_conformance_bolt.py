"""The whole conformance suite on the Bolt backend, against the real Neo4j of the run.

The store is not declared throwaway: scenarios that need an empty store get a fresh
tenant (the backend is multi-tenant capable). DESIGN §11 — the suite is safe on someone
else's store — is checked around the run: before the first scenario the server is seeded
with "real" data (a user's conversation written through the Bolt backend, whose graph is
the reference's, with mentions of an entity; a standalone User; an Entity) and every node
label and relationship type is counted; after the last scenario nothing was added or
removed and the real data is unchanged (a failure shows as an error in the teardown of
the class's last test). Other programs' records are seeded too, in no user's scope, so
every whole-store read of the suite meets them: values memory-core's models cannot hold
(``memory_core_dev.foreign_data.BOLT_ADVERSARIAL``), which must break none of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import uuid4

import anyio
import pytest
from neo4j import GraphDatabase

from memory_core import EntityRef, open_backend
from memory_core.conformance import ConformanceSuite
from memory_core.conformance.harness import PREFIX
from memory_core_dev.foreign_data import add_bolt_adversarial, remove_bolt
from memory_core_dev.neo4j_fixtures import Neo4jHandle

pytestmark = pytest.mark.neo4j

EXISTING = [("user", "my real note"), ("assistant", "kept safe"), ("user", "third")]


def _query(server: Neo4jHandle, cypher: str, **params: Any) -> list[dict[str, Any]]:
    with GraphDatabase.driver(server.uri, auth=server.auth) as driver:
        records, _, _ = driver.execute_query(cypher, params)
    return [record.data() for record in records]


def _counts(server: Neo4jHandle) -> dict[str, list[dict[str, Any]]]:
    labels = _query(
        server,
        "MATCH (n) UNWIND CASE WHEN labels(n) = [] THEN [''] ELSE labels(n) END AS label "
        "RETURN label, count(*) AS n ORDER BY label",
    )
    types = _query(server, "MATCH ()-[r]->() RETURN type(r) AS type, count(*) AS n ORDER BY type")
    return {"labels": labels, "types": types}


def _real(server: Neo4jHandle, names: dict[str, str]) -> list[dict[str, Any]]:
    return _query(
        server,
        "MATCH (:User {identifier: $user})-[:HAS_CONVERSATION]->"
        "(:Conversation {session_id: $session})-[:HAS_MESSAGE]->(m:Message) "
        "OPTIONAL MATCH (m)-[:MENTIONS]->(e:Entity) "
        "WITH m, collect(e.name) AS mentions ORDER BY m.seq "
        "RETURN m.role AS role, m.content AS content, m.metadata AS metadata, mentions",
        user=names["user"],
        session=names["session"],
    ) + _query(
        server,
        "MATCH (u:User {identifier: $lone}), (e:Entity {id: $entity}) "
        "RETURN u.identifier AS role, e.name AS content, null AS metadata, [] AS mentions",
        lone=names["lone"],
        entity=names["entity"],
    )


async def _seed(url: str, names: dict[str, str]) -> None:
    async with open_backend(url) as memory:
        person = await memory.add_entity(names["person"], "PERSON")
        for n, (role, text) in enumerate(EXISTING):
            await memory.add_message(
                names["session"],
                role,
                text,
                metadata={"n": n},
                user_identifier=names["user"],
                extraction_mode="explicit",
                explicit_mentions=[EntityRef(id=person.id)],
            )


@pytest.fixture(scope="class")
def seeded(neo4j_server: Neo4jHandle) -> Iterator[dict[str, str]]:
    """Names of the seeded data; removed again afterwards (the server may be external)."""
    tag = uuid4().hex
    names = {k: f"real-{k}-{tag}" for k in ("session", "user", "lone", "entity", "person")}
    anyio.run(_seed, neo4j_server.uri, names)
    add_bolt_adversarial(neo4j_server.uri, neo4j_server.auth, tag)
    _query(neo4j_server, "CREATE (:User {identifier: $lone})", lone=names["lone"])
    _query(
        neo4j_server,
        "CREATE (:Entity {id: $entity, name: 'Real Place', type: 'LOCATION'})",
        entity=names["entity"],
    )
    try:
        yield names
    finally:
        remove_bolt(neo4j_server.uri, neo4j_server.auth, tag)
        _query(
            neo4j_server,
            "OPTIONAL MATCH (c:Conversation {session_id: $session}) "
            "OPTIONAL MATCH (c)-[:HAS_MESSAGE]->(m) "
            "OPTIONAL MATCH (e:Entity) WHERE e.id = $entity OR e.name = $person "
            "OPTIONAL MATCH (u:User) WHERE u.identifier IN [$user, $lone] "
            "DETACH DELETE c, m, e, u",
            **names,
        )


@pytest.fixture(scope="class")
def left_as_found(neo4j_server: Neo4jHandle, seeded: dict[str, str]) -> Iterator[None]:
    """Counts and the real data before the class's scenarios; the same after them. On a
    server others write to meanwhile (``NEO4J_URI``) the counts of the whole database
    move with their writes: there nothing named by the suite may be left instead."""
    before, real = _counts(neo4j_server), _real(neo4j_server, seeded)
    assert [row["content"] for row in real] == [text for _, text in EXISTING] + ["Real Place"]
    assert {row["label"] for row in before["labels"]} >= {"User", "Entity", "Message"}
    yield
    assert _real(neo4j_server, seeded) == real, "the suite changed the real data"
    assert _left_by_the_suite(neo4j_server) == [], "the suite left nodes behind"
    if neo4j_server.external and not neo4j_server.wipeable:
        return
    after = _counts(neo4j_server)
    assert after["labels"] == before["labels"], "the suite changed node counts by label"
    assert after["types"] == before["types"], "the suite changed relationship counts by type"


def _left_by_the_suite(server: Neo4jHandle) -> list[dict[str, Any]]:
    """Nodes holding a name the suite makes (``cf-<kind>-<uuid>``), or linked to one."""
    return _query(
        server,
        "MATCH (n) WHERE any(k IN keys(n) WHERE n[k] IS :: STRING AND n[k] STARTS WITH $prefix) "
        "RETURN labels(n) AS labels, n.id AS id LIMIT 20",
        prefix=f"{PREFIX}-",
    )


@pytest.mark.usefixtures("left_as_found")
class TestBoltConformance(ConformanceSuite):
    @pytest.fixture
    def conformance_backend_url(self, neo4j_server: Neo4jHandle) -> str:
        return neo4j_server.uri
