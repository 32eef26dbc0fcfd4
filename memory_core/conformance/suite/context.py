"""get_context: recent messages, plus relevant ones for a query."""

from __future__ import annotations

from ..checks import word
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


class ContextSuite(SuiteBase):
    """Scenarios of area ``context``."""

    @scenario(
        "context.contains_recent",
        "get_context lists the recent messages as '[role] content' lines, oldest first",
    )
    async def test_context_contains_recent(self, harness: Harness) -> None:
        handle = await harness.new_session()
        texts = [f"recent {word()}" for _ in range(3)]
        for text in texts:
            await harness.backend.add_message(handle, "user", text)
        context = await harness.backend.get_context(session_id=handle)
        assert isinstance(context, str)
        lines = context.splitlines()
        assert all(f"[user] {t}" in lines for t in texts), "recent lines are not '[role] content'"
        positions = [context.find(t) for t in texts]
        assert all(p >= 0 for p in positions), "a recent message is missing from the context"
        assert positions == sorted(positions), "recent messages are not oldest first"

    @scenario(
        "context.max_messages",
        "max_messages keeps only the newest messages in the recent part",
    )
    async def test_context_max_messages(self, harness: Harness) -> None:
        handle = await harness.new_session()
        texts = [f"turn {n} {word()}" for n in range(6)]
        for text in texts:
            await harness.backend.add_message(handle, "user", text)
        context = await harness.backend.get_context(session_id=handle, max_messages=3)
        # Only the recent part's "[role] content" lines count: observations and
        # reflections (a store that summarizes, e.g. once its extraction has caught up)
        # may quote older messages in their own lines.
        recent = [line for line in context.splitlines() if line.startswith("[user] ")]
        assert recent == [f"[user] {t}" for t in texts[3:]], "recent part is not the newest 3"

    @scenario(
        "context.query_adds_relevant",
        "with a query, an older matching message is added to the context",
    )
    async def test_context_query_adds_relevant(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        await harness.backend.add_message(handle, "user", f"the old {term} fact")
        for n in range(5):
            await harness.backend.add_message(handle, "user", f"filler {n}")
        context = await harness.backend.get_context(term, session_id=handle, max_messages=2)
        assert f"the old {term} fact" in context
        assert "filler 4" in context

    @scenario("context.scoped_to_session", "get_context shows nothing of other sessions")
    async def test_context_scoped_to_session(self, harness: Harness) -> None:
        mine, other = await harness.new_session(), await harness.new_session()
        term = word()
        await harness.backend.add_message(mine, "user", f"mine {term}")
        await harness.backend.add_message(other, "user", f"other {term}")
        context = await harness.backend.get_context(term, session_id=mine)
        assert f"mine {term}" in context
        assert f"other {term}" not in context

    @scenario("context.empty_session", "get_context of an empty session has no messages")
    async def test_context_empty_session(self, harness: Harness) -> None:
        handle = await harness.new_session()
        context = await harness.backend.get_context(session_id=handle)
        assert isinstance(context, str)
        assert "[user]" not in context and "[assistant]" not in context
