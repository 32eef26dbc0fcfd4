"""The long-term section of get_context (memory_core.long_term_context): whose records it
shows and in what order. The conformance scenario context.long_term checks the format,
the bound and tenancy on every backend."""

from __future__ import annotations

import pytest

from memory_core import EntityRef, open_backend
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
