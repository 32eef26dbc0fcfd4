"""The ``Embedder`` protocol, a base for models that block, and a dependency-free
deterministic embedder."""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import anyio

_TOKEN = re.compile(r"\w+", re.UNICODE)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into fixed-size vectors. ``dimensions`` is the vector length."""

    dimensions: int

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order."""
        ...


class BlockingEmbedder(ABC):
    """An :class:`Embedder` whose model computes in the calling thread (a local model on
    the CPU): subclasses set ``dimensions`` and write :meth:`embed_now`; :meth:`embed`
    runs it in a worker thread, so the event loop goes on while a batch is computed."""

    dimensions: int

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order (computed in a worker thread)."""
        if not texts:
            return []
        return await anyio.to_thread.run_sync(self.embed_now, list(texts))

    @abstractmethod
    def embed_now(self, texts: list[str]) -> list[list[float]]:
        """The vectors of ``texts``, in the calling thread."""


class HashingEmbedder:
    """Feature hashing of lower-cased word unigrams and bigrams, L2-normalised.

    Deterministic across processes and machines (it uses BLAKE2, not ``hash``), so it is
    usable in tests and demos; texts sharing words get a positive cosine similarity.
    It has no notion of meaning: use a real model in production.
    """

    def __init__(self, dimensions: int = 256) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 8:
            raise ValueError("dimensions must be an int >= 8")
        self.dimensions = dimensions

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimensions={self.dimensions})"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.embed_one(text) for text in texts]

    def embed_one(self, text: str) -> list[float]:
        """The vector of one text (synchronous)."""
        vector = [0.0] * self.dimensions
        words = [w.lower() for w in _TOKEN.findall(text)]
        features = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
        for feature in features:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % self.dimensions
            sign = 1.0 if digest[4] & 1 else -1.0
            vector[index] += sign
        norm = math.sqrt(sum(v * v for v in vector))
        return [v / norm for v in vector] if norm else vector
