"""The shared text-score scale: a pure function of the query and the message content."""

from __future__ import annotations

import pytest

from memory_core.scoring import (
    AVERAGE_WORDS,
    CANDIDATES,
    K1,
    B,
    candidate_pool,
    query_terms,
    text_score,
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
