"""The checks of the public reasoning API (memory_core.reasoning): every argument named
before anything is written, and a backend without the flags refusing every method. The
conformance areas traces, tool_stats and similar_traces check the semantics on every
backend."""

from __future__ import annotations

import pytest

from memory_core import (
    InvalidArgumentTypeError,
    InvalidRequestError,
    NotSupportedError,
    open_backend,
)
from memory_core.backend import MemoryBackend
from memory_core.conformance.example_backend import ToyStore

pytestmark = pytest.mark.anyio


async def test_bad_arguments_are_named_before_anything_is_written() -> None:
    async with open_backend("memory://") as memory:
        trace = await memory.start_trace("s", "t")
        step = await memory.add_step(trace.id, thought="t")
        cases = [
            (memory.start_trace("", "t"), "session_id"),
            (memory.start_trace("s", "t", triggered_by_message_id=3), "triggered_by_message_id"),  # type: ignore[arg-type]
            (memory.add_step(trace.id, thought=""), "thought"),
            (memory.record_tool_call(step.id, "t", status=3), "status"),  # type: ignore[arg-type]
            (memory.record_tool_call(step.id, "t", duration_ms=True), "duration_ms"),  # type: ignore[arg-type]
            (memory.record_tool_call(step.id, "t", result={1: 2}), "result"),
            (memory.record_tool_call(step.id, "t", result="x" * 70_000), "result"),
            (memory.record_tool_call(step.id, "t", error=""), "error"),
            (memory.complete_trace(trace.id, outcome=5), "outcome"),  # type: ignore[arg-type]
            (memory.list_traces(limit=0), "limit"),
            (memory.list_traces(success=1), "success"),  # type: ignore[arg-type]
            (memory.similar_traces("t", threshold=2), "threshold"),
            (memory.similar_traces("t", success_only=None), "success_only"),  # type: ignore[arg-type]
            (memory.similar_traces(""), "task"),
            (memory.search_steps(" "), "query"),
            (memory.link_trace(trace.id, entity_ids="e1"), "entity_ids"),
            (memory.link_trace(trace.id, message_ids=["m"] * 101), "message_ids"),
            (memory.tool_stats(""), "tool_name"),
        ]
        for call, argument in cases:
            with pytest.raises((InvalidRequestError, InvalidArgumentTypeError)) as info:
                await call
            assert info.value.argument == argument, (argument, info.value)
        read = await memory.get_trace(trace.id)
        assert read is not None and read.completed_at is None
        assert [len(s.tool_calls) for s in read.steps] == [0]
        assert await memory.list_traces() == [read.model_copy(update={"steps": []})]


async def test_a_backend_without_the_flags_refuses_every_reasoning_call() -> None:
    memory = MemoryBackend(ToyStore())
    calls = [
        memory.start_trace("s", "t"),
        memory.add_step("x", thought="t"),
        memory.record_tool_call("x", "t"),
        memory.complete_trace("x"),
        memory.get_trace("x"),
        memory.list_traces(),
        memory.list_traces_page(),
        memory.tool_stats(),
        memory.similar_traces("t"),
        memory.search_steps("t"),
        memory.link_trace("x"),
    ]
    for call in calls:
        with pytest.raises(NotSupportedError):
            await call
    await memory.close()
