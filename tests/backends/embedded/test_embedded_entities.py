"""Entities and message mentions on the embedded backend."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from embedded_support import count_rows, memory_fixture, snapshot, tenants_fixture  # noqa: F401

from memory_core import EntityRef, MemoryBackend, NotFoundError, open_backend

pytestmark = pytest.mark.anyio


async def _mentioned(backend: MemoryBackend, *refs: object) -> list[EntityRef]:
    message = await backend.add_message(
        "s", "user", "text", extraction_mode="explicit", explicit_mentions=list(refs)
    )
    return message.mentions


async def test_add_entity_merges_on_name_ignoring_case_and_type(memory: MemoryBackend) -> None:
    alice = await memory.add_entity("Alice", "person", description="a person")
    again = await memory.add_entity("ALICE", "PERSON", description="ignored")
    assert again == alice
    assert again.name == "Alice" and again.description == "a person"
    other_type = await memory.add_entity("alice", "concept")
    assert other_type.id != alice.id
    assert other_type.type == "CONCEPT"
    assert await count_rows(memory, "entities") == 2


async def test_add_entity_folds_unicode_case(memory: MemoryBackend) -> None:
    first = await memory.add_entity("Émile Straße", "person")
    assert await memory.add_entity("émile STRASSE", "person") == first


async def test_add_entity_fills_a_missing_description(memory: MemoryBackend) -> None:
    bare = await memory.add_entity("Acme", "organization")
    assert bare.description is None
    filled = await memory.add_entity("acme", "organization", description="makes anvils")
    assert filled.id == bare.id and filled.description == "makes anvils"


async def test_find_entities_by_id_or_name(memory: MemoryBackend) -> None:
    person = await memory.add_entity("Paris", "person")
    city = await memory.add_entity("paris", "location")
    await memory.add_entity("Paris Hilton Hotel", "location")
    by_name = await memory.find_entities("PARIS")
    assert [e.id for e in by_name] == [person.id, city.id]  # exact only, oldest first
    assert await memory.find_entities(person.id) == [person]
    assert await memory.find_entities("paris", type="location") == [city]
    assert await memory.find_entities("paris", 1) == [person]
    assert await memory.find_entities("Lyon") == []


async def test_find_entities_puts_the_id_match_first(memory: MemoryBackend) -> None:
    named = await memory.add_entity("placeholder", "concept")
    tricky = await memory.add_entity(named.id, "concept")  # an entity named like an id
    found = await memory.find_entities(named.id)
    assert [e.id for e in found] == [named.id, tricky.id]


async def test_mention_by_id(memory: MemoryBackend) -> None:
    entity = await memory.add_entity("Ada", "person")
    refs = await _mentioned(memory, EntityRef(id=entity.id))
    assert refs == [EntityRef(id=entity.id, name="Ada", type="PERSON")]


async def test_unknown_mention_id_raises_and_writes_nothing(memory: MemoryBackend) -> None:
    await memory.add_message("s", "user", "existing")
    before = await snapshot(memory)
    with pytest.raises(NotFoundError, match="no-such-entity"):
        await _mentioned(memory, {"name": "New", "type": "person"}, {"id": "no-such-entity"})
    with pytest.raises(NotFoundError):
        await memory.add_message(
            "fresh-session",
            "user",
            "x",
            extraction_mode="explicit",
            explicit_mentions=[{"id": "no-such-entity"}],
        )
    assert await snapshot(memory) == before


async def test_typed_mention_merges(memory: MemoryBackend) -> None:
    existing = await memory.add_entity("Bob", "person")
    refs = await _mentioned(
        memory, {"name": "bob", "type": "person"}, {"name": "Neo4j", "type": "tool"}
    )
    assert refs[0].id == existing.id
    assert refs[1].name == "Neo4j" and refs[1].type == "TOOL"
    assert [e.id for e in await memory.find_entities("neo4j")] == [refs[1].id]


async def test_name_only_mention_links_a_single_match(memory: MemoryBackend) -> None:
    only = await memory.add_entity("Carol", "person")
    assert await _mentioned(memory, "carol") == [EntityRef(id=only.id, name="Carol", type="PERSON")]


async def test_name_only_mention_is_skipped_when_ambiguous_or_missing(
    memory: MemoryBackend,
) -> None:
    await memory.add_entity("Jordan", "person")
    await memory.add_entity("Jordan", "location")
    entities_before = await count_rows(memory, "entities")
    assert await _mentioned(memory, "jordan") == []
    assert await _mentioned(memory, EntityRef(name="Nobody")) == []
    assert await count_rows(memory, "entities") == entities_before  # never created


async def test_mentions_are_deduplicated_and_ordered(memory: MemoryBackend) -> None:
    zed = await memory.add_entity("Zed", "person")
    refs = await _mentioned(
        memory,
        {"name": "Amy", "type": "person"},
        {"id": zed.id},
        "amy",
        {"name": "AMY", "type": "person"},
    )
    assert [r.name for r in refs] == ["Amy", "Zed"]


async def test_mentions_are_returned_on_every_read(memory: MemoryBackend) -> None:
    refs = await _mentioned(memory, {"name": "Dana", "type": "person"})
    (read,) = (await memory.get_conversation("s")).messages
    assert read.mentions == refs
    (hit,) = await memory.search_messages("text")
    assert hit.mentions == refs
    await memory.add_message("s", "user", "plain")
    assert (await memory.get_conversation("s")).messages[1].mentions == []


async def test_skip_mode_and_no_extractor_store_no_mentions(memory: MemoryBackend) -> None:
    message = await memory.add_message("s", "user", "Dana", extraction_mode="skip")
    assert message.mentions == []
    assert await count_rows(memory, "mentions") == 0


@pytest.fixture
async def extracting() -> AsyncIterator[MemoryBackend]:
    async def extractor(text: str) -> list[EntityRef]:
        return [EntityRef(name=w, type="concept") for w in text.split() if w.istitle()]

    async with open_backend("memory://", extractor=extractor) as backend:
        yield backend


async def test_auto_mode_uses_the_extractor_like_typed_refs(extracting: MemoryBackend) -> None:
    message = await extracting.add_message("s", "user", "Graphs and Vectors and graphs")
    assert [r.name for r in message.mentions] == ["Graphs", "Vectors"]
    again = await extracting.add_message("s", "user", "Vectors again")
    assert again.mentions[0].id == message.mentions[1].id
    skipped = await extracting.add_message("s", "user", "Nothing", extract_entities=False)
    assert skipped.mentions == []
    batch = await extracting.add_messages_batch(
        "s", [{"role": "user", "content": "Batch Words"}], extract_entities=True
    )
    assert [r.name for r in batch[0].mentions] == ["Batch", "Words"]
    assert [r.name for r in (await extracting.get_conversation("s")).messages[-1].mentions] == [
        "Batch",
        "Words",
    ]


async def test_entities_are_scoped_per_tenant() -> None:
    async with open_backend("memory://", multi_tenant=True) as backend:
        mine = await backend.add_entity("Eve", "person", user_identifier="alice")
        theirs = await backend.add_entity("Eve", "person", user_identifier="bob")
        assert mine.id != theirs.id
        assert await backend.find_entities("Eve", user_identifier="alice") == [mine]
        assert await backend.find_entities(mine.id, user_identifier="bob") == []
        with pytest.raises(NotFoundError):
            await backend.add_message(
                "s",
                "user",
                "x",
                extraction_mode="explicit",
                explicit_mentions=[{"id": mine.id}],
                user_identifier="bob",
            )
        refs = await backend.add_message(
            "s",
            "user",
            "Eve",
            extraction_mode="explicit",
            explicit_mentions=["eve"],
            user_identifier="bob",
        )
        assert [r.id for r in refs.mentions] == [theirs.id]


async def test_delete_entity_is_scoped_to_the_tenant(tenants: MemoryBackend) -> None:
    mine = await tenants.add_entity("Acme", "ORGANIZATION", user_identifier="alice")
    assert await tenants.delete_entity(mine.id, user_identifier="bob") is False
    assert [e.id for e in await tenants.find_entities("Acme", user_identifier="alice")] == [mine.id]
    assert await tenants.delete_entity(mine.id, user_identifier="alice") is True
    assert await tenants.find_entities("Acme", user_identifier="alice") == []


async def test_delete_entity_unlinks_mentions_and_keeps_messages(memory: MemoryBackend) -> None:
    entity = await memory.add_entity("Lisbon", "LOCATION")
    await memory.add_message(
        "s",
        "user",
        "to Lisbon",
        extraction_mode="explicit",
        explicit_mentions=[EntityRef(id=entity.id)],
    )
    assert await memory.delete_entity(entity.id) is True
    [message] = (await memory.get_conversation("s")).messages
    assert (message.content, message.mentions) == ("to Lisbon", [])
