"""clear_session removes the (:User) nodes it leaves with nothing attached, and no other.

Writing with ``user_identifier`` MERGEs ``(:User {identifier})-[:HAS_CONVERSATION]->``;
without this, every cleared session of a user would leave its User node behind.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_core import MemoryBackend

from .helpers import Graph

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]
Unique = Callable[[str], str]


def _users(graph: Graph, *identifiers: str) -> dict[str, int]:
    """identifier -> number of relationships, for the users that exist."""
    rows = graph(
        "MATCH (u:User) WHERE u.identifier IN $ids RETURN u.identifier AS id, "
        "COUNT { (u)--() } AS rels",
        ids=list(identifiers),
    )
    return {row["id"]: row["rels"] for row in rows}


async def test_a_user_left_with_nothing_is_removed(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session, user = unique("s"), unique("user")
    await bolt.add_message(session, "user", "hello", user_identifier=user)
    assert _users(graph, user) == {user: 1}
    assert await bolt.clear_session(session, user_identifier=user) is True
    assert _users(graph, user) == {}


async def test_a_user_with_another_conversation_stays_until_the_last_is_cleared(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    first, second, user = unique("s"), unique("s"), unique("user")
    await bolt.add_message(first, "user", "one", user_identifier=user)
    await bolt.add_message(second, "user", "two", user_identifier=user)
    assert await bolt.clear_session(first, user_identifier=user) is True
    assert _users(graph, user) == {user: 1}
    conversation = await bolt.get_conversation(second, user_identifier=user)
    assert await bolt.clear_session(conversation_id=conversation.id) is True
    assert _users(graph, user) == {}


async def test_a_user_with_any_other_relationship_stays(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session, user, thing = unique("s"), unique("user"), unique("thing")
    await bolt.add_message(session, "user", "hello", user_identifier=user)
    graph(
        "MATCH (u:User {identifier: $u}) CREATE (u)-[:PREFERS]->(:Thing {name: $t})",
        u=user,
        t=thing,
    )
    await bolt.clear_session(session, user_identifier=user)
    assert _users(graph, user) == {user: 1}
    graph("MATCH (t:Thing {name: $t}) DETACH DELETE t", t=thing)
    graph("MATCH (u:User {identifier: $u}) DELETE u", u=user)


async def test_tenant_users_are_removed_and_other_users_untouched(
    tenant_bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session, other, alice, bob = unique("s"), unique("s"), unique("user"), unique("user")
    await tenant_bolt.add_message(session, "user", "hello", user_identifier=alice)
    await tenant_bolt.add_message(other, "user", "hi", user_identifier=bob)
    assert await tenant_bolt.clear_session(session, user_identifier=alice) is True
    assert _users(graph, alice, bob) == {bob: 1}
    assert await tenant_bolt.clear_session(other, user_identifier=bob) is True
    assert _users(graph, alice, bob) == {}


async def test_clearing_a_missing_session_removes_nothing(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    lonely = unique("user")
    graph("CREATE (:User {identifier: $u})", u=lonely)
    assert await bolt.clear_session(unique("s"), user_identifier=lonely) is False
    assert _users(graph, lonely) == {lonely: 0}
    graph("MATCH (u:User {identifier: $u}) DELETE u", u=lonely)


async def test_a_user_of_two_cleared_conversations_is_removed_once(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    # a second conversation of the same session, as another writer may have made it
    session, user = unique("s"), unique("user")
    await bolt.add_message(session, "user", "ours", user_identifier=user)
    graph(
        "MATCH (u:User {identifier: $u}) "
        "CREATE (u)-[:HAS_CONVERSATION]->(:Conversation {id: $id, session_id: $s})",
        u=user,
        s=session,
        id=unique("c"),
    )
    assert _users(graph, user) == {user: 2}
    assert await bolt.clear_session(session) is True
    assert graph("MATCH (c:Conversation {session_id: $s}) RETURN c", s=session) == []
    assert _users(graph, user) == {}
