"""Entities under ``multi_tenant=True`` belong to one tenant; without it they are global.

A multi-tenant backend stores ``tenant`` on the entities it makes, and ``add_entity``,
``find_entities`` and every kind of mention (id, typed, name-only) see only the caller's
entities. A single-tenant backend keeps the reference's global entities, untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import anyio
import neo4j
import pytest

from memory_core import (
    ConfigurationError,
    EntityRef,
    InvalidRequestError,
    Limits,
    MemoryBackend,
    NotFoundError,
)
from memory_core.backends.bolt import BoltStore, cypher
from memory_core_dev.neo4j_fixtures import Neo4jHandle

from .helpers import Graph

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]
Unique = Callable[[str], str]


def _entity_nodes(graph: Graph, name: str) -> list[dict[str, Any]]:
    return graph(
        "MATCH (e:Entity {name: $name}) RETURN e.id AS id, e.tenant AS tenant, "
        "'tenant' IN keys(e) AS has_tenant ORDER BY e.tenant",
        name=name,
    )


def _mentions_of(graph: Graph, entity_id: str) -> int:
    [row] = graph(
        "MATCH (:Message)-[r:MENTIONS]->(:Entity {id: $id}) RETURN count(r) AS n", id=entity_id
    )
    return int(row["n"])


async def test_add_and_find_see_only_the_callers_entities(
    tenant_bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    alice, bob, name = unique("alice"), unique("bob"), unique("Acme")
    mine = await tenant_bolt.add_entity(name, "ORGANIZATION", user_identifier=alice)

    assert await tenant_bolt.find_entities(name, user_identifier=bob) == []
    assert await tenant_bolt.find_entities(mine.id, user_identifier=bob) == []
    theirs = await tenant_bolt.add_entity(name, "ORGANIZATION", user_identifier=bob)
    assert theirs.id != mine.id
    assert [e.id for e in await tenant_bolt.find_entities(name, user_identifier=bob)] == [theirs.id]
    assert [e.id for e in await tenant_bolt.find_entities(name.upper(), user_identifier=alice)] == [
        mine.id
    ]
    again = await tenant_bolt.add_entity(name, "organization", user_identifier=alice)
    assert again.id == mine.id
    stored = {row["tenant"]: (row["id"], row["has_tenant"]) for row in _entity_nodes(graph, name)}
    assert stored == {alice: (mine.id, True), bob: (theirs.id, True)}


async def test_another_tenants_entity_id_is_unknown_and_nothing_is_written(
    tenant_bolt: MemoryBackend,
    open_bolt: Callable[..., MemoryBackend],
    graph: Graph,
    unique: Unique,
) -> None:
    alice, bob, session = unique("alice"), unique("bob"), unique("s")
    secret = await tenant_bolt.add_entity(unique("Secret"), "PERSON", user_identifier=alice)
    ref = [EntityRef(id=secret.id)]

    with pytest.raises(NotFoundError, match="explicit_mentions: no entity "):
        await tenant_bolt.add_message(
            session,
            "user",
            "x",
            user_identifier=bob,
            extraction_mode="explicit",
            explicit_mentions=ref,
        )
    # Batches get mentions from an extractor.
    async with open_bolt(multi_tenant=True, extractor=lambda text: ref) as extracting:
        with pytest.raises(NotFoundError, match="explicit_mentions: no entity "):
            await extracting.add_messages_batch(
                session,
                [{"role": "user", "content": "y"}],
                user_identifier=bob,
                extract_entities=True,
            )
    assert graph("MATCH (c:Conversation {session_id: $s}) RETURN c", s=session) == []
    assert _mentions_of(graph, secret.id) == 0

    stored = await tenant_bolt.add_message(
        session,
        "user",
        "mine",
        user_identifier=alice,
        extraction_mode="explicit",
        explicit_mentions=ref,
    )
    assert [m.id for m in stored.mentions] == [secret.id]


async def test_names_and_typed_refs_resolve_in_the_callers_tenant(
    tenant_bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    alice, bob = unique("alice"), unique("bob")
    name, only_alice = unique("Globex"), unique("Initech")
    alices = await tenant_bolt.add_entity(name, "ORGANIZATION", user_identifier=alice)
    alices_other = await tenant_bolt.add_entity(only_alice, "CONCEPT", user_identifier=alice)

    stored = await tenant_bolt.add_message(
        unique("s"),
        "user",
        "bob names alice's entities",
        user_identifier=bob,
        extraction_mode="explicit",
        explicit_mentions=[EntityRef(name=only_alice), EntityRef(name=name, type="ORGANIZATION")],
    )
    [bobs] = stored.mentions
    assert bobs.name == name and bobs.id not in (alices.id, alices_other.id)
    assert _mentions_of(graph, alices.id) == 0 and _mentions_of(graph, alices_other.id) == 0
    assert [row["tenant"] for row in _entity_nodes(graph, name)] == sorted([alice, bob])
    assert [row["tenant"] for row in _entity_nodes(graph, only_alice)] == [alice]

    # Within a tenant a bare name links the tenant's single entity of that name, even
    # though another tenant has one too.
    again = await tenant_bolt.add_message(
        unique("s"),
        "user",
        "alice names her own",
        user_identifier=alice,
        extraction_mode="explicit",
        explicit_mentions=[EntityRef(name=name.lower())],
    )
    assert [m.id for m in again.mentions] == [alices.id]


async def test_concurrent_typed_mentions_make_one_entity_per_tenant(
    tenant_bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    alice, name, session = unique("alice"), unique("Hooli"), unique("s")
    ref = EntityRef(name=name, type="ORGANIZATION")

    async def write(i: int) -> None:
        await tenant_bolt.add_message(
            f"{session}-{i}",
            "user",
            f"m{i}",
            user_identifier=alice,
            extraction_mode="explicit",
            explicit_mentions=[ref],
        )

    async with anyio.create_task_group() as group:
        for i in range(8):
            group.start_soon(write, i)
    [row] = _entity_nodes(graph, name)
    assert row["tenant"] == alice
    assert _mentions_of(graph, row["id"]) == 8


async def test_single_tenant_entities_stay_global_without_a_tenant_property(
    bolt: MemoryBackend, tenant_bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    """Reference-compatible: a single-tenant backend writes no ``tenant`` and, as for
    conversations, sees the whole database (also entities a tenant made)."""
    name, typed = unique("Global"), unique("Typed")
    shared = await bolt.add_entity(name, "PERSON")
    await bolt.add_message(
        unique("s"),
        "user",
        "x",
        extraction_mode="explicit",
        explicit_mentions=[EntityRef(name=typed, type="LOCATION")],
    )
    assert _entity_nodes(graph, name) == [{"id": shared.id, "tenant": None, "has_tenant": False}]
    assert [row["has_tenant"] for row in _entity_nodes(graph, typed)] == [False]
    assert [e.id for e in await bolt.find_entities(name)] == [shared.id]

    # Tenants do not see global entities ...
    alice = unique("alice")
    assert await tenant_bolt.find_entities(name, user_identifier=alice) == []
    # ... while the single-tenant view sees a tenant's entity, as it sees its conversations.
    tenants = await tenant_bolt.add_entity(unique("Owned"), "PERSON", user_identifier=alice)
    assert [e.id for e in await bolt.find_entities(tenants.id)] == [tenants.id]


async def test_a_name_must_fit_in_the_tenant_index_key(
    open_bolt: Callable[..., MemoryBackend], graph: Graph, unique: Unique
) -> None:
    # Bolt declares how long an indexed identifier may be; limits above it are refused
    # when the backend is opened, so a call never reaches Neo4j's index-key limit.
    cap = BoltStore.capabilities.max_indexed_bytes
    assert cap is not None
    with pytest.raises(ConfigurationError, match="max_identifier_bytes"):
        open_bolt(multi_tenant=True, limits=Limits(max_identifier_bytes=cap + 1))
    async with open_bolt(multi_tenant=True, limits=Limits(max_identifier_bytes=cap)) as wide:
        await _name_and_tenant_at_the_cap(wide, graph, unique, cap)


async def _name_and_tenant_at_the_cap(
    tenant_bolt: MemoryBackend, graph: Graph, unique: Unique, cap: int
) -> None:
    user = unique("u")
    user += "u" * (cap - len(user))
    name = "N" + "n" * cap  # one byte over the cap: refused by the contract, nothing written
    with pytest.raises(InvalidRequestError) as info:
        await tenant_bolt.add_entity(name, "PERSON", user_identifier=user)
    assert info.value.argument == "name"
    session = unique("s")
    with pytest.raises(InvalidRequestError) as info:
        await tenant_bolt.add_message(
            session,
            "user",
            "x",
            user_identifier=user,
            extraction_mode="explicit",
            explicit_mentions=[EntityRef(name=name, type="PERSON")],
        )
    assert info.value.argument.startswith("explicit_mentions")
    assert _entity_nodes(graph, name) == []
    assert graph("MATCH (c:Conversation {session_id: $s}) RETURN c", s=session) == []
    # the largest name and user together still fit in the per-tenant index key
    fitting = await tenant_bolt.add_entity(name[:cap], "PERSON", user_identifier=user)
    assert fitting.name == name[:cap]


PLAN_TAG = "bolt-test-plan-"
PLANNER_SEED = """
UNWIND range(1, 300) AS i
CREATE (:Entity {id: $tag + i, tenant: $tag + 'tenant-' + i, name: 'Same', name_key: 'same',
                 type: 'PERSON'})
"""


def _details(plan: Any) -> Iterator[str]:
    yield f"{plan['operatorType']} {plan.get('args', {}).get('Details', '')}"
    for child in plan.get("children", []):
        yield from _details(child)


async def test_per_tenant_lookups_are_index_backed(
    tenant_bolt: MemoryBackend, neo4j_server: Neo4jHandle
) -> None:
    """EXPLAIN the per-tenant statements: names are sought in Entity(tenant, name_key),
    the MERGE locks the unique Entity(tenant, name, type) entry."""
    params = {
        "identifier": "x",
        "tenant": "t",
        "type": None,
        "limit": 5,
        "id": "i",
        "name": "n",
        "description": None,
    }
    async with neo4j.AsyncGraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth) as d:
        # The planner picks indexes by their statistics, so give it a realistic store (a
        # name many tenants share; tests start on an empty graph) and fresh samples.
        await d.execute_query(PLANNER_SEED, tag=PLAN_TAG)
        try:
            await d.execute_query("CALL db.prepareForReplanning()")
            found = await d.execute_query("EXPLAIN " + cypher.PER_TENANT.find_entities, params)
            added = await d.execute_query("EXPLAIN " + cypher.PER_TENANT.add_entity, params)
        finally:
            await d.execute_query(
                "MATCH (e:Entity) WHERE e.id STARTS WITH $tag DELETE e", tag=PLAN_TAG
            )
    lookups = list(_details(found.summary.plan))
    assert any("Entity(tenant, name_key)" in op and "IndexSeek" in op for op in lookups), lookups
    assert any("UniqueIndexSeek" in op and "Entity(id)" in op for op in lookups), lookups
    merges = list(_details(added.summary.plan))
    assert any("Entity(tenant, name, type)" in op and "Locking" in op for op in merges), merges


async def test_delete_entity_is_scoped_and_detaches_mentions(
    tenant_bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    alice, bob, name = unique("alice"), unique("bob"), unique("Acme")
    mine = await tenant_bolt.add_entity(name, "ORGANIZATION", user_identifier=alice)
    session = unique("s")
    await tenant_bolt.add_message(
        session,
        "user",
        f"about {name}",
        user_identifier=alice,
        extraction_mode="explicit",
        explicit_mentions=[EntityRef(id=mine.id)],
    )
    assert _mentions_of(graph, mine.id) == 1

    assert await tenant_bolt.delete_entity(mine.id, user_identifier=bob) is False
    assert [e["id"] for e in _entity_nodes(graph, name)] == [mine.id]

    assert await tenant_bolt.delete_entity(mine.id, user_identifier=alice) is True
    assert _entity_nodes(graph, name) == []
    [message] = (await tenant_bolt.get_conversation(session, user_identifier=alice)).messages
    assert (message.content, message.mentions) == (f"about {name}", [])
    await tenant_bolt.clear_session(session, user_identifier=alice)
