"""One text-relevance scale for every backend, so ``threshold`` means the same everywhere.

The score of a text hit is a pure function of the query and the message content,
computed here, in Python, the same way by every backend::

    score = coverage * (0.5 + 0.5 * s / (1 + s))

``coverage`` is the share of the query's distinct words that occur as words of the
message, and ``s`` a BM25-like term strength of the message alone: for each query word
it contains ``tf`` times, ``tf * (K1 + 1) / (tf + K1 * (1 - B + B * words / AVERAGE_WORDS))``,
summed, where ``words`` is the message's word count. There is no IDF and the average
length is a constant, so nothing about the rest of the store enters the score.

A word is a run of Unicode word characters (``\\w+``), compared after ``casefold()``.
A message containing every query word scores at least 0.5 (at most about 0.84 for a
one-word query, 0.90 for two words, closer to 1 with more); one with half of them
0.25 to 0.5; one with none scores 0 and is not a text hit.

Why not the engine's own rank (SQLite's bm25, Lucene's score): it depends on everything in
the index — the number of messages, their average length, how many contain each word —
so the same message scored differently on each backend (0.5 on ``memory://``, 0.69 on
Neo4j for one five-message corpus) and, on a store others write to, between two calls
(a score reused as ``threshold`` could drop its own hit). The engine only selects
candidates: the embedded and Bolt backends take the best :func:`candidate_pool` matches in
scope by the engine's own rank (metadata filters applied), score them here, and return them
best first, ``threshold`` and ``limit`` applied after scoring. When a scope holds more
matches than the pool, a message the engine ranked below the pool is not considered. The
NAMS adapter scores the service's text hits here too (the service returns its best
``limit``; the NAMS-compatible server of this package picks them by the rule above).
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)

K1 = 1.2
"""How fast repeating a word stops adding strength (BM25's ``k1``)."""
B = 0.75
"""How much a long message is penalised for its length (BM25's ``b``)."""
AVERAGE_WORDS = 20
"""The message length (in words) that counts as ordinary: a fixed constant, not a
statistic of the store, so a score never depends on other messages."""
CANDIDATES = 200
"""How many matches of the engine, by its own rank, a text search scores at least."""
TOLERANCE = 1e-9
"""How far two backends' scores of one message may differ (float rounding only)."""


def query_terms(text: str) -> list[str]:
    """The distinct lower-cased words of ``text``, in order (linear: a dict keeps the
    first occurrence of each word; a list lookup made long queries quadratic)."""
    return list(dict.fromkeys(_WORD.findall(text.casefold())))


def text_score(terms: list[str], content: str) -> float:
    """The 0..1 score of ``content`` for the query words ``terms`` (see the module
    docstring); 0.0 when it contains none of them."""
    if not terms:
        return 0.0
    words = _WORD.findall(content.casefold())
    if not words:
        return 0.0
    wanted = dict.fromkeys(terms, 0)
    for word in words:
        if word in wanted:
            wanted[word] += 1
    norm = K1 * (1.0 - B + B * len(words) / AVERAGE_WORDS)
    found = 0
    strength = 0.0
    for count in wanted.values():
        if count:
            found += 1
            strength += count * (K1 + 1.0) / (count + norm)
    if not found:
        return 0.0
    return found / len(terms) * (0.5 + 0.5 * strength / (1.0 + strength))


def candidate_pool(limit: int) -> int:
    """How many of the engine's best matches a search returning ``limit`` hits scores."""
    return max(limit, CANDIDATES)
