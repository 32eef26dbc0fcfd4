"""What the embedded store's reasoning writes and searches cost in statements (issue 51,
item 6): a step and a tool call are written without reading back what was written, and
similar traces read only the columns scoring needs of their candidates. The models they
return are the ones a later read gives."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from memory_core import HashingEmbedder, NotFoundError, open_backend
from memory_core.backends.embedded import trace_search, traces
from memory_core.requests import AddStep, RecordToolCall, Scope, SimilarTraces
from memory_core.sync import open_backend as blocking_backend

pytestmark = pytest.mark.anyio
T = TypeVar("T")


def _traced(path: Path, work: Callable[[sqlite3.Connection], T]) -> tuple[T, list[str]]:
    """``work`` in one write transaction on the store file, with the statements it ran."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("BEGIN IMMEDIATE")
        statements: list[str] = []
        conn.set_trace_callback(statements.append)
        result = work(conn)
        conn.set_trace_callback(None)
        conn.execute("COMMIT")
        return result, statements
    finally:
        conn.close()


def test_a_step_and_its_tool_call_are_not_read_back(tmp_path: Path) -> None:
    path = tmp_path / "steps.db"
    url = f"sqlite:///{path}"
    with blocking_backend(url) as memory:
        trace = memory.start_trace("s", "book a flight", user_identifier="ada")
    scope = Scope(user_identifier="ada")
    step, added = _traced(
        path,
        lambda c: traces.add_step(
            c,
            AddStep(
                trace_id=trace.id,
                thought="look for flights",
                action="search",
                observation=None,
                metadata={"k": [1, None]},
                embedding=None,
                scope=scope,
            ),
        ),
    )
    call, recorded = _traced(
        path,
        lambda c: traces.record_tool_call(
            c,
            RecordToolCall(
                step_id=step.id,
                tool_name="flights",
                arguments={"to": "Oslo"},
                result=[1, "x"],
                status="timeout",
                duration_ms=7,
                error="slow",
                scope=scope,
            ),
        ),
    )
    assert not [s for s in added + recorded if s.lstrip().upper().startswith("SELECT")]
    # The number, the step, then its words (executemany traces one statement a word).
    assert len([s for s in added if "long_term_words" not in s]) == 2, added
    assert len(recorded) == 1, recorded
    with blocking_backend(url) as memory:
        read = memory.get_trace(trace.id, user_identifier="ada")
    assert read is not None
    assert read.steps == [step.model_copy(update={"tool_calls": [call]})]


async def test_a_step_or_tool_call_out_of_scope_is_not_found_and_writes_nothing(
    tmp_path: Path,
) -> None:
    async with open_backend(f"sqlite:///{tmp_path / 'scope.db'}") as memory:
        trace = await memory.start_trace("s", "plan", user_identifier="ada")
        step = await memory.add_step(trace.id, thought="first", user_identifier="ada")
        with pytest.raises(NotFoundError) as info:
            await memory.add_step(trace.id, thought="theirs", user_identifier="bob")
        assert info.value.argument == "trace_id"
        with pytest.raises(NotFoundError) as info:
            await memory.record_tool_call(step.id, "tool", user_identifier="bob")
        assert info.value.argument == "step_id"
        read = await memory.get_trace(trace.id, user_identifier="ada")
        assert read is not None
        assert [(s.step_number, s.tool_calls) for s in read.steps] == [(1, [])]
        after = await memory.add_step(trace.id, action="second", user_identifier="ada")
        assert after.step_number == 2


def test_similar_traces_read_the_scoring_columns_of_their_candidates(tmp_path: Path) -> None:
    path = tmp_path / "similar.db"
    with blocking_backend(f"sqlite:///{path}") as memory:
        for n in range(5):
            trace = memory.start_trace("s", f"plan trip {n}", metadata={"n": n})
            memory.complete_trace(trace.id, outcome="ok", success=True)
    req = SimilarTraces(
        task="plan trip 3",
        query_embedding=None,
        limit=2,
        success_only=True,
        threshold=None,
        scope=Scope(),
    )
    found, statements = _traced(path, lambda c: trace_search.similar(c, req))
    [candidates] = [s for s in statements if "long_term_words" in s]
    assert "r.*" not in candidates and "r.task" in candidates, candidates
    assert [(t.task, t.metadata) for t in found[:1]] == [("plan trip 3", {"n": 3})]
    assert found[1].metadata == {"n": int(found[1].task[-1])}
    assert found[0].score > found[1].score > 0


async def test_vector_hits_of_traces_and_steps_come_back_whole(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'vectors.db'}"
    async with open_backend(url, embedder=HashingEmbedder(32)) as memory:
        trace = await memory.start_trace("s", "zebra quokka", metadata={"m": 1})
        step = await memory.add_step(trace.id, thought="zebra quokka", action="look")
        call = await memory.record_tool_call(step.id, "eyes", {"at": "zoo"})
        await memory.complete_trace(trace.id, outcome="seen", success=True)
        [similar] = await memory.similar_traces("zebra quokka")
        assert (similar.id, similar.metadata, similar.outcome) == (trace.id, {"m": 1}, "seen")
        assert similar.score == pytest.approx(1.0)
        [found] = await memory.search_steps("zebra quokka")
        assert (found.id, found.action, found.tool_calls) == (step.id, "look", [call])
        assert found.score == pytest.approx(1.0)
