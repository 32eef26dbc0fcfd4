"""One test per defect of the reference's Bolt implementation that this backend fixes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import anyio
import pytest

from memory_core import ForeignDataWarning, MemoryBackend, NotFoundError
from memory_core.foreign import LATEST

from .helpers import Graph, chain, foreign_message, mentioning

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]
Unique = Callable[[str], str]


async def test_delete_repairs_the_chain(bolt: MemoryBackend, graph: Graph, unique: Unique) -> None:
    session = unique("s")
    stored = [await bolt.add_message(session, "user", f"m{i}") for i in range(3)]
    stored += await bolt.add_messages_batch(
        session, [{"role": "user", "content": f"m{i}"} for i in range(3, 6)]
    )
    assert chain(graph, session) == [f"m{i}" for i in range(6)]

    assert await bolt.delete_message(stored[0].id) is True  # the first
    assert chain(graph, session) == ["m1", "m2", "m3", "m4", "m5"]
    assert await bolt.delete_message(stored[3].id) is True  # one in the middle
    assert chain(graph, session) == ["m1", "m2", "m4", "m5"]
    assert await bolt.delete_message(stored[5].id) is True  # the last
    assert chain(graph, session) == ["m1", "m2", "m4"]
    assert await bolt.delete_message(stored[5].id) is False  # already gone

    await bolt.add_message(session, "user", "after")
    assert chain(graph, session) == ["m1", "m2", "m4", "after"]
    contents = [m.content for m in (await bolt.get_conversation(session)).messages]
    assert contents == ["m1", "m2", "m4", "after"]
    for message in (await bolt.get_conversation(session)).messages:
        await bolt.delete_message(message.id)
    assert chain(graph, session) == []
    await bolt.add_message(session, "user", "fresh start")
    assert chain(graph, session) == ["fresh start"]


async def test_delete_removes_mentions_but_not_entities(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    entity, message = await mentioning(bolt, unique("s"), unique("Ent"), "PERSON")
    assert await bolt.delete_message(message.id) is True
    rows = graph(
        "OPTIONAL MATCH (m:Message {id: $m}) MATCH (e:Entity {id: $e}) RETURN m, e.id AS e",
        m=str(message.id),
        e=entity.id,
    )
    assert rows == [{"m": None, "e": entity.id}]


async def test_search_honours_session_id(bolt: MemoryBackend, unique: Unique) -> None:
    word = unique("w").replace("-", "")
    mine, other = unique("mine"), unique("other")
    await bolt.add_message(other, "user", f"{word} in the other session")
    kept = await bolt.add_message(mine, "user", f"{word} in my session")

    hits = await bolt.search_messages(word, session_id=mine)
    assert [h.id for h in hits] == [kept.id]
    by_id = await bolt.search_messages(word, conversation_id=kept.conversation_id)
    assert [h.id for h in by_id] == [kept.id]
    everywhere = await bolt.search_messages(word)
    assert len(everywhere) == 2
    assert await bolt.search_messages(word, session_id=unique("empty")) == []


async def test_concurrent_first_writes_make_one_conversation(
    open_bolt: Callable[..., MemoryBackend], graph: Graph, unique: Unique
) -> None:
    session = unique("race")
    async with open_bolt() as one, open_bolt() as two:

        async def write(i: int) -> None:
            await (one if i % 2 else two).add_message(session, "user", f"w{i}")

        async with anyio.create_task_group() as tasks:
            for i in range(10):
                tasks.start_soon(write, i)

    rows = graph(
        "MATCH (c:Conversation {session_id: $s}) "
        "RETURN c.id AS id, COUNT { (c)-[:HAS_MESSAGE]->() } AS n, c.next_seq AS next, "
        "[(c)-[:HAS_MESSAGE]->(m) | m.seq] AS seqs",
        s=session,
    )
    assert len(rows) == 1, f"{len(rows)} conversations for one session"
    assert rows[0]["n"] == 10 and rows[0]["next"] == 10
    assert sorted(rows[0]["seqs"]) == list(range(10))
    assert sorted(chain(graph, session)) == sorted(f"w{i}" for i in range(10))


async def test_concurrent_replays_of_one_key_store_one_message(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session = unique("s")
    results = []

    async def write() -> None:
        results.append(await bolt.add_message(session, "user", "once", idempotency_key="k"))

    async with anyio.create_task_group() as tasks:
        for _ in range(10):
            tasks.start_soon(write)
    assert len({m.id for m in results}) == 1
    assert chain(graph, session) == ["once"]


async def test_write_to_a_missing_conversation_id_is_an_error(
    bolt: MemoryBackend, graph: Graph
) -> None:
    missing = uuid4()
    with pytest.raises(NotFoundError):
        await bolt.add_message(role="user", content="lost", conversation_id=missing)
    with pytest.raises(NotFoundError):
        await bolt.add_messages_batch(
            messages=[{"role": "user", "content": "lost"}], conversation_id=missing
        )
    with pytest.raises(NotFoundError):
        await bolt.create_conversation(conversation_id=missing)
    with pytest.raises(NotFoundError):
        await bolt.get_conversation(conversation_id=missing)
    assert await bolt.clear_session(conversation_id=missing) is False
    assert (
        graph("MATCH (n) WHERE n.id = $id OR n.conversation_id = $id RETURN n", id=str(missing))
        == []
    )


async def test_reads_are_tenant_scoped(tenant_bolt: MemoryBackend, unique: Unique) -> None:
    alice, bob = unique("alice"), unique("bob")
    session, word = unique("s"), unique("secret").replace("-", "")
    message = await tenant_bolt.add_message(session, "user", f"{word}", user_identifier=alice)
    conversation_id = message.conversation_id

    bobs = await tenant_bolt.get_conversation(session, user_identifier=bob)
    assert bobs.messages == [] and bobs.id != conversation_id
    with pytest.raises(NotFoundError):
        await tenant_bolt.get_conversation(conversation_id=conversation_id, user_identifier=bob)
    assert await tenant_bolt.search_messages(word, user_identifier=bob) == []
    with pytest.raises(NotFoundError):
        await tenant_bolt.search_messages(
            word, conversation_id=conversation_id, user_identifier=bob
        )
    listed = await tenant_bolt.list_conversations(user_identifier=bob, limit=10_000)
    assert conversation_id not in {c.id for c in listed}
    sessions = await tenant_bolt.list_sessions(user_identifier=bob, prefix=session)
    assert sessions == []
    assert await tenant_bolt.delete_message(message.id, user_identifier=bob) is False
    assert await tenant_bolt.clear_session(session, user_identifier=bob) is False

    alices = await tenant_bolt.get_conversation(session, user_identifier=alice)
    assert [m.id for m in alices.messages] == [message.id]
    assert [m.id for m in await tenant_bolt.search_messages(word, user_identifier=alice)] == [
        message.id
    ]


async def test_since_is_applied_before_limit(bolt: MemoryBackend, unique: Unique) -> None:
    """With caller timestamps, insertion order and time order differ: ``since`` must filter
    first and ``limit`` then keep the newest of what is left (by insertion order)."""
    session = unique("s")
    base = datetime(2020, 1, 1, tzinfo=UTC)
    stamps = [base + timedelta(days=d) for d in (10, 20, 30, 1, 2)]
    await bolt.add_messages_batch(
        session,
        [{"role": "user", "content": f"d{i}", "timestamp": t} for i, t in enumerate(stamps)],
    )
    since = base + timedelta(days=5)
    got = await bolt.get_conversation(session, since=since, limit=2)
    assert [m.content for m in got.messages] == ["d1", "d2"]
    everything = await bolt.get_conversation(session, since=since)
    assert [m.content for m in everything.messages] == ["d0", "d1", "d2"]


async def test_numeric_metadata_filters_are_exact(bolt: MemoryBackend, unique: Unique) -> None:
    session, word = unique("s"), unique("w").replace("-", "")
    values = {"int": 1, "float": 1.0, "ten": 10, "frac": 1.5, "str": "1", "bool": True}
    ids = {}
    for label, value in values.items():
        stored = await bolt.add_message(session, "user", f"{word} {label}", metadata={"n": value})
        ids[stored.id] = label

    async def labels(value: object) -> set[str]:
        hits = await bolt.search_messages(
            word, session_id=session, limit=50, metadata_filters={"n": value}
        )
        return {ids[h.id] for h in hits}

    assert await labels(1) == {"int", "float"}  # numbers compare by value
    assert await labels(10) == {"ten"}
    assert await labels(1.5) == {"frac"}
    assert await labels("1") == {"str"}
    assert await labels(True) == {"bool"}
    assert await labels(2) == set()


async def test_lucene_syntax_in_queries_is_literal(bolt: MemoryBackend, unique: Unique) -> None:
    session = unique("s")
    stored = await bolt.add_message(session, "user", 'a:b (c" AND -d* done')
    for query in ['a:b (c" AND -d*', "AND", "(", '"', "\\", "title:x OR y~2 ^3 [a TO b] {}", "*"]:
        hits = await bolt.search_messages(query, session_id=session)
        assert all(h.id == stored.id for h in hits)
    assert [h.id for h in await bolt.search_messages('a:b (c" AND -d*', session_id=session)] == [
        stored.id
    ]


async def test_timestamps_another_writer_stored_in_other_types_still_read(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    """Zoned DateTimes travel as integer microseconds; a local datetime or an ISO string
    another writer stored still reads (as UTC), and one out of Python's range reads as the
    latest time Python has, with a warning (never an OverflowError)."""
    session = unique("s")
    [first] = await bolt.add_messages_batch(session, [{"role": "user", "content": "ours"}])
    cid = first.conversation_id
    foreign_message(graph, cid, id=str(uuid4()), role="user", content="local")
    graph(
        "MATCH (m:Message {content: 'local'})<-[:HAS_MESSAGE]-(:Conversation {id: $cid}) "
        "SET m.timestamp = localdatetime('2030-01-02T03:04:05.123456')",
        cid=str(cid),
    )
    foreign_message(graph, cid, id=str(uuid4()), role="user", content="text")
    graph(
        "MATCH (m:Message {content: 'text'})<-[:HAS_MESSAGE]-(:Conversation {id: $cid}) "
        "SET m.timestamp = '2031-01-02T03:04:05+02:00'",
        cid=str(cid),
    )
    read = {m.content: m.created_at for m in (await bolt.get_conversation(session)).messages}
    assert read["ours"] == first.created_at
    assert read["local"] == datetime(2030, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    assert read["text"] == datetime(2031, 1, 2, 1, 4, 5, tzinfo=UTC)
    graph(
        "MATCH (m:Message {content: 'text'})<-[:HAS_MESSAGE]-(:Conversation {id: $cid}) "
        "SET m.timestamp = datetime('+20000-01-01T00:00:00Z')",
        cid=str(cid),
    )
    with pytest.warns(ForeignDataWarning, match="datetime range"):
        read = {m.content: m.created_at for m in (await bolt.get_conversation(session)).messages}
    assert read["text"] == LATEST


async def test_message_timestamps_before_1970_read_to_the_microsecond(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    """Neo4j's epochSeconds rounds toward zero before 1970: a stored instant with a
    fraction of a second read one second late when the microseconds were built on it."""
    session = unique("s")
    [first] = await bolt.add_messages_batch(session, [{"role": "user", "content": "ours"}])
    stored = {
        "half": "1969-12-31T23:59:59.5Z",
        "tiny": "1969-12-31T23:59:59.999999Z",
        "old": "1900-06-01T12:00:00.250001Z",
    }
    for content, text in stored.items():
        foreign_message(graph, first.conversation_id, id=str(uuid4()), content=content)
        graph(
            "MATCH (m:Message {content: $content})<-[:HAS_MESSAGE]-(:Conversation {id: $cid}) "
            "SET m.timestamp = datetime($text)",
            content=content,
            cid=str(first.conversation_id),
            text=text,
        )
    read = {m.content: m.created_at for m in (await bolt.get_conversation(session)).messages}
    for content, text in stored.items():
        assert read[content] == datetime.fromisoformat(text)


async def _conversation_stamps(
    backend: MemoryBackend, session: str, user: str
) -> set[tuple[datetime, datetime | None]]:
    """(created_at, updated_at) of the session's conversation as each read returns it."""
    got = await backend.get_conversation(session, user_identifier=user)
    again = await backend.create_conversation(session, user_identifier=user)
    [listed] = await backend.list_conversations(user_identifier=user)
    [info] = await backend.list_sessions(prefix=session, user_identifier=user)
    return {
        (got.created_at, got.updated_at),
        (again.created_at, again.updated_at),
        (listed.created_at, listed.updated_at),
        (info.created_at, info.updated_at),
    }


async def test_conversation_timestamps_in_other_types_read_and_out_of_range_is_an_error(
    tenant_bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    """Conversation timestamps travel as integer microseconds, as a message's do: every
    read returns the stored instants to the microsecond; a local datetime, an offset or
    an ISO string another writer stored still reads (as UTC); one out of Python's range
    reads as the nearest time Python has, with a warning naming the conversation (the
    driver's DateTime read it as now; then it was a StoreError)."""
    session, user = unique("s"), unique("u")
    made = await tenant_bolt.create_conversation(session, user_identifier=user)

    def stored(created: str, updated: str | None) -> None:
        graph(
            f"MATCH (c:Conversation {{id: $cid}}) SET c.created_at = {created}, "
            f"c.updated_at = {updated or 'null'}",
            cid=str(made.id),
        )

    [row] = graph("MATCH (c:Conversation {id: $cid}) RETURN c AS c", cid=str(made.id))
    own = (row["c"]["created_at"].to_native(), row["c"]["updated_at"].to_native())
    assert await _conversation_stamps(tenant_bolt, session, user) == {own}
    assert (made.created_at, made.updated_at) == own

    stored(
        "datetime('1969-07-20T21:17:40.123456+01:00')",
        "localdatetime('2030-01-02T03:04:05.000001')",
    )
    assert await _conversation_stamps(tenant_bolt, session, user) == {
        (
            datetime(1969, 7, 20, 20, 17, 40, 123456, tzinfo=UTC),
            datetime(2030, 1, 2, 3, 4, 5, 1, tzinfo=UTC),
        )
    }
    stored("'2031-01-02T03:04:05+02:00'", None)
    assert await _conversation_stamps(tenant_bolt, session, user) == {
        (datetime(2031, 1, 2, 1, 4, 5, tzinfo=UTC), None)
    }

    stored("datetime('2031-01-02T03:04:05Z')", "datetime('+20000-01-01T00:00:00Z')")
    with pytest.warns(ForeignDataWarning, match=f"{made.id}.*datetime range") as caught:
        stamps = await _conversation_stamps(tenant_bolt, session, user)
    assert stamps == {(datetime(2031, 1, 2, 3, 4, 5, tzinfo=UTC), LATEST)}
    assert len(caught) == 4  # one per read
