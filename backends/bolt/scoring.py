"""Search helpers: a safe Lucene query, 0..1 scores and exact metadata filters.

Scores. A full-text hit is scored on the shared scale of :mod:`memory_core.scoring` with
the Lucene (BM25) score as the raw relevance. A
vector hit's score is the cosine similarity clipped to 0..1 (Neo4j reports cosine as
``(1 + cos) / 2``; it is mapped back, and hits with ``cos <= 0`` are dropped as
unrelated). A message found both ways keeps the higher of its two scores.

Metadata filters. ``{key: value}`` keeps a message whose top-level metadata has ``key``
with a value equal to ``value`` *with JSON types respected*: ``True`` never equals
``1``, ``1`` never equals ``"1"``, ``None`` matches only a stored ``null`` (not a missing
key). Numbers compare by value, so ``1`` matches a stored ``1.0`` but never ``10`` or
``1.5`` (the reference's substring match on the JSON text did). Lists compare
element-wise, dicts by keys and values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_HAS_WORD = re.compile(r"\w", re.UNICODE)


def lucene_query(text: str) -> str | None:
    """A Lucene query matching any whitespace-separated term of ``text``.

    Each term is a quoted phrase with ``\\`` and ``"`` escaped, so no character of the
    user's text is ever a Lucene operator (``a:b (c" AND -d*`` searches the words a, b,
    c, and, d). Terms without a letter or digit are dropped; ``None`` means nothing is
    left to search for.
    """
    terms: list[str] = []
    for token in text.split():
        if _HAS_WORD.search(token) and token not in terms:
            terms.append(token)
    if not terms:
        return None
    return " OR ".join('"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"' for t in terms)


def same_value(stored: Any, wanted: Any) -> bool:
    """JSON-type-exact equality (see the module docstring)."""
    if isinstance(wanted, bool) or isinstance(stored, bool):
        return isinstance(wanted, bool) and isinstance(stored, bool) and stored is wanted
    if isinstance(wanted, int | float):
        return isinstance(stored, int | float) and stored == wanted
    if isinstance(wanted, list | tuple):
        return (
            isinstance(stored, list)
            and len(stored) == len(wanted)
            and all(same_value(s, w) for s, w in zip(stored, wanted, strict=True))
        )
    if isinstance(wanted, Mapping):
        return (
            isinstance(stored, dict)
            and stored.keys() == wanted.keys()
            and all(same_value(stored[k], wanted[k]) for k in wanted)
        )
    if wanted is None:
        return stored is None
    return type(stored) is type(wanted) and bool(stored == wanted)


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
    return all(key in metadata and same_value(metadata[key], want) for key, want in filters.items())
