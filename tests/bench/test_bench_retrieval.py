"""``python -m bench.retrieval`` at its smallest: the generated conversations and their
evidence, the figures of one question, the CI floor on the embedded store, and the same
figures on SQLite and PostgreSQL (the shared ranking is portable)."""

from __future__ import annotations

import itertools
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from bench import retrieval
from bench.retrieval_data import Question, content_words, filler_lines, generate
from memory_core import open_backend
from memory_core_dev.postgres_server import PostgresHandle


def test_the_conversations_are_the_same_for_a_seed_and_differ_for_another() -> None:
    first, again, other = generate(3, 6, 8, seed=1), generate(3, 6, 8, seed=1), generate(3, 6, 8)
    assert [p.sessions for p in first] == [p.sessions for p in again]
    assert [p.sessions for p in first] != [p.sessions for p in other]
    assert all(len(s) == 16 for p in first for s in p.sessions)


def test_every_question_points_at_user_turns_that_say_a_fact() -> None:
    everyday = filler_lines()
    for persona in generate(4, 8, 10, seed=3):
        assert persona.questions
        for question in persona.questions:
            for session, turn in question.evidence:
                role, content = persona.sessions[session][turn]
                assert role == "user" and content not in everyday
            said = set().union(
                *(content_words(persona.sessions[s][t][1]) for s, t in question.evidence)
            )
            assert question.overlap == bool(content_words(question.text) & said)
            if question.kind in ("before", "referred"):
                (first, _), (later, _) = question.evidence
                assert first < later  # said first, changed or referred to later


def test_some_questions_share_a_word_with_their_evidence_and_most_do_not() -> None:
    questions = [q for p in generate() for q in p.questions]
    shared = sum(q.overlap for q in questions)
    assert 0 < shared < len(questions) / 2
    assert content_words("What is my favourite dish?") == {"favourite", "dish"}


def test_a_questions_figures_count_its_evidence_by_rank() -> None:
    question = Question("q", "before", ((0, 2), (3, 4)))
    found = [(1, 0), (3, 4), (2, 2), (0, 6), (5, 0), (0, 2)]
    figures = retrieval.score(question, found)
    assert figures["turn_recall@1"] == 0.0
    assert figures["turn_recall@5"] == 0.5
    assert figures["turn_recall@10"] == 1.0
    assert figures["session_hit@5"] == 1.0  # (0, 6) is in an evidence session
    assert figures["mrr"] == 0.5
    assert retrieval.score(question, [(9, 9)])["mrr"] == 0.0


def test_overlap_is_the_mean_share_of_hits_two_stores_share() -> None:
    a = [[(0, 0), (0, 2), (1, 0)], [], [(2, 2)]]
    b = [[(0, 2), (0, 0), (3, 3), (4, 4)], [], [(5, 5)]]
    assert retrieval.overlap(a, b) == round((2 / 4 + 1.0 + 0.0) / 3, 4)
    assert retrieval.overlap(a, a) == 1.0
    results = retrieval.with_overlaps(
        [
            {"store": "x", "search": "text", "ranked": a},
            {"store": "y", "search": "text", "ranked": b},
            {"store": "x", "search": "hybrid", "ranked": b},
        ]
    )
    assert [r["top10_overlap"] for r in results] == [1.0, 0.5, 1.0]
    assert all("ranked" not in r for r in results)


@pytest.mark.anyio
async def test_the_embedded_store_stays_above_the_recorded_floor(tmp_path: Path) -> None:
    personas = generate(**retrieval.SMOKE)
    async with open_backend(f"sqlite:///{tmp_path / 'r.db'}", multi_tenant=True) as backend:
        assert await retrieval.load(backend, personas) == 3 * 6 * 16
        result = await retrieval.evaluate(backend, personas)
    assert result["questions"] == sum(len(p.questions) for p in personas)
    for metric, floor in retrieval.SMOKE_FLOOR.items():
        assert result[metric] >= floor, (metric, result[metric])
    page = retrieval.table([{"store": "embedded", **result}])
    assert page.count("| embedded |") == 1
    assert retrieval.plot([{"store": "embedded", **result}], tmp_path / "r.png").stat().st_size


@pytest.mark.anyio
async def test_hybrid_search_on_the_embedded_store_stays_above_its_floor() -> None:
    pytest.importorskip("wordllama", reason="extra 'embed' not installed")
    personas = generate(**retrieval.SMOKE)
    text = await retrieval.run_store("embedded", personas)
    hybrid = await retrieval.run_store("embedded", personas, "hybrid")
    assert (text["search"], hybrid["search"]) == ("text", "hybrid")
    for metric, floor in retrieval.HYBRID_SMOKE_FLOOR.items():
        assert hybrid[metric] >= floor, (metric, hybrid[metric])
    # the embedder finds what words cannot: more sessions with evidence in the first five
    assert hybrid["session_hit@5"] > text["session_hit@5"]
    assert "| embedded | hybrid |" in retrieval.table([text, hybrid])


def test_everyday_chat_rarely_repeats_a_line() -> None:
    # one distractor said a dozen times would fill every top slot when it outranks the
    # evidence; real histories rarely repeat a line word for word
    for persona in generate()[:3]:
        said = [c for session in persona.sessions for role, c in session if role == "user"]
        chat = [c for c in said if c in filler_lines()]
        assert len(set(chat)) > len(chat) / 3
        assert max(chat.count(line) for line in set(chat)) <= 8


@pytest.mark.anyio
async def test_minilm_hybrid_search_stays_above_its_floor() -> None:
    pytest.importorskip("tokenizers", reason="extra 'minilm' not installed")
    personas = generate(**retrieval.SMOKE)
    hybrid = await retrieval.run_store("embedded", personas, "hybrid")
    minilm = await retrieval.run_store("embedded", personas, "minilm")
    for metric, floor in retrieval.MINILM_SMOKE_FLOOR.items():
        assert minilm[metric] >= floor, (metric, minilm[metric])
    # the sentence model finds more than the static one
    assert minilm["turn_recall@5"] > hybrid["turn_recall@5"]


@pytest.mark.anyio
async def test_sqlite_and_postgresql_give_the_same_figures(
    tmp_path: Path, postgres_server: PostgresHandle
) -> None:
    personas = generate(**retrieval.SMOKE)
    separator = "&" if "?" in postgres_server.url else "?"
    pg_url = f"{postgres_server.url}{separator}schema=r_{uuid.uuid4().hex[:12]}"
    results = []
    for url in (f"sqlite:///{tmp_path / 'r.db'}", pg_url):
        async with open_backend(url, multi_tenant=True) as backend:
            await retrieval.load(backend, personas)
            result = await retrieval.evaluate(backend, personas)
        results.append({"store": url[:6], **result})
    assert [{m: r[m] for m in retrieval.METRICS} for r in results[:1]] == [
        {m: r[m] for m in retrieval.METRICS} for r in results[1:]
    ]
    # not only the same figures: the same hits, question by question
    shared = retrieval.with_overlaps(results)
    assert [r["top10_overlap"] for r in shared] == [1.0, 1.0]
    assert "| 1.000 |" in retrieval.table(shared)


@pytest.mark.anyio
async def test_dated_sessions_are_a_week_apart_and_their_turns_a_minute() -> None:
    personas = generate(personas=1, sessions=6, turns=8)
    async with open_backend("memory://", multi_tenant=True) as backend:
        await retrieval.load(backend, personas, dated=True)
        user = personas[0].name
        starts = []
        for s in range(6):
            read = await backend.get_conversation(f"s{s}", user_identifier=user)
            times = [m.created_at for m in read.messages]
            assert [b - a for a, b in itertools.pairwise(times)] == [timedelta(minutes=1)] * 15
            starts.append(times[0])
    assert [b - a for a, b in itertools.pairwise(starts)] == [timedelta(weeks=1)] * 5
