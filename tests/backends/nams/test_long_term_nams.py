"""Long-term memory over the NAMS wire: entity search, delete, the graph reads, and the
refusals of what the wire has no route for. Over the real NAMS-compatible server (both
session modes); the mocked service only for the hosted shapes our server does not send
(unscored search hits, a whole-workspace graph)."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest
import respx

from memory_core import (
    CapabilityWarning,
    ConflictError,
    Entity,
    InvalidRequestError,
    MemoryBackend,
    NotFoundError,
    NotSupportedError,
    TransportError,
)
from memory_core.conformance.seeding import AdminSeed
from memory_core.scoring import query_terms, text_score
from memory_core_dev.nams_server import API_KEY, NamsTestServer, start_nams_server
from tests.conformance.catalogue import register

from .mocked import FAST, body, mocked_backend

pytestmark = [pytest.mark.nams, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["portable", "server"])
async def memory(
    request: pytest.FixtureRequest, nams_server: NamsTestServer, workspace: str
) -> AsyncIterator[MemoryBackend]:
    backend = nams_server.backend(workspace, session_names=request.param, **FAST)
    async with backend:
        yield backend


@pytest.fixture
async def seed(nams_server: NamsTestServer, workspace: str) -> AsyncIterator[AdminSeed]:
    made = AdminSeed(nams_server.url, api_key=API_KEY, workspace=workspace)
    yield made
    await made.close()


async def people(memory: MemoryBackend, *names: str) -> list[str]:
    return [(await memory.add_entity(name, "PERSON")).id for name in names]


def test_flags_say_what_the_wire_allows(nams_server: NamsTestServer) -> None:
    for mode in ("portable", "server"):
        caps = nams_server.backend(session_names=mode).capabilities
        assert caps.entities and caps.delete_entity and caps.entity_search
        assert caps.entity_graph and caps.entity_updates and caps.entity_merge
        assert not (caps.relationships or caps.preferences or caps.facts)


async def test_search_entities_scores_words_of_name_and_description(
    memory: MemoryBackend,
) -> None:
    labs = await memory.add_entity("Quartz Labs", "ORGANIZATION", description="glass")
    cy = await memory.add_entity("Cy", "PERSON", description="works at quartz labs daily")
    await memory.add_entity("Unrelated", "PERSON")
    hits = await memory.search_entities("Quartz labs")
    assert [h.id for h in hits] == [labs.id, cy.id]
    terms = query_terms("Quartz labs")
    assert [h.score for h in hits] == [
        text_score(terms, "Quartz Labs glass"),
        text_score(terms, "Cy works at quartz labs daily"),
    ]
    assert [h.type for h in hits] == ["ORGANIZATION", "PERSON"]
    assert [h.id for h in await memory.search_entities("quartz", type="person")] == [cy.id]
    assert len(await memory.search_entities("quartz", limit=1)) == 1
    assert await memory.search_entities("nothing") == []


async def test_delete_entity(memory: MemoryBackend) -> None:
    [ada] = await people(memory, "Ada")
    assert await memory.delete_entity(ada) is True
    assert await memory.delete_entity(ada) is False
    assert await memory.find_entities("Ada") == []


async def test_list_relationships_reads_the_graph(memory: MemoryBackend, seed: AdminSeed) -> None:
    a, b, c = await people(memory, "A", "B", "C")
    ab = await seed.link(a, b, "KNOWS", properties={"since": 2020})
    ca = await seed.link(c, a, "MANAGES", confidence=0.5)
    listed = await memory.list_relationships(a)
    assert [r.id for r in listed] == [ab.id, ca.id]
    assert listed[0].model_dump() == ab.model_dump()
    assert (listed[1].source_id, listed[1].target_id, listed[1].confidence) == (c, a, 0.5)
    assert [r.id for r in await memory.list_relationships(a, direction="out")] == [ab.id]
    assert [r.id for r in await memory.list_relationships(a, direction="in")] == [ca.id]
    assert [r.id for r in await memory.list_relationships(a, type="manages")] == [ca.id]
    assert [r.id for r in await memory.list_relationships(a, limit=1)] == [ab.id]


async def test_related_entities_walks_to_the_depth(memory: MemoryBackend, seed: AdminSeed) -> None:
    a, b, c, d, e = await people(memory, "A", "B", "C", "D", "E")
    for source, target in ((a, b), (b, c), (c, d), (d, a)):
        await seed.link(source, target, "KNOWS")
    await seed.link(e, a, "WORKS_WITH")

    async def near(depth: int, types: Any = None) -> list[str]:
        return [x.id for x in await memory.related_entities(a, depth=depth, types=types)]

    assert set(await near(1)) == {b, d, e}
    second = await near(2)
    assert set(second[:3]) == {b, d, e} and second[3:] == [c]
    assert set(await near(3)) == {b, c, d, e}
    assert set(await near(1, "knows")) == {b, d}
    assert await near(2, ["WORKS_WITH"]) == [e]
    [found] = await memory.related_entities(e)
    assert isinstance(found, Entity) and (found.id, found.name, found.type) == (a, "A", "PERSON")


async def test_unknown_entity_is_not_found_naming_entity_id(memory: MemoryBackend) -> None:
    for read in (memory.list_relationships, memory.related_entities):
        with pytest.raises(NotFoundError) as info:
            await read("no-such-entity")
        assert info.value.argument == "entity_id"


@pytest.mark.parametrize(
    ("call", "flag"),
    [
        (lambda m: m.add_preference("food", "likes tea"), "preferences"),
        (lambda m: m.search_preferences("tea"), "preferences"),
        (lambda m: m.list_preferences(), "preferences"),
        (lambda m: m.supersede_preference("a", "b"), "preferences"),
        (lambda m: m.delete_preference("a"), "preferences"),
        (lambda m: m.add_fact("Ada", "IS", "here"), "facts"),
        (lambda m: m.search_facts("Ada"), "facts"),
        (lambda m: m.facts_about("Ada"), "facts"),
        (lambda m: m.delete_fact("a"), "facts"),
        (lambda m: m.add_relationship("a", "b", "KNOWS"), "relationships"),
        (lambda m: m.delete_relationship("a"), "relationships"),
    ],
)
async def test_what_the_wire_lacks_is_refused_with_a_workaround(
    nams_server: NamsTestServer, workspace: str, call: Any, flag: str
) -> None:
    async with nams_server.backend(workspace, session_names="portable") as memory:
        mark = nams_server.mark()
        with pytest.raises(NotSupportedError) as info:
            await call(memory)
        assert info.value.backend == "nams"
        assert "NAMS" in info.value.workaround and "application" in info.value.workaround
        if flag == "relationships":
            assert "Bolt" in info.value.workaround
        assert nams_server.since(mark) == []


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda m: m.related_entities("a", depth=4), "depth"),
        (lambda m: m.related_entities("a", depth=0), "depth"),
        (lambda m: m.related_entities("a", types=["not a type"]), "types"),
        (lambda m: m.list_relationships("a", direction="up"), "direction"),
        (lambda m: m.list_relationships("a", type="bad type"), "type"),
        (lambda m: m.list_relationships("", limit=1), "entity_id"),
        (lambda m: m.list_relationships("a", limit=0), "limit"),
        (lambda m: m.search_entities(""), "query"),
        (lambda m: m.search_entities("x", type="ALIEN"), "type"),
        (lambda m: m.delete_entity(""), "entity_id"),
        (lambda m: m.get_entity(""), "entity_id"),
        (lambda m: m.get_entity_by_name(""), "name"),
        (lambda m: m.get_entity_by_name("a", type="ALIEN"), "type"),
        (lambda m: m.update_entity("", description="x"), "entity_id"),
        (lambda m: m.update_entity("a", name="x" * 5000), "name"),
        (lambda m: m.update_entity("a", aliases=["ok", ""]), "aliases"),
        (lambda m: m.update_entity("a", attributes={"x": object()}), "attributes"),
        (lambda m: m.merge_entities("", "b"), "source_id"),
        (lambda m: m.merge_entities("a", "a"), "target_id"),
    ],
)
async def test_bad_input_names_the_argument_and_sends_nothing(
    nams_server: NamsTestServer, workspace: str, call: Any, argument: str
) -> None:
    async with nams_server.backend(workspace, session_names="portable") as memory:
        mark = nams_server.mark()
        with pytest.raises(InvalidRequestError) as info:
            await call(memory)
        assert info.value.argument == argument
        assert nams_server.since(mark) == []


async def test_object_and_event_types_are_announced(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace, strict=True) as strict:
        mark = nams_server.mark()
        for kind in ("OBJECT", "event"):
            with pytest.raises(NotSupportedError) as info:
                await strict.add_entity("Laptop", kind)
            assert "'type'" in info.value.message and "CUSTOM" in info.value.workaround
        assert nams_server.since(mark) == []
        assert (await strict.add_entity("Laptop", "CUSTOM")).type == "CUSTOM"
    async with nams_server.backend(workspace) as lenient:
        with pytest.warns(CapabilityWarning, match="OBJECT is kept as CUSTOM"):
            made = await lenient.add_entity("Engine", "OBJECT")
        assert made.type == "CUSTOM"
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            await lenient.add_entity("Ada", "PERSON")


async def test_graph_reads_fail_typed_when_the_service_is_down(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace, max_retries=1, **FAST) as memory:
        [a] = await people(memory, "A")
        nams_server.faults.set(unavailable=10)
        for call in (
            memory.related_entities(a),
            memory.list_relationships(a),
            memory.search_entities("a"),
            memory.delete_entity(a),
        ):
            with pytest.raises(TransportError):
                await call


# ---------------------------------------------------------------------- entity updates


async def test_get_entity_reads_aliases_and_attributes(memory: MemoryBackend) -> None:
    ada = await memory.add_entity("Ada", "PERSON", description="pioneer")
    await memory.update_entity(ada.id, aliases=["Countess"], attributes={"born": 1815})
    got = await memory.get_entity(ada.id)
    assert got is not None
    assert (got.id, got.name, got.type, got.description) == (ada.id, "Ada", "PERSON", "pioneer")
    assert (got.aliases, got.attributes) == (["Countess"], {"born": 1815})
    assert await memory.get_entity("no-such-entity") is None


async def test_get_entity_by_name_matches_names_then_aliases(memory: MemoryBackend) -> None:
    ada = await memory.add_entity("Ada Lovelace", "PERSON")
    await memory.update_entity(ada.id, aliases=["Countess", "Ödön"])
    for spelling in ("ada lovelace", "COUNTESS", "ödön", "ÖDÖN"):
        found = await memory.get_entity_by_name(spelling)
        assert found is not None and found.id == ada.id, spelling
    assert await memory.get_entity_by_name("Ada") is None, "a word of the name is no match"
    assert await memory.get_entity_by_name("Countess", type="ORGANIZATION") is None
    named = await memory.add_entity("countess", "PERSON")
    first = await memory.get_entity_by_name("Countess")
    assert first is not None and first.id == named.id, "an alias came before a name"
    org = await memory.add_entity("Countess", "ORGANIZATION")
    typed = await memory.get_entity_by_name("COUNTESS", type="ORGANIZATION")
    assert typed is not None and typed.id == org.id


async def test_update_entity_over_the_wire(memory: MemoryBackend) -> None:
    ada = await memory.add_entity("Ada", "PERSON", description="first")
    attrs = {"odd": "naïve 🦊 'q\" %_", "n": [1.5, None, True], "deep": {"x": {}}}
    full = await memory.update_entity(ada.id, aliases=["A1", "a1", "B2"], attributes=attrs)
    assert (full.aliases, full.attributes, full.description) == (["A1", "B2"], attrs, "first")
    assert full.updated_at is not None and full.updated_at >= ada.created_at
    renamed = await memory.update_entity(ada.id, name="Ada L.", description="second")
    assert (renamed.name, renamed.description, renamed.aliases) == (
        "Ada L.",
        "second",
        ["A1", "B2"],
    )
    cleared = await memory.update_entity(ada.id, aliases=[], attributes={})
    assert (cleared.aliases, cleared.attributes) == ([], {})
    got = await memory.get_entity(ada.id)
    assert got is not None and (got.name, got.aliases, got.attributes) == ("Ada L.", [], {})


async def test_update_entity_errors_name_their_argument(memory: MemoryBackend) -> None:
    taken = await memory.add_entity("Taken", "PERSON")
    ada = await memory.add_entity("Ada", "PERSON", description="kept")
    with pytest.raises(ConflictError) as conflict:
        await memory.update_entity(ada.id, name="TAKEN", description="lost", aliases=["x"])
    assert conflict.value.argument == "name"
    got = await memory.get_entity(ada.id)
    assert got is not None and (got.name, got.description, got.aliases) == ("Ada", "kept", [])
    moved = await memory.add_entity("Elsewhere", "LOCATION")
    assert (await memory.update_entity(moved.id, name="Taken")).name == "Taken"
    with pytest.raises(NotFoundError) as unknown:
        await memory.update_entity("no-such-entity", description="x")
    assert unknown.value.argument == "entity_id"
    assert taken.id != ada.id


async def test_merge_entities_over_the_wire(memory: MemoryBackend) -> None:
    target = await memory.add_entity("Target", "PERSON")
    source = await memory.add_entity("Source", "PERSON", description="from the source")
    await memory.update_entity(source.id, aliases=["Nick"], attributes={"a": 1, "b": 2})
    await memory.update_entity(target.id, attributes={"b": 3})
    merged = await memory.merge_entities(source.id, target.id)
    assert (merged.id, merged.name, merged.aliases) == (target.id, "Target", ["Source", "Nick"])
    assert (merged.attributes, merged.description) == ({"a": 1, "b": 3}, "from the source")
    assert await memory.get_entity(source.id) is None
    found = await memory.get_entity_by_name("nick")
    assert found is not None and found.id == target.id


async def test_merge_names_the_unknown_id(memory: MemoryBackend) -> None:
    one, two = await people(memory, "One", "Two")
    for args, argument in ((("gone", two), "source_id"), ((one, "gone"), "target_id")):
        with pytest.raises(NotFoundError) as info:
            await memory.merge_entities(*args)
        assert info.value.argument == argument
    with pytest.raises(InvalidRequestError) as same:
        await memory.merge_entities(one, one)
    assert same.value.argument == "target_id"
    assert await memory.get_entity(one) is not None and await memory.get_entity(two) is not None


async def test_merge_moves_the_relationships_the_graph_reads(
    memory: MemoryBackend, seed: AdminSeed
) -> None:
    """NAMS cannot write relationships, but the store behind it moves them on a merge."""
    target, source, x, y = await people(memory, "Target", "Source", "X", "Y")
    kept = await seed.link(target, x, "KNOWS")
    await seed.link(source, x, "KNOWS")  # the target has it already: not doubled
    moved = await seed.link(y, source, "MANAGES")
    await seed.link(source, target, "SAME_PERSON")  # between the two: dropped
    await memory.merge_entities(source, target)
    edges = await memory.list_relationships(target)
    assert sorted((r.source_id, r.type, r.target_id) for r in edges) == sorted(
        [(target, "KNOWS", x), (y, "MANAGES", target)]
    )
    assert {r.id for r in edges} >= {kept.id, moved.id}
    assert {e.id for e in await memory.related_entities(target)} == {x, y}


async def test_entity_updates_fail_typed_when_the_service_is_down(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace, max_retries=1, **FAST) as memory:
        a, b = await people(memory, "A", "B")
        nams_server.faults.set(unavailable=10)
        for call in (
            memory.get_entity(a),
            memory.get_entity_by_name("A"),
            memory.update_entity(a, description="x"),
            memory.merge_entities(a, b),
        ):
            with pytest.raises(TransportError):
                await call
    nams_server.faults.reset()
    async with nams_server.backend(workspace) as memory:
        got = await memory.get_entity(a)
        assert got is not None and got.description is None, "a failed update wrote"


async def test_a_server_without_the_flags_refuses_with_not_supported() -> None:
    """A server whose backing store lacks ``entity_updates`` answers 501: the client
    raises NotSupportedError, as for any route the service does not serve."""
    register()
    with start_nams_server("toy://") as server:
        async with server.backend(server.workspace(), max_retries=1, **FAST) as memory:
            for call in (
                memory.get_entity("e"),
                memory.update_entity("e", description="x"),
                memory.merge_entities("a", "b"),
            ):
                with pytest.raises(NotSupportedError):
                    await call


# ---------------------------------------------------------------------- hosted shapes


async def test_unscored_text_hits_are_scored_here(api: respx.MockRouter) -> None:
    """The hosted service sends text hits in its own order, without a score."""
    route = api.post("/entities/search").respond(
        json={
            "entities": [
                {"id": "e1", "name": "Tea", "type": "concept"},
                {"id": "e2", "name": "Green tea house", "type": "organization"},
                {"id": "e3", "name": "Coffee", "type": "concept"},
            ],
            "searchType": "text",
        }
    )
    async with mocked_backend() as memory:
        hits = await memory.search_entities("green tea", type="ORGANIZATION", limit=5)
    assert body(route.calls.last) == {"query": "green tea", "type": "organization", "limit": 5}
    assert [h.id for h in hits] == ["e2"]
    assert hits[0].score == text_score(["green", "tea"], "Green tea house ")


async def test_vector_hits_keep_the_service_score(api: respx.MockRouter) -> None:
    api.post("/entities/search").respond(
        json={
            "entities": [
                {"id": "e1", "name": "Oolong", "type": "concept", "score": 0.9},
                {"id": "e2", "name": "Sencha", "type": "concept"},
            ],
            "searchType": "vector",
        }
    )
    async with mocked_backend() as memory:
        hits = await memory.search_entities("green tea")
    assert [(h.id, h.score) for h in hits] == [("e1", 0.9), ("e2", None)]


async def test_a_whole_workspace_graph_is_filtered_to_what_was_asked(
    api: respx.MockRouter,
) -> None:
    """A service that ignores ``entityId`` and ``depth`` answers its whole graph."""
    nodes = [{"id": n, "name": n.upper(), "type": "person"} for n in "abcxy"]
    edges = [
        {"id": "r1", "source": "a", "target": "b", "type": "KNOWS"},
        {"id": "r2", "source": "b", "target": "c", "type": "KNOWS"},
        {"id": "r3", "source": "x", "target": "y", "type": "KNOWS"},
    ]
    route = api.get("/entities/graph").respond(json={"nodes": nodes, "edges": edges})
    async with mocked_backend() as memory:
        assert [r.id for r in await memory.list_relationships("b")] == ["r1", "r2"]
        assert dict(route.calls.last.request.url.params) == {"entityId": "b", "depth": "1"}
        assert [e.id for e in await memory.related_entities("a")] == ["b"]
        assert [e.id for e in await memory.related_entities("a", depth=3)] == ["b", "c"]
        assert dict(route.calls.last.request.url.params) == {"entityId": "a", "depth": "3"}
        with pytest.raises(NotFoundError):
            await memory.related_entities("z")


async def test_entities_belong_to_the_workspace_not_a_user(
    nams_server: NamsTestServer, workspace: str
) -> None:
    """The wire has no user on an entity: a user_identifier on an entity call warns once
    (strict: NotSupportedError, nothing sent), as on every store whose entities are
    shared."""
    async with nams_server.backend(workspace, session_names="portable") as memory:
        [a] = await people(memory, "A")
        with pytest.warns(CapabilityWarning, match="user_identifier"):
            assert await memory.related_entities(a, user_identifier="ada") == []
        with pytest.warns(CapabilityWarning, match="user_identifier"):
            await memory.search_entities("a", user_identifier="ada")
    async with nams_server.backend(workspace, session_names="portable", strict=True) as strict:
        mark = nams_server.mark()
        for call in (
            strict.list_relationships(a, user_identifier="ada"),
            strict.search_entities("a", user_identifier="ada"),
            strict.delete_entity(a, user_identifier="ada"),
            strict.get_entity(a, user_identifier="ada"),
            strict.get_entity_by_name("A", user_identifier="ada"),
            strict.update_entity(a, description="x", user_identifier="ada"),
            strict.merge_entities(a, "b", user_identifier="ada"),
        ):
            with pytest.raises(NotSupportedError, match="user_identifier"):
                await call
        assert nams_server.since(mark) == []


async def test_hosted_search_without_aliases_finds_by_name_only(api: respx.MockRouter) -> None:
    """The hosted service sends no ``aliases``: the lookup is by name, oldest first."""
    route = api.post("/entities/search").respond(
        json={
            "entities": [
                {"id": "e1", "name": "Ada Lovelace", "type": "person"},
                {"id": "e2", "name": "ADA", "type": "person", "createdAt": "2025-02-01T00:00:00Z"},
                {"id": "e3", "name": "ada", "type": "person", "createdAt": "2025-01-01T00:00:00Z"},
                {"id": "e4", "name": "Ada", "type": "organization"},
            ],
            "searchType": "text",
        }
    )
    async with mocked_backend() as memory:
        found = await memory.get_entity_by_name("Ada")
        assert body(route.calls.last) == {"query": "Ada", "limit": 200}
        assert found is not None and (found.id, found.aliases) == ("e3", [])
        typed = await memory.get_entity_by_name("ada", type="ORGANIZATION")
        assert body(route.calls.last) == {"query": "ada", "type": "organization", "limit": 200}
        assert typed is not None and typed.id == "e4"
        assert await memory.get_entity_by_name("Lovelace") is None


async def test_update_sends_only_what_is_given(api: respx.MockRouter) -> None:
    route = api.put("/entities/e%2F1").respond(
        json={"id": "e/1", "name": "Ada", "type": "person", "description": "x"}
    )
    async with mocked_backend() as memory:
        updated = await memory.update_entity("e/1", description="x")
        assert body(route.calls.last) == {"description": "x"}
        assert (updated.id, updated.aliases, updated.attributes) == ("e/1", [], {})
        await memory.update_entity("e/1", aliases=[], attributes={})
        assert body(route.calls.last) == {"aliases": [], "attributes": {}}


async def test_hosted_conflict_and_not_found_name_their_argument(api: respx.MockRouter) -> None:
    api.put("/entities/taken").respond(409, json={"error": {"code": "conflict", "message": "x"}})
    api.put("/entities/gone").respond(404, json={"error": {"code": "not_found", "message": "x"}})
    async with mocked_backend() as memory:
        with pytest.raises(ConflictError) as conflict:
            await memory.update_entity("taken", name="Ada")
        assert conflict.value.argument == "name"
        with pytest.raises(NotFoundError) as missing:
            await memory.update_entity("gone", name="Ada")
        assert missing.value.argument == "entity_id"


async def test_merge_body_names_the_target_and_a_404_is_probed(api: respx.MockRouter) -> None:
    ok = api.post("/entities/s/merge").respond(json={"id": "t", "name": "T", "type": "person"})
    api.post("/entities/s2/merge").respond(404)
    probe = api.get("/entities/s2").respond(json={"id": "s2", "name": "S", "type": "person"})
    async with mocked_backend() as memory:
        merged = await memory.merge_entities("s", "t")
        assert body(ok.calls.last) == {"targetId": "t"} and merged.id == "t"
        with pytest.raises(NotFoundError) as info:
            await memory.merge_entities("s2", "t2")
        assert (info.value.argument, probe.call_count) == ("target_id", 1)
