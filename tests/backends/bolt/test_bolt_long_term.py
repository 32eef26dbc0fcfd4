"""Long-term memory on Bolt: the graph it keeps, tenancy, scores equal to the embedded
store's, and what deletes take with them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from memory_core import HashingEmbedder, MemoryBackend, NotFoundError, open_backend
from memory_core.scoring import TOLERANCE
from memory_core_dev.neo4j_fixtures import Neo4jHandle

from .helpers import Graph

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]
Unique = Callable[[str], str]


async def test_the_graph_is_the_references_shape(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    user = unique("user")
    ada = await bolt.add_entity(unique("Ada"), "PERSON")
    acme = await bolt.add_entity(unique("Acme"), "ORGANIZATION")
    old = await bolt.add_preference(
        "food", "likes tea", linked_entities=[acme.id, ada.id], user_identifier=user
    )
    new = await bolt.add_preference("food", "likes coffee", user_identifier=user)
    await bolt.supersede_preference(old.id, new.id, user_identifier=user)
    fact = await bolt.add_fact("Ada", "WORKS_AT", "Acme", valid_from="2020-01-01T00:00:00Z")
    link = await bolt.add_relationship(ada.id, acme.id, "works_at", valid_until="2030-01-01")

    [row] = graph(
        "MATCH (u:User {identifier: $user})-[:HAS_PREFERENCE]->(p:Preference {id: $old}) "
        "-[:SUPERSEDED_BY]->(:Preference {id: $new})<-[:HAS_PREFERENCE]-(u) "
        "RETURN p.valid_until IS :: ZONED DATETIME AS closed, p.valid_from = p.created_at AS "
        "opened, p.user_identifier AS owner, 'tenant' IN keys(p) AS tenant, "
        "COLLECT { MATCH (p)-[a:APPLIES_TO]->(e:Entity) RETURN [a.position, e.id] "
        "ORDER BY a.position } AS applies",
        user=user,
        old=old.id,
        new=new.id,
    )
    assert row == {
        "closed": True,
        "opened": True,
        "owner": user,
        "tenant": False,
        "applies": [[0, acme.id], [1, ada.id]],
    }
    [row] = graph(
        "MATCH (f:Fact {id: $id}) RETURN f.valid_from IS :: ZONED DATETIME AS dated, "
        "f.subject_key AS key",
        id=fact.id,
    )
    assert row == {"dated": True, "key": "ada"}
    [row] = graph(
        "MATCH (:Entity {id: $a})-[r:RELATED_TO {id: $id}]->(:Entity {id: $b}) "
        "RETURN r.type AS type, r.relation_type AS mirror, r.valid_until AS until",
        a=ada.id,
        b=acme.id,
        id=link.id,
    )
    assert row == {"type": "WORKS_AT", "mirror": "WORKS_AT", "until": "2030-01-01T00:00:00+00:00"}


@pytest.mark.neo4j_private
async def test_a_tenant_sees_only_its_own_long_term_memory(
    tenant_bolt: MemoryBackend, graph: Graph, unique: Unique, neo4j_server: Neo4jHandle
) -> None:
    neo4j_server.require_wipeable("it reads every long-term node of the database")
    alice, bob, word = unique("alice"), unique("bob"), unique("w").replace("-", "")
    mine = await tenant_bolt.add_entity(f"{word} Labs", "ORGANIZATION", user_identifier=alice)
    other = await tenant_bolt.add_entity(unique("Ada"), "PERSON", user_identifier=alice)
    theirs = await tenant_bolt.add_entity(f"{word} Works", "ORGANIZATION", user_identifier=bob)
    pref = await tenant_bolt.add_preference(
        "food", f"likes {word}", linked_entities=[mine.id], user_identifier=alice
    )
    with pytest.raises(NotFoundError) as info:
        await tenant_bolt.add_preference(
            "food", "x", linked_entities=[mine.id], user_identifier=bob
        )
    assert info.value.argument == "linked_entities"
    fact = await tenant_bolt.add_fact(word, "IS", "secret", user_identifier=alice)
    link = await tenant_bolt.add_relationship(mine.id, other.id, "EMPLOYS", user_identifier=alice)
    with pytest.raises(NotFoundError) as info:
        await tenant_bolt.add_relationship(theirs.id, other.id, "KNOWS", user_identifier=bob)
    assert info.value.argument == "target_id"

    assert [p.id for p in await tenant_bolt.list_preferences(user_identifier=alice)] == [pref.id]
    assert await tenant_bolt.list_preferences(user_identifier=bob) == []
    assert await tenant_bolt.search_preferences(word, user_identifier=bob) == []
    assert await tenant_bolt.facts_about(word, user_identifier=bob) == []
    assert [f.id for f in await tenant_bolt.search_facts(word, user_identifier=alice)] == [fact.id]
    found = await tenant_bolt.search_entities(word, user_identifier=bob)
    assert [e.id for e in found] == [theirs.id]
    with pytest.raises(NotFoundError):
        await tenant_bolt.related_entities(mine.id, user_identifier=bob)
    assert await tenant_bolt.delete_relationship(link.id, user_identifier=bob) is False
    related = await tenant_bolt.related_entities(mine.id, user_identifier=alice)
    assert [e.id for e in related] == [other.id]
    stored = graph(
        "MATCH (n) WHERE n:Preference OR n:Fact RETURN n.tenant AS tenant, "
        "n.user_identifier AS user"
    )
    assert stored == [{"tenant": alice, "user": alice}] * 2


async def _fill(memory: MemoryBackend, user: str) -> None:
    for category, text, context in (
        ("food", "likes spicy curry and rice", "at dinner"),
        ("food", "curry twice a week, curry always", None),
        ("music", "plays jazz piano", "late evenings with curry"),
    ):
        await memory.add_preference(category, text, context=context, user_identifier=user)
    for subject, predicate, obj in (
        ("Ada", "WORKS_AT", "Acme curry house"),
        ("Bob", "LIKES", "curry"),
        ("Curry", "IS_A", "dish with rice and many spices"),
    ):
        await memory.add_fact(subject, predicate, obj, user_identifier=user)
    for name, description in (
        ("Curry House", "a restaurant"),
        ("Ada", "cooks curry and rice on Sundays"),
    ):
        await memory.add_entity(name, "ORGANIZATION", description=description)


async def _scores(memory: MemoryBackend, user: str) -> dict[str, list[tuple[str, float]]]:
    found: dict[str, list[Any]] = {
        "preferences": await memory.search_preferences("curry rice", user_identifier=user),
        "facts": await memory.search_facts("curry rice", user_identifier=user),
        # with an embedder these equal a stored text: cosine 1, above its text score
        "vector": await memory.search_preferences(
            "likes spicy curry and rice (at dinner)", user_identifier=user
        ),
        "fact vector": await memory.search_facts("Bob LIKES curry", user_identifier=user),
        "entities": [e for e in await memory.search_entities("curry rice") if e.name in _NAMES],
    }
    return {
        kind: [
            (getattr(r, "preference", None) or getattr(r, "object", None) or r.name, r.score)
            for r in records
        ]
        for kind, records in found.items()
    }


_NAMES = {"Curry House", "Ada"}


async def test_scores_equal_the_embedded_stores(
    open_bolt: Callable[..., MemoryBackend], unique: Unique
) -> None:
    user = unique("user")
    async with (
        open_bolt(embedder=HashingEmbedder()) as bolt,
        open_backend("memory://", embedder=HashingEmbedder()) as embedded,
    ):
        await _fill(bolt, user)
        await _fill(embedded, user)
        ours, reference = await _scores(bolt, user), await _scores(embedded, user)
    assert all(len(hits) >= 2 for hits in reference.values()), reference
    assert reference["vector"][0][1] == reference["fact vector"][0][1] == pytest.approx(1.0)
    for kind, hits in reference.items():
        assert [text for text, _ in ours[kind]] == [text for text, _ in hits], kind
        for (_, mine), (_, theirs) in zip(ours[kind], hits, strict=True):
            assert mine is not None and theirs is not None
            assert abs(mine - theirs) <= TOLERANCE, (kind, mine, theirs)


@pytest.mark.neo4j_private
async def test_deleting_the_last_preference_removes_its_user_node(
    bolt: MemoryBackend, graph: Graph, unique: Unique, neo4j_server: Neo4jHandle
) -> None:
    neo4j_server.require_wipeable("it counts every User node of the database")
    lone, talker = unique("lone"), unique("talker")
    pref = await bolt.add_preference("food", "tea", user_identifier=lone)
    kept = await bolt.add_preference("food", "tea", user_identifier=talker)
    await bolt.add_message(unique("s"), "user", "hi", user_identifier=talker)
    assert await bolt.delete_preference(pref.id, user_identifier=lone) is True
    assert await bolt.delete_preference(kept.id, user_identifier=talker) is True
    users = graph("MATCH (u:User) RETURN u.identifier AS who")
    assert users == [{"who": talker}]


async def test_deleting_an_entity_takes_its_relationships_and_preference_links(
    bolt: MemoryBackend, unique: Unique
) -> None:
    user = unique("user")
    a, b, c = [await bolt.add_entity(unique("E"), "PERSON") for _ in range(3)]
    await bolt.add_relationship(a.id, b.id, "KNOWS")
    kept = await bolt.add_relationship(a.id, c.id, "KNOWS")
    pref = await bolt.add_preference(
        "people", "likes them", linked_entities=[b.id, c.id], user_identifier=user
    )
    assert await bolt.delete_entity(b.id) is True
    assert [r.id for r in await bolt.list_relationships(a.id)] == [kept.id]
    [read] = await bolt.list_preferences(user_identifier=user)
    assert (read.id, read.linked_entities) == (pref.id, [c.id])


async def test_another_writers_relationship_types_match_ignoring_case(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    a, b, c = [await bolt.add_entity(unique("E"), "PERSON") for _ in range(3)]
    graph(
        "MATCH (a:Entity {id: $a}), (b:Entity {id: $b}), (c:Entity {id: $c}) "
        "CREATE (a)-[:RELATED_TO {id: $id, type: 'works_with'}]->(b) "
        "CREATE (c)-[:RELATED_TO {relation_type: 'Knows'}]->(a)",
        a=a.id,
        b=b.id,
        c=c.id,
        id=unique("r"),
    )
    assert [e.id for e in await bolt.related_entities(a.id, types="WORKS_WITH")] == [b.id]
    assert [e.id for e in await bolt.related_entities(a.id, types="knows")] == [c.id]
    listed = await bolt.list_relationships(a.id, type="KNOWS")
    [untyped] = listed
    assert (untyped.type, untyped.source_id) == ("Knows", c.id)
    assert await bolt.delete_relationship(untyped.id) is True
    assert await bolt.list_relationships(a.id, type="KNOWS") == []


async def test_related_entities_nearest_then_oldest(bolt: MemoryBackend, unique: Unique) -> None:
    start, *rest = [await bolt.add_entity(unique("E"), "PERSON") for _ in range(5)]
    near_new, near_old, far, farther = rest[3], rest[0], rest[1], rest[2]
    await bolt.add_relationship(start.id, near_new.id, "KNOWS")
    await bolt.add_relationship(near_old.id, start.id, "KNOWS")
    await bolt.add_relationship(near_new.id, far.id, "KNOWS")
    await bolt.add_relationship(far.id, farther.id, "KNOWS")
    await bolt.add_relationship(far.id, start.id, "LIKES")
    assert [e.id for e in await bolt.related_entities(start.id, depth=3)] == [
        near_old.id,
        far.id,
        near_new.id,
        farther.id,
    ]
    knows = await bolt.related_entities(start.id, depth=3, types=["KNOWS"])
    assert [e.id for e in knows] == [near_old.id, near_new.id, far.id, farther.id]
    assert [e.id for e in await bolt.related_entities(start.id, depth=2, limit=2)] == [
        near_old.id,
        far.id,
    ]


@pytest.mark.neo4j_private
async def test_concurrent_writes_make_one_relationship_and_one_supersede(
    bolt: MemoryBackend, graph: Graph, unique: Unique, neo4j_server: Neo4jHandle
) -> None:
    neo4j_server.require_wipeable("it counts relationships across the database")
    user = unique("user")
    a, b = [await bolt.add_entity(unique("E"), "PERSON") for _ in range(2)]
    old = await bolt.add_preference("food", "tea", user_identifier=user)
    newer = [await bolt.add_preference("food", f"v{i}", user_identifier=user) for i in range(4)]
    made: list[str] = []
    marked: list[str | None] = []

    async def link() -> None:
        made.append((await bolt.add_relationship(a.id, b.id, "KNOWS")).id)

    async def supersede(new_id: str) -> None:
        result = await bolt.supersede_preference(old.id, new_id, user_identifier=user)
        marked.append(result.superseded_by)

    async with anyio.create_task_group() as group:
        for _ in range(6):
            group.start_soon(link)
        for new in newer:
            group.start_soon(supersede, new.id)
    assert len(set(made)) == 1
    assert len(set(marked)) == 1
    [row] = graph(
        "MATCH (p:Preference {id: $id}) RETURN COUNT { (p)-[:SUPERSEDED_BY]->() } AS edges, "
        "COUNT { ()-[:RELATED_TO]->() } AS links",
        id=old.id,
    )
    assert row == {"edges": 1, "links": 1}


async def test_a_query_of_thousands_of_words_finds_its_last_word(
    bolt: MemoryBackend, unique: Unique
) -> None:
    user = unique("user")
    query = " ".join(f"w{i}" for i in range(1500))
    pref = await bolt.add_preference("food", "likes w1499", user_identifier=user)
    fact = await bolt.add_fact("w1498", "IS", "last", user_identifier=user)
    entity = await bolt.add_entity(unique("E"), "PERSON", description="about w1497")
    assert [p.id for p in await bolt.search_preferences(query, user_identifier=user)] == [pref.id]
    assert [f.id for f in await bolt.search_facts(query, user_identifier=user)] == [fact.id]
    assert [e.id for e in await bolt.search_entities(query)] == [entity.id]
