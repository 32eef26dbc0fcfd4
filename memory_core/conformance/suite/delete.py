"""delete_message: really deletes and keeps the rest in order."""

from __future__ import annotations

from uuid import uuid4

from ..checks import contents, word
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


class DeleteSuite(SuiteBase):
    """Scenarios of area ``delete``."""

    @scenario(
        "delete.first_middle_last",
        "deleting the first, a middle and the last message keeps the rest in order",
        requires="delete_message",
    )
    async def test_delete_first_middle_last(self, harness: Harness) -> None:
        handle = await harness.new_session()
        stored = await harness.fill(handle, 5)
        for index in (0, 2, 4):
            assert await harness.backend.delete_message(stored[index].id) is True
        assert await harness.contents(handle) == ["m1", "m3"]

    @scenario(
        "delete.every_message",
        "deleting every message empties the session, which then accepts new messages",
        requires="delete_message",
    )
    async def test_delete_every_message(self, harness: Harness) -> None:
        handle = await harness.new_session()
        stored = await harness.fill(handle, 3)
        for message in reversed(stored):
            assert await harness.backend.delete_message(str(message.id)) is True
        assert await harness.contents(handle) == []
        await harness.backend.add_message(handle, "user", "fresh")
        await harness.backend.add_message(handle, "user", "fresher")
        assert await harness.contents(handle) == ["fresh", "fresher"]

    @scenario(
        "delete.then_append",
        "after deleting the last message new messages append in order",
        requires="delete_message",
    )
    async def test_delete_then_append(self, harness: Harness) -> None:
        handle = await harness.new_session()
        stored = await harness.fill(handle, 3)
        assert await harness.backend.delete_message(stored[-1].id) is True
        await harness.backend.add_message(handle, "user", "x")
        await harness.backend.add_message(handle, "user", "y")
        read = await harness.messages(handle)
        assert contents(read) == ["m0", "m1", "x", "y"]
        assert await harness.contents(handle, limit=2) == ["x", "y"]

    @scenario(
        "delete.twice_is_false",
        "deleting the same message again returns False",
        requires="delete_message",
    )
    async def test_delete_twice_is_false(self, harness: Harness) -> None:
        handle = await harness.new_session()
        stored = await harness.backend.add_message(handle, "user", "bye")
        assert await harness.backend.delete_message(stored.id) is True
        assert await harness.backend.delete_message(stored.id) is False

    @scenario(
        "delete.unknown_is_false",
        "an unknown UUID or a non-UUID string returns False and deletes nothing",
        requires="delete_message",
    )
    async def test_delete_unknown_is_false(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.fill(handle, 2)
        assert await harness.backend.delete_message(uuid4()) is False
        assert await harness.backend.delete_message(str(uuid4())) is False
        assert await harness.backend.delete_message("not-a-uuid") is False
        assert await harness.backend.delete_message("") is False
        assert await harness.contents(handle) == ["m0", "m1"]

    @scenario(
        "delete.other_sessions_untouched",
        "deleting a message leaves other sessions unchanged",
        requires="delete_message",
    )
    async def test_delete_other_sessions_untouched(self, harness: Harness) -> None:
        first, second = await harness.new_session(), await harness.new_session()
        stored = await harness.fill(first, 3)
        await harness.fill(second, 3)
        assert await harness.backend.delete_message(stored[1].id) is True
        assert await harness.contents(first) == ["m0", "m2"]
        assert await harness.contents(second) == ["m0", "m1", "m2"]

    @scenario(
        "delete.search_forgets",
        "a deleted message is no longer found by search",
        requires="delete_message",
    )
    async def test_delete_search_forgets(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        stored = await harness.backend.add_message(handle, "user", f"remember {term}")
        await harness.backend.add_message(handle, "user", f"keep {term}")
        assert await harness.backend.delete_message(stored.id) is True
        hits = await harness.backend.search_messages(term, session_id=handle)
        assert [h.content for h in hits] == [f"keep {term}"]
