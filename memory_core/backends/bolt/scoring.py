"""Search helpers: a safe Lucene query and exact metadata filters.

Scores. A full-text hit is scored on the shared scale of :mod:`memory_core.scoring` with
the Lucene (BM25) score as the raw relevance. A vector hit's score is the cosine
similarity clipped to 0..1 (Neo4j reports cosine as ``(1 + cos) / 2``; it is mapped back,
and hits with ``cos <= 0`` are dropped as unrelated). A message found both ways keeps the
higher of its two scores.

Metadata filters follow :mod:`memory_core.filters` (type-exact JSON equality), applied in
Python to the stored JSON text: ``1`` never matches ``10`` or ``1.5`` (the reference's
substring match on the JSON text did).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memory_core.store import engine_terms, matches

MAX_CLAUSES = 1000
"""Clauses one Lucene query may hold (Lucene refuses more than 1024)."""


def lucene_queries(text: str) -> list[str]:
    """Lucene queries that together match any whitespace-separated term of ``text`` (or
    any word of a term that is more than one: :func:`~memory_core.scoring.engine_terms`)
    in the content, each within :data:`MAX_CLAUSES` terms (a query of 10,000 characters may
    hold 5,000 words, more than one Lucene query may).

    Each term is a quoted phrase with ``\\`` and ``"`` escaped, so no character of the
    user's text is ever a Lucene operator (``a:b (c" AND -d*`` searches the words a, b,
    c, and, d). Terms without a letter or digit are dropped; an empty list means nothing
    is left to search for.
    """
    phrases = [lucene_phrase(term) for term in engine_terms(text)]
    # The index also holds ``conversation_id`` (to restrict a search to one
    # conversation); the user's words are only ever matched against the content.
    return [
        f"content:({' OR '.join(phrases[i : i + MAX_CLAUSES])})"
        for i in range(0, len(phrases), MAX_CLAUSES)
    ]


def lucene_phrase(term: str) -> str:
    """``term`` as a quoted Lucene phrase, ``\\`` and ``"`` escaped: never an operator."""
    return '"' + term.replace("\\", "\\\\").replace('"', '\\"') + '"'


def metadata_matches(metadata_text: Any, filters: Mapping[str, Any]) -> bool:
    """True when the stored metadata JSON satisfies every filter."""
    if not filters:
        return True
    try:
        metadata = json.loads(metadata_text) if isinstance(metadata_text, str) else {}
    except ValueError:
        return False
    if not isinstance(metadata, dict):
        return False
    return matches(metadata, filters)
