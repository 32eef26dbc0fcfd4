"""Relationships, preferences and facts through the Bolt bulk transfer and
neo4j-agent-memory 0.8.0 (the reference): the graph an import writes is the one the
backend's own long-term writes make (the reference's shape, see
:mod:`memory_core.backends.bolt.preferences`), the reference reads what was imported,
and what the reference wrote exports as memory-core reads it."""

from __future__ import annotations

import json
import warnings
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import pytest

from memory_core import HashingEmbedder, MemoryBackend, open_backend
from memory_core.archive import records as rec
from memory_core.transfer import copy_memory, import_memory, iter_records
from memory_core_dev.foreign_data import reference_client
from memory_core_dev.neo4j_fixtures import Neo4jHandle
from tests.transfer.test_long_term import KINDS, _fill, _header

from .helpers import Graph

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the reference warns about neo4j preview features
    from neo4j_agent_memory.memory.long_term import LongTermMemory
    from neo4j_agent_memory.schema.models import EntityRef as ReferenceRef

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::memory_core.CapabilityWarning"),
]

START = datetime(2020, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
END = START + timedelta(days=400)


@pytest.fixture
async def reference(neo4j_server: Neo4jHandle) -> AsyncIterator[LongTermMemory]:
    """The reference library's long-term memory on the test server."""
    async with reference_client(neo4j_server.uri, neo4j_server.auth) as client:
        yield LongTermMemory(client)


# Per node or edge of a tenant: its text, its properties' value types, its links.
PREFERENCES = """
MATCH (p:Preference {tenant: $t})
RETURN p.preference AS text, labels(p) AS labels,
       [k IN keys(p) WHERE k <> 'id' | [k, valueType(p[k])]] AS types,
       p.created_at = p.valid_from AS starts_when_created,
       [(p)-[a:APPLIES_TO]->(e:Entity) | [a.position, e.name, e.tenant = $t]] AS applies,
       [(p)-[:SUPERSEDED_BY]->(s:Preference) | s.preference] AS next,
       [(u:User)-[:HAS_PREFERENCE]->(p) | u.identifier = $t AND u.id = $t] AS users
"""
FACTS = """
MATCH (f:Fact {tenant: $t})
RETURN f.object AS text, [k IN keys(f) WHERE k <> 'id' | [k, valueType(f[k])]] AS types,
       f.subject_key AS key, COUNT { (f)--() } AS links
"""
RELATIONSHIPS = """
MATCH (s:Entity {tenant: $t})-[r:RELATED_TO]->(o:Entity {tenant: $t})
RETURN r.type AS text, r.relation_type AS mirror, s.name AS source, o.name AS target,
       [k IN keys(r) WHERE k <> 'id' | [k, valueType(r[k])]] AS types, r.properties AS props
"""


def _shape(graph: Graph, tenant: str) -> dict[str, list[dict[str, Any]]]:
    shape = {}
    for name, query in (("p", PREFERENCES), ("f", FACTS), ("r", RELATIONSHIPS)):
        found = graph(query, t=tenant)
        for row in found:
            row["types"] = sorted(row["types"])
            for key in ("applies", "next", "users"):
                if key in row:
                    row[key] = sorted(row[key])
        shape[name] = sorted(found, key=lambda row: str(row["text"]))
    return shape


async def test_an_imported_graph_is_the_one_the_store_writes(
    open_bolt: Callable[..., MemoryBackend], graph: Graph, unique: Callable[[str], str]
) -> None:
    written, imported = unique("written"), unique("imported")
    async with (
        open_backend("memory://", multi_tenant=True, embedder=HashingEmbedder(8)) as source,
        open_bolt(multi_tenant=True, embedder=HashingEmbedder()) as bolt,
    ):
        await _fill(bolt, written)
        await _fill(source, imported)
        report = await copy_memory(source, bolt)
        assert not report.skipped and not report.not_carried, report.summary()
    ours, theirs = _shape(graph, written), _shape(graph, imported)
    assert [len(ours[k]) for k in "pfr"] == [4, 2, 3]
    assert theirs == ours
    spicy = ours["p"][1]
    assert spicy["text"].startswith("likes spicy")
    assert spicy["applies"] == [[0, "Lisbon", True], [1, "Ada", True]]
    assert spicy["next"] == ["likes mild food"] and spicy["users"] == [True]
    assert spicy["labels"] == ["Preference"] and spicy["starts_when_created"]
    assert ["valid_until", "ZONED DATETIME NOT NULL"] in spicy["types"]
    assert ["valid_from", "ZONED DATETIME NOT NULL"] in ours["f"][0]["types"]
    works = next(r for r in ours["r"] if r["text"] == "WORKS_AT")
    assert works["mirror"] == "WORKS_AT" and isinstance(works["props"], str)
    assert ["valid_from", "STRING NOT NULL"] in works["types"]


METADATA = {"source": "chat ✓", "n": 3, "nested": {"x": [1.5, None]}}


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record) + "\n"


def _archive(user: str, subject: str, ids: dict[str, str]) -> list[str]:
    """Two entities, a relationship between them, a preference superseded by a later
    one, and a fact, for ``user`` on a single-tenant store."""
    start, end = rec.stamp(START), rec.stamp(END)
    entities = [
        {"record": "entity", "id": ids[name], "user_identifier": None, "name": f"{subject}-{name}"}
        | {"type": kind, "description": None, "created_at": start, "updated_at": None}
        for name, kind in (("ada", "PERSON"), ("acme", "ORGANIZATION"))
    ]
    relationship = {
        "record": "relationship",
        "id": ids["link"],
        "user_identifier": None,
        "source_id": ids["ada"],
        "target_id": ids["acme"],
        "type": "WORKS_AT",
        "properties": {},
        "confidence": 0.5,
        "valid_from": start,
        "valid_until": None,
        "created_at": start,
    }
    common = {"record": "preference", "user_identifier": user, "category": "food"}
    old = common | {
        "id": ids["old"],
        "preference": "likes tea",
        "context": "mornings",
        "confidence": 0.5,
        "linked_entities": [ids["acme"]],
        "metadata": METADATA,
        "created_at": start,
        "superseded_at": end,
        "superseded_by": ids["new"],
        "embedding": None,
    }
    new = old | {
        "id": ids["new"],
        "preference": "likes coffee",
        "context": None,
        "confidence": 1.0,
        "linked_entities": [],
        "metadata": {},
        "superseded_at": None,
        "superseded_by": None,
    }
    fact = {
        "record": "fact",
        "id": ids["fact"],
        "user_identifier": user,
        "subject": subject,
        "predicate": "WORKS_AT",
        "object": "Acme",
        "confidence": 0.75,
        "valid_from": start,
        "valid_until": end,
        "source_message_id": None,
        "metadata": METADATA,
        "created_at": start,
        "embedding": None,
    }
    body = [_line(r) for r in (*entities, relationship, old, new, fact)]
    return [_header(2), *body, _line({"record": "end", "counts": {}})]


async def test_the_reference_reads_what_an_import_wrote(
    reference: LongTermMemory, bolt: MemoryBackend, unique: Callable[[str], str]
) -> None:
    user, subject = unique("user"), unique("Ada")
    ids = {name: str(uuid4()) for name in ("ada", "acme", "link", "old", "new", "fact")}
    report = await import_memory(bolt, _archive(user, subject, ids))
    assert {kind: report.copied[kind] for kind in KINDS} == {
        "relationship": 1,
        "preference": 2,
        "fact": 1,
    }, report.summary()
    active = await reference.get_preferences_for(user)
    assert [(str(p.id), p.preference) for p in active] == [(ids["new"], "likes coffee")]
    scoped = await reference.get_preferences_for(
        user, applies_to=ReferenceRef(id=ids["acme"]), active_only=False
    )
    assert [(str(p.id), p.context, p.confidence, p.metadata) for p in scoped] == [
        (ids["old"], "mornings", 0.5, METADATA)
    ]
    [their_fact] = await reference.get_facts_about(subject)
    assert (str(their_fact.id), their_fact.as_triple) == (
        ids["fact"],
        (subject, "WORKS_AT", "Acme"),
    )
    assert (their_fact.valid_from, their_fact.valid_until, their_fact.confidence) == (
        START,
        END,
        0.75,
    )
    [(other, edge)] = await reference.get_related_entities(UUID(ids["ada"]))
    assert (str(other.id), str(edge.id), edge.type) == (ids["acme"], ids["link"], "WORKS_AT")
    assert (edge.valid_from, edge.confidence) == (START, 0.5)


async def test_what_the_reference_wrote_exports_as_memory_core_reads_it(
    reference: LongTermMemory,
    bolt: MemoryBackend,
    neo4j_server: Neo4jHandle,
    unique: Callable[[str], str],
) -> None:
    neo4j_server.require_wipeable("it exports the whole database")
    user, subject = unique("user"), unique("Ada")
    ada, _ = await reference.add_entity(unique("Ada"), "PERSON", resolve=False)
    acme, _ = await reference.add_entity(unique("Acme"), "ORGANIZATION", resolve=False)
    old = await reference.add_preference(
        "food",
        "likes tea",
        context="mornings",
        confidence=0.5,
        metadata=METADATA,
        user_identifier=user,
        applies_to=[ReferenceRef(id=str(acme.id))],
    )
    new = await reference.add_preference("food", "likes coffee", user_identifier=user)
    await reference.supersede_preference(old.id, new.id)
    await reference.add_fact(
        subject, "WORKS_AT", "Acme", confidence=0.75, valid_from=START, valid_until=END
    )
    await reference.add_relationship(ada, acme, "works_at", valid_from=START)

    exported = [r async for r in iter_records(bolt) if r["record"] in KINDS]
    [edge] = await bolt.list_relationships(str(ada.id))
    preferences = await bolt.list_preferences(user_identifier=user, include_superseded=True)
    expected = [
        rec.relationship(edge, None),
        *sorted((rec.preference(p) for p in preferences), key=lambda r: str(r["id"])),
        *(rec.fact(f) for f in await bolt.facts_about(subject)),
    ]
    assert exported == expected
    assert [r["record"] for r in exported] == ["relationship", "preference", "preference", "fact"]
    assert exported[0]["type"] == "works_at"  # as the reference spelled it
    assert {r["user_identifier"] for r in exported[1:3]} == {user}
    async with open_backend("memory://") as back:
        report = await copy_memory(bolt, back)
        assert {kind: report.copied[kind] for kind in KINDS} == {
            "relationship": 1,
            "preference": 2,
            "fact": 1,
        }, report.summary()
        again = [r async for r in iter_records(back) if r["record"] in KINDS]
    assert again == [{**expected[0], "type": "WORKS_AT"}, *expected[1:]]
