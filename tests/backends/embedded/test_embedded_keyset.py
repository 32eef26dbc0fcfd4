"""Keyset paging of conversations on the embedded backend: the walk, its cursors, and the
query plan (an index range read in the listing's order, never a sort)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from embedded_support import memory_fixture, snapshot, tenants_fixture  # noqa: F401

from memory_core import InvalidArgumentTypeError, InvalidRequestError, MemoryBackend, open_backend
from memory_core import requests as rq
from memory_core.backends.embedded.conversations import list_conversations
from memory_core.cursors import encode_cursor

pytestmark = pytest.mark.anyio


async def walk(
    memory: MemoryBackend, size: int, user: str | None = None
) -> tuple[list[str], list[int]]:
    """Session ids in walk order, and the size of each page."""
    seen: list[str] = []
    sizes: list[int] = []
    cursor = None
    while True:
        page = await memory.list_conversations_page(limit=size, cursor=cursor, user_identifier=user)
        seen += [c.session_id for c in page.conversations]
        sizes.append(len(page.conversations))
        cursor = page.next_cursor
        if cursor is None:
            return seen, sizes


async def test_a_walk_lists_every_conversation_once_newest_first(memory: MemoryBackend) -> None:
    for n in range(10):
        await memory.add_message(f"s{n}", "user", "x")
    await memory.add_message("s3", "user", "again")
    seen, sizes = await walk(memory, 3)
    assert seen == ["s3", "s9", "s8", "s7", "s6", "s5", "s4", "s2", "s1", "s0"]
    assert sizes == [3, 3, 3, 1], "full pages, and the last one says it is the last"
    assert (await walk(memory, 10))[1] == [10]
    assert (await walk(memory, 11))[1] == [10]


async def test_ties_are_paged_once_by_id_descending(
    memory: MemoryBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "memory_core.backends.embedded.conversations.now_micros", lambda: 1_700_000_000_000_000
    )
    made = [await memory.create_conversation(f"t{n}") for n in range(7)]
    by_id = [c.session_id for c in sorted(made, key=lambda c: str(c.id), reverse=True)]
    for size in (1, 2, 3, 7):
        assert (await walk(memory, size))[0] == by_id


async def test_user_filter_and_tenants_page_their_own(tenants: MemoryBackend) -> None:
    for n in range(5):
        await tenants.add_message(f"a{n}", "user", "x", user_identifier="alice")
        await tenants.add_message(f"b{n}", "user", "x", user_identifier="bob")
    assert (await walk(tenants, 2, "alice"))[0] == [f"a{n}" for n in range(4, -1, -1)]
    page = await tenants.list_conversations_page(limit=2, user_identifier="alice")
    assert page.next_cursor is not None
    # A cursor is a position, not a grant: bob gets his own conversations after it.
    bobs = await tenants.list_conversations_page(cursor=page.next_cursor, user_identifier="bob")
    assert {c.session_id for c in bobs.conversations} <= {f"b{n}" for n in range(5)}


async def test_writes_during_a_walk_list_nothing_twice(memory: MemoryBackend) -> None:
    for n in range(9):
        await memory.add_message(f"s{n}", "user", "x")
    first = await memory.list_conversations_page(limit=3)
    await memory.add_message("s7", "user", "listed already")
    await memory.add_message("s2", "user", "not listed yet")
    seen = [c.session_id for c in first.conversations]
    cursor = first.next_cursor
    while cursor is not None:
        page = await memory.list_conversations_page(limit=3, cursor=cursor)
        seen += [c.session_id for c in page.conversations]
        cursor = page.next_cursor
    assert seen == ["s8", "s7", "s6", "s5", "s4", "s3", "s1", "s0"]


@pytest.mark.parametrize(
    ("cursor", "kind"),
    [
        ("", InvalidRequestError),
        (7, InvalidArgumentTypeError),
        ("x" * 5000, InvalidRequestError),
        ("garbage", InvalidRequestError),
        (
            encode_cursor("bolt", [0, 1, "4cf0438d-1d2e-5d76-9d5a-4f9ab7bd1170"]),
            InvalidRequestError,
        ),
        (encode_cursor("embedded", [1]), InvalidRequestError),
        (
            encode_cursor("embedded", ["1", "4cf0438d-1d2e-5d76-9d5a-4f9ab7bd1170"]),
            InvalidRequestError,
        ),
        (
            encode_cursor("embedded", [True, "4cf0438d-1d2e-5d76-9d5a-4f9ab7bd1170"]),
            InvalidRequestError,
        ),
        (encode_cursor("embedded", [1, "not a uuid"]), InvalidRequestError),
        (
            encode_cursor("embedded", [2**70, "4cf0438d-1d2e-5d76-9d5a-4f9ab7bd1170"]),
            InvalidRequestError,
        ),
        ("embedded.WzEsIjRjZjA0MzhkLTFkMmUtNWQ3Ni05ZDVh!", InvalidRequestError),
    ],
)
async def test_a_cursor_it_did_not_make_is_refused(
    memory: MemoryBackend, cursor: Any, kind: type[Exception]
) -> None:
    await memory.add_message("s", "user", "x")
    before = await snapshot(memory)
    with pytest.raises(kind) as raised:
        await memory.list_conversations_page(cursor=cursor)
    assert isinstance(raised.value, InvalidRequestError)
    assert raised.value.argument == "cursor"
    assert await snapshot(memory) == before


async def test_a_cursor_survives_reopening_a_file_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    async with open_backend(url) as memory:
        for n in range(4):
            await memory.add_message(f"s{n}", "user", "x")
        page = await memory.list_conversations_page(limit=2)
    async with open_backend(url) as memory:
        rest = await memory.list_conversations_page(cursor=page.next_cursor)
    assert [c.session_id for c in rest.conversations] == ["s1", "s0"]


def _plans(path: Path, user: str | None, after: bool, tenant: str | None = None) -> list[str]:
    """``EXPLAIN QUERY PLAN`` of the statement the listing runs (caught by a trace)."""
    conn = sqlite3.connect(str(path))
    conn.row_factory = sqlite3.Row
    try:
        scope = rq.Scope(user_identifier=user, tenant=tenant)
        cursor = None
        if after:
            first = list_conversations(conn, rq.ListConversations(limit=2, scope=scope))
            cursor = first.next_cursor
            assert cursor is not None
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        req = rq.ListConversations(limit=2, scope=scope, cursor=cursor)
        list_conversations(conn, req)
        conn.set_trace_callback(None)
        [statement] = [s for s in statements if "FROM conversations" in s]
        return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + statement)]
    finally:
        conn.close()


@pytest.mark.parametrize("user", [None, "alice"])
@pytest.mark.parametrize("after", [False, True])
async def test_a_page_is_an_index_range_read_in_order(
    tmp_path: Path, user: str | None, after: bool
) -> None:
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}") as memory:
        for n in range(50):
            await memory.add_message(
                f"s{n}", "user", "x", user_identifier="alice" if n % 2 else "bob"
            )
    [plan] = _plans(path, user, after)
    index = "conversations_by_user_recency" if user else "conversations_by_recency"
    assert plan.startswith(f"SEARCH conversations USING INDEX {index} ("), plan
    if after:
        assert "(updated_at,id)<(?,?)" in plan, plan
    assert "TEMP B-TREE" not in plan


@pytest.mark.parametrize("after", [False, True])
async def test_a_tenants_page_is_an_index_range_read_in_order(tmp_path: Path, after: bool) -> None:
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}", multi_tenant=True) as memory:
        for n in range(50):
            user = "alice" if n % 2 else "bob"
            await memory.add_message(f"s{n}", "user", "x", user_identifier=user)
    [plan] = _plans(path, "alice", after, tenant="alice")
    assert plan.startswith("SEARCH conversations USING INDEX conversations_by_recency ("), plan
    assert "TEMP B-TREE" not in plan


async def test_the_earlier_listing_index_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}"):
        pass
    conn = sqlite3.connect(str(path))
    conn.execute(
        "CREATE INDEX conversations_by_update ON conversations (tenant, updated_at DESC, id)"
    )
    conn.commit()
    conn.close()
    async with open_backend(f"sqlite:///{path}"):
        pass
    conn = sqlite3.connect(str(path))
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    conn.close()
    assert "conversations_by_update" not in names
    assert {"conversations_by_recency", "conversations_by_user_recency"} <= names
