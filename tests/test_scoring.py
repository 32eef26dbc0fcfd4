"""The shared text-score scale: a pure function of the query and the message content."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from memory_core import Message
from memory_core.scoring import (
    AVERAGE_WORDS,
    CANDIDATES,
    FUNCTION_WEIGHT,
    FUNCTION_WORDS,
    GROUP_POOL,
    K1,
    B,
    by_recency,
    by_session,
    candidate_pool,
    engine_terms,
    group_pool,
    query_terms,
    relevant_hits,
    relevant_pool,
    text_score,
    words_of,
)


def _by_hand(found: int, asked: int, counts: list[int], words: int) -> float:
    """The documented formula, written out: coverage * (0.5 + 0.5 * s / (1 + s))."""
    norm = K1 * (1 - B + B * words / AVERAGE_WORDS)
    s = sum(tf * (K1 + 1) / (tf + norm) for tf in counts)
    return found / asked * (0.5 + 0.5 * s / (1 + s))


def test_query_terms_are_distinct_lowercase_words_in_order() -> None:
    assert query_terms("Cat cat, DOG! cat-food") == ["cat", "dog", "food"]


def test_the_score_is_the_documented_formula() -> None:
    assert (K1, B, AVERAGE_WORDS) == (1.2, 0.75, 20)
    assert text_score(["cat"], "the cat") == pytest.approx(_by_hand(1, 1, [1], 2), abs=1e-15)
    assert text_score(["cat"], "the cat") == pytest.approx(0.80641, abs=1e-5)
    assert text_score(["late", "order"], "Order ORD-1234 is late") == pytest.approx(
        _by_hand(2, 2, [1, 1], 5), abs=1e-15
    )
    # repeats count, words are compared case-folded, punctuation separates words
    assert text_score(["late"], "LATE? late... Late!") == pytest.approx(
        _by_hand(1, 1, [3], 3), abs=1e-15
    )
    assert text_score(["cat", "dog", "eel"], "a dog") == pytest.approx(
        _by_hand(1, 3, [1], 2), abs=1e-15
    )


def test_clitics_after_a_word_are_not_words() -> None:
    assert words_of("My sister's cat doesn\u2019t purr, I'd say; she'll, we're, I've, I'm") == [
        "my", "sister", "cat", "doesn", "purr", "i", "say", "she", "we", "i", "i",
    ]  # fmt: skip
    # only after a word, and only those endings: a quote, "o'clock", "rock'n'roll" stay
    assert words_of("'s 'tis o'clock rock'n'roll") == [
        "s",
        "tis",
        "o",
        "clock",
        "rock",
        "n",
        "roll",
    ]
    assert query_terms("Sister's SISTER") == ["sister"]
    assert text_score(["sister"], "my sister's") == text_score(["sister"], "my sister")


def test_function_words_weigh_a_fifth() -> None:
    assert {"what", "is", "my", "the", "a"} <= FUNCTION_WORDS
    assert FUNCTION_WEIGHT == 0.2
    terms = query_terms("what is my sister's name")  # what, is, my: 0.6; sister, name: 2
    norm = K1 * (1 - B + B * 3 / AVERAGE_WORDS)
    strength = 3 * FUNCTION_WEIGHT * (K1 + 1) / (1 + norm)
    # "what is my": three of the query's five words, 0.6 of its 2.6 of weight
    assert text_score(terms, "what is my") == pytest.approx(
        0.6 / 2.6 * (0.5 + 0.5 * strength / (1 + strength)), abs=1e-12
    )
    # the message about the sister beats one sharing more (function) words with the query
    assert text_score(terms, "Noor is my sister") > 2 * text_score(terms, "what is my plan")
    # a query of function words only still reaches the band of full coverage
    assert text_score(query_terms("what is it"), "what is it") >= 0.5


def test_the_engine_is_asked_for_each_term_and_the_words_of_the_others() -> None:
    assert engine_terms("late order") == ["late", "order"]
    assert engine_terms("sister's ORD-12 late late") == [
        "sister's",
        "sister",
        "ORD-12",
        "ord",
        "12",
        "late",
    ]
    assert engine_terms("* -- !") == []
    # a word already asked for is not asked again
    assert engine_terms("cat cat's") == ["cat", "cat's"]


def test_no_query_word_scores_zero() -> None:
    assert text_score(["cat"], "concatenate") == 0.0
    assert text_score(["cat"], "the dog") == 0.0
    assert text_score([], "anything") == 0.0
    assert text_score(["cat"], "") == 0.0
    assert text_score(["cat"], "  \t\n ") == 0.0


def test_bands_full_coverage_at_least_half_partial_below() -> None:
    for content in ("cat dog", "dog " * 50 + "cat", "cat " * 500 + "dog"):
        assert 0.5 <= text_score(["cat", "dog"], content) < 1.0
    for content in ("cat", "the cat sat on a mat with another " * 20):
        assert 0.25 <= text_score(["cat", "dog"], content) < 0.5
    # one word can reach about 0.84, two about 0.90, never 1
    assert text_score(["cat"], "cat " * 10_000) < 0.84
    assert text_score(["cat", "dog"], "cat dog " * 10_000) < 0.905


def test_repeats_raise_and_length_lowers_the_score() -> None:
    once, twice = text_score(["cat"], "cat and a dog"), text_score(["cat"], "cat and a cat")
    assert twice > once
    assert text_score(["cat"], "cat") > text_score(["cat"], "cat " + "filler " * 40)


def test_the_score_depends_on_nothing_but_query_and_content() -> None:
    """No statistics of a store: the same pair always scores the same (the engines' own
    ranks, bm25 and Lucene's, move with every other message)."""
    first = text_score(query_terms("late order"), "Order ORD-1234 is late")
    for _ in range(3):
        assert text_score(query_terms("late order"), "Order ORD-1234 is late") == first


def test_candidate_pool_is_at_least_the_limit() -> None:
    assert candidate_pool(1) == candidate_pool(10) == CANDIDATES == 200
    assert candidate_pool(500) == 500


def _hit(session: str, n: int) -> Message:
    return Message(session_id=session, role="user", content=f"{session}{n}")


def test_hits_grouped_by_session_keep_each_sessions_best_in_order() -> None:
    hits = [_hit("a", 1), _hit("b", 1), _hit("a", 2), _hit("c", 1), _hit("a", 3), _hit("b", 2)]
    ids = lambda found: [h.content for h in found]  # noqa: E731
    assert ids(by_session(hits, 1, 10)) == ["a1", "b1", "c1"]
    assert ids(by_session(hits, 2, 10)) == ["a1", "a2", "b1", "b2", "c1"]
    assert ids(by_session(hits, 2, 3)) == ["a1", "a2", "b1"]
    assert ids(by_session(hits, 5, 10)) == ["a1", "a2", "a3", "b1", "b2", "c1"]
    assert by_session([], 1, 10) == []
    # a hit without a session name (NAMS) is grouped by its conversation
    nameless = [Message(role="user", content=str(n), conversation_id=uuid4()) for n in (1, 2)]
    assert len(by_session(nameless, 1, 10)) == 2


def test_a_grouped_search_asks_for_more_hits_within_the_backends_cap() -> None:
    assert group_pool(10, None) == 10 * GROUP_POOL
    assert group_pool(10, 100) == 50
    assert group_pool(30, 100) == 100
    assert group_pool(100, 100) == 100
    assert group_pool(7, 3) == 7  # never fewer than the limit asked


def test_the_relevant_pool_is_widened_only_to_group_and_never_past_the_cap() -> None:
    assert relevant_pool(7, None, None) == 7
    assert relevant_pool(7, None, 5) == 5
    assert relevant_pool(7, 1, None) == 7 * GROUP_POOL
    assert relevant_pool(7, 2, 20) == 20
    assert relevant_pool(300, 1, 200) == 200


def test_relevant_hits_drop_the_recent_ones_before_grouping() -> None:
    hits = [_hit("a", 1), _hit("a", 2), _hit("b", 1), _hit("c", 1), _hit("b", 2)]
    seen = {hits[0].id}
    contents = lambda found: [h.content for h in found]  # noqa: E731
    assert contents(relevant_hits(hits, seen, None, 3)) == ["a2", "b1", "c1"]
    # a recent best hit does not hide its session: the next one of it stands for it
    assert contents(relevant_hits(hits, seen, 1, 5)) == ["a2", "b1", "c1"]
    assert contents(relevant_hits(hits, set(), 1, 2)) == ["a1", "b1"]


def _aged(content: str, score: float, days: float, now: datetime) -> Message:
    return Message(role="user", content=content, score=score, created_at=now - timedelta(days=days))


def test_recency_halves_a_score_per_half_life_of_age_and_reranks() -> None:
    now = datetime(2026, 12, 7, tzinfo=UTC)
    hits = [_aged("old", 0.8, 60, now), _aged("new", 0.5, 0, now), _aged("mid", 0.6, 30, now)]
    weighed = by_recency(hits, timedelta(days=30), now)
    assert [h.content for h in weighed] == ["new", "mid", "old"]
    assert [round(h.score or 0, 6) for h in weighed] == [0.5, 0.3, 0.2]
    assert [h.score for h in hits] == [0.8, 0.5, 0.6], "the given hits were changed"
    # a time after now counts as no age; equal weighted scores keep their order
    future = [_aged("a", 0.4, -1, now), _aged("b", 0.4, 0, now)]
    assert [(h.content, h.score) for h in by_recency(future, timedelta(days=1), now)] == [
        ("a", 0.4),
        ("b", 0.4),
    ]


def test_a_weighed_context_asks_for_a_wider_pool_and_weighs_before_grouping() -> None:
    assert relevant_pool(10, None, None) == 10
    assert relevant_pool(10, None, None, timedelta(days=1)) == 10 * GROUP_POOL
    assert relevant_pool(10, None, 20, timedelta(days=1)) == 20
    now = datetime.now(UTC)
    hits = [_aged("a1", 0.9, 400, now), _aged("b1", 0.5, 0, now), _aged("a2", 0.4, 0, now)]
    for hit, session in zip(hits, "aba", strict=True):
        hit.session_id = session
    kept = relevant_hits(hits, set(), 1, 5, timedelta(days=1))
    assert [h.content for h in kept] == ["b1", "a2"]  # a1 weighs ~0: a2 is a's best
    assert [h.content for h in relevant_hits(hits, {hits[1].id}, None, 1)] == ["a1"]
