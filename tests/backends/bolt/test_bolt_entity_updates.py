"""Entity updates and merges on Bolt, shared with neo4j-agent-memory 0.8.0 (the reference)
on one Neo4j, both ways: aliases as its top-level list, attributes inside its metadata
JSON, and a merge that leaves the graph as the reference's readers expect (the source gone,
its name an alias of the target)."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Callable

import pytest

from memory_core import EntityRef, MemoryBackend
from memory_core_dev.foreign_data import reference_client
from memory_core_dev.neo4j_fixtures import Neo4jHandle

from .helpers import Graph

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the reference warns about neo4j preview features
    from neo4j_agent_memory.memory.long_term import LongTermMemory

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]
Unique = Callable[[str], str]


@pytest.fixture
async def reference(neo4j_server: Neo4jHandle) -> AsyncIterator[LongTermMemory]:
    """The reference library's long-term memory on the test server."""
    async with reference_client(neo4j_server.uri, neo4j_server.auth) as client:
        yield LongTermMemory(client)


async def test_the_reference_reads_an_updated_and_merged_entity(
    reference: LongTermMemory, bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    target = await bolt.add_entity(unique("Robert"), "PERSON")
    source = await bolt.add_entity(unique("Bob"), "PERSON", description="a duplicate")
    acme = await bolt.add_entity(unique("Acme"), "ORGANIZATION")
    nick = unique("Bobby")
    await bolt.update_entity(source.id, aliases=[nick], attributes={"team": "core", "n": 2})
    await bolt.add_relationship(source.id, acme.id, "WORKS_AT")
    await bolt.add_message(
        unique("s"),
        "user",
        "hi",
        extraction_mode="explicit",
        explicit_mentions=[EntityRef(id=source.id)],
    )
    merged = await bolt.merge_entities(source.id, target.id)
    assert merged.aliases == [source.name, nick]
    for name in (source.name, nick):
        found = await reference.get_entity_by_name(name)
        assert found is not None and str(found.id) == target.id, name
    [row] = graph(
        "MATCH (e:Entity {id: $id}) RETURN e.aliases AS aliases, e.surface_keys AS keys, "
        "e.merged_into AS merged, e.description AS description, "
        "COUNT { (e)-[:RELATED_TO]->(:Entity {id: $acme}) } AS works, "
        "COUNT { (:Message)-[:MENTIONS]->(e) } AS mentions, "
        "COUNT { MATCH (s:Entity {id: $source}) RETURN s } AS sources",
        id=target.id,
        acme=acme.id,
        source=source.id,
    )
    assert row["aliases"] == [source.name, nick]
    assert f"|{source.name.lower()}|" in row["keys"] and f"|{nick.lower()}|" in row["keys"]
    assert (row["merged"], row["description"]) == (None, "a duplicate")
    assert (row["works"], row["mentions"], row["sources"]) == (1, 1, 0)
    parsed = reference._parse_entity(
        graph("MATCH (e:Entity {id: $id}) RETURN properties(e) AS e", id=target.id)[0]["e"]
    )
    assert parsed.attributes == {"team": "core", "n": 2}
    assert parsed.aliases == [source.name, nick]


async def test_memory_core_reads_and_updates_what_the_reference_wrote(
    reference: LongTermMemory, bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    nick = unique("Ace")
    made, _ = await reference.add_entity(
        unique("Ada"),
        "PERSON",
        aliases=[nick],
        attributes={"born": 1815},
        metadata={"source": "theirs"},
        resolve=False,
        generate_embedding=False,
        deduplicate=False,
        enrich=False,
    )
    found = await bolt.get_entity_by_name(nick.upper())
    assert found is not None and found.id == str(made.id)
    assert (found.aliases, found.attributes) == ([nick], {"born": 1815})
    updated = await bolt.update_entity(found.id, attributes={"born": 1816})
    assert updated.aliases == [nick]
    [row] = graph("MATCH (e:Entity {id: $id}) RETURN e.metadata AS metadata", id=found.id)
    again = reference._parse_entity(
        graph("MATCH (e:Entity {id: $id}) RETURN properties(e) AS e", id=found.id)[0]["e"]
    )
    assert again.attributes == {"born": 1816}
    assert again.metadata.get("source") == "theirs", row["metadata"]


async def test_a_node_the_reference_merged_away_is_not_found_by_name(
    reference: LongTermMemory, bolt: MemoryBackend, unique: Unique
) -> None:
    keep, _ = await reference.add_entity(unique("Keep"), "PERSON", resolve=False)
    gone, _ = await reference.add_entity(unique("Gone"), "PERSON", resolve=False)
    await reference.merge_duplicate_entities(gone.id, keep.id)
    found = await bolt.get_entity_by_name(gone.name)
    assert found is not None and found.id == str(keep.id)
