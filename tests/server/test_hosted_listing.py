"""The server's conversation paging over a store that breaks timestamp ties arbitrarily
(a fake store: the only way to force many identical ``updated_at`` values)."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from memory_core import Conversation, MemoryBackend
from memory_core.server.hosted import MARK, HostedMemory

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 1, 1, tzinfo=UTC)


class ShufflingStore:
    """``list_conversations`` newest first; ties come back in a new random order each call."""

    def __init__(self, conversations: list[Conversation]) -> None:
        self.conversations = conversations
        self.limits: list[int] = []

    async def list_conversations(self, *, limit: int, user_identifier: str) -> list[Conversation]:
        self.limits.append(limit)
        rows = list(self.conversations)
        random.shuffle(rows)
        rows.sort(key=lambda c: c.updated_at or c.created_at, reverse=True)
        return rows[:limit]


def conversation(minutes: int, user: str | None = None, marked: bool = True) -> Conversation:
    cid = str(uuid.uuid4())
    meta: dict[str, Any] = {MARK: {"userId": user, "metadata": {}}} if marked else {}
    when = T0 + timedelta(minutes=minutes)
    return Conversation(session_id=cid, created_at=when, updated_at=when, metadata=meta)


async def page_all(hosted: HostedMemory, limit: int, user: str | None = None) -> list[str]:
    seen: list[str] = []
    cursor = None
    for _ in range(100):
        page = await hosted.list_conversations("w", user, limit, cursor)
        assert len(page.conversations) <= limit
        seen += [c.id for c in page.conversations]
        cursor = page.next_cursor
        if cursor is None:
            return seen
    raise AssertionError("paging did not end")


@pytest.mark.parametrize("limit", [1, 4, 7, 50])
async def test_ties_are_paged_exactly_once_in_a_stable_order(limit: int) -> None:
    rows = [conversation(5) for _ in range(23)] + [conversation(m) for m in (1, 9, 9, 2)]
    rows.append(conversation(7, marked=False))  # not created through the API: never listed
    hosted = HostedMemory(cast(MemoryBackend, ShufflingStore(rows)))
    seen = await page_all(hosted, limit)
    visible = [c for c in rows if c.metadata]
    expected = sorted(visible, key=lambda c: (-(c.updated_at or T0).timestamp(), c.session_id))
    assert seen == [c.session_id for c in expected]


async def test_user_filter_pages_through_sparse_matches() -> None:
    rows = [conversation(m, user="ann" if m % 10 == 0 else "bob") for m in range(200)]
    store = ShufflingStore(rows)
    hosted = HostedMemory(cast(MemoryBackend, store))
    seen = await page_all(hosted, 3, user="ann")
    assert seen == [
        c.session_id
        for c in sorted(rows, key=lambda c: -c.created_at.timestamp())
        if c.metadata[MARK]["userId"] == "ann"
    ]
    assert max(store.limits) <= 2 * len(rows) + 16
