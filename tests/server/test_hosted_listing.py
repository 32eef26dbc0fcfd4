"""The server's conversation paging over a real backing store (embedded, multi-tenant):
pages carry the backing store's keyset cursor, ties in ``updatedAt`` are paged exactly
once in id order, hidden rows (no mark, another ``userId``) are skipped, and a page's
cost does not grow with its depth."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from uuid import UUID, uuid4

import pytest

from memory_core import MemoryBackend, open_backend
from memory_core.cursors import encode_cursor
from memory_core.nams_wire import MessageIn
from memory_core.server.errors import ApiError
from memory_core.server.hosted import MARK, HostedMemory

pytestmark = pytest.mark.anyio

WORKSPACE = "w"


class Reads:
    """The ``limit`` of every ``list_conversations_page`` call the server makes."""

    def __init__(self, backend: MemoryBackend) -> None:
        self.limits: list[int] = []
        page = backend.list_conversations_page

        async def counted(**kwargs: Any) -> Any:
            self.limits.append(kwargs["limit"])
            return await page(**kwargs)

        backend.list_conversations_page = counted  # type: ignore[method-assign]

    def take(self) -> list[int]:
        taken, self.limits = self.limits, []
        return taken


@pytest.fixture
async def backend() -> AsyncIterator[MemoryBackend]:
    async with open_backend("memory://", multi_tenant=True) as opened:
        yield opened


@pytest.fixture
def hosted(backend: MemoryBackend) -> HostedMemory:
    return HostedMemory(backend)


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The embedded store's clock, in microseconds: set ``clock[0]`` to move it."""
    clock = [1_700_000_000_000_000]
    for module in ("conversations", "messages"):
        monkeypatch.setattr(f"memory_core.backends.embedded.{module}.now_micros", lambda: clock[0])
    yield clock


async def page_all(
    hosted: HostedMemory, limit: int, user: str | None = None, between: Any = None
) -> list[str]:
    seen: list[str] = []
    cursor = None
    for _ in range(200):
        page = await hosted.list_conversations(WORKSPACE, user, limit, cursor)
        assert len(page.conversations) <= limit
        seen += [c.id for c in page.conversations]
        cursor = page.next_cursor
        if between is not None:
            await between()
            between = None
        if cursor is None:
            return seen
    raise AssertionError("paging did not end")


@pytest.mark.parametrize("limit", [1, 4, 7, 50])
async def test_ties_are_paged_exactly_once_in_id_order(
    hosted: HostedMemory, backend: MemoryBackend, frozen_clock: list[int], limit: int
) -> None:
    made: list[tuple[int, str]] = []
    for minutes in [5] * 23 + [1, 9, 9, 2]:
        frozen_clock[0] = 1_700_000_000_000_000 + minutes * 60_000_000
        created = await hosted.create_conversation(WORKSPACE, None, None)
        made.append((minutes, created.id))
    frozen_clock[0] += 1  # not created through the API: never listed
    await backend.create_conversation(
        str(uuid4()), metadata={"other": 1}, user_identifier=hosted.tenant(WORKSPACE)
    )
    seen = await page_all(hosted, limit)
    assert seen == [cid for _, cid in sorted(made, reverse=True)]


async def test_user_filter_pages_through_sparse_matches(hosted: HostedMemory) -> None:
    made = []
    for n in range(200):
        created = await hosted.create_conversation(WORKSPACE, "ann" if n % 10 == 0 else "bob", {})
        made.append((n, created.id))
    reads = Reads(hosted.backend)
    seen = await page_all(hosted, 3, user="ann")
    assert seen == [cid for n, cid in reversed(made) if n % 10 == 0]
    assert sum(reads.take()) <= 2 * len(made) + 16, "skipping rows read them more than twice"


async def test_a_page_reads_as_many_rows_at_any_depth(hosted: HostedMemory) -> None:
    """The old server fetched every earlier page again for page k (offset + limit rows)."""
    for _ in range(60):
        await hosted.create_conversation(WORKSPACE, None, None)
    reads = Reads(hosted.backend)
    cursor = None
    for _ in range(6):
        page = await hosted.list_conversations(WORKSPACE, None, 10, cursor)
        assert reads.take() == [10], "one backing page of exactly the page's size"
        cursor = page.next_cursor
    assert cursor is None


async def test_writes_during_a_walk_list_nothing_twice(hosted: HostedMemory) -> None:
    ids = [(await hosted.create_conversation(WORKSPACE, None, None)).id for _ in range(9)]
    newest_first = ids[::-1]

    async def touch() -> None:  # one already listed, one not listed yet
        for cid in (newest_first[0], newest_first[6]):
            await hosted.add_message(WORKSPACE, cid, MessageIn(role="user", content="x"))

    seen = await page_all(hosted, 4, between=touch)
    assert len(seen) == len(set(seen))
    untouched = [c for c in newest_first if c not in (newest_first[0], newest_first[6])]
    assert [c for c in seen if c in untouched] == untouched
    again = await page_all(hosted, 4)
    assert again[:2] == [newest_first[6], newest_first[0]]


async def test_invalid_cursors_are_400_invalid_cursor(hosted: HostedMemory) -> None:
    for _ in range(3):
        await hosted.create_conversation(WORKSPACE, None, None)
    page = await hosted.list_conversations(WORKSPACE, None, 1, None)
    assert page.next_cursor is not None
    for cursor in (
        "e30",
        "%%%",
        page.next_cursor[:-3] + "AAA",
        encode_cursor("nams-server", "bolt.WzEsMl0"),  # a wrapped cursor of another store
        encode_cursor("nams-server", 7),
    ):
        with pytest.raises(ApiError) as raised:
            await hosted.list_conversations(WORKSPACE, None, 1, cursor)
        assert (raised.value.status, raised.value.code) == (400, "invalid_cursor")


async def test_the_nams_id_is_the_backing_conversation_id(
    hosted: HostedMemory, backend: MemoryBackend
) -> None:
    created = await hosted.create_conversation(WORKSPACE, "ann", {"k": 1})
    read = await backend.get_conversation(
        conversation_id=UUID(created.id), user_identifier=hosted.tenant(WORKSPACE)
    )
    assert str(read.id) == created.id
    assert read.metadata[MARK] == {"userId": "ann", "metadata": {"k": 1}}
