"""get_conversation_summary and get_context on the embedded backend."""

from __future__ import annotations

from uuid import uuid4

import pytest
from embedded_support import memory_fixture  # noqa: F401

from memory_core import MemoryBackend, Message, NotFoundError, NotSupportedError, open_backend

pytestmark = pytest.mark.anyio


async def _chat(backend: MemoryBackend) -> None:
    await backend.add_message("s", "user", "Tell me about graph databases.")
    await backend.add_message("s", "assistant", "Graph databases store nodes and edges.")
    await backend.add_message("s", "user", "And vector search?")


async def test_extractive_summary_without_summarizer(memory: MemoryBackend) -> None:
    await _chat(memory)
    summary = await memory.get_conversation_summary("s")
    conversation = await memory.get_conversation("s")
    assert summary.session_id == "s"
    assert summary.conversation_id == conversation.id
    assert summary.message_count == 3
    assert summary.summary.startswith("3 messages (1 assistant, 2 user).")
    assert summary.first_message_at == conversation.messages[0].created_at
    assert summary.last_message_at == conversation.messages[-1].created_at
    assert "graph" in summary.key_terms


async def test_sync_and_async_summarizers(memory: MemoryBackend) -> None:
    await _chat(memory)
    seen: list[int] = []

    def sync(messages: list[Message]) -> str:
        seen.append(len(messages))
        return "sync summary"

    async def asynchronous(messages: list[Message]) -> str:
        return f"async summary of {len(messages)}"

    assert (await memory.get_conversation_summary("s", summarizer=sync)).summary == "sync summary"
    assert seen == [3]
    result = await memory.get_conversation_summary("s", summarizer=asynchronous)
    assert result.summary == "async summary of 3"
    async with open_backend("memory://", summarizer=asynchronous) as configured:
        await _chat(configured)
        assert (await configured.get_conversation_summary("s")).summary == "async summary of 3"


async def test_summary_of_missing_session_and_unknown_id(memory: MemoryBackend) -> None:
    empty = await memory.get_conversation_summary("nobody")
    assert empty.message_count == 0
    assert empty.summary == "(empty conversation)"
    with pytest.raises(NotFoundError):
        await memory.get_conversation_summary(conversation_id=uuid4())


async def test_context_format(memory: MemoryBackend) -> None:
    await memory.add_message("s", "user", "My favourite colour is teal.")
    for i in range(6):
        await memory.add_message("s", "assistant", f"filler reply {i}")
    context = await memory.get_context("colour", session_id="s", max_messages=2)
    recent, relevant = context.split("\n\n")
    assert recent == ("## Recent messages\n[assistant] filler reply 4\n[assistant] filler reply 5")
    stamp = (await memory.get_conversation("s")).messages[0].created_at.strftime("%Y-%m-%d %H:%M")
    assert relevant.startswith(
        f"## Relevant messages\n[{stamp}] [user] My favourite colour is teal. (score "
    )
    without_query = await memory.get_context(session_id="s", max_messages=1)
    assert without_query == "## Recent messages\n[assistant] filler reply 5"
    assert await memory.get_context("anything", session_id="nobody") == ""


async def test_context_does_not_repeat_recent_messages(memory: MemoryBackend) -> None:
    await memory.add_message("s", "user", "teal is nice")
    context = await memory.get_context("teal", session_id="s")
    assert context == "## Recent messages\n[user] teal is nice"


async def test_unclaimed_capabilities_raise_not_supported(memory: MemoryBackend) -> None:
    for call in (memory.get_observations, memory.get_reflections, memory.get_extraction_status):
        with pytest.raises(NotSupportedError):
            await call("s")
    assert await memory.wait_for_extraction("s") is True
