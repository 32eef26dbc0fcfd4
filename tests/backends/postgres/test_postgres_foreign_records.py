"""Rows another program wrote into memory-core's PostgreSQL tables with values the models
cannot hold: they never break a listing or a read of other rows (docs/using.md, "Records
another program wrote"). A time outside Python's range (``±infinity``, a year after 9999
or before 1) reads as the nearest time Python has; metadata that is not a JSON object as
``{}``; exact content bytes that are not UTF-8 from the text column; a message whose role
is none of memory-core's is left out. Each with a ForeignDataWarning naming the row."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from memory_core import ForeignDataWarning, MemoryBackend, open_backend
from memory_core.foreign import EARLIEST, LATEST
from memory_core_dev.postgres_server import PostgresHandle

pytestmark = pytest.mark.anyio


class Store:
    """A backend on a schema of its own, and plain SQL on the same schema."""

    def __init__(self, backend: MemoryBackend, url: str, schema: str) -> None:
        self.backend, self.url, self.schema = backend, url, schema

    def sql(self, statement: str, *params: Any) -> None:
        with psycopg.connect(self.url) as conn:
            conn.execute(statement.replace("{s}", self.schema), params)


@pytest.fixture
async def store(postgres_server: PostgresHandle) -> AsyncIterator[Store]:
    schema = f"t_{uuid.uuid4().hex[:12]}"
    separator = "&" if "?" in postgres_server.url else "?"
    async with open_backend(f"{postgres_server.url}{separator}schema={schema}") as backend:
        yield Store(backend, postgres_server.url, schema)


async def test_times_out_of_pythons_range_leave_every_listing_working(store: Store) -> None:
    """Before: each listing and read raised StoreError (psycopg's DataError) for every
    conversation in scope, because of one of them."""
    memory, user = store.backend, "ana"
    first = await memory.create_conversation("first", user_identifier=user)
    odd = await memory.create_conversation("odd", user_identifier=user)
    late = await memory.create_conversation("late", user_identifier=user)
    await memory.add_message("odd", "user", "hello", user_identifier=user)
    store.sql(
        "UPDATE {s}.conversations SET updated_at = 'infinity', created_at = '0044-03-15 BC' "
        "WHERE id = %s",
        odd.id,
    )
    store.sql(
        "UPDATE {s}.conversations SET updated_at = '20000-01-01 00:00:00+00' WHERE id = %s",
        late.id,
    )
    store.sql("UPDATE {s}.messages SET created_at = '-infinity' WHERE conversation_id = %s", odd.id)

    with pytest.warns(ForeignDataWarning, match=f"{odd.id}.*updated_at 'infinity'.*9999-12-31"):
        listed = await memory.list_conversations(user_identifier=user)
    assert [c.id for c in listed] == [odd.id, late.id, first.id]
    assert (listed[0].created_at, listed[0].updated_at) == (EARLIEST, LATEST)
    assert listed[1].updated_at == LATEST

    walked, cursor = [], None
    with pytest.warns(ForeignDataWarning):
        while True:
            page = await memory.list_conversations_page(
                limit=1, cursor=cursor, user_identifier=user
            )
            walked += [c.id for c in page.conversations]
            if (cursor := page.next_cursor) is None:
                break
    assert walked == [odd.id, late.id, first.id]

    with pytest.warns(ForeignDataWarning, match="created_at '0044-03-15.* BC'"):
        sessions = await memory.list_sessions(order_by="created_at", order_dir="asc")
    assert [s.session_id for s in sessions] == ["odd", "first", "late"]

    with pytest.warns(ForeignDataWarning, match="created_at '-infinity'.*0001-01-01"):
        read = await memory.get_conversation("odd", limit=10)
    assert [m.created_at for m in read.messages] == [EARLIEST]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ForeignDataWarning)
        assert (await memory.get_conversation("first")).id == first.id


async def test_a_page_after_a_time_out_of_range_misses_no_other(store: Store) -> None:
    """Two conversations after year 9999: the cursor of the first keeps its stored time,
    so the second is on the next page (a clamped key would have skipped it)."""
    memory = store.backend
    made = [await memory.create_conversation(f"s{i}") for i in range(3)]
    store.sql("UPDATE {s}.conversations SET updated_at = '30000-01-01Z' WHERE id = %s", made[0].id)
    store.sql("UPDATE {s}.conversations SET updated_at = '20000-01-01Z' WHERE id = %s", made[1].id)
    walked, cursor = [], None
    with pytest.warns(ForeignDataWarning):
        while True:
            page = await memory.list_conversations_page(limit=1, cursor=cursor)
            walked += [c.id for c in page.conversations]
            if (cursor := page.next_cursor) is None:
                break
    assert walked == [made[0].id, made[1].id, made[2].id]


async def test_message_values_out_of_the_models_range(store: Store) -> None:
    """A role none of ours is left out of reads and searches; metadata that is not a JSON
    object reads as {}; exact bytes that are not UTF-8 read from the text column."""
    memory = store.backend
    ours = await memory.add_message("s", "user", "ours kiwi")
    odd_role = await memory.add_message("s", "user", "narrated kiwi")
    odd_meta = await memory.add_message("s", "user", "meta kiwi", metadata={"k": 1})
    odd_bytes = await memory.add_message("s", "user", "bytes kiwi")
    store.sql("UPDATE {s}.messages SET role = 'narrator' WHERE id = %s", odd_role.id)
    store.sql("UPDATE {s}.messages SET metadata = '[1, 2]' WHERE id = %s", odd_meta.id)
    store.sql(
        "UPDATE {s}.messages SET content_exact = '\\xff00'::bytea WHERE id = %s", odd_bytes.id
    )
    for read in (
        lambda: memory.get_conversation("s"),
        lambda: memory.get_conversation("s", since=ours.created_at.replace(year=2000)),
    ):
        with pytest.warns(ForeignDataWarning) as caught:
            conversation = await read()
        assert [m.id for m in conversation.messages] == [ours.id, odd_meta.id, odd_bytes.id]
        assert conversation.messages[1].metadata == {}
        assert conversation.messages[2].content == "bytes kiwi"
        said = " | ".join(str(w.message) for w in caught)
        assert f"{odd_role.id}' has the role 'narrator'" in said
        assert "metadata '[1, 2]' that is not a JSON object" in said
        assert f"{odd_bytes.id}' has content_exact that is not UTF-8" in said
    with pytest.warns(ForeignDataWarning, match="narrator"):
        hits = await memory.search_messages("kiwi", session_id="s", limit=10)
    assert {h.id for h in hits} == {ours.id, odd_meta.id, odd_bytes.id}
    # metadata that is not an object matches no filter (the message's own {"k": 1} is gone)
    assert await memory.search_messages("kiwi", session_id="s", metadata_filters={"k": 1}) == []


async def test_a_write_to_a_conversation_with_a_time_out_of_range_reads_it_as_the_nearest(
    store: Store,
) -> None:
    memory = store.backend
    made = await memory.create_conversation("s")
    store.sql("UPDATE {s}.conversations SET created_at = 'infinity' WHERE id = %s", made.id)
    with pytest.warns(ForeignDataWarning, match=f"{made.id}.*created_at 'infinity'"):
        again = await memory.create_conversation("s", title="t")
    assert (again.id, again.title, again.created_at) == (made.id, "t", LATEST)
    await memory.add_message("s", "user", "still writable")
    with pytest.warns(ForeignDataWarning):
        assert [m.content for m in (await memory.get_conversation("s")).messages] == [
            "still writable"
        ]


async def test_an_export_leaves_out_a_message_it_cannot_read_and_reports_it(store: Store) -> None:
    from memory_core.transfer import TransferReport, iter_records

    memory = store.backend
    ours = await memory.add_message("s", "user", "ours")
    odd = await memory.add_message("s", "user", "theirs")
    store.sql("UPDATE {s}.messages SET role = 'narrator' WHERE id = %s", odd.id)
    report = TransferReport()
    with pytest.warns(ForeignDataWarning, match="narrator"):
        records = [r async for r in iter_records(memory, report=report)]
    assert [r["id"] for r in records if r["record"] == "message"] == [str(ours.id)]
    assert any(str(odd.id) in line for line in report.unreadable), report.unreadable


@pytest.mark.parametrize(
    "stored",
    [
        "infinity",
        "-infinity",
        "20000-01-01 00:00:00.5+00",
        "0044-03-15 12:00:00+00 BC",
        "294276-12-31 23:59:59.999999+00",
        "4714-11-24 00:00:00+00 BC",
        "0001-12-31 23:00:00+00 BC",
    ],
)
def test_a_cursor_key_out_of_range_is_the_stored_time_exactly(
    postgres_server: PostgresHandle, stored: str
) -> None:
    """The key a page's cursor holds for such a time, read back as PostgreSQL reads it,
    is the stored time (to the microsecond): the next page starts right after it."""
    from memory_core.backends.postgres.conversations import _OUTSIDE_KEY, _stored_text

    key_of = _OUTSIDE_KEY.replace("c.updated_at", "%(t)s::timestamptz")
    with psycopg.connect(postgres_server.url) as conn:
        [(key,)] = conn.execute(f"SELECT {key_of}", {"t": stored}).fetchall()
        [(same,)] = conn.execute(
            "SELECT %s::timestamptz = %s::timestamptz", (_stored_text(key), stored)
        ).fetchall()
    assert same is True, (key, _stored_text(key))


def test_a_write_whose_returned_row_holds_a_time_out_of_range_is_a_store_error() -> None:
    """Only where no read of the same call met the time first (see .times): never a raw
    psycopg DataError."""
    from psycopg import DataError

    from memory_core import StoreError
    from memory_core.backends.postgres.errors import translate

    error = translate(
        DataError("timestamp too large (after year 10K): 'infinity'"), write=True, sent=True
    )
    assert isinstance(error, StoreError)
    assert "outside Python's datetime range" in str(error)


@pytest.mark.parametrize(
    "key",
    [
        "4715-01-01 00:00:00+00 BC",
        "4714-11-23 00:00:00+00 BC",
        "294277-01-01 00:00:00+00",
        "20000-02-30 00:00:00+00",
        "0000-01-01 00:00:00+00",
        "20000-01-01 24:00:00+00",
        "20000-01-01 00:00:00",
        "infinity; DROP TABLE x",
        "",
    ],
)
async def test_a_forged_key_out_of_range_is_refused_by_name(store: Store, key: str) -> None:
    from memory_core import InvalidRequestError
    from memory_core.cursors import encode_cursor

    cursor = encode_cursor("postgres", [key, str(uuid.uuid4())])
    with pytest.raises(InvalidRequestError) as caught:
        await store.backend.list_conversations_page(limit=1, cursor=cursor)
    assert caught.value.argument == "cursor"


async def test_a_key_out_of_range_from_another_process_reads_on_from_there(store: Store) -> None:
    from memory_core.cursors import encode_cursor

    memory = store.backend
    made = [await memory.create_conversation(f"s{i}") for i in range(2)]
    store.sql("UPDATE {s}.conversations SET updated_at = '20000-01-01Z' WHERE id = %s", made[0].id)
    cursor = encode_cursor("postgres", ["25000-06-01 12:00:00.25-05:30", str(uuid.UUID(int=0))])
    with pytest.warns(ForeignDataWarning):
        page = await memory.list_conversations_page(limit=5, cursor=cursor)
    assert [c.id for c in page.conversations] == [made[0].id, made[1].id]
