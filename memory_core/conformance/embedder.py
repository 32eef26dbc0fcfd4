"""A tiny deterministic embedder that knows a few synonyms, for the vector-search scenario.

Text search matches words; an embedder should match meaning. To tell the two apart the
suite needs an embedder under which texts with NO word in common are still similar:
:class:`ConceptEmbedder` maps each group of :data:`CONCEPTS` (``dinner``/``supper``,
``booking``/``reservation`` …) to one shared dimension, and hashes every other word into
the dimensions after them, so unrelated words never look like a concept.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

CONCEPTS: tuple[tuple[str, ...], ...] = (
    ("dinner", "supper", "meal"),
    ("booking", "reservation", "reserve"),
    ("weather", "sunny", "forecast"),
    ("cat", "kitten"),
    ("car", "garage"),
)

_WORD = re.compile(r"\w+", re.UNICODE)
_CONCEPT_OF = {w: i for i, group in enumerate(CONCEPTS) for w in group}


class ConceptEmbedder:
    """Synonyms of :data:`CONCEPTS` share a dimension; other words are hashed elsewhere.

    ``dimensions`` defaults to 256, the size of :class:`memory_core.HashingEmbedder`, so
    it fits a Neo4j vector index the suite (or a default set-up) already created.
    """

    def __init__(self, dimensions: int = 256) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int):
            raise TypeError("dimensions must be an int")
        if dimensions < len(CONCEPTS) + 8:
            raise ValueError(f"dimensions must be at least {len(CONCEPTS) + 8}")
        self.dimensions = dimensions

    def __repr__(self) -> str:
        return f"ConceptEmbedder(dimensions={self.dimensions})"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order."""
        return [self.embed_one(text) for text in texts]

    def embed_one(self, text: str) -> list[float]:
        """The vector of one text (all zeros when it has no word)."""
        vector = [0.0] * self.dimensions
        for word in _WORD.findall(text.lower()):
            vector[self._dimension(word)] += 1.0
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm else vector

    def _dimension(self, word: str) -> int:
        concept = _CONCEPT_OF.get(word)
        if concept is not None:
            return concept
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=4).digest()
        spare = self.dimensions - len(CONCEPTS)
        return len(CONCEPTS) + int.from_bytes(digest, "little") % spare
