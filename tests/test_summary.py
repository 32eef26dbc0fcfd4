"""Backend-neutral text helpers: ``preview``, the ``get_context`` layout of
``format_context``, ``key_terms``, ``extractive_summary`` and ``run_summarizer``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory_core.models import Message, MessageRole
from memory_core.summary import (
    CHARS_PER_TOKEN,
    PREVIEW_CHARS,
    STOPWORDS,
    approx_tokens,
    extractive_summary,
    fit_context,
    fit_notes,
    format_context,
    key_terms,
    preview,
    run_summarizer,
)

T0 = datetime(2026, 12, 7, 14, 3, 59, tzinfo=UTC)


def _m(
    content: str,
    role: MessageRole = MessageRole.USER,
    score: float | None = None,
    minutes: int = 0,
    session: str | None = None,
) -> Message:
    return Message(
        role=role,
        content=content,
        score=score,
        created_at=T0 + timedelta(minutes=minutes),
        session_id=session,
    )


def test_a_short_text_is_its_own_preview() -> None:
    assert preview("") == ""
    assert preview("hello") == "hello"
    exact = "x" * PREVIEW_CHARS
    assert preview(exact) == exact


def test_a_long_text_is_cut_to_preview_chars_with_an_ellipsis() -> None:
    text = "".join(str(n % 10) for n in range(PREVIEW_CHARS + 1))
    cut = preview(text)
    assert len(cut) == PREVIEW_CHARS
    assert cut == text[: PREVIEW_CHARS - 1] + "…"
    assert preview("é" * 1000) == "é" * (PREVIEW_CHARS - 1) + "…"


def test_format_context_has_every_section_in_order() -> None:
    text = format_context(
        recent=[_m("hi"), _m("hello", MessageRole.ASSISTANT)],
        relevant=[_m("unscored", minutes=2), _m("older order", score=0.834)],
        observations=["likes tea"],
        reflections=["a regular customer", "polite"],
    )
    assert text == (
        "## Reflections\n- a regular customer\n- polite\n\n"
        "## Observations\n- likes tea\n\n"
        "## Recent messages\n[user] hi\n[assistant] hello\n\n"
        "## Relevant messages\n[2026-12-07 14:03] [user] older order (score 0.83)\n"
        "[2026-12-07 14:05] [user] unscored"
    )


def test_format_context_leaves_out_empty_sections() -> None:
    assert format_context([], []) == ""
    assert format_context([_m("hi")], []) == "## Recent messages\n[user] hi"
    assert format_context([], [_m("found", score=1.0)]) == (
        "## Relevant messages\n[2026-12-07 14:03] [user] found (score 1.00)"
    )
    assert format_context([], [], observations=["o"]) == "## Observations\n- o"


def test_relevant_lines_name_their_session_when_asked() -> None:
    hit = _m("found", score=0.5, session="s3")
    assert format_context([], [hit], sessions=True) == (
        "## Relevant messages\n[2026-12-07 14:03, session s3] [user] found (score 0.50)"
    )
    assert "session" not in format_context([], [hit])


def test_approx_tokens_counts_four_characters_a_token_rounded_up() -> None:
    assert CHARS_PER_TOKEN == 4
    assert [approx_tokens("x" * n) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]


def _recent(n: int) -> list[Message]:
    return [_m(f"recent {i} " + "r" * 30, MessageRole.ASSISTANT, minutes=i) for i in range(n)]


def _hits(n: int) -> list[Message]:  # best first, oldest last
    return [_m(f"hit {i} " + "h" * 30, score=0.9 - i / 10, minutes=-i) for i in range(n)]


def test_fit_context_takes_the_newest_and_the_best_in_turn_within_the_budget() -> None:
    recent, hits = _recent(5), _hits(5)
    whole = format_context(recent, hits)
    assert fit_context(recent, hits, len(whole) + 10) == (recent, hits)
    for budget in range(0, len(whole) + 10, 7):
        kept_recent, kept_hits = fit_context(recent, hits, budget)
        assert len(format_context(kept_recent, kept_hits)) <= budget
        # the newest recent ones, oldest first, and the best hits, best first
        assert kept_recent == recent[len(recent) - len(kept_recent) :]
        assert kept_hits == hits[: len(kept_hits)]
        # nothing more of either kind would fit (the count may be 4 characters cautious)
        if len(kept_recent) < len(recent):
            more = recent[len(recent) - len(kept_recent) - 1 :]
            assert len(format_context(more, kept_hits)) > budget - 4
        if len(kept_hits) < len(hits):
            assert len(format_context(kept_recent, hits[: len(kept_hits) + 1])) > budget - 4
    assert fit_context(recent, hits, 0) == ([], [])
    # in turn: two of each fit where the recent ones alone could have taken four
    two_each = len(format_context(recent[3:], hits[:2]))
    assert fit_context(recent, hits, two_each + 4) == (recent[3:], hits[:2])


def test_a_message_too_long_for_what_is_left_stops_its_kind_not_the_other() -> None:
    recent = [_m("old " + "o" * 10), _m("newest " + "n" * 500, minutes=5)]
    hits = _hits(3)
    kept_recent, kept_hits = fit_context(recent, hits, 200)
    assert kept_recent == []  # the newest does not fit: no older one jumps ahead of it
    assert kept_hits == hits[: len(kept_hits)] and kept_hits


def test_fit_notes_keeps_reflections_then_observations_that_fit() -> None:
    reflections, observations = ["r" * 20, "r" * 20], ["o" * 20]
    whole = len(format_context([], [], observations, reflections))
    assert fit_notes(reflections, observations, whole + 4) == (reflections, observations)
    kept = fit_notes(reflections, observations, 40)
    assert kept == (reflections[:1], [])
    assert len(format_context([], [], kept[1], kept[0])) <= 40
    assert fit_notes(reflections, observations, 0) == ([], [])


def test_key_terms_are_the_most_frequent_words_outside_the_stopwords() -> None:
    messages = [
        _m("The parcel shipping was late. Shipping again!"),
        _m("Which parcel? That parcel, with shipping labels."),
    ]
    # "again", "which", "that", "with" are stopwords; "the", "was" have under four letters
    assert key_terms(messages) == ["parcel", "shipping", "labels", "late"]
    assert key_terms(messages, count=2) == ["parcel", "shipping"]
    assert {"again", "which", "that", "with"} <= STOPWORDS


def test_key_terms_ignore_case_digits_and_short_words() -> None:
    messages = [_m("Zebra zebra ZEBRA ants ant 12345 a1b2 apple_pie")]
    assert key_terms(messages) == ["zebra", "ants", "apple"]
    assert key_terms([]) == []


def test_ties_in_key_terms_are_broken_alphabetically() -> None:
    assert key_terms([_m("delta charlie bravo alpha")], count=3) == ["alpha", "bravo", "charlie"]


def test_an_empty_conversation_has_a_fixed_summary() -> None:
    assert extractive_summary([]) == "(empty conversation)"


def test_the_summary_counts_messages_per_role() -> None:
    messages = [
        _m("hello there"),
        _m("hi", MessageRole.ASSISTANT),
        _m("bye"),
    ]
    summary = extractive_summary(messages, max_sentences=1)
    assert summary.startswith("3 messages (1 assistant, 2 user). ")


def test_the_summary_keeps_the_best_sentences_in_conversation_order() -> None:
    messages = [
        _m("Nothing here. The invoice payment failed twice."),
        _m("Okay.", MessageRole.ASSISTANT),
        _m("Retry the invoice payment tomorrow. Thanks!", MessageRole.ASSISTANT),
    ]
    summary = extractive_summary(messages, max_sentences=2)
    assert summary == (
        "3 messages (2 assistant, 1 user). user: The invoice payment failed twice. "
        "assistant: Retry the invoice payment tomorrow."
    )


def test_equal_scores_keep_the_earliest_sentences() -> None:
    messages = [_m("Alpha beta. Gamma delta. Epsilon zeta.")]
    summary = extractive_summary(messages, max_sentences=2)
    assert summary == "1 message (1 user). user: Alpha beta. user: Gamma delta."


@pytest.mark.anyio
async def test_run_summarizer_accepts_sync_and_async_summarizers() -> None:
    messages = [_m("one"), _m("two")]

    def sync(found: list[Message]) -> str:
        return f"{len(found)} sync"

    async def asynchronous(found: list[Message]) -> str:
        return f"{len(found)} async"

    assert await run_summarizer(sync, messages) == "2 sync"
    assert await run_summarizer(asynchronous, messages) == "2 async"


@pytest.mark.anyio
async def test_run_summarizer_refuses_a_result_that_is_not_text() -> None:
    async def numeric(found: list[Message]) -> int:
        return 3

    with pytest.raises(TypeError, match="summarizer returned int, expected str"):
        await run_summarizer(numeric, [])  # type: ignore[arg-type]
