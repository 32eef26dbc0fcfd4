"""WordLlamaEmbedder: the bundled model, loaded with the network refused, as an Embedder."""

from __future__ import annotations

import math
import socket
from typing import Any

import pytest

pytest.importorskip("wordllama", reason="extra 'embed' not installed")

from memory_core import Embedder, open_backend
from memory_core.embedding_wordllama import DIMENSIONS, WordLlamaEmbedder


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_it_loads_from_the_package_with_the_network_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the model tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    from memory_core import embedding_wordllama

    embedding_wordllama._model.cache_clear()
    embedder = WordLlamaEmbedder(128)
    assert isinstance(embedder, Embedder)
    assert embedder.dimensions == 128
    [vector] = embedder.embed_now(["a text"])
    assert len(vector) == 128


@pytest.mark.anyio
async def test_vectors_are_unit_length_in_order_and_close_by_meaning() -> None:
    embedder = WordLlamaEmbedder()
    texts = [
        "What do I do for a living?",
        "I work night shifts as a nurse at the hospital.",
        "The weather was lovely at the beach.",
    ]
    vectors = await embedder.embed(texts)
    assert [len(v) for v in vectors] == [256] * 3
    assert all(math.isclose(_cosine(v, v), 1.0, abs_tol=1e-5) for v in vectors)
    question, job, weather = vectors
    assert _cosine(question, job) > _cosine(question, weather) + 0.05
    # the same text, the same vector, whatever else is in the call
    assert (await embedder.embed([texts[1]]))[0] == job
    assert await embedder.embed([]) == []


def test_a_text_without_tokens_is_the_zero_vector() -> None:
    [empty, word] = WordLlamaEmbedder(64).embed_now(["", "word"])
    assert empty == [0.0] * 64
    assert math.isclose(_cosine(word, word), 1.0, abs_tol=1e-5)


@pytest.mark.parametrize("dimensions", [0, 32, 512, True, 256.0])
def test_other_dimensions_are_refused(dimensions: Any) -> None:
    with pytest.raises(ValueError, match="dimensions must be one of 64, 128, 256"):
        WordLlamaEmbedder(dimensions)
    assert DIMENSIONS == (64, 128, 256)


@pytest.mark.anyio
async def test_search_finds_by_meaning_with_it() -> None:
    async with open_backend("memory://", embedder=WordLlamaEmbedder()) as memory:
        job = await memory.add_message("s", "user", "I work night shifts as a nurse.")
        await memory.add_message("s", "user", "The weather was lovely at the beach.")
        hits = await memory.search_messages("What is my profession?", session_id="s")
    assert hits[0].id == job.id
    assert repr(WordLlamaEmbedder(64)) == "WordLlamaEmbedder(dimensions=64)"
