"""The long-term methods' own rules (memory_core.long_term): every bad argument is a typed
error naming it and writes nothing; values are normalised as documented. Behaviour per
backend is the conformance suite's (areas preferences, facts, relationships,
entity_search)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import pytest

from memory_core import (
    InvalidArgumentTypeError,
    InvalidRequestError,
    MemoryBackend,
    NotSupportedError,
    open_backend,
)
from memory_core.long_term import MAX_ALIASES, MAX_DEPTH, MAX_LINKED_ENTITIES
from tests.conformance.catalogue import register

pytestmark = pytest.mark.anyio


@pytest.fixture
async def memory() -> AsyncIterator[MemoryBackend]:
    async with open_backend("memory://") as backend:
        yield backend


async def _nothing_written(memory: MemoryBackend) -> None:
    assert await memory.list_preferences() == []
    assert await memory.search_facts("x y z a b c d e f g h i j k") == []


@pytest.mark.parametrize(
    ("call", "argument", "kind"),
    [
        (
            lambda m: m.add_preference("food", "x", confidence=-0.1),
            "confidence",
            InvalidRequestError,
        ),
        (
            lambda m: m.add_preference("food", "x", confidence="1"),
            "confidence",
            InvalidArgumentTypeError,
        ),
        (
            lambda m: m.add_preference("food", "x", confidence=None),
            "confidence",
            InvalidArgumentTypeError,
        ),
        (lambda m: m.add_preference(3, "x"), "category", InvalidArgumentTypeError),
        (lambda m: m.add_preference("food", ""), "preference", InvalidRequestError),
        (lambda m: m.add_preference("food", "x", context=""), "context", InvalidRequestError),
        (
            lambda m: m.add_preference(
                "food", "x", linked_entities=["a"] * (MAX_LINKED_ENTITIES + 1)
            ),
            "linked_entities",
            InvalidRequestError,
        ),
        (
            lambda m: m.add_preference("food", "x", linked_entities=[""]),
            "linked_entities",
            InvalidRequestError,
        ),
        (
            lambda m: m.add_preference("food", "x", metadata=[1]),
            "metadata",
            InvalidArgumentTypeError,
        ),
        (
            lambda m: m.add_preference("food", "x", generate_embedding=1),
            "generate_embedding",
            InvalidArgumentTypeError,
        ),
        (
            lambda m: m.add_preference("food", "x", user_identifier="a\nb"),
            "user_identifier",
            InvalidRequestError,
        ),
        (lambda m: m.add_fact("", "IS", "x"), "subject", InvalidRequestError),
        (lambda m: m.add_fact("a", "", "x"), "predicate", InvalidRequestError),
        (lambda m: m.add_fact("a", "IS", ""), "object", InvalidRequestError),
        (
            lambda m: m.add_fact("a", "IS", "x", valid_from="yesterday"),
            "valid_from",
            InvalidRequestError,
        ),
        (
            lambda m: m.add_fact("a", "IS", "x", valid_until=5),
            "valid_until",
            InvalidArgumentTypeError,
        ),
        (
            lambda m: m.add_fact("a", "IS", "x", valid_from="2024-01-02", valid_until="2024-01-01"),
            "valid_until",
            InvalidRequestError,
        ),
        (
            lambda m: m.add_fact("a", "IS", "x", source_message_id=7),
            "source_message_id",
            InvalidArgumentTypeError,
        ),
        (lambda m: m.search_preferences(""), "query", InvalidRequestError),
        (lambda m: m.search_preferences("x", limit=0), "limit", InvalidRequestError),
        (
            lambda m: m.search_preferences("x", include_superseded="no"),
            "include_superseded",
            InvalidArgumentTypeError,
        ),
        (lambda m: m.list_preferences(limit=-1), "limit", InvalidRequestError),
        (lambda m: m.supersede_preference("a", "a"), "new_id", InvalidRequestError),
        (lambda m: m.delete_preference(""), "preference_id", InvalidRequestError),
        (lambda m: m.search_facts("x", as_of="soon"), "as_of", InvalidRequestError),
        (lambda m: m.facts_about("x", predicate=""), "predicate", InvalidRequestError),
        (lambda m: m.delete_fact(None), "fact_id", InvalidArgumentTypeError),
        (lambda m: m.search_entities("x", type="ALIEN"), "type", InvalidRequestError),
        (lambda m: m.add_relationship("a", "b", "works at"), "type", InvalidRequestError),
        (lambda m: m.add_relationship("a", "b", "9LIVES"), "type", InvalidRequestError),
        (lambda m: m.add_relationship("a", "b", "X" * 101), "type", InvalidRequestError),
        (
            lambda m: m.add_relationship("a", "b", "KNOWS", properties={"n": float("inf")}),
            "properties",
            InvalidRequestError,
        ),
        (lambda m: m.list_relationships("a", direction="up"), "direction", InvalidRequestError),
        (lambda m: m.related_entities("a", depth=0), "depth", InvalidRequestError),
        (lambda m: m.related_entities("a", depth=MAX_DEPTH + 1), "depth", InvalidRequestError),
        (lambda m: m.related_entities("a", depth=True), "depth", InvalidArgumentTypeError),
        (lambda m: m.related_entities("a", types=[3]), "types", InvalidArgumentTypeError),
        (lambda m: m.related_entities("a", types=5), "types", InvalidArgumentTypeError),
        (lambda m: m.delete_relationship(""), "relationship_id", InvalidRequestError),
    ],
)
async def test_a_bad_argument_is_named_and_writes_nothing(
    memory: MemoryBackend, call: Any, argument: str, kind: type[Exception]
) -> None:
    with pytest.raises(kind) as info:
        await call(memory)
    assert info.value.argument == argument  # type: ignore[attr-defined]
    await _nothing_written(memory)


async def test_a_relationship_type_is_stored_upper_case_and_a_uuid_is_an_id(
    memory: MemoryBackend,
) -> None:
    a = await memory.add_entity("Ada", "PERSON")
    b = await memory.add_entity("Bob", "PERSON")
    made = await memory.add_relationship(UUID(a.id), UUID(b.id), "works_With")
    assert made.type == "WORKS_WITH"
    related = await memory.related_entities(UUID(a.id), types="WORKS_with")
    assert [e.id for e in related] == [b.id]


async def test_validity_given_as_text_is_read_as_utc(memory: MemoryBackend) -> None:
    made = await memory.add_fact("a", "IS", "x", valid_from="2024-01-01T01:00:00+01:00")
    assert made.valid_from == datetime(2024, 1, 1, tzinfo=UTC)


async def test_linked_entities_repeat_once_in_order(memory: MemoryBackend) -> None:
    a = await memory.add_entity("Ada", "PERSON")
    b = await memory.add_entity("Bob", "PERSON")
    made = await memory.add_preference("people", "likes both", linked_entities=[b.id, a.id, b.id])
    assert made.linked_entities == [b.id, a.id]


async def test_a_backend_without_the_flag_refuses_each_method_by_name_before_connecting() -> None:
    nams = open_backend("nams://127.0.0.1:9", api_key="k")  # nothing listens there
    for name, call in (
        ("add_preference", nams.add_preference("food", "x")),
        ("add_fact", nams.add_fact("a", "IS", "b")),
        ("add_relationship", nams.add_relationship("a", "b", "KNOWS")),
    ):
        with pytest.raises(NotSupportedError) as info:
            await call
        assert info.value.method == name


@pytest.mark.parametrize(
    ("call", "argument", "kind"),
    [
        (lambda m, e: m.get_entity(""), "entity_id", InvalidRequestError),
        (lambda m, e: m.get_entity(3), "entity_id", InvalidArgumentTypeError),
        (lambda m, e: m.get_entity_by_name(""), "name", InvalidRequestError),
        (lambda m, e: m.get_entity_by_name("x", type="ALIEN"), "type", InvalidRequestError),
        (lambda m, e: m.update_entity("", name="x"), "entity_id", InvalidRequestError),
        (lambda m, e: m.update_entity(e, name=""), "name", InvalidRequestError),
        (lambda m, e: m.update_entity(e, name="x" * 2000), "name", InvalidRequestError),
        (lambda m, e: m.update_entity(e, description=5), "description", InvalidArgumentTypeError),
        (lambda m, e: m.update_entity(e, aliases="Bob"), "aliases", InvalidArgumentTypeError),
        (lambda m, e: m.update_entity(e, aliases=[""]), "aliases", InvalidRequestError),
        (lambda m, e: m.update_entity(e, aliases=[3]), "aliases", InvalidArgumentTypeError),
        (
            lambda m, e: m.update_entity(e, aliases=[f"a{i}" for i in range(MAX_ALIASES + 1)]),
            "aliases",
            InvalidRequestError,
        ),
        (lambda m, e: m.update_entity(e, attributes=[1]), "attributes", InvalidArgumentTypeError),
        (
            lambda m, e: m.update_entity(e, attributes={"n": float("nan")}),
            "attributes",
            InvalidRequestError,
        ),
        (
            lambda m, e: m.update_entity(e, attributes={"x": "y" * 70_000}),
            "attributes",
            InvalidRequestError,
        ),
        (lambda m, e: m.merge_entities("", e), "source_id", InvalidRequestError),
        (lambda m, e: m.merge_entities(e, None), "target_id", InvalidArgumentTypeError),
        (lambda m, e: m.merge_entities(e, e), "target_id", InvalidRequestError),
    ],
)
async def test_a_bad_entity_argument_is_named_and_changes_nothing(
    memory: MemoryBackend, call: Any, argument: str, kind: type[Exception]
) -> None:
    entity = await memory.add_entity("Ada", "PERSON", description="first")
    with pytest.raises(kind) as info:
        await call(memory, entity.id)
    assert info.value.argument == argument  # type: ignore[attr-defined]
    assert await memory.get_entity(entity.id) == entity
    assert [e.id for e in await memory.find_entities("Ada")] == [entity.id]


async def test_aliases_are_kept_once_ignoring_case_in_the_first_spelling(
    memory: MemoryBackend,
) -> None:
    entity = await memory.add_entity("Robert", "PERSON")
    updated = await memory.update_entity(entity.id, aliases=("Bob", "BOB", "robert", "Rob", "bob"))
    assert updated.aliases == ["Bob", "Rob"]
    renamed = await memory.update_entity(entity.id, name="Rob")
    assert renamed.aliases == ["Bob"], "an alias equal to the new name stays"


async def test_a_backend_without_entity_updates_refuses_by_name() -> None:
    register()
    toy = open_backend("toy://")  # the example backend keeps no entity updates
    for name, call in (
        ("get_entity", toy.get_entity("e")),
        ("get_entity_by_name", toy.get_entity_by_name("Ada")),
        ("update_entity", toy.update_entity("e", description="x")),
        ("merge_entities", toy.merge_entities("a", "b")),
    ):
        with pytest.raises(NotSupportedError) as info:
            await call
        assert info.value.method == name
        assert info.value.workaround
