"""clear_session: idempotent, scoped to one session, and the session can be reused."""

from __future__ import annotations

import pytest

from memory_core import NotFoundError

from ..checks import word
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


async def _assert_gone(harness: Harness, handle: str) -> None:
    """Reading a cleared session shows no messages (or NotFoundError where the store
    does not create conversations on demand)."""
    if harness.caps.auto_create_conversation:
        assert await harness.contents(handle) == []
    else:
        with pytest.raises(NotFoundError):
            await harness.backend.get_conversation(handle)


class ClearSuite(SuiteBase):
    """Scenarios of area ``clear``."""

    @scenario("clear.removes_messages", "clear_session returns True and removes the messages")
    async def test_clear_removes_messages(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.fill(handle, 3)
        assert await harness.backend.clear_session(handle) is True
        await _assert_gone(harness, handle)

    @scenario(
        "clear.idempotent",
        "clearing a cleared or unknown session returns False without error",
    )
    async def test_clear_idempotent(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.fill(handle, 1)
        assert await harness.backend.clear_session(handle) is True
        assert await harness.backend.clear_session(handle) is False
        assert await harness.backend.clear_session(harness.missing_session()) is False

    @scenario("clear.others_intact", "clearing one session leaves other sessions intact")
    async def test_clear_others_intact(self, harness: Harness) -> None:
        first, second = await harness.new_session(), await harness.new_session()
        await harness.fill(first, 2)
        await harness.fill(second, 2)
        assert await harness.backend.clear_session(first) is True
        assert await harness.contents(second) == ["m0", "m1"]

    @scenario(
        "clear.accepts_new_messages",
        "a cleared session accepts new messages and shows only them",
        requires="auto_create_conversation",
    )
    async def test_clear_accepts_new_messages(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.fill(handle, 3)
        await harness.backend.clear_session(handle)
        await harness.backend.add_message(handle, "user", "after clear")
        assert await harness.contents(handle) == ["after clear"]

    @scenario("clear.search_forgets", "search finds nothing of a cleared session")
    async def test_clear_search_forgets(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        await harness.backend.add_message(handle, "user", f"secret {term}")
        await harness.backend.clear_session(handle)
        if harness.caps.search_global:
            assert await harness.backend.search_messages(term) == []
        try:
            hits = await harness.backend.search_messages(term, session_id=handle)
        except NotFoundError:
            hits = []  # the conversation is gone where the store issues ids
        assert hits == []

    @scenario(
        "clear.by_conversation_id",
        "clear_session(conversation_id=...) clears that conversation",
    )
    async def test_clear_by_conversation_id(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.fill(handle, 2)
        conversation = await harness.backend.get_conversation(handle)
        assert await harness.backend.clear_session(conversation_id=conversation.id) is True
        await _assert_gone(harness, handle)
