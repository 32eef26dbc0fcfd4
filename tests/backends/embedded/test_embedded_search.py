"""search_messages on the embedded backend: text, vector, scope, threshold, filters."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from embedded_support import memory_fixture, snapshot  # noqa: F401

from memory_core import HashingEmbedder, MemoryBackend, open_backend
from memory_core.backends.embedded.fts import fts_query

pytestmark = pytest.mark.anyio


@pytest.fixture
async def corpus(memory: MemoryBackend) -> MemoryBackend:
    """Two sessions plus filler so bm25 statistics give spread-out scores."""
    await memory.add_message("s1", "user", "I love pizza with mushrooms")
    await memory.add_message("s1", "assistant", "Pizza pizza pizza, the best pizza")
    await memory.add_message("s1", "user", "What about pasta?")
    await memory.add_message("s2", "user", "pizza in another session")
    for i in range(12):
        await memory.add_message("filler", "user", f"unrelated filler number {i}")
    return memory


async def test_scores_are_in_range_best_first(corpus: MemoryBackend) -> None:
    hits = await corpus.search_messages("pizza")
    assert len(hits) == 3
    scores = [h.score for h in hits]
    assert all(s is not None and 0.0 < s < 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert hits[0].content == "Pizza pizza pizza, the best pizza"
    assert all(h.session_id and h.conversation_id for h in hits)


async def test_search_is_scoped_to_the_session(corpus: MemoryBackend) -> None:
    hits = await corpus.search_messages("pizza", session_id="s1")
    assert {h.session_id for h in hits} == {"s1"}
    assert len(hits) == 2
    cid = hits[0].conversation_id
    by_id = await corpus.search_messages("pizza", conversation_id=cid)
    assert [h.id for h in by_id] == [h.id for h in hits]
    assert await corpus.search_messages("pizza", session_id="nobody") == []
    everywhere = await corpus.search_messages("pizza")
    assert {h.session_id for h in everywhere} == {"s1", "s2"}


async def test_limit(corpus: MemoryBackend) -> None:
    assert len(await corpus.search_messages("filler", limit=5)) == 5
    assert len(await corpus.search_messages("filler", limit=100)) == 12
    top = await corpus.search_messages("pizza", limit=1)
    assert [h.content for h in top] == ["Pizza pizza pizza, the best pizza"]


async def test_threshold_drops_low_scores(corpus: MemoryBackend) -> None:
    hits = await corpus.search_messages("pizza")
    middle = sorted(h.score or 0.0 for h in hits)[1]
    kept = await corpus.search_messages("pizza", threshold=middle)
    assert len(kept) == 2
    assert all(h.score is not None and h.score >= middle for h in kept)
    assert await corpus.search_messages("pizza", threshold=1.0) == []
    assert len(await corpus.search_messages("pizza", threshold=0.0)) == 3


async def test_any_term_matches(corpus: MemoryBackend) -> None:
    hits = await corpus.search_messages("pasta mushrooms")
    assert {h.content for h in hits} == {"I love pizza with mushrooms", "What about pasta?"}


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '"pizza',
        "pizza*",
        "*",
        "pizza AND",
        "OR pizza",
        "NOT pizza",
        "-pizza",
        "pizza:",
        "col:pizza",
        "NEAR(pizza",
        "(pizza",
        "^pizza",
        "pizza + pasta",
        "'pizza'",
        "{pizza}",
        "pizza\x00",
        "__",
        "🍕",
    ],
)
async def test_fts_syntax_is_plain_text(corpus: MemoryBackend, query: str) -> None:
    hits = await corpus.search_messages(query)
    assert all("pizza" in h.content.lower() or "pasta" in h.content.lower() for h in hits)


async def test_operator_words_are_searchable(memory: MemoryBackend) -> None:
    await memory.add_message("s", "user", "salt AND pepper NOT sugar")
    await memory.add_message("s", "user", "nothing here")
    assert [h.content for h in await memory.search_messages("NOT")] == ["salt AND pepper NOT sugar"]
    assert len(await memory.search_messages('"AND"')) == 1


async def test_empty_store(memory: MemoryBackend) -> None:
    before = await snapshot(memory)
    assert await memory.search_messages("anything") == []
    assert await memory.search_messages("anything", session_id="s", threshold=0.5) == []
    assert await snapshot(memory) == before


@pytest.fixture
async def tagged(memory: MemoryBackend) -> MemoryBackend:
    values: list[tuple[str, dict[str, Any]]] = [
        ("int one", {"v": 1}),
        ("bool true", {"v": True}),
        ("string one", {"v": "1"}),
        ("float one", {"v": 1.0}),
        ("int zero", {"v": 0}),
        ("bool false", {"v": False}),
        ("null", {"v": None}),
        ("missing", {}),
        ("nested", {"v": {"a": 1, "b": [1, True]}}),
        ("list", {"v": [1, 2]}),
        ("two keys", {"v": 1, "w": "x"}),
    ]
    for content, metadata in values:
        await memory.add_message("s", "user", f"tagged {content}", metadata=metadata)
    return memory


async def _filtered(backend: MemoryBackend, filters: dict[str, object]) -> set[str]:
    hits = await backend.search_messages("tagged", metadata_filters=filters, limit=50)
    return {h.content.removeprefix("tagged ") for h in hits}


async def test_metadata_filters_are_type_exact(tagged: MemoryBackend) -> None:
    assert await _filtered(tagged, {"v": 1}) == {"int one", "float one", "two keys"}
    assert await _filtered(tagged, {"v": True}) == {"bool true"}
    assert await _filtered(tagged, {"v": "1"}) == {"string one"}
    assert await _filtered(tagged, {"v": 0}) == {"int zero"}
    assert await _filtered(tagged, {"v": False}) == {"bool false"}
    assert await _filtered(tagged, {"v": None}) == {"null"}
    assert await _filtered(tagged, {"v": 1, "w": "x"}) == {"two keys"}
    assert await _filtered(tagged, {"v": 1, "w": "y"}) == set()
    assert await _filtered(tagged, {"absent": 1}) == set()
    assert await _filtered(tagged, {}) == await _filtered(tagged, {})


async def test_metadata_filters_compare_nested_values(tagged: MemoryBackend) -> None:
    assert await _filtered(tagged, {"v": {"b": [1, True], "a": 1}}) == {"nested"}
    assert await _filtered(tagged, {"v": {"a": 1, "b": [1, 1]}}) == set()
    assert await _filtered(tagged, {"v": {"a": 1}}) == set()
    assert await _filtered(tagged, {"v": [1, 2]}) == {"list"}
    assert await _filtered(tagged, {"v": [2, 1]}) == set()


async def test_metadata_filters_apply_before_the_limit(tagged: MemoryBackend) -> None:
    hits = await tagged.search_messages("tagged", metadata_filters={"v": "1"}, limit=1)
    assert [h.content for h in hits] == ["tagged string one"]


@pytest.fixture
async def vectors() -> AsyncIterator[MemoryBackend]:
    async with open_backend("memory://", embedder=HashingEmbedder(256)) as backend:
        await backend.add_message("s", "user", "the quick brown fox jumps")
        await backend.add_message("s", "user", "completely different words here")
        await backend.add_message("s", "user", "fox without vector", generate_embedding=False)
        await backend.add_message("t", "user", "brown fox in another session")
        yield backend


async def test_vector_search_finds_similar_messages(vectors: MemoryBackend) -> None:
    hits = await vectors.search_messages("quick brown fox", session_id="s")
    contents = [h.content for h in hits]
    assert contents[0] == "the quick brown fox jumps"
    assert "fox without vector" in contents  # text search still covers it
    assert "completely different words here" not in contents
    assert all(h.score is not None and 0 < h.score <= 1 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)  # type: ignore[type-var]


async def test_vector_search_scope_threshold_and_limit(vectors: MemoryBackend) -> None:
    everywhere = await vectors.search_messages("brown fox")
    assert {h.session_id for h in everywhere} == {"s", "t"}
    assert len(await vectors.search_messages("brown fox", limit=1)) == 1
    assert await vectors.search_messages("brown fox", threshold=1.0) == []
    strong = await vectors.search_messages("quick brown fox jumps", threshold=0.8)
    assert [h.content for h in strong] == ["the quick brown fox jumps"]


async def test_vector_search_honours_metadata_filters() -> None:
    async with open_backend("memory://", embedder=HashingEmbedder(64)) as backend:
        await backend.add_message("s", "user", "red apple", metadata={"kind": "fruit"})
        await backend.add_message("s", "user", "red car", metadata={"kind": "vehicle"})
        hits = await backend.search_messages("red", metadata_filters={"kind": "vehicle"})
        assert [h.content for h in hits] == ["red car"]


def test_fts_query_quotes_every_term() -> None:
    # a term that is not one word is followed by its words ("hi" for '"hi"', "x" for "x*")
    assert fts_query('say "hi" OR x*') == '"say" OR """hi""" OR "hi" OR "OR" OR "x*" OR "x"'
    assert fts_query("my sister's name") == '"my" OR "sister\'s" OR "sister" OR "name"'
    assert fts_query("  * - : ") is None
    assert fts_query("dup dup") == '"dup"'


async def test_a_message_with_every_query_word_scores_at_least_half_on_a_tiny_store(
    memory: MemoryBackend,
) -> None:
    # bm25 gives a word found in half the store almost no weight; the shared scale does not.
    await memory.add_message("t", "user", "the cat sat on the mat")
    await memory.add_message("t", "user", "dogs bark loudly")
    hits = await memory.search_messages("cat", session_id="t", threshold=0.5)
    assert [h.content for h in hits] == ["the cat sat on the mat"]
    assert hits[0].score is not None and 0.5 <= hits[0].score <= 1.0
