"""get_context: recent messages, plus relevant ones for a query."""

from __future__ import annotations

import re
from datetime import UTC
from typing import Any

from memory_core.summary import CHARS_PER_TOKEN

from ..checks import invalid, word
from ..embedder import ConceptEmbedder
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase

# A relevant line: its time (UTC, to the minute), then as a recent line, then its score.
_RELEVANT = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d)(, session [^\]]+)?\] \[(\w+)\] (.*) \(score (\d\.\d\d)\)$"
)


def _section_lines(context: str) -> list[str]:
    """The lines of the context's relevant section (none without one)."""
    _, _, section = context.partition("## Relevant messages\n")
    return section.split("\n\n")[0].splitlines() if section else []


def _relevant(context: str) -> list[re.Match[str]]:
    """The relevant section's lines, parsed (time, session, role, content, score)."""
    lines = _section_lines(context)
    found = [_RELEVANT.match(line) for line in lines]
    assert all(found), f"a relevant line is not '[time] [role] content (score s)': {lines}"
    return [m for m in found if m is not None]


# A relevant line of a hit's neighbour: as a hit's, without a score.
_NEIGHBOUR = re.compile(r"^\[[^\]]+\] \[\w+\] (.*)$")


def _around(context: str) -> list[tuple[str, bool]]:
    """The relevant section's contents in order, each with whether it is a hit (scored)
    rather than a neighbour."""
    found: list[tuple[str, bool]] = []
    for line in _section_lines(context):
        hit = _RELEVANT.match(line)
        plain = _NEIGHBOUR.match(line)
        assert hit or plain, f"a relevant line is not '[time] [role] content': {line!r}"
        found.append((hit.group(4), True) if hit else (plain.group(1), False))  # type: ignore[union-attr]
    return found


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

    @scenario(
        "context.relevant_in_order_with_times",
        "the relevant messages are listed in the order they were written, each line with "
        "its time (UTC, to the minute), its role, its content and its score",
    )
    async def test_context_relevant_in_order_with_times(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        written = [
            await harness.backend.add_message(handle, "user", text)
            for text in (f"{term} {term} {term}", f"first {term} said once", "filler")
        ]
        for n in range(4):
            await harness.backend.add_message(handle, "assistant", f"later {n}")
        context = await harness.backend.get_context(term, session_id=handle, max_messages=2)
        lines = _relevant(context)
        assert [m.group(4) for m in lines] == [w.content for w in written[:2]], (
            "the relevant messages are not the two hits in the order written"
        )
        for line, message in zip(lines, written, strict=False):
            stamp = message.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M")
            assert line.group(1) == stamp and line.group(3) == "user"
            assert line.group(2) is None, "a session is named without across_sessions"

    @scenario(
        "context.max_tokens",
        "max_tokens keeps the whole text within that many tokens of 4 characters: the newest "
        "recent message and the best hit kept first, no message cut; a budget below 1 or not "
        "an int is refused, naming max_tokens",
    )
    async def test_context_max_tokens(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        best = await harness.backend.add_message(handle, "user", f"{term} {term}")
        await harness.backend.add_message(handle, "user", f"{term} " + "and much else " * 6)
        texts = [f"turn {n} " + "x" * 60 for n in range(8)]
        for text in texts:
            await harness.backend.add_message(handle, "assistant", text)

        async def context(budget: int | None = None) -> str:
            return await harness.backend.get_context(
                term, session_id=handle, long_term_chars=0, max_messages=5, max_tokens=budget
            )

        whole = await context()
        assert best.content in whole and texts[3] in whole
        for budget in (60, 100, 10_000):
            text = await context(budget)
            assert len(text) <= budget * CHARS_PER_TOKEN, (budget, len(text))
            assert f"[assistant] {texts[-1]}" in text.splitlines(), "newest message dropped"
            assert [m.group(4) for m in _relevant(text)][:1] == [best.content], (
                "the best hit was not kept first"
            )
        # the message lines only: a service's notes (reflections) may arrive in between
        lines = [line for line in whole.splitlines() if line.startswith("[")]
        roomy = [line for line in (await context(10_000)).splitlines() if line.startswith("[")]
        assert lines == roomy, "a budget the messages fit in changed them"
        tiny = await harness.backend.get_context(term, session_id=handle, max_tokens=1)
        assert len(tiny) <= CHARS_PER_TOKEN
        for bad in (0, -5, 2.5, "10", True):
            with invalid("max_tokens"):
                await harness.backend.get_context(
                    term,
                    session_id=handle,
                    max_tokens=bad,  # type: ignore[arg-type]
                )

    @scenario(
        "context.across_sessions",
        "with across_sessions, the relevant messages come from every session of the user, "
        "each line naming its session; without it, only from the session",
        requires="search_global",
    )
    async def test_context_across_sessions(self, harness: Harness) -> None:
        mine, other = await harness.new_session(), await harness.new_session()
        term = word()
        await harness.backend.add_message(mine, "user", "nothing relevant here")
        elsewhere = await harness.backend.add_message(other, "user", f"the {term} elsewhere")
        alone = await harness.backend.get_context(term, session_id=mine)
        assert elsewhere.content not in alone
        wide = await harness.backend.get_context(term, session_id=mine, across_sessions=True)
        [line] = _relevant(wide)
        assert line.group(4) == elsewhere.content
        assert line.group(2) == f", session {elsewhere.session_id or other}"
        with invalid("across_sessions"):
            await harness.backend.get_context(term, session_id=mine, across_sessions="yes")  # type: ignore[arg-type]

    @scenario(
        "context.per_session",
        "per_session groups the relevant messages by session, as search_messages does: in "
        "one session the best per_session hits, across sessions each session's best; a bad "
        "per_session is refused, naming it",
    )
    async def test_context_per_session(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        texts = (f"{term} {term}", f"{term} and one word", f"{term} said among many other words")
        for text in texts:
            await harness.backend.add_message(handle, "user", text)
        for n in range(3):
            await harness.backend.add_message(handle, "assistant", f"later {n}")

        async def relevant(**options: Any) -> list[str]:
            context = await harness.backend.get_context(
                term, session_id=handle, max_messages=2, long_term_chars=0, **options
            )
            return [m.group(4) for m in _relevant(context)]

        assert await relevant() == list(texts), "control: the three hits, in written order"
        assert await relevant(per_session=1) == [texts[0]], "not the session's best hit alone"
        assert await relevant(per_session=2) == list(texts[:2])
        for bad in (0, -1, 2.5, "1", True):
            with invalid("per_session"):
                await relevant(per_session=bad)
        if harness.caps.search_global:
            await self._context_per_session_across(harness, handle, term)

    async def _context_per_session_across(self, harness: Harness, handle: str, term: str) -> None:
        other = await harness.new_session()
        best = await harness.backend.add_message(other, "user", f"{term} {term} {term}")
        await harness.backend.add_message(other, "user", f"{term} again, {term}")
        context = await harness.backend.get_context(
            term,
            session_id=handle,
            max_messages=2,
            long_term_chars=0,
            across_sessions=True,
            per_session=1,
        )
        lines = _relevant(context)
        assert len(lines) == 2, "not one hit of each of the two sessions"
        assert best.content in [m.group(4) for m in lines]
        assert len({m.group(2) for m in lines}) == 2, "two hits of one session"

    @scenario(
        "context.neighbours",
        "neighbours=N adds the N messages written before and after each hit in its session, "
        "unscored, in conversation order, never twice and never one of the recent ones; a "
        "hit beside another stays a hit; a bad neighbours is refused, naming it",
        requires="message_neighbours",
    )
    async def test_context_neighbours(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        texts = [f"step {n} {word()}" for n in range(9)]
        texts[0], texts[3], texts[4] = (f"first {term}", f"middle {term}", f"next {term}")
        for n, text in enumerate(texts):
            await harness.backend.add_message(handle, "user" if n % 2 else "assistant", text)

        async def around(**options: Any) -> list[tuple[str, bool]]:
            options.setdefault("max_messages", 1)
            context = await harness.backend.get_context(
                term, session_id=handle, long_term_chars=0, **options
            )
            return _around(context)

        hits = {0, 3, 4}
        assert await around() == [(texts[n], True) for n in sorted(hits)], "control"
        one = await around(neighbours=1)
        assert one == [(texts[n], n in hits) for n in range(6)], "not the hits and one each side"
        two = await around(neighbours=2, max_messages=3)
        assert two == [(texts[n], n in hits) for n in range(6)], "a recent message was repeated"
        assert await around(neighbours=0) == await around(), "neighbours=0 changed the context"
        for bad in (-1, 11, 2.5, "1", True, None):
            with invalid("neighbours"):
                await around(neighbours=bad)
        if harness.caps.search_global:
            await self._neighbours_across(harness, handle)

    async def _neighbours_across(self, harness: Harness, handle: str) -> None:
        other, term = await harness.new_session(), word()
        texts = [f"before {word()}", f"the {term} elsewhere", f"after {word()}", "last"]
        written = [await harness.backend.add_message(other, "user", text) for text in texts]
        context = await harness.backend.get_context(
            term,
            session_id=handle,
            max_messages=1,
            long_term_chars=0,
            across_sessions=True,
            neighbours=1,
        )
        assert _around(context) == [(texts[0], False), (texts[1], True), (texts[2], False)]
        named = f", session {written[0].session_id or other}] "
        lines = context.splitlines()[-3:]
        assert all(named in line for line in lines), f"not each naming its session: {lines}"

    @scenario(
        "context.by_meaning",
        "with an embedder, get_context adds a message close in meaning to the query that "
        "shares no word with it",
        requires="vector_search",
    )
    async def test_context_by_meaning(self, harness: Harness) -> None:
        backend = await harness.open(embedder=ConceptEmbedder())
        handle = await harness.new_session(backend=backend)
        target = await backend.add_message(handle, "user", "we need a reservation for supper")
        for n in range(4):
            await backend.add_message(handle, "assistant", f"the weather in lisbon {n}")
        context = await backend.get_context("dinner booking", session_id=handle, max_messages=2)
        assert [m.group(4) for m in _relevant(context)] == [target.content]
