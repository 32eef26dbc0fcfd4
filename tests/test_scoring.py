"""The shared text-score scale."""

from __future__ import annotations

from memory_core.scoring import coverage, query_terms, text_score


def test_query_terms_are_distinct_lowercase_words_in_order() -> None:
    assert query_terms("Cat cat, DOG! cat-food") == ["cat", "dog", "food"]


def test_coverage_is_the_share_of_query_words_present() -> None:
    assert coverage(["cat", "dog"], "A cat sat") == 0.5
    assert coverage(["cat"], "concatenate") == 0.0
    assert coverage([], "anything") == 0.0


def test_score_bands() -> None:
    assert text_score(["cat"], "the cat", 0.0) == 0.5
    assert text_score(["cat"], "the cat", 1.0) == 0.75
    assert 0.99 < text_score(["cat"], "the cat", 500.0) <= 1.0
    assert text_score(["cat", "dog"], "the cat", 1.0) == 0.375
    assert text_score(["cat"], "the dog", 9.0) == 0.0
    assert text_score(["cat"], "the cat", -3.0) == 0.5
