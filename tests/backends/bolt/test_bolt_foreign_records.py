"""Records another program wrote with values memory-core's models cannot hold: they never
break a listing or a read of other records (docs/using.md, "Records another program
wrote"). A time outside Python's range reads as the nearest one it has, content that is
not text as its JSON text, metadata that is not a JSON object as ``{}``; a record whose
id is not a UUID, or a message whose role is none of ours, is left out. Each with a
ForeignDataWarning naming the record."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import uuid4

import pytest

from memory_core import ForeignDataWarning, MemoryBackend, StoreError
from memory_core.foreign import EARLIEST, LATEST

from .helpers import Graph, foreign_message

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]
Unique = Callable[[str], str]


def _set(graph: Graph, conversation_id: object, assignments: str, **params: Any) -> None:
    graph(
        f"MATCH (c:Conversation {{id: $cid}}) SET {assignments}", cid=str(conversation_id), **params
    )


def _foreign_conversation(graph: Graph, user: str, session: str, cid: str) -> None:
    """A conversation node another program made in ``user``'s scope, dated now."""
    graph(
        "CREATE (:Conversation {id: $cid, session_id: $session, user_identifier: $user, "
        "created_at: datetime(), updated_at: datetime()})",
        cid=cid,
        session=session,
        user=user,
    )


async def test_a_time_out_of_pythons_range_leaves_every_listing_working(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    """Before: list_conversations, list_sessions and the paged walk of the user raised
    StoreError for every conversation in scope, because of one of them."""
    user = unique("u")
    first = await bolt.create_conversation(unique("s"), user_identifier=user)
    odd = await bolt.create_conversation(unique("s"), user_identifier=user)
    last = await bolt.create_conversation(unique("s"), user_identifier=user)
    _set(
        graph,
        odd.id,
        "c.updated_at = datetime('+20000-01-01T00:00:00Z'), "
        "c.created_at = datetime('-0044-03-15T12:00:00Z')",
    )
    with pytest.warns(
        ForeignDataWarning, match=f"{odd.id}.*updated_at '\\+20000-01-01T00:00:00Z'.*9999-12-31"
    ):
        listed = await bolt.list_conversations(user_identifier=user)
    assert [c.id for c in listed] == [odd.id, last.id, first.id]
    assert (listed[0].created_at, listed[0].updated_at) == (EARLIEST, LATEST)

    walked, cursor = [], None
    with pytest.warns(ForeignDataWarning):
        while True:
            page = await bolt.list_conversations_page(limit=1, cursor=cursor, user_identifier=user)
            walked += [c.id for c in page.conversations]
            if (cursor := page.next_cursor) is None:
                break
    assert walked == [odd.id, last.id, first.id]

    with pytest.warns(ForeignDataWarning, match=f"{odd.id}.*created_at '-0044-03-15T12:00:00Z'"):
        sessions = await bolt.list_sessions(
            user_identifier=user, order_by="created_at", order_dir="asc"
        )
    assert [s.conversation_id for s in sessions] == [odd.id, first.id, last.id]
    assert sessions[0].created_at == EARLIEST

    # The record itself reads with the values replaced; the others read without a warning.
    with pytest.warns(ForeignDataWarning, match="created_at"):
        read = await bolt.get_conversation(odd.session_id, user_identifier=user)
    assert (read.created_at, read.updated_at) == (EARLIEST, LATEST)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", ForeignDataWarning)
        assert (await bolt.get_conversation(first.session_id)).id == first.id


async def test_a_conversation_whose_id_is_not_a_uuid_is_left_out_and_pages_stay_full(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    user = unique("u")
    ours = [await bolt.create_conversation(unique("s"), user_identifier=user) for _ in range(3)]
    bad = f"legacy-{uuid4().hex}"
    _foreign_conversation(graph, user, unique("s"), bad)  # the newest: first in the order
    with pytest.warns(ForeignDataWarning, match=f"{bad}.*not a UUID: left out"):
        page = await bolt.list_conversations_page(limit=2, user_identifier=user)
    assert [c.id for c in page.conversations] == [ours[2].id, ours[1].id]
    assert page.next_cursor is not None
    rest = await bolt.list_conversations_page(
        limit=2, cursor=page.next_cursor, user_identifier=user
    )
    assert ([c.id for c in rest.conversations], rest.next_cursor) == ([ours[0].id], None)
    with pytest.warns(ForeignDataWarning, match=bad):
        sessions = await bolt.list_sessions(user_identifier=user)
    assert sorted(s.conversation_id for s in sessions) == sorted(c.id for c in ours)


async def test_a_read_of_a_conversation_whose_id_is_not_a_uuid_names_it(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    session, bad = unique("s"), f"legacy-{uuid4().hex}"
    _foreign_conversation(graph, unique("u"), session, bad)
    with pytest.raises(StoreError, match=f"{bad}.*not a UUID"):
        await bolt.get_conversation(session)


@pytest.mark.parametrize(
    ("props", "why"),
    [
        ({"id": f"not-a-uuid-{uuid4().hex}", "role": "user"}, "not-a-uuid.*not a UUID: left out"),
        ({"role": "narrator"}, "role 'narrator'.*none of memory-core's: left out"),
    ],
)
async def test_a_message_that_cannot_be_read_is_left_out_of_reads_and_searches(
    bolt: MemoryBackend, graph: Graph, unique: Unique, props: dict[str, Any], why: str
) -> None:
    """Before: a StoreError for the whole conversation (and for every search reaching it)."""
    session, term = unique("s"), f"quince{uuid4().hex[:10]}"
    [first] = await bolt.add_messages_batch(session, [{"role": "user", "content": f"ours {term}"}])
    props = {"id": str(uuid4()), **props}
    foreign_message(graph, first.conversation_id, content=f"theirs {term}", **props)
    later = await bolt.add_message(session, "assistant", "after")
    with pytest.warns(ForeignDataWarning, match=why):
        read = await bolt.get_conversation(session)
    assert [m.id for m in read.messages] == [first.id, later.id]
    with pytest.warns(ForeignDataWarning, match=why):
        hits = await bolt.search_messages(term, session_id=session)
    assert [h.id for h in hits] == [first.id]


async def test_message_values_out_of_the_models_range_are_returned_replaced(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    """Content that is not text reads as its JSON text, metadata that is not a JSON object
    as {}, a timestamp after year 9999 as the latest time Python has; the reference's
    own null metadata reads as {} with no warning."""
    session = unique("s")
    [first] = await bolt.add_messages_batch(session, [{"role": "user", "content": "ours"}])
    cid = first.conversation_id
    foreign_message(graph, cid, id=str(uuid4()), role="user", content=[1, 2], metadata="[1]")
    foreign_message(graph, cid, id=str(uuid4()), role="system", content="late", metadata="{x")
    foreign_message(graph, cid, id=str(uuid4()), role="assistant", content="plain")
    graph(
        "MATCH (m:Message {content: 'late'}) SET m.timestamp = datetime('+10000-01-01T00:00:00Z')"
    )
    with pytest.warns(ForeignDataWarning) as caught:
        read = await bolt.get_conversation(session)
    assert read.messages[0] == first
    listed = read.messages[1:]
    contents = {m.content: m for m in listed}
    assert set(contents) == {"[1, 2]", "late", "plain"}
    assert contents["[1, 2]"].metadata == {} and contents["late"].metadata == {}
    assert contents["late"].created_at == LATEST
    said = [str(w.message) for w in caught]
    assert any("content that is not text (list)" in s for s in said), said
    assert any("metadata '[1]'" in s for s in said), said
    assert any("metadata '{x'" in s for s in said), said
    assert any("timestamp '+10000-01-01T00:00:00Z'" in s and "9999-12-31" in s for s in said), said
    assert not any(str(contents["plain"].id) in s for s in said), said


async def test_an_export_leaves_out_what_cannot_be_read_and_reports_it(
    bolt: MemoryBackend, graph: Graph, unique: Unique
) -> None:
    from memory_core.transfer import iter_records

    session = unique("s")
    [first] = await bolt.add_messages_batch(session, [{"role": "user", "content": "ours"}])
    bad = str(uuid4())
    foreign_message(graph, first.conversation_id, id=bad, role="narrator", content="theirs")
    from memory_core.transfer import TransferReport

    report = TransferReport()
    with pytest.warns(ForeignDataWarning, match="narrator"):
        records = [r async for r in iter_records(bolt, session_prefix=session, report=report)]
    messages = [r["id"] for r in records if r["record"] == "message"]
    assert messages == [str(first.id)]
    assert any(bad in line for line in report.unreadable), report.unreadable
