"""Numeric limits, tested at their boundary and one past it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from memory_core import Conversation

from ..checks import capability_warnings, contents
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase

LIST_DEFAULT = 100
T = TypeVar("T")


def _updated(conversation: Conversation) -> object:
    return conversation.updated_at or conversation.created_at


def _assert_newest_first(listed: list[Conversation]) -> None:
    stamps = [_updated(c) for c in listed]
    assert stamps == sorted(stamps, reverse=True), "conversations are not newest-updated first"  # type: ignore[type-var]


def _assert_the_newest(listed: list[Conversation], mine: list[Conversation]) -> None:
    """``listed`` (a whole-store listing, newest first) holds the newest conversations of
    the store: none of ``mine`` left out is newer than the last one listed. It never
    assumes the store holds only ``mine``: another writer's conversations may come
    first, on a shared store even dated in the future (on one of its own, the listing is
    then ``mine``'s newest, as before)."""
    listed_ids = {c.id for c in listed}
    last = _updated(listed[-1])
    newer = [c.id for c in mine if c.id not in listed_ids and _updated(c) > last]  # type: ignore[operator]
    assert not newer, f"the listing left out newer conversations: {newer}"


_WIDTH = 8
"""Calls in flight at once where a scenario needs hundreds of conversations (over HTTP,
one at a time, the listing scenarios took seconds each)."""


async def _each(count: int, call: Callable[[int], Awaitable[T]]) -> list[T]:
    """``call(0) … call(count - 1)``, at most :data:`_WIDTH` at a time; results in order."""
    results: dict[int, T] = {}
    limiter = anyio.CapacityLimiter(_WIDTH)

    async def one(index: int) -> None:
        async with limiter:
            results[index] = await call(index)

    async with anyio.create_task_group() as group:
        for index in range(count):
            group.start_soon(one, index)
    return [results[index] for index in range(count)]


async def _make_conversations(harness: Harness, count: int) -> list[str]:
    return await _each(count, lambda _: harness.new_session(create=True))


class LimitsSuite(SuiteBase):
    """Scenarios of area ``limits``."""

    @scenario(
        "limits.read_cap_boundary",
        "limit=max_messages_per_read returns that many; one more is clamped with a warning",
    )
    async def test_limits_read_cap_boundary(self, harness: Harness) -> None:
        cap = harness.caps.max_messages_per_read
        handle = await harness.new_session()
        if cap is None:
            await harness.fill(handle, 5)
            with capability_warnings() as found:
                read = await harness.contents(handle, limit=10**6)
            assert read == [f"m{i}" for i in range(5)] and not found
            return
        await harness.fill(handle, cap + 1)
        with capability_warnings() as at_cap:
            read = await harness.contents(handle, limit=cap)
        assert not at_cap, f"limit={cap} (the cap) must not warn"
        assert read == [f"m{i}" for i in range(1, cap + 1)]
        with capability_warnings() as past_cap:
            read = await harness.contents(handle, limit=cap + 1)
        assert past_cap, f"limit={cap + 1} must warn with a CapabilityWarning"
        assert read == [f"m{i}" for i in range(1, cap + 1)]

    @scenario(
        "limits.default_read_boundary",
        "limit=None returns the newest default_messages_per_read messages",
    )
    async def test_limits_default_read_boundary(self, harness: Harness) -> None:
        default = harness.caps.default_messages_per_read
        handle = await harness.new_session()
        await harness.fill(handle, default + 1)
        with capability_warnings() as found:
            read = await harness.contents(handle)
        assert not found, "the default read must not warn"
        assert len(read) == default
        assert read[0] == "m1" and read[-1] == f"m{default}"

    @scenario(
        "limits.full_history",
        "a limit above the default reads every message back",
        requires="full_history",
    )
    async def test_limits_full_history(self, harness: Harness) -> None:
        assert harness.caps.max_messages_per_read is None, "full_history with a read cap"
        default = harness.caps.default_messages_per_read
        handle = await harness.new_session()
        await harness.fill(handle, default + 1)
        read = await harness.contents(handle, limit=default + 1)
        assert read == [f"m{i}" for i in range(default + 1)]

    @scenario(
        "limits.bulk_at_cap",
        "a bulk of exactly max_bulk_messages stores every message in order",
    )
    async def test_limits_bulk_at_cap(self, harness: Harness) -> None:
        cap = harness.caps.max_bulk_messages
        count = 100 if cap is None else cap
        handle = await harness.new_session()
        stored = await harness.fill(handle, count)
        assert contents(stored) == [f"m{i}" for i in range(count)]
        assert len({m.id for m in stored}) == count, "bulk returned duplicate ids"
        read = await harness.contents(handle, limit=min(count, _read_cap(harness)))
        assert read == [f"m{i}" for i in range(count - len(read), count)]
        assert len(read) == min(count, _read_cap(harness))

    @scenario(
        "limits.bulk_cap_plus_one",
        "a bulk of max_bulk_messages + 1 stores every message in order",
    )
    async def test_limits_bulk_cap_plus_one(self, harness: Harness) -> None:
        cap = harness.caps.max_bulk_messages
        count = 250 if cap is None else cap + 1
        handle = await harness.new_session()
        stored = await harness.fill(handle, count)
        assert contents(stored) == [f"m{i}" for i in range(count)]
        read = await harness.contents(handle, limit=min(count, _read_cap(harness)))
        assert read == [f"m{i}" for i in range(count - len(read), count)]
        assert len(read) == min(count, _read_cap(harness))

    @scenario(
        "limits.list_conversations_default",
        "list_conversations() returns at most 100 conversations, newest-updated first",
    )
    async def test_limits_list_conversations_default(self, harness: Harness) -> None:
        handles = await _make_conversations(harness, LIST_DEFAULT + 1)
        listed = await harness.backend.list_conversations()
        assert len(listed) == LIST_DEFAULT
        _assert_newest_first(listed)
        assert all(not c.messages for c in listed), "listings must not carry messages"
        _assert_the_newest(listed, await _conversations(harness, handles))

    @scenario(
        "limits.list_conversations_page_size",
        "list_conversations(limit=max_page_size) returns exactly that many when more exist",
    )
    async def test_limits_list_conversations_page_size(self, harness: Harness) -> None:
        page = harness.caps.max_page_size
        count = 3 if page is None else page
        await harness.new_session(create=True)  # one older than the page holds
        await anyio.sleep(0.01)
        handles = await _make_conversations(harness, count)
        listed = await harness.backend.list_conversations(limit=count)
        assert len(listed) == count
        _assert_newest_first(listed)
        _assert_the_newest(listed, await _conversations(harness, handles))

    @scenario(
        "limits.list_conversations_paging",
        "list_conversations(limit) beyond max_page_size returns exactly that many, newest first",
    )
    async def test_limits_list_conversations_paging(self, harness: Harness) -> None:
        page = harness.caps.max_page_size
        count = 3 if page is None else page + 1
        handles = await _make_conversations(harness, count)
        await anyio.sleep(0.01)
        await harness.backend.add_message(handles[0], "user", "moves to the top")
        listed = await harness.backend.list_conversations(limit=count)
        assert len(listed) == count
        _assert_newest_first(listed)
        mine = await _conversations(harness, handles)
        _assert_the_newest(listed, mine)
        order = [c.id for c in listed if c.id in {m.id for m in mine}]
        assert not order or order[0] == mine[0].id, "the one written last is not first of them"


def _read_cap(harness: Harness) -> int:
    cap = harness.caps.max_messages_per_read
    return harness.caps.default_messages_per_read if cap is None else cap


async def _conversations(harness: Harness, handles: list[str]) -> list[Conversation]:
    """The conversations of ``handles``, as read now (their ``updated_at`` included)."""

    async def one(index: int) -> Conversation:
        return await harness.backend.get_conversation(handles[index], limit=1)

    return await _each(len(handles), one)
