"""get_conversation_summary."""

from __future__ import annotations

from memory_core import Message

from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


class SummarySuite(SuiteBase):
    """Scenarios of area ``summary``."""

    @scenario(
        "summary.counts_and_times",
        "the summary counts the messages and spans their first and last timestamps",
        requires="conversation_summary",
    )
    async def test_summary_counts_and_times(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.backend.add_message(handle, "user", "Plan a trip to Lisbon in May.")
        await harness.backend.add_message(handle, "assistant", "Lisbon in May is warm.")
        await harness.backend.add_message(handle, "user", "Book the Lisbon tram tour.")
        conversation = await harness.backend.get_conversation(handle)
        summary = await harness.backend.get_conversation_summary(handle)
        assert summary.message_count == 3
        assert summary.conversation_id == conversation.id
        assert summary.first_message_at == conversation.messages[0].created_at
        assert summary.last_message_at == conversation.messages[-1].created_at
        assert isinstance(summary.summary, str) and summary.summary.strip()
        assert "lisbon" in [t.lower() for t in summary.key_terms]

    @scenario(
        "summary.summarizer",
        "a summarizer passed to the call (or the backend) gets the messages in order",
        requires="conversation_summary",
    )
    async def test_summary_summarizer(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.fill(handle, 3)
        seen: list[list[str]] = []

        def summarize(messages: list[Message]) -> str:
            seen.append([m.content for m in messages])
            return "custom summary"

        summary = await harness.backend.get_conversation_summary(handle, summarizer=summarize)
        assert summary.summary == "custom summary"
        assert seen == [["m0", "m1", "m2"]]

        async def summarize_async(messages: list[Message]) -> str:
            return f"async {len(messages)}"

        backend = await harness.open(summarizer=summarize_async)
        other = await harness.new_session(backend=backend)
        await harness.fill(other, 2, backend=backend)
        assert (await backend.get_conversation_summary(other)).summary == "async 2"

    @scenario(
        "summary.empty_session",
        "the summary of an empty session counts zero messages",
        requires="conversation_summary",
    )
    async def test_summary_empty_session(self, harness: Harness) -> None:
        handle = await harness.new_session()
        summary = await harness.backend.get_conversation_summary(handle)
        assert summary.message_count == 0
        assert summary.first_message_at is None and summary.last_message_at is None
