"""A turn's reasoning (task, steps, tool calls, outcome) on every real backend.

The reasoning is recorded exactly once per turn: a replay (same object, another
process, after a crash between any two writes) writes nothing more; on NAMS (no
``traces``) the messages are stored and ``not_recorded`` says ``"reasoning"``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pytest

from memory_core import (
    InvalidRequestError,
    MemoryBackend,
    Message,
    ReasoningTrace,
    TransportError,
    open_backend,
)
from memory_core.turns import (
    Reply,
    TurnContext,
    TurnIncompleteError,
    TurnMemory,
    TurnReasoning,
    TurnStep,
    TurnToolCall,
    with_memory,
)
from memory_core.turns.reasoning import INTERRUPTED
from tests.turns.conftest import TurnStore, _store_location
from tests.turns.fakes import NamsLikeFake, NamsLikeFakeStore

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("error::memory_core.CapabilityWarning"),
]

TRACE_KINDS = [
    pytest.param("memory", id="memory"),
    pytest.param("embedded", id="embedded"),
    pytest.param("postgres", id="postgres"),
    pytest.param("bolt", id="bolt", marks=pytest.mark.neo4j),
]
ALL_KINDS = [
    *TRACE_KINDS,
    pytest.param("nams", id="nams", marks=pytest.mark.nams),
    pytest.param("nams-server-ids", id="nams-server-ids", marks=pytest.mark.nams),
]
WRITES = ("start_trace", "add_step", "record_tool_call", "complete_trace", "link_trace")

REASONING = TurnReasoning(
    task="book a flight to Lisbon",
    steps=[
        TurnStep(
            thought="find flights first",
            action="search flights",
            tool_calls=[
                TurnToolCall("flight_search", {"to": "LIS", "seats": [1, 2]}, result={"n": 3})
            ],
        ),
        TurnStep(observation="nothing on Friday"),
        TurnStep(
            action="book TP123",
            tool_calls=[
                TurnToolCall("book", {"flight": "TP123"}, status="timeout", duration_ms=30000),
                TurnToolCall("book", {"flight": "TP123"}, result="ok", duration_ms=800),
                TurnToolCall("book", {}, status="error", error="seat taken"),
            ],
        ),
    ],
    outcome="booked TP123",
    success=True,
)
# start, 3 steps, 4 tool calls, complete, the reply, the link.
TURN_WRITES = 11


class _OneProcessStore(TurnStore):
    """``memory://``: every backend object is its own store, so "another process" is
    another ``TurnMemory`` on the one backend object."""

    async def open(self) -> MemoryBackend:
        return self.backends[0] if self.backends else await super().open()


async def _open_store(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> TurnStore:
    if kind == "memory":
        store: TurnStore = _OneProcessStore(kind, "memory://", {})
    else:
        store = _store_location(kind, request, tmp_path)
    await store.open()
    return store


@pytest.fixture(params=TRACE_KINDS)
async def trace_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TurnStore]:
    """A real store with reasoning memory (``traces``)."""
    store = await _open_store(request.param, request, tmp_path)
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture(params=ALL_KINDS)
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TurnStore]:
    """A real store of every kind, NAMS included."""
    store = await _open_store(request.param, request, tmp_path)
    try:
        yield store
    finally:
        await store.close()


async def _memory(store: TurnStore, name: str, backend: MemoryBackend | None = None) -> TurnMemory:
    """A TurnMemory on a new conversation owned by a user of this test only."""
    memory = await TurnMemory.start_conversation(
        backend or store.backend,
        "tests",
        conversation_id=f"{name}-{store.tag}",
        user_identifier=f"ada-{name}-{store.tag}",
    )
    store.conversations.append(memory.conversation_id)
    return memory


def _again(memory: TurnMemory, backend: MemoryBackend) -> TurnMemory:
    """The same conversation in another process."""
    return TurnMemory(
        backend, memory.conversation_id, "tests", user_identifier=memory.user_identifier
    )


async def _traces(backend: MemoryBackend, memory: TurnMemory) -> list[ReasoningTrace]:
    """Every trace of the conversation, whole, oldest first."""
    user = memory.user_identifier
    listed = await backend.list_traces(memory.conversation_id, limit=1000, user_identifier=user)
    found = [await backend.get_trace(t.id, user_identifier=user) for t in reversed(listed)]
    return [t for t in found if t is not None]


def _shape(trace: ReasoningTrace) -> list[tuple[Any, ...]]:
    return [
        (
            step.step_number,
            step.thought,
            step.action,
            step.observation,
            [
                (c.tool_name, c.arguments, c.result, c.status.value, c.duration_ms, c.error)
                for c in step.tool_calls
            ],
        )
        for step in trace.steps
    ]


def _planned(reasoning: TurnReasoning) -> list[tuple[Any, ...]]:
    return [
        (
            number,
            step.thought,
            step.action,
            step.observation,
            [
                (c.tool_name, c.arguments or {}, c.result, str(c.status), c.duration_ms, c.error)
                for c in step.tool_calls
            ],
        )
        for number, step in enumerate(reasoning.steps, start=1)
    ]


async def _tool_totals(backend: MemoryBackend, memory: TurnMemory) -> dict[str, tuple[int, int]]:
    stats = await backend.tool_stats(user_identifier=memory.user_identifier)
    return {s.name: (s.total_calls, s.failed_calls) for s in stats}


async def _assert_recorded_once(
    store: TurnStore, memory: TurnMemory, reply: Message, reasoning: TurnReasoning = REASONING
) -> ReasoningTrace:
    """The conversation holds the one pair and one complete trace of ``reasoning``,
    every step and tool call once, linked to both messages and their entities."""
    reader = store.backend
    conversation = await reader.get_conversation(session_id=memory.conversation_id)
    user, assistant = conversation.messages
    assert assistant.id == reply.id
    (trace,) = await _traces(reader, memory)
    assert trace.task == reasoning.task
    assert _shape(trace) == _planned(reasoning)
    assert (trace.outcome, trace.success) == (reasoning.outcome, reasoning.success)
    assert trace.completed_at is not None
    assert sorted(trace.message_ids) == sorted([str(user.id), str(assistant.id)])
    mentioned = {r.id for r in (*user.mentions, *assistant.mentions)}
    assert set(trace.entity_ids) == mentioned
    assert trace.metadata["turn_key"] == f"{memory.conversation_id}:{trace.metadata['turn_id']}"
    return trace


@contextmanager
def _counting_writes(backend: MemoryBackend) -> Iterator[list[str]]:
    """Every reasoning and message write made through ``backend``, by method name."""
    made: list[str] = []

    def spy(name: str) -> Any:
        original = getattr(backend, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            made.append(name)
            return await original(*args, **kwargs)

        return call

    for name in (*WRITES, "add_message"):
        setattr(backend, name, spy(name))
    try:
        yield made
    finally:
        for name in (*WRITES, "add_message"):
            delattr(backend, name)


@contextmanager
def _crash_at(backend: MemoryBackend, number: int, *, reaches_store: bool) -> Iterator[None]:
    """Make the ``number``-th write of a reasoning or reply fail: before the store sees
    it, or after the store applied it (a lost response)."""
    count = [0]

    def wrap(name: str) -> Any:
        original = getattr(backend, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            if name == "add_message" and kwargs.get("role") != "assistant":
                return await original(*args, **kwargs)
            count[0] += 1
            if count[0] != number:
                return await original(*args, **kwargs)
            if reaches_store:
                await original(*args, **kwargs)
            raise TransportError(f"injected: connection lost at {name}")

        return call

    for name in (*WRITES, "add_message"):
        setattr(backend, name, wrap(name))
    try:
        yield
    finally:
        for name in (*WRITES, "add_message"):
            delattr(backend, name)


# ------------------------------------------------------------------ one turn


async def test_a_turn_stores_its_reasoning_as_one_trace(any_store: TurnStore) -> None:
    acme = await any_store.entity("Acme Corp")
    memory = await _memory(any_store, "one")
    opened = await memory.open_turn("t1", f'Fly me to "{acme.name}" in Lisbon')
    reply = await memory.close_turn("t1", "Booked TP123.", refers_to=[acme], reasoning=REASONING)
    if not any_store.backend.capabilities.traces:
        # NAMS: the pair is stored, the reasoning is not and the turn says so.
        assert "reasoning" in memory.not_recorded and "reasoning" in opened.not_recorded
        stored = await any_store.messages(memory.conversation_id)
        assert [(m.role.value, m.content) for m in stored] == [
            ("user", opened.user_message.content),
            ("assistant", "Booked TP123."),
        ]
        return
    assert "reasoning" not in memory.not_recorded
    trace = await _assert_recorded_once(any_store, memory, reply)
    assert acme.id in trace.entity_ids
    assert trace.metadata["turn_id"] == "t1" and trace.metadata["platform"] == "tests"
    assert trace.user_identifier == memory.user_identifier
    assert await _tool_totals(any_store.backend, memory) == {
        "flight_search": (1, 0),
        "book": (3, 2),
    }


async def test_with_memory_records_the_reasoning_of_a_reply(any_store: TurnStore) -> None:
    memory = await _memory(any_store, "agent")

    def agent(message: str, ctx: TurnContext) -> Reply:
        return Reply("Booked TP123.", reasoning=REASONING)

    wrapped = with_memory(
        agent,
        backend=any_store.backend,
        conversation_id=memory.conversation_id,
        platform="tests",
        user_identifier=memory.user_identifier,
    )
    result = await wrapped("book my flight", turn_id="t1")
    if not any_store.backend.capabilities.traces:
        assert "reasoning" in result.not_recorded
        assert len(await any_store.messages(memory.conversation_id)) == 2
        return
    await _assert_recorded_once(any_store, memory, result.assistant_message)


# ------------------------------------------------------------------ replays


async def test_replays_write_nothing_more(trace_store: TurnStore) -> None:
    memory = await _memory(trace_store, "replay")
    await memory.open_turn("t1", "book my flight")
    reply = await memory.close_turn("t1", "Booked.", reasoning=REASONING)
    before = await _tool_totals(trace_store.backend, memory)

    with _counting_writes(trace_store.backend) as made:
        again = await memory.open_turn("t1", "book my flight")
        assert again.replayed and again.assistant_message is not None
        assert (await memory.close_turn("t1", "Booked.", reasoning=REASONING)).id == reply.id
    assert made == []

    other = await trace_store.open()  # another process
    with _counting_writes(other) as made:
        revived = _again(memory, other)
        assert (await revived.open_turn("t1", "book my flight")).replayed
        assert (await revived.close_turn("t1", "Booked.", reasoning=REASONING)).id == reply.id
        rerun = with_memory(
            lambda message, ctx: Reply("never run", reasoning=REASONING),
            backend=other,
            conversation_id=memory.conversation_id,
            platform="tests",
            user_identifier=memory.user_identifier,
        )
        assert (await rerun("book my flight", turn_id="t1")).replayed
    assert made == []
    await _assert_recorded_once(trace_store, memory, reply)
    assert await _tool_totals(trace_store.backend, memory) == before


async def test_a_new_turn_reads_no_trace_before_recording() -> None:
    """A turn whose user message this object stored first cannot have a trace yet."""
    async with open_backend("memory://") as backend:
        memory = TurnMemory(backend, "c", "unit", user_identifier="ada")
        reads: list[str] = []
        for name in ("list_traces_page", "get_trace"):
            original = getattr(backend, name)

            async def read(
                *args: Any, _name: str = name, _original: Any = original, **kw: Any
            ) -> Any:
                reads.append(_name)
                return await _original(*args, **kw)

            setattr(backend, name, read)
        await memory.open_turn("t1", "book my flight")
        await memory.close_turn("t1", "Booked.", reasoning=REASONING)
        assert reads == []
        assert len(await backend.list_traces("c", user_identifier="ada")) == 1


async def test_reasoning_given_again_for_a_turn_closed_without_it_is_not_recorded(
    trace_store: TurnStore,
) -> None:
    """The first stored reply wins, with the reasoning it was stored with (here none)."""
    memory = await _memory(trace_store, "late")
    await memory.open_turn("t1", "hello")
    await memory.close_turn("t1", "hi")
    other = _again(memory, await trace_store.open())
    await other.open_turn("t1", "hello")
    await other.close_turn("t1", "hi", reasoning=REASONING)
    assert await _traces(trace_store.backend, memory) == []


@pytest.mark.parametrize("reaches_store", [False, True], ids=["lost-request", "lost-response"])
@pytest.mark.parametrize("retry", ["same-object", "new-process", "wrapped-agent"])
async def test_a_crash_between_any_two_writes_then_a_replay_records_once(
    trace_store: TurnStore, reaches_store: bool, retry: str
) -> None:
    for number in range(1, TURN_WRITES + 1):
        memory = await _memory(trace_store, f"crash{number}")
        backend = trace_store.backend
        await memory.open_turn("t1", "book my flight")
        with (
            _crash_at(backend, number, reaches_store=reaches_store),
            pytest.raises(TurnIncompleteError) as info,
        ):
            await memory.close_turn("t1", "Booked.", reasoning=REASONING)
        assert isinstance(info.value.__cause__, TransportError)
        assert info.value.reasoning == REASONING
        assert info.value.linking == (
            number == TURN_WRITES
        )  # only the last write follows the reply
        reply = await _retry(trace_store, memory, info.value, retry)
        await _assert_recorded_once(trace_store, memory, reply)
        assert await _tool_totals(backend, memory) == {"flight_search": (1, 0), "book": (3, 2)}


async def _retry(
    store: TurnStore, memory: TurnMemory, error: TurnIncompleteError, how: str
) -> Message:
    if how == "same-object":
        return await memory.close_turn(
            error.turn_id, error.assistant_message, reasoning=error.reasoning
        )
    backend = await store.open()
    try:
        if how == "new-process":
            revived = _again(memory, backend)
            await revived.open_turn("t1", "book my flight")
            return await revived.close_turn("t1", "Booked.", reasoning=REASONING)
        rerun = with_memory(
            lambda message, ctx: Reply("Booked.", reasoning=REASONING),
            backend=backend,
            conversation_id=memory.conversation_id,
            platform="tests",
            user_identifier=memory.user_identifier,
        )
        return (await rerun("book my flight", turn_id="t1")).assistant_message
    finally:
        if backend is not store.backend:  # the process ends
            store.backends.remove(backend)
            await backend.close()


async def test_a_rerun_with_other_reasoning_supersedes_the_interrupted_trace(
    trace_store: TurnStore,
) -> None:
    """The agent ran again after a crash mid-way and reasoned differently: the first
    run's trace is completed as interrupted and the reply's trace is a new one."""
    memory = await _memory(trace_store, "rerun")
    await memory.open_turn("t1", "book my flight")
    with (
        _crash_at(trace_store.backend, 3, reaches_store=True),  # after step 1's tool call
        pytest.raises(TurnIncompleteError),
    ):
        await memory.close_turn("t1", "Booked.", reasoning=REASONING)
    second = TurnReasoning("book a flight", [TurnStep(thought="try the train")], "no", False)
    revived = _again(memory, await trace_store.open())
    await revived.open_turn("t1", "book my flight")
    reply = await revived.close_turn("t1", "No flight.", reasoning=second)
    with _counting_writes(revived.backend) as made:
        await revived.close_turn("t1", "No flight.", reasoning=second)
        await _again(memory, revived.backend).open_turn("t1", "book my flight")
    assert made == []

    first, latest = await _traces(trace_store.backend, memory)
    assert (first.outcome, first.success, first.metadata["turn_attempt"]) == (
        INTERRUPTED,
        False,
        1,
    )
    assert _shape(first) == _planned(REASONING)[:1]
    assert str(reply.id) not in first.message_ids
    assert latest.metadata["turn_attempt"] == 2
    assert _shape(latest) == _planned(second) and latest.outcome == "no"
    assert str(reply.id) in latest.message_ids


# ------------------------------------------------------------------ bad input

BAD = [
    ("not a reasoning", "reasoning"),
    (TurnReasoning("", []), "reasoning.task"),
    (TurnReasoning("t", "a step"), "reasoning.steps"),  # type: ignore[arg-type]
    (TurnReasoning("t", [TurnStep(thought="ok"), {"thought": "x"}]), "reasoning.steps[1]"),  # type: ignore[list-item]
    (TurnReasoning("t", [TurnStep(thought="ok"), TurnStep()]), "reasoning.steps[1]"),
    (TurnReasoning("t", [TurnStep(thought=3)]), "reasoning.steps[0].thought"),  # type: ignore[arg-type]
    (
        TurnReasoning("t", [TurnStep(thought="ok", tool_calls=["search"])]),  # type: ignore[list-item]
        "reasoning.steps[0].tool_calls[0]",
    ),
    (
        TurnReasoning("t", [TurnStep(thought="ok", tool_calls=[TurnToolCall("x", status="odd")])]),
        "reasoning.steps[0].tool_calls[0].status",
    ),
    (
        TurnReasoning("t", [TurnStep("ok", tool_calls=[TurnToolCall("x", duration_ms=-1)])]),
        "reasoning.steps[0].tool_calls[0].duration_ms",
    ),
    (
        TurnReasoning("t", [TurnStep("ok", tool_calls=[TurnToolCall("x", [1])])]),  # type: ignore[arg-type]
        "reasoning.steps[0].tool_calls[0].arguments",
    ),
    (
        TurnReasoning("t", [TurnStep("ok", tool_calls=[TurnToolCall("x", result=object())])]),
        "reasoning.steps[0].tool_calls[0].result",
    ),
    (TurnReasoning("t", [], success="yes"), "reasoning.success"),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("reasoning", "argument"), BAD)
async def test_bad_reasoning_names_the_argument_and_writes_nothing(
    any_store: TurnStore, reasoning: Any, argument: str
) -> None:
    memory = await _memory(any_store, "bad")
    opened = await memory.open_turn("t1", "book my flight")
    with _counting_writes(any_store.backend) as made:
        with pytest.raises(InvalidRequestError) as info:
            await memory.close_turn("t1", "Booked.", reasoning=reasoning)
        assert info.value.argument == argument
        wrapped = with_memory(
            lambda message, ctx: Reply("Booked.", reasoning=reasoning),
            backend=any_store.backend,
            conversation_id=memory.conversation_id,
            platform="tests",
            user_identifier=memory.user_identifier,
        )
        with pytest.raises(InvalidRequestError):
            await wrapped("book my flight", turn_id="t1")
    assert made == []
    stored = await any_store.messages(memory.conversation_id)
    assert [m.id for m in stored] == [opened.user_message.id]
    if any_store.backend.capabilities.traces:
        assert await _traces(any_store.backend, memory) == []


# ------------------------------------------------------------------ without traces


async def test_reasoning_where_the_backend_has_no_traces_is_said_once_and_never_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    backend = NamsLikeFake()
    with caplog.at_level(logging.WARNING, logger="memory_core.turns"):
        for turn in ("t1", "t2"):
            memory = await TurnMemory.start_conversation(backend, "unit")
            assert memory.not_recorded[-1] == "reasoning"
            await memory.open_turn(turn, "book my flight")
            await memory.close_turn(turn, "Booked.", reasoning=REASONING)
            writes = cast(NamsLikeFakeStore, backend.store).writes
            assert [m.content for m in writes[-2:]] == ["book my flight", "Booked."]
    said = [r.getMessage() for r in caplog.records if "cannot record" in r.getMessage()]
    assert said == [
        "the namslike backend cannot record metadata, mentions, idempotency_keys for agent "
        "turns; turns are stored without them",
        "the namslike backend cannot record reasoning for agent turns; turns are stored "
        "without them",
    ]
