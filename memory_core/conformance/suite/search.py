"""search_messages: scoping, limit, threshold, filters, scores."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

import anyio

from memory_core.scoring import TOLERANCE, query_terms, text_score

from ..checks import assert_scores, invalid, same_json, word
from ..embedder import ConceptEmbedder
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase

# One corpus every backend must score alike (search.reference_scores): plain ASCII words,
# which every engine's tokenizer splits the same way; lengths, repeats, case and
# punctuation vary, and some messages hold one query word or none.
REFERENCE_CORPUS = (
    ("user", "Order ORD-1234 is late"),
    ("assistant", "Sorry to hear that, let me check the order"),
    ("user", "late order"),
    ("assistant", "The courier says the order is late, very late, because of the weather"),
    ("user", "LATE? Order! late... order?"),
    ("assistant", "It was shipped on Monday"),
    ("user", "thanks"),
    (
        "user",
        "one more question about a completely different order that I placed for my sister "
        "last week which has nothing to do with the parcel we talked about before today",
    ),
)
REFERENCE_QUERIES = ("late order", "Order", "weather courier late", "shipped thanks monday")


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
        "search.limit_keeps_best",
        "limit keeps the best hits, wherever they were written (not the first N matches)",
    )
    async def test_search_limit_keeps_best(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term, other = word(), word()
        weak = [
            {"role": "user", "content": f"{term} weak match number {n} with filler words"}
            for n in range(12)
        ]
        await harness.backend.bulk_add_messages(handle, weak)
        best = await harness.backend.add_message(handle, "user", f"{term} {other}")
        hits = await harness.backend.search_messages(f"{term} {other}", session_id=handle, limit=3)
        assert len(hits) == 3
        assert hits[0].id == best.id, "the best hit was dropped or not ranked first"

    @scenario(
        "search.score_scale",
        "text scores are absolute: a hit with every query word scores >= 0.5, one with half of "
        "them 0.25..0.5, also when no better hit exists",
    )
    async def test_search_score_scale(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term, other = word(), word()
        query = f"{term} {other}"
        await harness.backend.add_message(handle, "user", f"{term} only the first word")
        await harness.backend.add_message(handle, "user", f"just {other} here")
        halves = await harness.backend.search_messages(query, session_id=handle)
        assert len(halves) == 2, f"expected both half matches: {[h.content for h in halves]}"
        for hit in halves:
            assert hit.score is not None and 0.25 - 1e-9 <= hit.score <= 0.5 + 1e-9, (
                f"half the query words scored {hit.score}: scores are relative, not absolute"
            )
        full = await harness.backend.add_message(handle, "user", f"{other} and {term}")
        hits = await harness.backend.search_messages(query, session_id=handle)
        assert hits[0].id == full.id
        assert hits[0].score is not None and 0.5 < hits[0].score <= 1.0, (
            f"a hit with every query word scored {hits[0].score}: the engine's rank must lift "
            "it above 0.5"
        )
        assert_scores(hits)

    @scenario(
        "search.reference_scores",
        "text scores are the shared scale's: each hit of a fixed corpus scores "
        "memory_core.scoring.text_score(query, content) within scoring.TOLERANCE, whatever "
        "else the store holds, so every backend scores it alike; every message with a "
        "query word is found, best first",
    )
    async def test_search_reference_scores(self, harness: Harness) -> None:
        handle = await harness.new_session()
        for role, content in REFERENCE_CORPUS:
            await harness.backend.add_message(handle, role, content)
        for query in REFERENCE_QUERIES:
            hits = await harness.backend.search_messages(query, session_id=handle, limit=20)
            terms = query_terms(query)
            expected = {c: text_score(terms, c) for _, c in REFERENCE_CORPUS}
            wanted = sorted(c for c, score in expected.items() if score > 0)
            assert sorted(h.content for h in hits) == wanted, (
                f"{query!r} found {sorted(h.content for h in hits)}, not {wanted}"
            )
            for hit in hits:
                assert hit.score is not None and abs(hit.score - expected[hit.content]) <= (
                    TOLERANCE
                ), (
                    f"{query!r}: {hit.content!r} scored {hit.score}, the shared scale says "
                    f"{expected[hit.content]}"
                )
            assert_scores(hits)

    @scenario(
        "search.query_special_characters",
        "query text is plain words: quotes, operators (AND OR NOT NEAR), * - : ^ ( ) % _ "
        "never raise and never change what is found; a NUL never raises",
    )
    async def test_search_query_special_characters(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term, other = word(), word()
        stored = await harness.backend.add_message(handle, "user", f"she said {term} twice")
        await harness.backend.add_message(handle, "user", f"unrelated {other}")
        queries = [
            f'"{term}"',
            f'{term}" OR "x',
            f"{term} AND NOT {word()}",
            f"({term}) NEAR/2 -{word()}*",
            f"{term}: ^{word()} %_[",
            f"{term} '; DROP TABLE messages; --",
        ]
        for query in queries:
            hits = await harness.backend.search_messages(query, session_id=handle)
            assert stored.id in [h.id for h in hits], f"{query!r} did not find the message"
            assert all(h.content != f"unrelated {other}" for h in hits), f"{query!r}"
        # a NUL is not a word: whether it separates words is the engine's choice, but it
        # must not raise
        nul = f"{term}\x00{other}"
        assert isinstance(await harness.backend.search_messages(nul, session_id=handle), list)
        assert await harness.contents(handle) == [f"she said {term} twice", f"unrelated {other}"]

    @scenario(
        "search.session_scoping",
        "search with session_id returns only that session's messages",
    )
    async def test_search_session_scoping(self, harness: Harness) -> None:
        mine = await harness.new_session()
        others = [await harness.new_session()]
        if harness.caps.client_chosen_ids:  # names that start with mine, or mine as pattern
            others.append(await harness.new_session(name=f"{mine}-sibling"))
            others.append(await harness.new_session(name=f"{mine}%"))
        term = word()
        await harness.backend.add_message(mine, "user", f"{term} in mine")
        for other in others:
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
        # a cut equal to a returned score keeps that hit (threshold is inclusive)
        top = max(h.score or 0.0 for h in hits)
        kept = await harness.backend.search_messages(
            f"{term} {other}", session_id=handle, threshold=top
        )
        assert [h.score for h in kept if h.score == top], "threshold equal to a score dropped it"

    @scenario(
        "search.metadata_filters",
        "metadata_filters keep only messages whose metadata values equal them exactly: "
        "True, 1, 1.0, '1', 10 and null are told apart (1 equals 1.0), a missing key is not null",
        requires="search_metadata_filters",
    )
    async def test_search_metadata_filters(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        values: dict[str, Any] = {
            "int": 1,
            "bool": True,
            "str": "1",
            "float": 1.0,
            "ten": 10,
            "null": None,
            "list": [1],
        }
        for label, value in values.items():
            await harness.backend.add_message(
                handle, "user", f"{term} {label}", metadata={"n": value, "topic": "a"}
            )
        await harness.backend.add_message(handle, "user", f"{term} missing", metadata={"t": 1})
        await harness.backend.add_message(
            handle, "user", f"{term} other topic", metadata={"n": 1, "topic": "b"}
        )
        expected: list[tuple[dict[str, Any], set[str]]] = [
            ({"n": 1}, {"int", "float", "other topic"}),
            ({"n": 1, "topic": "a"}, {"int", "float"}),
            ({"n": True}, {"bool"}),
            ({"n": "1"}, {"str"}),
            ({"n": 10}, {"ten"}),
            ({"n": None}, {"null"}),
            ({"n": 2}, set()),
        ]
        for filters, labels in expected:
            hits = await harness.backend.search_messages(
                term, session_id=handle, limit=50, metadata_filters=filters
            )
            got = {h.content.removeprefix(f"{term} ") for h in hits}
            assert got == labels, f"metadata_filters={filters!r} kept {sorted(got)}"
        [hit] = await harness.backend.search_messages(
            term, session_id=handle, metadata_filters={"n": True}
        )
        same_json(hit.metadata, {"n": True, "topic": "a"})

    @scenario(
        "search.filters_before_limit",
        "metadata_filters are applied before limit: a weak matching hit is found under many "
        "stronger ones that do not match",
        requires="search_metadata_filters",
    )
    async def test_search_filters_before_limit(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term, other = word(), word()
        kept = await harness.backend.add_message(
            handle, "user", f"{term} weak but wanted", metadata={"keep": True}
        )
        strong = [
            {"role": "user", "content": f"{term} {other}", "metadata": {"keep": False}}
            for _ in range(8)
        ]
        await harness.backend.bulk_add_messages(handle, strong)
        hits = await harness.backend.search_messages(
            f"{term} {other}", session_id=handle, limit=2, metadata_filters={"keep": True}
        )
        assert [h.id for h in hits] == [kept.id]

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
        wordless = await backend.add_message(handle, "user", "👍 !!")  # a zero vector
        hits = await backend.search_messages(query, session_id=handle)
        found = [h.id for h in hits]
        assert found and found[0] == target.id, (
            f"the message meaning {query!r} is not the first hit: {[h.content for h in hits]}"
        )
        if partial.id in found:
            assert found.index(partial.id) > 0
            scores = {h.id: h.score or 0.0 for h in hits}
            assert scores[partial.id] < scores[target.id], "a weaker match scored as high"
        for hit in hits:
            if hit.id == wordless.id:
                assert not hit.score, f"a message with no words scored {hit.score}"
        [batched] = await backend.bulk_add_messages(
            handle, [{"role": "user", "content": "a supper reservation was made"}]
        )
        hits = await backend.search_messages(query, session_id=handle)
        assert batched.id in [h.id for h in hits], "a batch-written message was not embedded"
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

    @scenario(
        "search.vector_filters",
        "metadata_filters keep matches by meaning as they keep matches by words: a similar "
        "message whose metadata does not match is not found, in a session and store-wide",
        requires=("vector_search", "search_metadata_filters"),
    )
    async def test_search_vector_filters(self, harness: Harness) -> None:
        backend = await harness.open(embedder=ConceptEmbedder())
        handle = await harness.new_session(backend=backend)
        kept = await backend.add_message(
            handle, "user", "we need a reservation for supper tonight", metadata={"k": 1}
        )
        dropped = await backend.add_message(handle, "user", "a meal reservation", metadata={"k": 2})
        query = "dinner booking"  # no word of either: found by meaning only
        assert not set(query.split()) & set(f"{kept.content} {dropped.content}".split())
        unfiltered = await backend.search_messages(query, session_id=handle)
        assert {kept.id, dropped.id} <= {h.id for h in unfiltered}, "control: both found"
        scopes: list[dict[str, Any]] = [{"session_id": handle}]
        if harness.caps.search_global:
            scopes.append({})
        for scope in scopes:
            hits = await backend.search_messages(query, metadata_filters={"k": 1}, **scope)
            assert kept.id in [h.id for h in hits], f"the matching message was lost ({scope})"
            assert dropped.id not in [h.id for h in hits], (
                f"a message whose metadata does not match was found by meaning ({scope})"
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

    @scenario(
        "search.many_words",
        "a query of as many distinct words as the limit allows finds a message by its last "
        "word (more words than one full-text query of the engine may hold)",
    )
    async def test_search_many_words(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        stored = await harness.backend.add_message(handle, "user", f"the {term} is here")
        room = (harness.backend.limits.max_query_chars or 10_000) - len(term) - 1
        filler = list(itertools.islice((f"q{n:x}" for n in itertools.count(4096)), room // 6))
        query = f"{' '.join(filler)} {term}"
        assert len(set(filler)) > 1024, "control: more words than one Lucene query holds"
        hits = await harness.backend.search_messages(query, session_id=handle)
        assert [h.id for h in hits] == [stored.id]

    @scenario(
        "search.recency",
        "recency_half_life ranks a newer hit above an older, better one many half-lives "
        "older, returns the weighted scores (never above the plain ones), and does the same "
        "for get_context's relevant messages; a bad recency_half_life is refused, naming it",
    )
    async def test_search_recency(self, harness: Harness) -> None:
        handle, term = await harness.new_session(), word()
        old = await harness.backend.add_message(handle, "user", f"{term} {term} {term}")
        await anyio.sleep(0.5)  # 8 half-lives below: the old one weighs about 1/300
        new = await harness.backend.add_message(handle, "user", f"{term} among other words")
        for n in range(2):
            await harness.backend.add_message(handle, "assistant", f"later {n}")
        half_life = timedelta(milliseconds=60)
        plain = await harness.backend.search_messages(term, session_id=handle)
        assert [h.id for h in plain] == [old.id, new.id], "control: the older scores higher"
        recent = await harness.backend.search_messages(
            term, session_id=handle, recency_half_life=half_life
        )
        assert [h.id for h in recent] == [new.id, old.id], "the newer hit is not first"
        scores = {h.id: h.score for h in plain}
        assert all(0 < (h.score or 0) <= (scores[h.id] or 0) for h in recent)
        assert (recent[0].score or 0) < (scores[new.id] or 0), "the score is not weighed"
        slow = await harness.backend.search_messages(
            term, session_id=handle, recency_half_life=timedelta(days=3650)
        )
        assert [h.id for h in slow] == [old.id, new.id], "a long half-life changed the order"

        async def context(**options: Any) -> str:
            """The relevant section only (a service's notes may quote any message)."""
            text = await harness.backend.get_context(
                term, session_id=handle, max_messages=2, max_hits=1, long_term_chars=0, **options
            )
            return text.partition("## Relevant messages\n")[2]

        assert old.content in await context() and new.content not in await context()
        weighed = await context(recency_half_life=half_life)
        assert new.content in weighed and old.content not in weighed, "context not weighed"
        bad: Any
        for bad in (timedelta(0), timedelta(seconds=-1), 5, 1.5, "1d", True):
            with invalid("recency_half_life"):
                await harness.backend.search_messages(
                    term, session_id=handle, recency_half_life=bad
                )
            with invalid("recency_half_life"):
                await context(recency_half_life=bad)

    @scenario(
        "search.per_session",
        "per_session keeps the best hits of each session, sessions in the order of their "
        "best hit; in one session, the best per_session hits; a bad per_session is refused",
    )
    async def test_search_per_session(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        for text in (f"{term}", f"{term} and one word", f"{term} said among many other words"):
            await harness.backend.add_message(handle, "user", text)
        every = await harness.backend.search_messages(term, session_id=handle)
        assert len(every) == 3 and len({h.score for h in every}) == 3, "control: three scores"
        for n in (1, 2, 3, 7):
            grouped = await harness.backend.search_messages(term, session_id=handle, per_session=n)
            assert [h.id for h in grouped] == [h.id for h in every[:n]]
        for bad in (0, -1, 2.5, "1", True):
            with invalid("per_session"):
                await harness.backend.search_messages(term, session_id=handle, per_session=bad)  # type: ignore[arg-type]
        if harness.caps.search_global:
            await self._per_session_across(harness, term)

    async def _per_session_across(self, harness: Harness, term: str) -> None:
        other, third = await harness.new_session(), await harness.new_session()
        await harness.backend.add_message(other, "user", f"{term} {term} in the second")
        await harness.backend.add_message(
            third, "user", f"a {term} in the third, with a good many words besides it"
        )
        every = await harness.backend.search_messages(term, limit=10)
        assert len(every) == 5

        def session(hit: Any) -> Any:
            return hit.session_id or hit.conversation_id

        order = list(dict.fromkeys(session(h) for h in every))
        assert len(order) == 3
        for n, limit in ((1, 10), (2, 3), (2, 10), (3, 4)):
            grouped = await harness.backend.search_messages(term, limit=limit, per_session=n)
            # the ungrouped ranking, each session's best n, sessions by their best hit
            expected = [h.id for s in order for h in [h for h in every if session(h) == s][:n]]
            assert [h.id for h in grouped] == expected[:limit], (n, limit)

    @scenario(
        "search.ties_newest_first",
        "hits of equal score come the message written last first, in a session and across sessions",
    )
    async def test_search_ties_newest_first(self, harness: Harness) -> None:
        handle = await harness.new_session()
        term = word()
        written = [
            (await harness.backend.add_message(handle, "user", f"{term} said again")).id
            for _ in range(3)
        ]
        hits = await harness.backend.search_messages(term, session_id=handle)
        assert len({h.score for h in hits}) == 1, "control: one score"
        assert [h.id for h in hits] == written[::-1]
        if harness.caps.search_global:
            other = await harness.new_session()
            later = await harness.backend.add_message(other, "user", f"{term} said again")
            hits = await harness.backend.search_messages(term, limit=2)
            assert [h.id for h in hits] == [later.id, written[-1]]
