"""Reads and ordering."""

from __future__ import annotations

from ..checks import assert_time_order, capability_warnings, contents
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


class ReadsSuite(SuiteBase):
    """Scenarios of area ``reads``."""

    @scenario("reads.oldest_first", "get_conversation returns messages oldest first")
    async def test_reads_oldest_first(self, harness: Harness) -> None:
        handle = await harness.new_session()
        for text in ("one", "two", "three"):
            await harness.backend.add_message(handle, "user", text)
        read = await harness.messages(handle)
        assert contents(read) == ["one", "two", "three"]
        assert_time_order(read)

    @scenario("reads.limit_keeps_newest", "limit=N returns the newest N messages, oldest first")
    async def test_reads_limit_keeps_newest(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.fill(handle, 10)
        assert await harness.contents(handle, limit=3) == ["m7", "m8", "m9"]
        assert await harness.contents(handle, limit=1) == ["m9"]

    @scenario("reads.limit_above_count", "a limit above the message count returns them all")
    async def test_reads_limit_above_count(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.fill(handle, 4)
        with capability_warnings() as found:
            read = await harness.contents(handle, limit=50)
        assert read == ["m0", "m1", "m2", "m3"]
        assert not found, "a limit under the cap must not warn"

    @scenario(
        "reads.message_fields",
        "stored and read messages carry their id, role, aware timestamp and conversation id",
    )
    async def test_reads_message_fields(self, harness: Harness) -> None:
        handle = await harness.new_session()
        stored = await harness.backend.add_message(handle, "assistant", "fields")
        conversation = await harness.backend.get_conversation(handle)
        [read] = conversation.messages
        assert read.id == stored.id
        assert read.role.value == "assistant"
        assert read.created_at.tzinfo is not None
        assert read.conversation_id == conversation.id, "a read message names no conversation"
        assert stored.conversation_id == conversation.id, "a stored message names no conversation"

    @scenario(
        "reads.sessions_isolated",
        "three sessions written in turn each read back only their own messages",
    )
    async def test_reads_sessions_isolated(self, harness: Harness) -> None:
        handles = [await harness.new_session() for _ in range(3)]
        for round_ in range(3):
            for n, handle in enumerate(handles):
                await harness.backend.add_message(handle, "user", f"s{n}-{round_}")
        for n, handle in enumerate(handles):
            assert await harness.contents(handle) == [f"s{n}-{r}" for r in range(3)]
        conversations = [await harness.backend.get_conversation(h) for h in handles]
        assert len({c.id for c in conversations}) == 3
