"""forget_user on Bolt, proved by a Cypher scan of every node and relationship (labels,
types and every property) for the user's identifiers and content."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from memory_core import HashingEmbedder, MemoryBackend, MemoryCoreError
from memory_core_dev.neo4j_fixtures import Neo4jHandle
from tests.backends.erasure_data import SHARED_ENTITY, write_traces, write_user

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

Graph = Callable[..., list[dict[str, Any]]]


def _holding(graph: Graph, markers: list[str]) -> list[str]:
    """Every node and relationship (as labels or type plus all properties) that holds one
    of ``markers``, case-insensitively."""
    rows = graph("MATCH (n) RETURN labels(n) AS kind, properties(n) AS props")
    rows += graph("MATCH ()-[r]->() RETURN type(r) AS kind, properties(r) AS props")
    assert rows, "the scan read nothing"
    found = []
    for row in rows:
        text = json.dumps(row, default=str).lower()
        hits = [m for m in markers if m.lower() in text]
        if hits:
            found.append(f"{row['kind']}: {hits}")
    return found


async def _write_long_term(memory: MemoryBackend, user: str, tag: str) -> list[str]:
    """Preferences (one superseding the other, both linking the user's own entity), a
    fact and a relationship from the user's entity to the shared one, after
    :func:`write_user`; return the strings unique to them."""
    owner = user if memory.multi_tenant else None
    [own] = await memory.find_entities(f"Entname{tag}", user_identifier=owner)
    [shared] = await memory.find_entities(SHARED_ENTITY, user_identifier=owner)
    old = await memory.add_preference(
        "food",
        f"prefword{tag}",
        context=f"ctxword{tag}",
        metadata={"k": f"prefmeta{tag}"},
        linked_entities=[own.id],
        user_identifier=user,
    )
    new = await memory.add_preference(
        "food", f"newprefword{tag}", linked_entities=[own.id], user_identifier=user
    )
    await memory.supersede_preference(old.id, new.id, user_identifier=user)
    fact = await memory.add_fact(
        f"factsubj{tag}",
        "LIKES",
        f"factobj{tag}",
        metadata={"k": f"factmeta{tag}"},
        user_identifier=user,
    )
    link = await memory.add_relationship(
        own.id, shared.id, "KNOWS", properties={"k": f"relword{tag}"}, user_identifier=owner
    )
    return [
        f"prefword{tag}",
        f"ctxword{tag}",
        f"prefmeta{tag}",
        f"factsubj{tag}",
        f"factobj{tag}",
        f"factmeta{tag}",
        f"relword{tag}",
        old.id,
        new.id,
        fact.id,
        link.id,
    ]


@pytest.mark.neo4j_private
@pytest.mark.parametrize("multi_tenant", [False, True], ids=["single-tenant", "multi-tenant"])
async def test_forget_user_leaves_no_node_or_relationship(
    open_bolt: Callable[..., MemoryBackend],
    graph: Graph,
    unique: Callable[[str], str],
    multi_tenant: bool,
    neo4j_server: Neo4jHandle,
) -> None:
    neo4j_server.require_wipeable("it scans every node and relationship of the database")
    gone_user, kept_user = unique("zed"), unique("kay")
    # Tags unique to this run: on a shared Neo4j, earlier runs' entities keep their names.
    a, b = f"A{uuid.uuid4().hex[:8]}", f"B{uuid.uuid4().hex[:8]}"
    async with open_bolt(multi_tenant=multi_tenant, embedder=HashingEmbedder()) as memory:
        gone = await write_user(memory, gone_user, a)
        kept = await write_user(memory, kept_user, b)
        gone += await _write_long_term(memory, gone_user, a)
        kept += await _write_long_term(memory, kept_user, b)
        gone += await write_traces(memory, gone_user, a)
        kept += await write_traces(memory, kept_user, b)
        assert _holding(graph, gone), "the scan must find the user before"
        report = await memory.forget_user(gone_user, batch_size=1)
        assert report.counts == {
            "conversations": 2,
            "messages": 4,
            "mentions": 4,
            "entities": 1 if not multi_tenant else 2,
            "idempotency_keys": 2,
            "preferences": 2,
            "facts": 1,
            "relationships": 1,
            "traces": 1,
            "steps": 2,
            "tool_calls": 1,
        }
        assert _holding(graph, gone) == []
        still = " ".join(_holding(graph, kept))
        assert all(m.lower() in still.lower() for m in kept), "the other user must stay whole"
        again = await memory.forget_user(gone_user)
        assert again.total == 0


async def test_racing_writes_then_second_forget_leaves_nothing(
    bolt: MemoryBackend, graph: Graph, unique: Callable[[str], str]
) -> None:
    user = unique("race")
    await bolt.add_message(unique("other"), "user", "someone else", user_identifier=unique("u"))
    for index in range(10):
        await bolt.add_message(
            f"{user}-old{index}", "user", f"oldword{index}", user_identifier=user
        )

    refused: list[MemoryCoreError] = []

    async def writer() -> None:
        for index in range(20):
            try:
                await bolt.add_message(
                    f"{user}-new{index % 3}", "user", f"newword{index}", user_identifier=user
                )
            except MemoryCoreError as exc:  # a write racing a delete may lose: typed, whole
                refused.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(writer)
        await bolt.forget_user(user, batch_size=2)
    for index in range(3):
        read = await bolt.get_conversation(f"{user}-new{index}", user_identifier=user)
        assert all(m.content.startswith("newword") for m in read.messages)
    await bolt.forget_user(user)
    assert _holding(graph, [user, "oldword", "newword"]) == []
