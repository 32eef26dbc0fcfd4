"""The ``Embedder`` protocol and the dependency-free ``HashingEmbedder``."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from memory_core.embedding import BlockingEmbedder, Embedder, HashingEmbedder

pytestmark = pytest.mark.anyio


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_embed_gives_one_unit_vector_of_the_declared_length_per_text() -> None:
    embedder = HashingEmbedder(dimensions=64)
    texts = ["the cat sat", "an order is late", "x"]
    vectors = await embedder.embed(texts)
    assert len(vectors) == len(texts)
    for vector in vectors:
        assert len(vector) == 64
        assert math.fsum(v * v for v in vector) == pytest.approx(1.0)


async def test_the_default_has_256_dimensions() -> None:
    embedder = HashingEmbedder()
    assert embedder.dimensions == 256
    [vector] = await embedder.embed(["hello"])
    assert len(vector) == 256


async def test_it_is_deterministic_across_instances() -> None:
    first = await HashingEmbedder(32).embed(["order ORD-1234 is late"])
    second = await HashingEmbedder(32).embed(["order ORD-1234 is late"])
    assert first == second
    assert HashingEmbedder(32).embed_one("order ORD-1234 is late") == first[0]


def test_different_texts_give_different_vectors() -> None:
    embedder = HashingEmbedder()
    vectors = [embedder.embed_one(t) for t in ("cats purr", "dogs bark", "cats bark")]
    assert len({tuple(v) for v in vectors}) == 3
    # word order matters through the bigrams
    assert embedder.embed_one("dog bites man") != embedder.embed_one("man bites dog")


def test_case_and_punctuation_do_not_change_the_vector() -> None:
    embedder = HashingEmbedder()
    assert embedder.embed_one("Hello, World!") == embedder.embed_one("hello world")


def test_texts_sharing_words_are_closer_than_texts_sharing_none() -> None:
    embedder = HashingEmbedder()
    base = embedder.embed_one("the parcel for order 1234 arrived late")
    near = embedder.embed_one("order 1234 arrived late again")
    assert _cosine(base, near) > 0
    assert _cosine(base, near) > _cosine(base, embedder.embed_one("quantum chromodynamics"))


def test_a_text_without_words_is_the_zero_vector() -> None:
    assert HashingEmbedder(8).embed_one(" ... !? ") == [0.0] * 8


@pytest.mark.parametrize("dimensions", [7, 0, -1, True, 8.0, "256", None])
def test_bad_dimensions_are_refused(dimensions: Any) -> None:
    with pytest.raises(ValueError, match="dimensions"):
        HashingEmbedder(dimensions)


def test_repr_shows_the_dimensions() -> None:
    assert repr(HashingEmbedder(12)) == "HashingEmbedder(dimensions=12)"


def test_the_hashing_embedder_is_an_embedder() -> None:
    assert isinstance(HashingEmbedder(), Embedder)


def test_the_protocol_needs_dimensions_and_embed() -> None:
    class Custom:
        dimensions = 3

        async def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [[1.0, 0.0, 0.0] for _ in texts]

    class NoEmbed:
        dimensions = 3

    class NoDimensions:
        async def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return []

    assert isinstance(Custom(), Embedder)
    assert not isinstance(NoEmbed(), Embedder)
    assert not isinstance(NoDimensions(), Embedder)


class _Threaded(BlockingEmbedder):
    dimensions = 2

    def __init__(self) -> None:
        self.threads: list[int] = []

    def embed_now(self, texts: list[str]) -> list[list[float]]:
        self.threads.append(threading.get_ident())
        return [[1.0, 0.0] for _ in texts]


async def test_a_blocking_embedder_computes_in_a_worker_thread() -> None:
    model = _Threaded()
    assert isinstance(model, Embedder)
    assert await model.embed(("a", "b")) == [[1.0, 0.0], [1.0, 0.0]]
    assert model.threads and model.threads[0] != threading.get_ident()
    assert await model.embed([]) == [] and len(model.threads) == 1  # nothing to compute
