"""search_messages: scoping, limit, threshold, filters, scores."""

from __future__ import annotations

import itertools

from ..checks import assert_scores, word
from ..embedder import ConceptEmbedder
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


class SearchSuite(SuiteBase):
    """Scenarios of area ``search``."""

    @scenario("search.finds_text", "text search finds a message by a word it contains")
    async def test_search_finds_text(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        await harness.backend.add_message(handle, "user", "nothing to see here")
        stored = await harness.backend.add_message(handle, "user", f"the {term} is here")
        hits = await harness.backend.search_messages(term, session_id=handle)
        assert [h.id for h in hits] == [stored.id]
        assert hits[0].content == f"the {term} is here"
        assert_scores(hits)

    @scenario("search.scores", "every hit has a score in 0..1 and hits come best first")
    async def test_search_scores(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term, other = word(), word()
        await harness.backend.add_message(handle, "user", f"{term} {other}")
        await harness.backend.add_message(handle, "user", f"{term} alone in a longer sentence")
        await harness.backend.add_message(handle, "user", f"{other} only")
        hits = await harness.backend.search_messages(f"{term} {other}", session_id=handle)
        assert hits, "no hits for words that were written"
        assert_scores(hits)
        assert hits[0].content == f"{term} {other}", "the message with both words is not first"

    @scenario("search.limit", "limit caps the number of hits")
    async def test_search_limit(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        for n in range(5):
            await harness.backend.add_message(handle, "user", f"{term} number {n}")
        assert len(await harness.backend.search_messages(term, session_id=handle, limit=2)) == 2
        assert len(await harness.backend.search_messages(term, session_id=handle, limit=10)) == 5

    @scenario(
        "search.session_scoping",
        "search with session_id returns only that session's messages",
    )
    async def test_search_session_scoping(self, harness: Harness) -> None:
        mine, other = await harness.new_session(), await harness.new_session()
        term = word()
        await harness.backend.add_message(mine, "user", f"{term} in mine")
        await harness.backend.add_message(other, "user", f"{term} in other")
        hits = await harness.backend.search_messages(term, session_id=mine, limit=10)
        assert [h.content for h in hits] == [f"{term} in mine"]

    @scenario(
        "search.conversation_id_scoping",
        "search with conversation_id returns only that conversation's messages",
    )
    async def test_search_conversation_id_scoping(self, harness: Harness) -> None:
        mine, other = await harness.new_session(), await harness.new_session()
        term = word()
        await harness.backend.add_message(mine, "user", f"{term} in mine")
        await harness.backend.add_message(other, "user", f"{term} in other")
        conversation = await harness.backend.get_conversation(mine)
        hits = await harness.backend.search_messages(term, conversation_id=conversation.id)
        assert [h.content for h in hits] == [f"{term} in mine"]

    @scenario("search.empty_session", "search in a session with no messages returns []")
    async def test_search_empty_session(self, harness: Harness) -> None:
        handle = await harness.new_session()
        assert await harness.backend.search_messages(word(), session_id=handle) == []

    @scenario(
        "search.no_match",
        "a word that was never written finds nothing",
    )
    async def test_search_no_match(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await harness.backend.add_message(handle, "user", f"about {word()}")
        assert await harness.backend.search_messages(word(), session_id=handle) == []

    @scenario(
        "search.global",
        "search without a session finds matches in every session",
        requires="search_global",
    )
    async def test_search_global(self, harness: Harness) -> None:
        first, second = await harness.new_session(), await harness.new_session()
        term = word()
        await harness.backend.add_message(first, "user", f"{term} one")
        await harness.backend.add_message(second, "user", f"{term} two")
        hits = await harness.backend.search_messages(term, limit=10)
        assert sorted(h.content for h in hits) == [f"{term} one", f"{term} two"]
        assert_scores(hits)

    @scenario(
        "search.empty_store",
        "search without a session on an empty store returns []",
        requires="search_global",
    )
    async def test_search_empty_store(self, harness: Harness) -> None:
        backend, user = await harness.empty_scope()
        assert await backend.search_messages("anything", user_identifier=user) == []
        assert await backend.search_messages(word(), user_identifier=user) == []

    @scenario(
        "search.threshold",
        "threshold drops exactly the hits scoring below it",
        requires="search_threshold",
    )
    async def test_search_threshold(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term, other = word(), word()
        await harness.backend.add_message(handle, "user", f"{term} {other}")
        await harness.backend.add_message(handle, "user", f"{term} with many more words added")
        await harness.backend.add_message(handle, "user", f"{term}")
        hits = await harness.backend.search_messages(f"{term} {other}", session_id=handle)
        assert hits
        scores = sorted({h.score or 0.0 for h in hits})
        # cut between distinct scores, so float rounding cannot decide the outcome
        cuts = [0.0] + [(a + b) / 2 for a, b in itertools.pairwise(scores)]
        if scores[-1] < 0.999:
            cuts.append((scores[-1] + 1.0) / 2)
        for cut in cuts:
            kept = await harness.backend.search_messages(
                f"{term} {other}", session_id=handle, threshold=cut
            )
            assert {h.id for h in kept} == {h.id for h in hits if (h.score or 0.0) >= cut}
            assert all((h.score or 0.0) >= cut for h in kept)

    @scenario(
        "search.metadata_filters",
        "metadata_filters keep only messages whose metadata values equal them exactly",
        requires="search_metadata_filters",
    )
    async def test_search_metadata_filters(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        for topic, n in (("a", 1), ("b", 1), ("a", "1")):
            await harness.backend.add_message(
                handle, "user", f"{term} {topic} {n!r}", metadata={"topic": topic, "n": n}
            )
        hits = await harness.backend.search_messages(
            term, session_id=handle, metadata_filters={"topic": "a", "n": 1}
        )
        assert [h.content for h in hits] == [f"{term} a 1"]
        assert hits[0].metadata == {"topic": "a", "n": 1}

    @scenario(
        "search.vector",
        "with an embedder, search finds a message by meaning with no word in common (plain "
        "text search does not) and ranks the most similar first",
        requires="vector_search",
    )
    async def test_search_vector(self, harness: Harness) -> None:
        query = "dinner booking"
        texts = [
            "the weather in lisbon is sunny",
            "we need a reservation for supper tonight",
            "a reservation at the garage for my car",
        ]
        assert not set(query.split()) & {w for t in texts for w in t.split()}
        backend = await harness.open(embedder=ConceptEmbedder())
        handle = await harness.new_session(backend=backend)
        _, target, partial = [await backend.add_message(handle, "user", text) for text in texts]
        hits = await backend.search_messages(query, session_id=handle)
        found = [h.id for h in hits]
        assert found and found[0] == target.id, (
            f"the message meaning {query!r} is not the first hit: {[h.content for h in hits]}"
        )
        if partial.id in found:
            assert found.index(partial.id) > 0
        assert_scores(hits)
        # control: without the embedder the same words find nothing, so only the
        # embedder can have found the target
        plain = await harness.new_session()
        for text in texts:
            await harness.backend.add_message(plain, "user", text)
        missed = await harness.backend.search_messages(query, session_id=plain)
        assert target.content not in [h.content for h in missed], (
            "plain text search found the target: the scenario would not test the embedder"
        )

    @scenario("search.hit_fields", "hits carry the stored id, role, content and metadata")
    async def test_search_hit_fields(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        meta = {"k": [1, True]} if harness.caps.message_metadata else None
        stored = await harness.backend.add_message(
            handle, "assistant", f"reply {term}", metadata=meta
        )
        [hit] = await harness.backend.search_messages(term, session_id=handle)
        assert (hit.id, hit.role, hit.content) == (stored.id, stored.role, stored.content)
        assert hit.metadata == (meta or {})
