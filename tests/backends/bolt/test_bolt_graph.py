"""What the Bolt backend stores: the reference's graph model plus our extra properties."""

from __future__ import annotations

import json
from collections.abc import Callable
from uuid import NAMESPACE_DNS, UUID, uuid4, uuid5

import pytest

from memory_core import EntityRef, HashingEmbedder, MemoryBackend, NotFoundError
from memory_core.backends.bolt.records import NAMESPACE
from memory_core.conformance.embedder import ConceptEmbedder

from .helpers import Graph, chain

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]
Unique = Callable[[str], str]


async def test_graph_model_matches_the_reference(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session, user = unique("s"), unique("user")
    person = unique("Person")
    first = await bolt.add_message(
        session,
        "user",
        "hello",
        metadata={"a": 1, "b": [True, None]},
        user_identifier=user,
        idempotency_key="turn-1",
        extraction_mode="explicit",
        explicit_mentions=[EntityRef(name=person, type="PERSON")],
    )
    await bolt.add_message(session, "assistant", "hi", user_identifier=user)

    [row] = graph(
        "MATCH (u:User {identifier: $u})-[:HAS_CONVERSATION]->(c:Conversation {session_id: $s}) "
        "MATCH (c)-[:FIRST_MESSAGE]->(m1:Message)-[:NEXT_MESSAGE]->(m2:Message) "
        "MATCH (c)-[:HAS_MESSAGE]->(m1), (c)-[:HAS_MESSAGE]->(m2) "
        "MATCH (m1)-[:MENTIONS]->(e:Entity) "
        "RETURN c {.*} AS c, m1 {.*} AS m1, m2 {.*} AS m2, e {.*} AS e, labels(e) AS labels, "
        "valueType(c.created_at) AS created, valueType(m1.timestamp) AS stamp",
        u=user,
        s=session,
    )
    conversation, m1, m2, entity = row["c"], row["m1"], row["m2"], row["e"]
    assert conversation["id"] == str(uuid5(NAMESPACE, f"\x00{session}"))
    assert conversation["user_identifier"] == user
    assert {"id", "session_id", "created_at", "updated_at"} <= set(conversation)
    assert row["created"] == row["stamp"] == "ZONED DATETIME NOT NULL"
    assert (m1["id"], m1["role"], m1["content"]) == (str(first.id), "user", "hello")
    assert json.loads(m1["metadata"]) == {"a": 1, "b": [True, None]}
    assert (m1["seq"], m2["seq"]) == (0, 1)
    assert m1["conversation_id"] == conversation["id"]
    assert m1["idempotency_key"] == "turn-1"
    assert "metadata" not in m2  # an empty dict is stored as null, as the reference does
    assert (entity["name"], entity["type"]) == (person, "PERSON")
    assert set(row["labels"]) == {"Entity", "Person"}
    assert entity["name_key"] == person.lower()


async def test_missing_session_reads_empty_and_writes_nothing(
    bolt: MemoryBackend, tenant_bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session = unique("s")
    first = await bolt.get_conversation(session)
    again = await bolt.get_conversation(session)
    assert first.id == again.id == uuid5(NAMESPACE, f"\x00{session}")
    assert first.messages == []
    alices = await tenant_bolt.get_conversation(session, user_identifier="alice")
    assert alices.id == uuid5(NAMESPACE, f"alice\x00{session}") != first.id
    assert graph("MATCH (c:Conversation {session_id: $s}) RETURN c", s=session) == []
    stored = await bolt.add_message(session, "user", "now it exists")
    assert stored.conversation_id == first.id


async def test_unknown_entity_id_writes_nothing(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session = unique("s")
    known = await bolt.add_entity(unique("Known"), "CONCEPT")
    with pytest.raises(NotFoundError, match="explicit_mentions: no entity "):
        await bolt.add_message(
            session,
            "user",
            "x",
            extraction_mode="explicit",
            explicit_mentions=[EntityRef(id=known.id), EntityRef(id=str(uuid4()))],
        )
    assert graph("MATCH (c:Conversation {session_id: $s}) RETURN c", s=session) == []


async def test_name_only_mentions_link_one_entity_and_never_create(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session = unique("s")
    single, shared = unique("Single"), unique("Shared")
    entity = await bolt.add_entity(single, "PERSON")
    await bolt.add_entity(shared, "PERSON")
    await bolt.add_entity(shared, "LOCATION")
    stored = await bolt.add_message(
        session,
        "user",
        "names",
        extraction_mode="explicit",
        explicit_mentions=[single.upper(), shared, unique("Nobody")],
    )
    assert [m.id for m in stored.mentions] == [entity.id]
    assert graph("MATCH (e:Entity) WHERE e.name STARTS WITH 'bolt-test-Nobody' RETURN e") == []


async def test_create_conversation_is_idempotent(bolt: MemoryBackend, unique: Unique) -> None:
    session = unique("s")
    made = await bolt.create_conversation(session, title="T", metadata={"k": [1]})
    again = await bolt.create_conversation(session, title="other")
    assert (again.id, again.title, again.metadata) == (made.id, "T", {"k": [1]})
    by_id = await bolt.create_conversation(conversation_id=made.id)
    assert by_id.id == made.id
    stored = await bolt.add_message(conversation_id=made.id, role="user", content="via id")
    assert stored.session_id == session


async def test_prefix_is_literal(bolt: MemoryBackend, unique: Unique) -> None:
    base = unique("p")
    for suffix in ("a.b", "axb", "%", "[x]"):
        await bolt.add_message(f"{base}{suffix}", "user", suffix)
    rows = await bolt.list_sessions(prefix=f"{base}a.", order_by="session_id", order_dir="asc")
    assert [r.session_id for r in rows] == [f"{base}a.b"]
    rows = await bolt.list_sessions(prefix=f"{base}%")
    assert [r.session_id for r in rows] == [f"{base}%"]


async def test_vector_search_scoped_global_and_tenant(
    open_bolt: Callable[..., MemoryBackend], unique: Unique
) -> None:
    marker = uuid5(NAMESPACE_DNS, unique("m")).hex
    async with open_bolt(embedder=HashingEmbedder(), multi_tenant=True) as backend:
        alice, bob, session = unique("alice"), unique("bob"), unique("s")
        near = await backend.add_message(
            session, "user", f"purple elephants dance {marker}", user_identifier=alice
        )
        await backend.add_message(session, "user", "", user_identifier=alice)  # zero vector
        await backend.add_message(session, "user", "tax forms are due", user_identifier=alice)
        await backend.add_message(
            unique("s"), "user", f"purple elephants {marker}", user_identifier=bob
        )
        scoped = await backend.search_messages(
            "elephants purple", session_id=session, user_identifier=alice
        )
        assert scoped[0].id == near.id and len(scoped) == 1
        assert scoped[0].score is not None and 0 < scoped[0].score <= 1
        everywhere = await backend.search_messages(marker, user_identifier=alice, limit=50)
        assert everywhere[0].id == near.id  # bob's message with the marker is not visible
        assert all(m.session_id == session for m in everywhere)
        semantic = await backend.search_messages(
            "elephants", user_identifier=alice, limit=5, threshold=0.0
        )
        assert near.id in [m.id for m in semantic]
        assert all(m.session_id == session for m in semantic)


async def test_a_vector_hit_across_sessions_scores_its_exact_cosine(
    open_bolt: Callable[..., MemoryBackend], unique: Unique
) -> None:
    """A hit the vector index finds (across sessions) scores the exact cosine of its
    stored embedding with the query's, as in one session and on every backend: the
    index's own score is approximate (it quantizes its vectors), about 0.003 off."""
    pytest.importorskip("wordllama", reason="extra 'embed' not installed")
    from memory_core.embedding_wordllama import WordLlamaEmbedder

    embedder, user = WordLlamaEmbedder(), unique("u")
    texts = ["Noted. Anything else on your mind?", "Bouldering keeps me busy on Sundays."]
    async with open_bolt(embedder=embedder, multi_tenant=True) as backend:
        for text in texts:
            await backend.add_message(unique("s"), "user", text, user_identifier=user)
        hits = await backend.search_messages("What is my hobby?", user_identifier=user)
    [query] = embedder.embed_now(["What is my hobby?"])
    assert sorted(h.content for h in hits) == sorted(texts)
    for hit in hits:
        [stored] = embedder.embed_now([hit.content])
        cosine = sum(a * b for a, b in zip(query, stored, strict=True))
        assert hit.score == pytest.approx(cosine, abs=1e-6)


async def test_conversation_ids_are_the_same_as_other_memory_core_stores(
    bolt: MemoryBackend, unique: Unique
) -> None:
    session = unique("s")
    expected = UUID("76d6accc-5703-50c3-bfc3-6639b22e80f8")
    assert expected == NAMESPACE
    assert (await bolt.get_conversation(session)).id == uuid5(expected, f"\x00{session}")


async def test_chain_of_a_batch_continues_an_existing_conversation(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session = unique("s")
    await bolt.add_message(session, "user", "one")
    await bolt.add_messages_batch(session, [{"role": "user", "content": c} for c in "ab"])
    await bolt.add_message(session, "user", "two")
    assert chain(graph, session) == ["one", "a", "b", "two"]


async def test_values_too_long_to_index_are_refused(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    from memory_core import InvalidRequestError

    long_name = unique("s") + "x" * 5000
    with pytest.raises(InvalidRequestError) as info:
        await bolt.add_message(long_name, "user", "x")
    assert info.value.argument == "session_id"
    with pytest.raises(InvalidRequestError) as info:
        await bolt.add_entity("e" * 5000, "PERSON")
    assert info.value.argument == "name"
    assert graph("MATCH (c:Conversation) WHERE c.session_id = $s RETURN c", s=long_name) == []
    # A long idempotency key is fine: only its hash is indexed.
    key = "k" * 20_000
    first = await bolt.add_message(unique("s"), "user", "x", idempotency_key=key)
    assert first.idempotency_key == key


async def test_a_store_wide_search_by_meaning_keeps_the_filtered_neighbours(
    open_bolt: Callable[..., MemoryBackend], unique: Unique
) -> None:
    """No word of the query is in the messages, so every hit comes from the vector index;
    the metadata filter is applied to its neighbours, and more are asked for (k grows)
    until ``limit`` of them pass it."""
    async with open_bolt(embedder=ConceptEmbedder()) as backend:
        wanted = [
            await backend.add_message(unique("s"), "user", f"supper {i}", metadata={"keep": 1})
            for i in range(3)
        ]
        for _ in range(60):  # nearer or as near, and filtered out
            await backend.add_message(unique("s"), "user", "supper", metadata={"keep": 0})
        found = await backend.search_messages(
            "dinner", limit=3, threshold=0.0, metadata_filters={"keep": 1}
        )
        assert sorted(m.id for m in found) == sorted(m.id for m in wanted)
        assert all(m.score is not None and 0 < m.score <= 1 for m in found)


async def test_a_message_with_mentions_added_by_conversation_id_lands_there(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session, person = unique("s"), unique("Person")
    created = await bolt.create_conversation(session)
    stored = await bolt.add_message(
        role="user",
        content="met them",
        conversation_id=created.id,
        extraction_mode="explicit",
        explicit_mentions=[EntityRef(name=person, type="PERSON")],
    )
    assert stored.conversation_id == created.id
    read = await bolt.get_conversation(session)
    assert [(m.content, [r.name for r in m.mentions]) for m in read.messages] == [
        ("met them", [person])
    ]
    [row] = graph(
        "MATCH (c:Conversation)-[:HAS_MESSAGE]->(m:Message {id: $m}) RETURN count(c) AS n",
        m=str(stored.id),
    )
    assert row["n"] == 1


async def test_a_batch_to_a_conversation_by_id_links_what_its_messages_mention(
    open_bolt: Callable[..., MemoryBackend],
) -> None:
    """The batch statement for a conversation given by id, with mentions (an extractor's)."""
    tag = uuid4().hex

    async def extractor(text: str) -> list[EntityRef]:
        return [EntityRef(name=word, type="person") for word in text.split() if tag in word]

    async with open_bolt(extractor=extractor) as bolt:
        made = await bolt.create_conversation(f"batch-{tag}")
        stored = await bolt.add_messages_batch(
            conversation_id=made.id,
            messages=[
                {"role": "user", "content": f"ada-{tag} met grace-{tag}"},
                {"role": "assistant", "content": "nobody here"},
            ],
            extract_entities=True,
        )
        named = [[f"ada-{tag}", f"grace-{tag}"], []]
        assert [[r.name for r in m.mentions] for m in stored] == named
        read = await bolt.get_conversation(made.session_id)
        assert [[r.name for r in m.mentions] for m in read.messages] == named
