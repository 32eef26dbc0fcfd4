"""Entities read by id, name or alias, updated and merged (flags ``entity_updates`` and
``entity_merge``).

Entities are made with :meth:`~memory_core.conformance.harness.Harness.add_entity` (deleted
at clean-up; a merged-away source is gone already). Merges are counted: every mention,
relationship, preference link and fact of the source is on the target exactly once after.
"""

from __future__ import annotations

from typing import Any

import pytest

from memory_core import ConflictError, Entity, EntityRef, MemoryBackend, NotFoundError

from ..checks import invalid, same_json, word
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase

ODD = "naïve 🦊 \u4e16\u754c 'quote\" \\ %_"


def _name() -> str:
    return word().capitalize()


def _state(entity: Entity | None) -> tuple[Any, ...]:
    """What an update may change, to compare before and after."""
    assert entity is not None
    return (entity.name, entity.type, entity.description, entity.aliases, entity.attributes)


async def _mentions(harness: Harness, handle: str) -> list[list[str]]:
    """The ids each message of ``handle`` mentions, oldest message first."""
    conversation = await harness.backend.get_conversation(handle)
    return [[ref.id or "" for ref in message.mentions] for message in conversation.messages]


async def _mention(harness: Harness, handle: str, *entities: Entity) -> None:
    await harness.backend.add_message(
        handle,
        "user",
        " and ".join(e.name for e in entities),
        extraction_mode="explicit",
        explicit_mentions=[EntityRef(id=e.id) for e in entities],
    )


class EntityUpdatesSuite(SuiteBase):
    """Scenarios of area ``entity_updates``."""

    @scenario(
        "entity_updates.by_name",
        "get_entity_by_name finds an entity by its name or an alias in any case (a name "
        "before an alias), get_entity by id, find_entities by alias after exact names; "
        "unknown ones read as None",
        requires="entity_updates",
    )
    async def test_entity_updates_by_name(self, harness: Harness) -> None:
        backend = harness.backend
        entity = await harness.add_entity(_name(), "PERSON", description="the one")
        alias = f"Éö{word()}"
        updated = await backend.update_entity(entity.id, aliases=[alias])
        assert updated.aliases == [alias]
        for spelling in (alias, alias.upper(), alias.lower(), entity.name.lower()):
            found = await backend.get_entity_by_name(spelling)
            assert found is not None and found.id == entity.id, f"{spelling!r} finds nothing"
            assert found.aliases == [alias]
        assert await backend.get_entity_by_name(alias, type="ORGANIZATION") is None
        named = await harness.add_entity(alias, "PERSON")
        first = await backend.get_entity_by_name(alias.upper())
        assert first is not None and first.id == named.id, "an alias came before a name"
        hits = [e.id for e in await backend.find_entities(alias.lower())]
        assert hits[:2] == [named.id, entity.id], "find_entities: name, then alias"
        got = await backend.get_entity(entity.id)
        assert got is not None and _state(got) == _state(updated)
        assert await backend.get_entity(word()) is None
        assert await backend.get_entity_by_name(word()) is None

    @scenario(
        "entity_updates.partial",
        "update_entity changes only what is given: aliases replace the list (each once "
        "ignoring case, never the name), attributes replace the object and read back "
        "exactly, the rest stays",
        requires="entity_updates",
    )
    async def test_entity_updates_partial(self, harness: Harness) -> None:
        backend = harness.backend
        entity = await harness.add_entity(_name(), "ORGANIZATION", description="first")
        attrs = {"site": ODD, "n": 3, "ok": True, "nested": {"x": [1.5, None]}}
        one, two = f"Al{word()}", f"Be{word()}"
        full = await backend.update_entity(
            entity.id, aliases=[one, one.upper(), entity.name.lower(), two], attributes=attrs
        )
        assert full.aliases == [one, two]
        same_json(full.attributes, attrs, "attributes")
        assert (full.name, full.description) == (entity.name, "first")
        described = await backend.update_entity(entity.id, description=f"second {ODD}")
        assert described.description == f"second {ODD}"
        assert described.aliases == [one, two], "aliases cleared by an update not naming them"
        same_json(described.attributes, attrs, "attributes")
        renamed = await backend.update_entity(entity.id, name=f"{entity.name} {ODD}")
        assert _state(renamed)[1:] == _state(described)[1:]
        replaced = await backend.update_entity(entity.id, aliases=[two], attributes={"k": 1})
        assert (replaced.aliases, replaced.attributes) == ([two], {"k": 1})
        assert _state(await backend.get_entity(entity.id)) == _state(replaced)
        assert await backend.get_entity_by_name(one) is None, "a replaced alias still finds it"
        cleared = await backend.update_entity(entity.id, aliases=[], attributes={})
        assert (cleared.aliases, cleared.attributes) == ([], {})

    @scenario(
        "entity_updates.rename_conflict",
        "renaming an entity onto the name (any case) and type of another raises "
        "ConflictError naming name and changes nothing; an unknown id is NotFoundError "
        "naming entity_id",
        requires="entity_updates",
    )
    async def test_entity_updates_rename_conflict(self, harness: Harness) -> None:
        backend = harness.backend
        taken = await harness.add_entity(_name(), "PERSON")
        entity = await harness.add_entity(_name(), "PERSON", description="kept")
        before = await backend.get_entity(entity.id)
        with invalid("name", ConflictError):
            await backend.update_entity(
                entity.id, name=taken.name.upper(), description="lost", aliases=["x"]
            )
        assert _state(await backend.get_entity(entity.id)) == _state(before)
        assert _state(await backend.get_entity(taken.id)) == _state(taken)
        other_type = await harness.add_entity(_name(), "LOCATION")
        moved = await backend.update_entity(other_type.id, name=taken.name)
        assert (moved.name, moved.type) == (taken.name, "LOCATION")
        same = await backend.update_entity(entity.id, name=entity.name.lower())
        assert same.name == entity.name.lower(), "a new spelling of its own name is refused"
        with pytest.raises(NotFoundError) as info:
            await backend.update_entity(word(), description="x")
        assert info.value.argument == "entity_id"

    @scenario(
        "entity_updates.merge_removes_source",
        "merge_entities deletes the source and returns the target, whose aliases gain the "
        "source's name and aliases; the old name then finds the target; merging into "
        "itself or an unknown id is a typed error and changes nothing",
        requires=("entity_updates", "entity_merge"),
    )
    async def test_entity_updates_merge_removes_source(self, harness: Harness) -> None:
        backend = harness.backend
        target = await harness.add_entity(_name(), "PERSON")
        source = await harness.add_entity(_name(), "PERSON", description="from the source")
        nick = f"Ni{word()}"
        await backend.update_entity(source.id, aliases=[nick], attributes={"a": 1, "b": 2})
        await backend.update_entity(target.id, attributes={"b": 3})
        with invalid("target_id"):
            await backend.merge_entities(source.id, source.id)
        for args, argument in (
            ((word(), target.id), "source_id"),
            ((source.id, word()), "target_id"),
        ):
            with pytest.raises(NotFoundError) as info:
                await backend.merge_entities(*args)
            assert info.value.argument == argument
        assert (await backend.get_entity(source.id)) is not None, "a failed merge wrote"
        merged = await backend.merge_entities(source.id, target.id)
        assert merged.id == target.id and merged.name == target.name
        assert merged.aliases == [source.name, nick]
        assert merged.attributes == {"a": 1, "b": 3}, "the target's attributes win"
        assert merged.description == "from the source", "a missing description is filled"
        assert await backend.get_entity(source.id) is None
        for name in (source.name.upper(), nick.lower()):
            found = await backend.get_entity_by_name(name)
            assert found is not None and found.id == target.id
        assert [e.id for e in await backend.find_entities(source.name)] == [target.id]
        with pytest.raises(NotFoundError):
            await backend.merge_entities(source.id, target.id)

    @scenario(
        "entity_updates.merge_moves_once",
        "merge_entities moves the source's mentions, relationships (both directions), "
        "preference links and facts to the target exactly once: a message or preference "
        "naming both ends with the target once, a relationship the target has is not "
        "doubled, facts_about(target) finds the facts about the source's names",
        requires=(
            "entity_updates",
            "entity_merge",
            "explicit_mentions",
            "relationships",
            "entity_graph",
            "preferences",
            "facts",
        ),
    )
    async def test_entity_updates_merge_moves_once(self, harness: Harness) -> None:
        backend, user = harness.backend, harness.new_user()
        target = await harness.add_entity(_name(), "PERSON")
        source = await harness.add_entity(_name(), "PERSON")
        x, y, z = [await harness.add_entity(_name(), "ORGANIZATION") for _ in range(3)]
        handle = await harness.new_session(user=user, create=True)
        await _mention(harness, handle, source, target)
        await _mention(harness, handle, source)
        await _mention(harness, handle, x)
        for a, b, kind in ((source, x, "KNOWS"), (target, x, "KNOWS"), (source, y, "WORKS_AT")):
            await backend.add_relationship(a.id, b.id, kind)
        into = await backend.add_relationship(z.id, source.id, "MANAGES")
        both = await harness.add_preference(
            "people", "both", user=user, linked_entities=[target.id, source.id]
        )
        one = await harness.add_preference("people", "one", user=user, linked_entities=[source.id])
        about = await harness.add_fact(source.name.lower(), "LIKES", "tea", user=user)
        await harness.add_fact(target.name, "LIKES", "coffee", user=user)
        await _merge(backend, source, target)
        assert await _mentions(harness, handle) == [[target.id], [target.id], [x.id]]
        edges = await backend.list_relationships(target.id)
        seen = sorted((r.source_id, r.type, r.target_id) for r in edges)
        assert seen == sorted(
            [
                (target.id, "KNOWS", x.id),
                (target.id, "WORKS_AT", y.id),
                (z.id, "MANAGES", target.id),
            ]
        ), seen
        assert len(await backend.list_relationships(x.id)) == 1, "a relationship was doubled"
        assert into.id in [r.id for r in edges], "a moved relationship lost its id"
        links = {
            p.id: p.linked_entities for p in await backend.list_preferences(user_identifier=user)
        }
        assert links == {both.id: [target.id], one.id: [target.id]}, links
        facts = await backend.facts_about(target.name.upper(), user_identifier=user)
        assert sorted(f.object for f in facts) == ["coffee", "tea"]
        assert about.id in [f.id for f in facts]
        assert all(f.subject == target.name for f in facts)

    @scenario(
        "entity_updates.merge_between",
        "a relationship between the source and the target is dropped by the merge, never "
        "made a self-loop; the target's other relationships stay",
        requires=("entity_updates", "entity_merge", "relationships", "entity_graph"),
    )
    async def test_entity_updates_merge_between(self, harness: Harness) -> None:
        backend = harness.backend
        target = await harness.add_entity(_name(), "PERSON")
        source = await harness.add_entity(_name(), "PERSON")
        other = await harness.add_entity(_name(), "PERSON")
        await backend.add_relationship(source.id, target.id, "SAME_PERSON")
        await backend.add_relationship(target.id, source.id, "KNOWS")
        kept = await backend.add_relationship(target.id, other.id, "KNOWS")
        await _merge(backend, source, target)
        edges = await backend.list_relationships(target.id)
        assert [r.id for r in edges] == [kept.id], [
            (r.source_id, r.type, r.target_id) for r in edges
        ]
        assert [e.id for e in await backend.related_entities(target.id)] == [other.id]

    @scenario(
        "entity_updates.tenancy",
        "with multi_tenant=True one user can neither read, find, update nor merge another "
        "user's entities, and nothing of theirs changes",
        requires=("multi_tenant", "entity_updates", "entity_merge"),
    )
    async def test_entity_updates_tenancy(self, harness: Harness) -> None:
        backend = await harness.tenant_backend()
        alice, bob = harness.new_user(), harness.new_user()
        theirs = await harness.add_entity(_name(), "PERSON", backend=backend, user_identifier=alice)
        await backend.update_entity(theirs.id, aliases=["Nick"], user_identifier=alice)
        mine = await harness.add_entity(_name(), "PERSON", backend=backend, user_identifier=bob)
        before = await backend.get_entity(theirs.id, user_identifier=alice)
        assert await backend.get_entity(theirs.id, user_identifier=bob) is None
        assert await backend.get_entity_by_name(theirs.name, user_identifier=bob) is None
        assert await backend.get_entity_by_name("nick", user_identifier=bob) is None
        with pytest.raises(NotFoundError):
            await backend.update_entity(theirs.id, description="x", user_identifier=bob)
        with pytest.raises(NotFoundError) as info:
            await backend.merge_entities(mine.id, theirs.id, user_identifier=bob)
        assert info.value.argument == "target_id"
        with pytest.raises(NotFoundError):
            await backend.merge_entities(theirs.id, mine.id, user_identifier=bob)
        assert _state(await backend.get_entity(theirs.id, user_identifier=alice)) == _state(before)
        assert await backend.get_entity(mine.id, user_identifier=bob) is not None
        same = await harness.add_entity(theirs.name, "PERSON", backend=backend, user_identifier=bob)
        renamed = await backend.update_entity(mine.id, name=f"{mine.name}2", user_identifier=bob)
        assert renamed.name == f"{mine.name}2" and same.id != theirs.id


async def _merge(backend: MemoryBackend, source: Entity, target: Entity) -> None:
    merged = await backend.merge_entities(source.id, target.id)
    assert merged.id == target.id
    assert await backend.get_entity(source.id) is None, "the source is still there"
