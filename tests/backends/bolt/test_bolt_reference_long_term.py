"""Long-term memory shared with neo4j-agent-memory 0.8.0 (the reference) on one Neo4j,
both ways: preferences (with their user, the entities they apply to, superseding),
facts (with their validity) and relationships between entities.

The reference is used through its own LongTermMemory API with no embedder, resolver or
extractor; its schema set-up runs first, so the two libraries' constraints and indexes
also have to coexist.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from memory_core import MemoryBackend, NotFoundError
from memory_core_dev.foreign_data import reference_client
from memory_core_dev.neo4j_fixtures import Neo4jHandle

from .helpers import Graph

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the reference warns about neo4j preview features
    from neo4j_agent_memory.memory.long_term import LongTermMemory
    from neo4j_agent_memory.schema.models import EntityRef as ReferenceRef

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

START = datetime(2020, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
END = START + timedelta(days=400)
METADATA = {"source": "chat ✓", "n": 3, "nested": {"x": [1.5, None]}}


@pytest.fixture
async def reference(neo4j_server: Neo4jHandle) -> AsyncIterator[LongTermMemory]:
    """The reference library's long-term memory on the test server."""
    async with reference_client(neo4j_server.uri, neo4j_server.auth) as client:
        yield LongTermMemory(client)


async def test_bolt_long_term_reads_back_through_reference(
    reference: LongTermMemory, bolt: MemoryBackend, unique: Callable[[str], str]
) -> None:
    user, subject = unique("user"), unique("Ada")
    ada = await bolt.add_entity(unique("Ada"), "PERSON")
    acme = await bolt.add_entity(unique("Acme"), "ORGANIZATION")
    old = await bolt.add_preference(
        "food",
        "likes tea",
        context="mornings",
        confidence=0.5,
        metadata=METADATA,
        linked_entities=[acme.id],
        user_identifier=user,
    )
    new = await bolt.add_preference("food", "likes coffee", user_identifier=user)
    await bolt.supersede_preference(old.id, new.id, user_identifier=user)
    fact = await bolt.add_fact(
        subject,
        "WORKS_AT",
        "Acme",
        confidence=0.75,
        valid_from=START,
        valid_until=END,
        metadata=METADATA,
        user_identifier=user,
    )
    link = await bolt.add_relationship(ada.id, acme.id, "works_at", valid_from=START)

    active = await reference.get_preferences_for(user)
    assert [(str(p.id), p.preference) for p in active] == [(new.id, "likes coffee")]
    scoped = await reference.get_preferences_for(
        user, applies_to=ReferenceRef(id=acme.id), active_only=False
    )
    [theirs] = scoped
    assert (str(theirs.id), theirs.category, theirs.preference, theirs.context) == (
        old.id,
        "food",
        "likes tea",
        "mornings",
    )
    assert (theirs.confidence, theirs.metadata, theirs.created_at) == (
        0.5,
        METADATA,
        old.created_at,
    )
    before = await reference.get_preferences_for(
        user, active_only=False, as_of=new.created_at - timedelta(microseconds=1)
    )
    assert {str(p.id) for p in before} == {old.id}

    [their_fact] = await reference.get_facts_about(subject)
    assert str(their_fact.id) == fact.id
    assert their_fact.as_triple == (subject, "WORKS_AT", "Acme")
    assert (their_fact.confidence, their_fact.valid_from, their_fact.valid_until) == (
        0.75,
        START,
        END,
    )
    assert their_fact.metadata == METADATA

    [(other, edge)] = await reference.get_related_entities(UUID(ada.id))
    assert (str(other.id), other.name) == (acme.id, acme.name)
    assert (str(edge.id), edge.type, edge.valid_from, edge.confidence) == (
        link.id,
        "WORKS_AT",
        START,
        1.0,
    )


@pytest.mark.neo4j_private
async def test_reference_long_term_reads_back_through_bolt(
    reference: LongTermMemory,
    bolt: MemoryBackend,
    unique: Callable[[str], str],
    neo4j_server: Neo4jHandle,
) -> None:
    neo4j_server.require_wipeable("it lists every fact and preference without a user")
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
    fact = await reference.add_fact(
        subject, "WORKS_AT", "Acme", confidence=0.75, valid_from=START, valid_until=END
    )
    link = await reference.add_relationship(ada, acme, "WORKS_AT", valid_from=START)

    assert [p.id for p in await bolt.list_preferences(user_identifier=user)] == [str(new.id)]
    every = await bolt.list_preferences(user_identifier=user, include_superseded=True)
    assert [p.id for p in every] == [str(new.id), str(old.id)]
    ours = every[1]
    assert (ours.category, ours.preference, ours.context, ours.confidence) == (
        "food",
        "likes tea",
        "mornings",
        0.5,
    )
    assert (ours.metadata, ours.linked_entities, ours.user_identifier) == (
        METADATA,
        [str(acme.id)],
        user,
    )
    assert ours.superseded_by == str(new.id) and ours.superseded_at is not None
    assert await bolt.list_preferences(user_identifier=unique("nobody")) == []
    [hit] = await bolt.search_preferences("tea", include_superseded=True, user_identifier=user)
    assert hit.id == str(old.id) and hit.score is not None

    [ours_fact] = await bolt.facts_about(subject)
    assert await bolt.facts_about(subject.upper()) == []  # no subject_key: exact subject
    assert ours_fact.id == str(fact.id)
    assert (ours_fact.as_triple, ours_fact.confidence) == ((subject, "WORKS_AT", "Acme"), 0.75)
    assert (ours_fact.valid_from, ours_fact.valid_until) == (START, END)
    assert await bolt.facts_about(subject, as_of=START - timedelta(microseconds=1)) == []
    assert [f.id for f in await bolt.facts_about(subject, as_of=START)] == [str(fact.id)]
    assert await bolt.facts_about(subject, as_of=END) == []
    assert [f.id for f in await bolt.search_facts(subject, as_of=START)] == [str(fact.id)]

    [edge] = await bolt.list_relationships(str(ada.id))
    assert (edge.id, edge.source_id, edge.target_id, edge.type) == (
        str(link.id),
        str(ada.id),
        str(acme.id),
        "WORKS_AT",
    )
    assert (edge.valid_from, edge.confidence) == (START, 1.0)
    related = await bolt.related_entities(str(acme.id), types=["works_at"])
    assert [e.id for e in related] == [str(ada.id)]

    assert await bolt.delete_relationship(str(link.id)) is True
    assert await reference.get_related_entities(ada.id) == []
    assert await bolt.delete_preference(str(old.id), user_identifier=user) is True
    assert await bolt.delete_fact(str(fact.id)) is True
    assert await reference.get_facts_about(subject) == []
    assert [str(p.id) for p in await reference.get_preferences_for(user)] == [str(new.id)]


async def test_a_multi_tenant_store_sees_none_of_the_references_records(
    reference: LongTermMemory, tenant_bolt: MemoryBackend, unique: Callable[[str], str]
) -> None:
    user, subject = unique("user"), unique("Ada")
    ada, _ = await reference.add_entity(unique("Ada"), "PERSON", resolve=False)
    await reference.add_preference("food", "likes tea", user_identifier=user)
    await reference.add_fact(subject, "IS", "here")
    assert await tenant_bolt.list_preferences(user_identifier=user) == []
    assert await tenant_bolt.facts_about(subject, user_identifier=user) == []
    with pytest.raises(NotFoundError):
        await tenant_bolt.list_relationships(str(ada.id), user_identifier=user)


@pytest.mark.neo4j_private
async def test_forget_user_erases_the_preferences_the_reference_linked_to_the_user(
    reference: LongTermMemory,
    bolt: MemoryBackend,
    graph: Graph,
    unique: Callable[[str], str],
    neo4j_server: Neo4jHandle,
) -> None:
    neo4j_server.require_wipeable("it reads every preference of the database")
    user, other = unique("user"), unique("other")
    await reference.add_preference("food", "likes tea", user_identifier=user)
    kept = await reference.add_preference("food", "likes tea", user_identifier=other)
    report = await bolt.forget_user(user)
    assert report.counts["preferences"] == 1
    assert graph("MATCH (u:User {identifier: $user}) RETURN u", user=user) == []
    left = graph("MATCH (p:Preference) RETURN p.id AS id")
    assert left == [{"id": str(kept.id)}]
