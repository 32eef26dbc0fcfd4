"""What the NAMS-compatible server's reasoning routes keep in the backing store (a real
embedded store, called as the routes call it): one marked trace per conversation, the
tool call input as arguments, two racing traces merged on read, and the cache of which
trace takes a conversation's steps."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from memory_core import Conversation, MemoryBackend
from memory_core import nams_wire as wire
from memory_core.server import reasoning
from memory_core.server.app import open_store
from memory_core.server.reasoning import ConversationTraces

pytestmark = [pytest.mark.nams, pytest.mark.anyio]
TENANT = "nams:ws"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def backend() -> AsyncIterator[MemoryBackend]:
    async with open_store("memory://") as opened:
        yield opened


async def conversation(backend: MemoryBackend) -> Conversation:
    return await backend.create_conversation(str(uuid.uuid4()), user_identifier=TENANT)


async def step(
    backend: MemoryBackend, traces: ConversationTraces, made: Conversation, thought: str
) -> wire.ReasoningStepOut:
    return await reasoning.record_step(backend, traces, TENANT, made, (thought, None, None))


async def test_a_conversation_s_steps_live_in_one_marked_trace(backend: MemoryBackend) -> None:
    made, traces = await conversation(backend), ConversationTraces()
    first = await step(backend, traces, made, "one")
    await step(backend, traces, made, "two")
    [header] = await backend.list_traces(made.session_id, user_identifier=TENANT)
    assert header.task == reasoning.TRACE_TASK
    assert header.metadata == {"nams": {"conversationId": str(made.id)}}
    stored = await backend.get_trace(header.id, user_identifier=TENANT)
    assert stored is not None and [s.thought for s in stored.steps] == ["one", "two"]
    assert stored.steps[0].id == first.id


async def test_tool_call_input_is_stored_as_arguments(backend: MemoryBackend) -> None:
    made, traces = await conversation(backend), ConversationTraces()
    first = await step(backend, traces, made, "call tools")
    for sent, kept in (('{"q": "x", "n": 2}', {"q": "x", "n": 2}), ("ls -la", {"_raw": "ls -la"})):
        body = wire.ToolCallIn(tool_name="t", step_id=first.id, input=sent, status="error")
        await reasoning.record_tool_call(backend, TENANT, body, reasoning._arguments(body.input))
        [header] = await backend.list_traces(made.session_id, user_identifier=TENANT)
        stored = await backend.get_trace(header.id, user_identifier=TENANT)
        assert stored is not None and stored.steps[0].tool_calls[-1].arguments == kept
        assert stored.steps[0].tool_calls[-1].status == "error"


async def test_racing_traces_are_merged_and_the_oldest_takes_the_writes(
    backend: MemoryBackend,
) -> None:
    """Two server processes whose first steps for a conversation raced each started a
    trace: every process writes to the oldest, and a read merges both, numbered 1..n."""
    made = await conversation(backend)
    mark = {"nams": {"conversationId": str(made.id)}}
    started = [
        await backend.start_trace(made.session_id, "x", metadata=mark, user_identifier=TENANT)
        for _ in range(2)
    ]
    older, newer = sorted(started, key=lambda t: (t.started_at, t.id))
    await backend.add_step(newer.id, thought="in the newer", user_identifier=TENANT)
    await backend.start_trace(made.session_id, "not marked", user_identifier=TENANT)
    written = await step(backend, ConversationTraces(), made, "in the older")
    assert written.step_number == 1
    stored = await backend.get_trace(older.id, user_identifier=TENANT)
    assert stored is not None and [s.id for s in stored.steps] == [written.id]
    read = await reasoning.read_trace(backend, TENANT, made)
    assert [(s.reasoning, s.step_number) for s in read.steps] == [
        ("in the older", 1),
        ("in the newer", 2),
    ]


async def test_a_cached_trace_the_store_lost_is_found_or_started_again(
    backend: MemoryBackend,
) -> None:
    """The server caches which trace takes a conversation's steps; when the store no
    longer has that trace, the step goes to a trace found or started again (not a 404
    for every later step)."""
    traces = ConversationTraces()
    first = await step(backend, traces, await conversation(backend), "first")
    lost = await backend.start_trace("elsewhere", "gone", user_identifier=TENANT)
    await backend.forget_user(TENANT)  # the store loses every trace of the tenant
    made = await conversation(backend)
    traces._ids[(TENANT, str(made.id))] = lost.id  # cached before the loss
    again = await step(backend, traces, made, "again")
    assert (first.step_number, again.step_number) == (1, 1)
    [header] = await reasoning.marked_traces(backend, TENANT, made)
    assert await traces.writing_trace(backend, TENANT, made) == header.id != lost.id
    read = await reasoning.read_trace(backend, TENANT, made)
    assert [s.reasoning for s in read.steps] == ["again"]
