"""One text-relevance scale for every backend, so ``threshold`` means the same everywhere.

Raw full-text ranks (SQLite's bm25, Lucene's score) depend on everything in the index: a
word that appears in half of a small store scores almost nothing. The score we return is

    score = coverage * (0.5 + 0.5 * s / (1 + s))

where ``coverage`` is the share of the query's distinct words found in the message and
``s`` the engine's raw relevance (≥ 0). A message containing every query word scores at
least 0.5; the engine's rank only orders messages within that band.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(text: str) -> list[str]:
    """The distinct lower-cased words of ``text``, in order (linear: a dict keeps the
    first occurrence of each word; a list lookup made long queries quadratic)."""
    return list(dict.fromkeys(_WORD.findall(text.casefold())))


def coverage(terms: list[str], content: str) -> float:
    """The share of ``terms`` that occur as words of ``content`` (0..1)."""
    if not terms:
        return 0.0
    words = set(_WORD.findall(content.casefold()))
    return sum(1 for term in terms if term in words) / len(terms)


def text_score(terms: list[str], content: str, raw: float) -> float:
    """The 0..1 score of one full-text hit (see the module docstring)."""
    strength = max(raw, 0.0)
    return coverage(terms, content) * (0.5 + 0.5 * strength / (1.0 + strength))
