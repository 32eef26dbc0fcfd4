"""Keyset paging of conversations on the Bolt backend: the walk, ties, conversations
another writer left without a DateTime ``updated_at``, cursors, and the shape of the
statements (a range seek on an index in the listing's order; a deep page reads as many
index entries as a first one)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from neo4j import GraphDatabase

from memory_core import InvalidRequestError, MemoryBackend
from memory_core.cursors import encode_cursor
from memory_core_dev.neo4j_fixtures import Neo4jHandle

from .helpers import Graph, fresh_statistics

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

Unique = Callable[[str], str]


async def walk(backend: MemoryBackend, size: int, user: str | None) -> tuple[list[str], list[int]]:
    """Session ids in walk order and the size of each page."""
    seen: list[str] = []
    sizes: list[int] = []
    cursor = None
    for _ in range(100):
        page = await backend.list_conversations_page(
            limit=size, cursor=cursor, user_identifier=user
        )
        seen += [c.session_id for c in page.conversations]
        sizes.append(len(page.conversations))
        cursor = page.next_cursor
        if cursor is None:
            return seen, sizes
    raise AssertionError("the walk did not end")


async def test_a_walk_lists_a_tenants_conversations_once_newest_first(
    tenant_bolt: MemoryBackend, unique: Unique
) -> None:
    user = unique("u")
    names = [unique("s") for _ in range(8)]
    for name in names:
        await tenant_bolt.add_message(name, "user", "x", user_identifier=user)
    await tenant_bolt.add_message(names[2], "user", "again", user_identifier=user)
    expected = [names[2], *[n for n in reversed(names) if n != names[2]]]
    seen, sizes = await walk(tenant_bolt, 3, user)
    assert seen == expected
    assert sizes == [3, 3, 2]
    listed = await tenant_bolt.list_conversations(limit=5, user_identifier=user)
    assert [c.session_id for c in listed] == expected[:5]


async def test_the_user_filter_holds_without_tenants(bolt: MemoryBackend, unique: Unique) -> None:
    """A single-tenant store listed every conversation whatever user_identifier said."""
    ann, bob = unique("ann"), unique("bob")
    mine = [unique("s") for _ in range(3)]
    for name in mine:
        await bolt.create_conversation(name, user_identifier=ann)
        await bolt.create_conversation(unique("s"), user_identifier=bob)
    seen, _ = await walk(bolt, 2, ann)
    assert seen == mine[::-1]
    listed = await bolt.list_conversations(user_identifier=ann)
    assert [c.session_id for c in listed] == mine[::-1]


async def test_ties_and_nanoseconds_are_paged_once_in_order(
    tenant_bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    user = unique("u")
    made = [
        await tenant_bolt.create_conversation(unique("s"), user_identifier=user) for _ in range(6)
    ]
    ids = [str(c.id) for c in made]
    # Four at one instant, two a nanosecond apart from it (another writer's DateTimes).
    stamp = "MATCH (c:Conversation) WHERE c.id IN $ids SET c.updated_at = datetime($at)"
    graph(stamp, ids=ids[:4], at="2030-01-01T00:00:00.000000500Z")
    graph(stamp, ids=ids[4:5], at="2030-01-01T00:00:00.000000501Z")
    graph(stamp, ids=ids[5:], at="2030-01-01T00:00:00.000000499Z")
    by_id = {str(c.id): c.session_id for c in made}
    expected = [by_id[ids[4]], *[by_id[i] for i in sorted(ids[:4], reverse=True)], by_id[ids[5]]]
    for size in (1, 2, 4, 6):
        assert (await walk(tenant_bolt, size, user))[0] == expected


async def _undated_come_last_by_id(
    backend: MemoryBackend, graph: Graph, unique: Unique, user: str | None
) -> None:
    made = [await backend.create_conversation(unique("s"), user_identifier=user) for _ in range(7)]
    odd = {str(made[1].id): "null", str(made[3].id): "localdatetime('2031-01-01T00:00:00')"}
    odd[str(made[5].id)] = "'2032-01-01T00:00:00Z'"
    for cid, value in odd.items():
        graph(f"MATCH (c:Conversation {{id: $id}}) SET c.updated_at = {value}", id=cid)
    dated = [c.session_id for c in reversed(made) if str(c.id) not in odd]
    undated = [
        c.session_id
        for c in sorted(made, key=lambda c: str(c.id), reverse=True)
        if str(c.id) in odd
    ]
    for size in (1, 2, 3, 4, 10):
        seen, sizes = await walk(backend, size, user)
        assert seen == dated + undated, size
        assert all(n == size for n in sizes[:-1]) and 0 < sizes[-1] <= size


async def test_undated_conversations_come_last_by_id(
    tenant_bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    """updated_at missing, or of another type: another writer's conversations still list,
    each once, after the dated ones."""
    await _undated_come_last_by_id(tenant_bolt, graph, unique, unique("u"))


@pytest.mark.neo4j_private
async def test_undated_conversations_list_store_wide_too(
    bolt: MemoryBackend, graph: Graph, unique: Unique, neo4j_server: Neo4jHandle
) -> None:
    """The same walk over every conversation of a single-tenant store (no user filter)."""
    neo4j_server.require_wipeable("it walks every conversation of the database")
    await _undated_come_last_by_id(bolt, graph, unique, None)


async def test_another_users_undated_conversations_stay_out_of_a_users_listing(
    tenant_bolt: MemoryBackend, bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    """The user filter holds for conversations without a DateTime ``updated_at`` too, with
    tenants and without."""
    for backend in (tenant_bolt, bolt):
        user, other = unique("u"), unique("u")
        mine = await backend.create_conversation(unique("s"), user_identifier=user)
        theirs = await backend.create_conversation(unique("s"), user_identifier=other)
        for made in (mine, theirs):
            graph("MATCH (c:Conversation {id: $id}) SET c.updated_at = null", id=str(made.id))
        assert (await walk(backend, 10, user))[0] == [mine.session_id]
        assert (await walk(backend, 10, other))[0] == [theirs.session_id]


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage",
        encode_cursor("embedded", [1, "4cf0438d-1d2e-5d76-9d5a-4f9ab7bd1170"]),
        encode_cursor("bolt", [0, 1]),
        encode_cursor("bolt", [2, "4cf0438d-1d2e-5d76-9d5a-4f9ab7bd1170"]),
        encode_cursor("bolt", [True, "4cf0438d-1d2e-5d76-9d5a-4f9ab7bd1170"]),
        encode_cursor("bolt", [0, "1", "4cf0438d-1d2e-5d76-9d5a-4f9ab7bd1170"]),
        encode_cursor("bolt", [0, 10**40, "4cf0438d-1d2e-5d76-9d5a-4f9ab7bd1170"]),
        encode_cursor("bolt", [1, "no uuid"]),
    ],
)
async def test_a_cursor_it_did_not_make_is_refused(
    tenant_bolt: MemoryBackend, unique: Unique, cursor: str
) -> None:
    with pytest.raises(InvalidRequestError) as raised:
        await tenant_bolt.list_conversations_page(cursor=cursor, user_identifier=unique("u"))
    assert raised.value.argument == "cursor"


def _profile(server: Any, statement: str, params: dict[str, Any]) -> Any:
    with GraphDatabase.driver(server.uri, auth=server.auth) as driver:
        fresh_statistics(driver, "Conversation")
        _, summary, _ = driver.execute_query("PROFILE " + statement, params)
    return summary.profile


def _operators(plan: Any) -> list[tuple[str, int, str]]:
    """(operator, rows, details) of every operator of a PROFILE plan, top down."""
    args = plan.get("args", {})
    here = [(plan["operatorType"].split("@")[0], plan.get("rows", 0), str(args.get("Details", "")))]
    return here + [op for child in plan.get("children", []) for op in _operators(child)]


@pytest.mark.parametrize("scoped", [True, False])
async def test_a_deep_page_is_a_range_seek_reading_about_limit_entries(
    open_bolt: Callable[..., MemoryBackend], neo4j_server: Any, unique: Unique, scoped: bool
) -> None:
    """No sort of the conversations: the index gives the order, and the seek stops after
    the page (plus one entry, to know whether another page follows)."""
    user = unique("u") if scoped else None
    async with open_bolt(multi_tenant=scoped) as backend:
        for _ in range(60):
            await backend.create_conversation(unique("s"), user_identifier=user)
        if scoped:
            # A store holds other users' conversations, the user's a small part of them:
            # on an index of this user's alone (a fresh Neo4j, this file run first), the
            # planner scans it whole (51 entries) rather than seek.
            for _ in range(300):
                await backend.create_conversation(unique("s"), user_identifier=unique("o"))
        statements: list[tuple[str, dict[str, Any]]] = []
        run_read = backend.store._conn.run_read

        async def recording(statement: str, **params: Any) -> Any:
            statements.append((statement, params))
            return await run_read(statement, **params)

        backend.store._conn.run_read = recording  # type: ignore[method-assign]
        cursor = None
        for _ in range(5):  # the fifth page of 10, 40 conversations in
            page = await backend.list_conversations_page(
                limit=10, cursor=cursor, user_identifier=user
            )
            cursor = page.next_cursor
        assert len(page.conversations) == 10 and cursor is not None
    statement, params = statements[-1]
    operators = _operators(_profile(neo4j_server, statement, params))
    names = [name for name, _, _ in operators]
    assert not {"Sort", "Top", "NodeByLabelScan", "NodeIndexScan"} & set(names), operators
    [(seek, rows, details)] = [op for op in operators if op[0].startswith("NodeIndexSeek")]
    if scoped:
        assert "user_identifier, updated_at, id" in details, operators
    else:
        assert seek == "NodeIndexSeekByRange" and "(updated_at)" in details, operators
    # The page, one more (is there another page?), the cursor's own entry (the seek is
    # ``<=`` its key, the tie filter drops it) and, for a partial sort by id, the entry
    # that ends the last timestamp kept.
    assert rows <= 10 + 3, operators
