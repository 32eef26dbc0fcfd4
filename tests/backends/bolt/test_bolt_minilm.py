"""MiniLMEmbedder on Neo4j: 384-number vectors in the vector index, a hit found by
meaning in one session and across a user's sessions, each scoring its exact cosine."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory_core import MemoryBackend

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

Unique = Callable[[str], str]


async def test_search_finds_by_meaning_with_minilm(
    open_bolt: Callable[..., MemoryBackend], unique: Unique
) -> None:
    pytest.importorskip("tokenizers", reason="extra 'minilm' not installed")
    from memory_core.embedding_minilm import MiniLMEmbedder

    embedder, user, session = MiniLMEmbedder(), unique("u"), unique("s")
    texts = ["Being a nurse keeps me busy.", "Noted. Anything else on your mind?"]
    question = "What do I do for a living?"
    async with open_bolt(embedder=embedder, multi_tenant=True) as backend:
        for text in texts:
            await backend.add_message(session, "user", text, user_identifier=user)
        await backend.add_message(unique("s"), "user", texts[1], user_identifier=user)
        within = await backend.search_messages(question, session_id=session, user_identifier=user)
        across = await backend.search_messages(question, user_identifier=user)
    [query] = embedder.embed_now([question])
    for hits in (within, across):
        assert hits[0].content == texts[0]
        for hit in hits:
            [stored] = embedder.embed_now([hit.content])
            cosine = sum(a * b for a, b in zip(query, stored, strict=True))
            assert hit.score == pytest.approx(cosine, abs=1e-6)
    assert len(across) == 3  # every positive cosine in the user's scope
