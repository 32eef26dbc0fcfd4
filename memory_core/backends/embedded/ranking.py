"""Scoring long-term search candidates: the text score of :mod:`memory_core.scoring`,
and with a query embedding the cosine of stored embeddings (the larger of the two), as
message search does it."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterable, Sequence

from memory_core.store import text_score

from .codec import unpack_vector

Scored = list[tuple[sqlite3.Row, float]]


def by_text(
    rows: Iterable[sqlite3.Row], terms: list[str], text_of: Callable[[sqlite3.Row], str]
) -> dict[str, tuple[sqlite3.Row, float]]:
    """Each row with its text score (rows scoring 0 are left out)."""
    found: dict[str, tuple[sqlite3.Row, float]] = {}
    for row in rows:
        score = text_score(terms, text_of(row))
        if score > 0:
            found[row["id"]] = (row, score)
    return found


def add_vector_hits(
    found: dict[str, tuple[sqlite3.Row, float]],
    rows: Iterable[sqlite3.Row],
    vector: Sequence[float],
) -> None:
    """Raise each row's score to its cosine with ``vector`` when that is higher and
    positive (rows embedded by another model, of another length, are skipped)."""
    norm = math.sqrt(sum(x * x for x in vector))
    if not norm:
        return
    for row in rows:
        stored = unpack_vector(row["embedding"])
        if stored is None or len(stored) != len(vector):
            continue
        length = math.sqrt(sum(x * x for x in stored))
        if not length:
            continue
        similarity = min(
            sum(a * b for a, b in zip(stored, vector, strict=True)) / (length * norm), 1.0
        )
        if similarity > 0:
            before = found.get(row["id"])
            if before is None or before[1] < similarity:
                found[row["id"]] = (row, similarity)


def best(found: dict[str, tuple[sqlite3.Row, float]], limit: int) -> Scored:
    """The ``limit`` best, then newest, then by id."""
    ranked = sorted(found.values(), key=lambda hit: (-hit[1], -hit[0]["created_at"], hit[0]["id"]))
    return ranked[:limit]
