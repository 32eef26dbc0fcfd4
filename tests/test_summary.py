"""Backend-neutral text helpers: ``preview``, the ``get_context`` layout of
``format_context``, ``key_terms``, ``extractive_summary`` and ``run_summarizer``."""

from __future__ import annotations

import pytest

from memory_core.models import Message, MessageRole
from memory_core.summary import (
    PREVIEW_CHARS,
    STOPWORDS,
    extractive_summary,
    format_context,
    key_terms,
    preview,
    run_summarizer,
)


def _m(content: str, role: MessageRole = MessageRole.USER, score: float | None = None) -> Message:
    return Message(role=role, content=content, score=score)


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
        relevant=[_m("older order", score=0.834), _m("unscored")],
        observations=["likes tea"],
        reflections=["a regular customer", "polite"],
    )
    assert text == (
        "## Reflections\n- a regular customer\n- polite\n\n"
        "## Observations\n- likes tea\n\n"
        "## Recent messages\n[user] hi\n[assistant] hello\n\n"
        "## Relevant messages\n[user] older order (score 0.83)\n[user] unscored"
    )


def test_format_context_leaves_out_empty_sections() -> None:
    assert format_context([], []) == ""
    assert format_context([_m("hi")], []) == "## Recent messages\n[user] hi"
    assert format_context([], [_m("found", score=1.0)]) == (
        "## Relevant messages\n[user] found (score 1.00)"
    )
    assert format_context([], [], observations=["o"]) == "## Observations\n- o"


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
