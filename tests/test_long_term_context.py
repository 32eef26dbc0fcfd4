"""The long-term section of get_context (memory_core.long_term_context): whose records it
shows and in what order. The conformance scenario context.long_term checks the format,
the bound and tenancy on every backend."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core import Conversation, EntityRef, open_backend, register_backend
from memory_core import requests as rq
from memory_core.backends.embedded import EmbeddedStore
from memory_core.long_term_context import MAX_SUBJECTS

pytestmark = pytest.mark.anyio


async def test_the_user_is_the_conversations_when_the_caller_names_none() -> None:
    async with open_backend("memory://") as memory:
        await memory.create_conversation(session_id="s", user_identifier="ada")
        await memory.add_preference("food", "likes figs", user_identifier="ada")
        await memory.add_preference("food", "likes plums", user_identifier="bob")
        text = await memory.get_context(session_id="s")
        assert text == "## Preferences\n- [food] likes figs"


async def test_without_any_user_no_preference_is_shown_and_facts_are_the_stores() -> None:
    async with open_backend("memory://") as memory:
        await memory.add_preference("food", "likes figs", user_identifier="ada")
        await memory.add_fact("Kew", "IS_IN", "London")
        await memory.add_message(
            "s", "user", "Kew", extraction_mode="explicit",
            explicit_mentions=[EntityRef(name="Kew", type="LOCATION")],
        )  # fmt: skip
        text = await memory.get_context(session_id="s")
        assert text.startswith("## Facts\n- Kew IS_IN London\n\n## Recent messages")


async def test_facts_follow_the_most_recently_mentioned_entities_up_to_the_cap() -> None:
    names = [f"Place{i}" for i in range(MAX_SUBJECTS + 2)]
    async with open_backend("memory://") as memory:
        for name in names:
            await memory.add_fact(name, "IS", "somewhere")
            await memory.add_message(
                "s", "user", name, extraction_mode="explicit",
                explicit_mentions=[EntityRef(name=name, type="LOCATION")],
            )  # fmt: skip
        text = await memory.get_context(session_id="s", max_messages=100)
        shown = [line.split()[1] for line in text.split("\n\n")[0].splitlines()[1:]]
        assert shown == list(reversed(names))[:MAX_SUBJECTS]


async def test_with_nothing_to_say_the_context_is_as_without_the_section() -> None:
    async with open_backend("memory://") as memory:
        await memory.add_message("s", "user", "hello")
        with_section = await memory.get_context(session_id="s")
        without = await memory.get_context(session_id="s", long_term_chars=0)
        assert with_section == without == "## Recent messages\n[user] hello"


class CountingReads(EmbeddedStore):
    """The embedded store, counting the conversation reads (a private in-memory one)."""

    reads = 0

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        super().__init__("memory://", **options)

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        CountingReads.reads += 1
        return await super().get_conversation(req)


async def test_the_messages_and_the_section_come_from_one_read() -> None:
    """The section needs the recent messages' mentions: with the default get_context they
    were read twice (once for the text, once for the section)."""
    register_backend("counting-reads", f"{__name__}:CountingReads", replace=True)
    async with open_backend("counting-reads://") as memory:
        await memory.add_preference("food", "likes figs", user_identifier="ada")
        await memory.add_message("s", "user", "hello", user_identifier="ada")
        CountingReads.reads = 0
        text = await memory.get_context(session_id="s", user_identifier="ada")
        assert text == "## Preferences\n- [food] likes figs\n\n## Recent messages\n[user] hello"
        assert CountingReads.reads == 1
