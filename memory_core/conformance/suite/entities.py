"""Entities and explicit mentions.

Every scenario that creates entities (``add_entity``, typed mentions, an extractor) starts
with :meth:`~memory_core.conformance.harness.Harness.allow_entities`: where the backend can delete
entities the harness removes them at clean-up; where it cannot, the scenario is n/a
unless the store is throwaway.
"""

from __future__ import annotations

import pytest

from memory_core import Entity, EntityRef, Message, MessageRole, NotFoundError

from ..checks import word
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


def _name() -> str:
    return word().capitalize()


class EntitiesSuite(SuiteBase):
    """Scenarios of area ``entities``."""

    @scenario(
        "entities.add_and_find",
        "add_entity stores an entity that find_entities finds by name (any case) and by id",
        requires="entities",
    )
    async def test_entities_add_and_find(self, harness: Harness) -> None:
        harness.allow_entities()
        name = _name()
        entity = await harness.add_entity(name, "person", description="a tester")
        assert (entity.name, entity.type, entity.description) == (name, "PERSON", "a tester")
        by_name = await harness.backend.find_entities(name.upper())
        assert by_name and by_name[0].id == entity.id, "exact match is not first"
        found = by_name[0]
        assert (found.name, found.type, found.description) == (name, "PERSON", "a tester")
        by_id = await harness.backend.find_entities(entity.id)
        assert entity.id in [e.id for e in by_id]
        accented = await harness.add_entity(f"Éö{word()}", "PERSON")
        for spelling in (accented.name.upper(), accented.name.lower()):
            hits = await harness.backend.find_entities(spelling)
            assert accented.id in [e.id for e in hits], "case is ignored only for ASCII letters"

    @scenario(
        "entities.add_is_idempotent",
        "adding an entity with the same name and type returns the existing one",
        requires="entities",
    )
    async def test_entities_add_is_idempotent(self, harness: Harness) -> None:
        harness.allow_entities()
        name = _name()
        first = await harness.add_entity(name, "ORGANIZATION")
        again = await harness.add_entity(name, "organization")
        assert first.id == again.id
        assert len([e for e in await harness.backend.find_entities(name) if e.id == first.id]) == 1

    @scenario(
        "entities.find_limit_and_type",
        "find_entities honours limit and type",
        requires="entities",
    )
    async def test_entities_find_limit_and_type(self, harness: Harness) -> None:
        harness.allow_entities()
        name = _name()
        person = await harness.add_entity(name, "PERSON")
        place = await harness.add_entity(name, "LOCATION")
        both = await harness.backend.find_entities(name, limit=10)
        assert {person.id, place.id} <= {e.id for e in both}
        assert len(await harness.backend.find_entities(name, limit=1)) == 1
        located = await harness.backend.find_entities(name, type="location")
        assert [e.id for e in located if e.name == name] == [place.id]

    @scenario(
        "entities.mention_by_id",
        "an EntityRef with an id links that entity; Message.mentions returns it on read",
        requires=("explicit_mentions", "entities"),
    )
    async def test_entities_mention_by_id(self, harness: Harness) -> None:
        harness.allow_entities()
        entity = await harness.add_entity(_name(), "PERSON")
        handle = await harness.new_session()
        stored = await harness.backend.add_message(
            handle,
            "user",
            f"I met {entity.name}",
            extraction_mode="explicit",
            explicit_mentions=[EntityRef(id=entity.id)],
        )
        assert entity.id in [r.id for r in stored.mentions]
        [read] = await harness.messages(handle)
        assert entity.id in [r.id for r in read.mentions], "mentions are not returned on read"
        other = await harness.add_entity(_name(), "LOCATION")
        refs = [EntityRef(id=entity.id), EntityRef(id=other.id), EntityRef(id=entity.id)]
        stored = await harness.backend.add_message(
            handle, "user", "both, one twice", extraction_mode="explicit", explicit_mentions=refs
        )
        expected = sorted([entity.id, other.id])
        assert sorted(str(r.id) for r in stored.mentions) == expected, "repeats are not merged"
        read = (await harness.messages(handle))[-1]
        assert sorted(str(r.id) for r in read.mentions) == expected

    @scenario(
        "entities.mention_typed",
        "a typed EntityRef (name + type) is linked, creating the entity if needed",
        requires="explicit_mentions",
    )
    async def test_entities_mention_typed(self, harness: Harness) -> None:
        harness.allow_entities()
        name = _name()
        handle = await harness.new_session()
        await harness.backend.add_message(
            handle,
            "user",
            f"I work at {name}",
            extraction_mode="explicit",
            explicit_mentions=[EntityRef(name=name, type="organization")],
        )
        [read] = await harness.messages(handle)
        assert [(r.name, r.type) for r in read.mentions] == [(name, "ORGANIZATION")]
        if harness.caps.entities:
            found = [e for e in await harness.backend.find_entities(name) if e.name == name]
            assert [e.type for e in found] == ["ORGANIZATION"]
            assert read.mentions[0].id in (None, found[0].id)

    @scenario(
        "entities.mention_name_only",
        "a name-only EntityRef links the existing entity and never creates one",
        requires=("explicit_mentions", "entities"),
    )
    async def test_entities_mention_name_only(self, harness: Harness) -> None:
        harness.allow_entities()
        known = await harness.add_entity(_name(), "CONCEPT")
        unknown = _name()
        handle = await harness.new_session()
        await harness.backend.add_message(
            handle,
            "user",
            "name only",
            extraction_mode="explicit",
            explicit_mentions=[EntityRef(name=known.name), EntityRef(name=unknown)],
        )
        [read] = await harness.messages(handle)
        assert [r.id for r in read.mentions] == [known.id]
        assert not [e for e in await harness.backend.find_entities(unknown) if e.name == unknown]

    @scenario(
        "entities.mention_unknown_id",
        "an EntityRef with an id no entity has raises NotFoundError and writes nothing",
        requires=("explicit_mentions", "entities"),
    )
    async def test_entities_mention_unknown_id(self, harness: Harness) -> None:
        harness.allow_entities()
        known = await harness.add_entity(_name(), "PERSON")
        handle = await harness.new_session()
        with pytest.raises(NotFoundError):
            await harness.backend.add_message(
                handle,
                "user",
                "unknown mention",
                extraction_mode="explicit",
                explicit_mentions=[EntityRef(id=known.id), EntityRef(id=f"no-such-{word()}")],
            )
        assert await harness.contents(handle) == [], "a message with an unknown mention was written"

    @scenario(
        "entities.nul_in_names",
        "a NUL character in an entity's name or description is stored and read back exactly, "
        "on every backend: find_entities finds the name (any case) and tells it from the "
        "name without the NUL, adding it again and a typed mention of it return the same "
        "entity; an identifier with a NUL that names nothing finds nothing and deletes nothing",
        requires="entities",
    )
    async def test_entities_nul_in_names(self, harness: Harness) -> None:
        harness.allow_entities()
        base = _name()
        name = f"{base}\x00Nul"
        entity = await harness.add_entity(name, "PERSON", description="one\x00two")
        assert (entity.name, entity.description) == (name, "one\x00two")
        plain = await harness.add_entity(f"{base}Nul", "PERSON")
        assert plain.id != entity.id, "names that differ by a NUL were taken as one"
        found = await harness.backend.find_entities(name.upper())
        assert found and found[0].id == entity.id, "the exact match is not first"
        assert (found[0].name, found[0].description) == (name, "one\x00two")
        assert (await harness.add_entity(name, "person")).id == entity.id
        missing = f"{base}\x00Other"
        assert missing not in [e.name for e in await harness.backend.find_entities(missing)]
        if harness.caps.delete_entity:
            assert await harness.backend.delete_entity(f"no\x00such-{word()}") is False
        if harness.caps.explicit_mentions:
            handle = await harness.new_session()
            ref = EntityRef(name=name, type="PERSON")
            stored = await harness.backend.add_message(
                handle, "user", "met", extraction_mode="explicit", explicit_mentions=[ref]
            )
            assert [(r.id, r.name) for r in stored.mentions] == [(entity.id, name)]
            [read] = await harness.messages(handle)
            assert [(r.id, r.name) for r in read.mentions] == [(entity.id, name)]

    @scenario(
        "entities.delete",
        "delete_entity removes the entity and its mentions, keeps the messages, and a second "
        "delete returns False",
        requires=("entities", "delete_entity", "explicit_mentions"),
    )
    async def test_entities_delete(self, harness: Harness) -> None:
        harness.allow_entities()
        entity = await harness.add_entity(_name(), "PERSON")
        handle = await harness.new_session()
        await harness.backend.add_message(
            handle,
            "user",
            f"about {entity.name}",
            extraction_mode="explicit",
            explicit_mentions=[EntityRef(id=entity.id)],
        )
        assert await harness.backend.delete_entity(entity.id) is True
        assert entity.id not in [e.id for e in await harness.backend.find_entities(entity.id)]
        assert entity.id not in [e.id for e in await harness.backend.find_entities(entity.name)]
        [read] = await harness.messages(handle)
        assert read.content == f"about {entity.name}", "the message went with its entity"
        assert entity.id not in [r.id for r in read.mentions], "the mention outlived its entity"
        assert await harness.backend.delete_entity(entity.id) is False

    @scenario(
        "entities.extractor",
        "an extractor's mentions are stored in auto mode and skipped with extraction_mode='skip'",
        requires="explicit_mentions",
    )
    async def test_entities_extractor(self, harness: Harness) -> None:
        harness.allow_entities()
        name = _name()
        calls: list[str] = []

        def extract(text: str) -> list[EntityRef]:
            calls.append(text)
            return [EntityRef(name=name, type="PERSON")]

        backend = await harness.open(extractor=extract)
        handle = await harness.new_session(backend=backend)
        await backend.add_message(handle, "user", f"hello {name}")
        await backend.add_message(handle, "user", "skipped", extraction_mode="skip")
        auto, skipped = await harness.messages(handle, backend=backend)
        assert calls == [f"hello {name}"]
        assert [r.name for r in auto.mentions] == [name]
        assert skipped.mentions == []
        await backend.add_messages_batch(
            handle, [{"role": "user", "content": f"batch {name}"}], extract_entities=True
        )
        batched = (await harness.messages(handle, backend=backend))[-1]
        assert [r.name for r in batched.mentions] == [name], "batch writes skip the extractor"

    @scenario(
        "entities.open_turn_links_what_it_names",
        "open_turn finds the entities its identifiers name, in order, and stores the keyed "
        "message once with them as its mentions",
        requires=("explicit_mentions", "entities", "idempotency_keys"),
    )
    async def test_entities_open_turn_links_what_it_names(self, harness: Harness) -> None:
        harness.allow_entities()
        first = await harness.add_entity(_name(), "PERSON")
        second = await harness.add_entity(_name(), "LOCATION")
        handle = await harness.new_session()
        names = [second.name.upper(), _name(), first.id, second.id]
        found, stored, fresh = await _open(harness, handle, "hello", names, 8)
        assert [e.id for e in found] == [second.id, first.id], "not the entities named, in order"
        assert [str(r.id) for r in stored.mentions] == [second.id, first.id]
        [read] = await harness.messages(handle)
        assert (read.id, [str(r.id) for r in read.mentions]) == (stored.id, [second.id, first.id])
        again, replayed_stored, replayed = await _open(harness, handle, "changed", names, 1)
        assert [e.id for e in again] == [second.id], "limit is not honoured"
        assert (replayed_stored.id, replayed_stored.content) == (stored.id, "hello")
        assert [m.id for m in await harness.messages(handle)] == [stored.id]
        told = (fresh, replayed)
        expected = (False, True) if harness.backend.store.tells_replays else (None, None)
        assert told == expected, f"new, replay: {told}"


async def _open(
    harness: Harness, session: str, text: str, names: list[str], limit: int
) -> tuple[list[Entity], Message, bool | None]:
    """The turn protocol's opening (what ``Store.open_turn`` answers)."""
    backend = harness.backend
    key = f"{session}-question"
    lookup = (names, limit)
    return await backend._add_keyed(session, MessageRole.USER, text, {}, key, [], None, lookup)
