"""The agent turn protocol on every real backend: embedded, Bolt (Neo4j) and NAMS (HTTP).

The protocol must never pass an argument a backend cannot honour, so every test here
turns ``CapabilityWarning`` into an error.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest

from memory_core import MemoryBackend, Message, TransportError
from memory_core.turns import (
    TurnContext,
    TurnIncompleteError,
    TurnMemory,
    TurnNotOpenError,
    extract_identifiers,
    with_memory,
)
from tests.turns.conftest import TurnStore

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("error::memory_core.CapabilityWarning"),
]

DEGRADED = ("metadata", "mentions", "idempotency_keys", "reasoning")


def _pairs(messages: list[Message]) -> list[tuple[str, str]]:
    return [(m.role.value, m.content) for m in messages]


def _full(store: TurnStore) -> bool:
    return store.kind != "nams"


@contextmanager
def failing_replies(backend: MemoryBackend, *, reaches_store: bool) -> Iterator[None]:
    """Make assistant writes fail: before the store sees them, or after (a lost response)."""
    original = backend.add_message

    async def add_message(*args: Any, **kwargs: Any) -> Message:
        if kwargs.get("role") != "assistant":
            return await original(*args, **kwargs)
        if reaches_store:
            await original(*args, **kwargs)
        raise TransportError("injected: connection lost")

    backend.add_message = add_message  # type: ignore[method-assign]
    try:
        yield
    finally:
        del backend.add_message


async def test_retrieval_is_bounded_to_the_retrieval_limit(turn_store: TurnStore) -> None:
    names = [f"item {letter}" for letter in "abcdefghijkl"]
    entities = [await turn_store.entity(name) for name in names]
    conversation = await turn_store.new_conversation()
    memory = TurnMemory(turn_store.backend, conversation, "tests")
    message = "Look up " + ", ".join(f'"{e.name}"' for e in entities)
    opened = await memory.open_turn("t1", message)
    assert len(opened.retrieved) == 8
    assert opened.retrieved_entity_ids == [e.id for e in entities[:8]]
    assert len(set(opened.retrieved_entity_ids)) == 8


async def test_pair_is_stored_with_the_protocol_fields(turn_store: TurnStore) -> None:
    acme = await turn_store.entity("Acme Corp")
    globex = await turn_store.entity("Globex")
    conversation = await turn_store.new_conversation()
    memory = TurnMemory(turn_store.backend, conversation, "tests")
    question = f'What do "{acme.name}" and "{globex.name}" do?'
    # Only this test's unique names are looked up, so no other entity can be retrieved.
    assert extract_identifiers(question) == [acme.name, globex.name]
    opened = await memory.open_turn("t1", question)
    assert opened.retrieved_entity_ids == [acme.id, globex.id]
    reply = await memory.close_turn("t1", "Globex makes things.", refers_to=[globex])

    stored = await turn_store.messages(conversation)
    assert _pairs(stored) == [
        ("user", question),
        ("assistant", "Globex makes things."),
    ]
    assert [m.id for m in stored] == [opened.user_message.id, reply.id]
    if not _full(turn_store):
        assert opened.not_recorded == DEGRADED
        assert all(m.metadata == {} and m.mentions == [] for m in stored)
        return
    user, assistant = stored
    assert opened.not_recorded == ()
    assert user.metadata == {
        "turn_key": f"{conversation}:t1",
        "sender_kind": "user",
        "platform": "tests",
        "turn_id": "t1",
    }
    assert assistant.metadata == {
        "turn_key": f"{conversation}:t1:assistant",
        "sender_kind": "assistant",
        "platform": "tests",
        "turn_id": "t1",
    }
    assert sorted(str(r.id) for r in user.mentions) == sorted([acme.id, globex.id])
    assert [r.id for r in assistant.mentions] == [globex.id]


async def test_replaying_a_turn_writes_nothing(turn_store: TurnStore) -> None:
    conversation = await turn_store.new_conversation()
    memory = TurnMemory(turn_store.backend, conversation, "tests")
    first = await memory.open_turn("t1", "hello")
    reply = await memory.close_turn("t1", "hi there")
    again = await memory.open_turn("t1", "hello")
    assert again.replayed and again.user_message.id == first.user_message.id
    assert again.assistant_message is not None and again.assistant_message.id == reply.id
    assert (await memory.close_turn("t1", "hi there")).id == reply.id
    if _full(turn_store):
        other = TurnMemory(await turn_store.open(), conversation, "tests")
        replay = await other.open_turn("t1", "hello")
        assert replay.replayed and replay.user_message.id == first.user_message.id
        assert (await other.close_turn("t1", "hi there")).id == reply.id
    assert _pairs(await turn_store.messages(conversation)) == [
        ("user", "hello"),
        ("assistant", "hi there"),
    ]


async def test_an_empty_reply_is_a_reply(turn_store: TurnStore) -> None:
    """An assistant turn that only called tools has no text: it is stored as the empty
    string (like any content, exactly), completes the turn, and a replay writes nothing."""
    conversation = await turn_store.new_conversation()
    memory = TurnMemory(turn_store.backend, conversation, "tests")
    first = await memory.open_turn("t1", "run the report tool")
    reply = await memory.close_turn("t1", "")
    assert reply.content == ""
    again = await memory.open_turn("t1", "run the report tool")
    assert again.replayed and again.user_message.id == first.user_message.id
    assert again.assistant_message is not None and again.assistant_message.id == reply.id
    assert (await memory.close_turn("t1", "")).id == reply.id
    assert _pairs(await turn_store.messages(conversation)) == [
        ("user", "run the report tool"),
        ("assistant", ""),
    ]


async def test_replay_after_the_process_dies_between_user_write_and_reply(
    turn_store: TurnStore,
) -> None:
    conversation = await turn_store.new_conversation()
    dying = TurnMemory(turn_store.backend, conversation, "tests")
    await dying.open_turn("t1", "book the Lisbon trip")
    await turn_store.backend.close()  # the process dies before the reply is stored

    revived = TurnMemory(await turn_store.open(), conversation, "tests")
    opened = await revived.open_turn("t1", "book the Lisbon trip")
    assert opened.replayed and opened.assistant_message is None
    await revived.close_turn("t1", "Booked.")
    assert _pairs(await turn_store.messages(conversation)) == [
        ("user", "book the Lisbon trip"),
        ("assistant", "Booked."),
    ]


async def test_wrapped_agent_replay_after_the_process_dies(turn_store: TurnStore) -> None:
    conversation = await turn_store.new_conversation()
    runs: list[str] = []

    async def agent(message: str, ctx: TurnContext) -> str:
        runs.append(message)
        if len(runs) == 1:
            raise TimeoutError("the model timed out")
        return "done"

    first = with_memory(
        agent, backend=turn_store.backend, conversation_id=conversation, platform="tests"
    )
    with pytest.raises(TimeoutError):
        await first("do it", turn_id="t1")
    second = with_memory(
        agent, backend=await turn_store.open(), conversation_id=conversation, platform="tests"
    )
    result = await second("do it", turn_id="t1")
    assert result.text == "done"
    assert _pairs(await turn_store.messages(conversation)) == [
        ("user", "do it"),
        ("assistant", "done"),
    ]


@pytest.mark.parametrize("reaches_store", [False, True], ids=["lost-request", "lost-response"])
async def test_both_halves_or_an_error_then_retry_completes(
    turn_store: TurnStore, reaches_store: bool
) -> None:
    conversation = await turn_store.new_conversation()
    memory = TurnMemory(turn_store.backend, conversation, "tests")
    await memory.open_turn("t1", "question")
    with (
        failing_replies(turn_store.backend, reaches_store=reaches_store),
        pytest.raises(TurnIncompleteError) as info,
    ):
        await memory.close_turn("t1", "answer")
    error = info.value
    assert error.turn_id == "t1" and error.assistant_message == "answer"
    assert isinstance(error.__cause__, TransportError)
    reply = await memory.close_turn(error.turn_id, error.assistant_message)
    assert reply.content == "answer"
    assert _pairs(await turn_store.messages(conversation)) == [
        ("user", "question"),
        ("assistant", "answer"),
    ]


async def test_wrapped_agent_raises_when_the_reply_cannot_be_stored(
    turn_store: TurnStore,
) -> None:
    conversation = await turn_store.new_conversation()
    agent = with_memory(
        lambda message, ctx: message.upper(),
        backend=turn_store.backend,
        conversation_id=conversation,
        platform="tests",
    )
    with (
        failing_replies(turn_store.backend, reaches_store=False),
        pytest.raises(TurnIncompleteError),
    ):
        await agent("shout", turn_id="t1")
    result = await agent("shout", turn_id="t1")
    assert (result.user_message.content, result.text) == ("shout", "SHOUT")
    assert len(await turn_store.messages(conversation)) == 2


EXACT = [
    "",
    "  leading and trailing whitespace \n\t ",
    'emoji 👩‍👩‍👧‍👦 ZWJ, RTL \u202eabc, combining e\u0301, CJK 漢字, "quotes" \\ back',
    "x" * 10_000 + "\n" + "ü" * 500,
]


async def test_content_is_stored_exactly(turn_store: TurnStore) -> None:
    conversation = await turn_store.new_conversation()
    agent = with_memory(
        lambda message, ctx: message[::-1],
        backend=turn_store.backend,
        conversation_id=conversation,
        platform="tests",
    )
    for number, text in enumerate(EXACT):
        result = await agent(text, turn_id=f"t{number}")
        assert result.user_message.content == text
        assert result.text == text[::-1]
    stored = await turn_store.messages(conversation)
    expected = [
        (role, t if role == "user" else t[::-1]) for t in EXACT for role in ("user", "assistant")
    ]
    assert _pairs(stored) == expected


async def test_close_without_open_is_an_error(turn_store: TurnStore) -> None:
    conversation = await turn_store.new_conversation()
    memory = TurnMemory(turn_store.backend, conversation, "tests")
    with pytest.raises(TurnNotOpenError):
        await memory.close_turn("never-opened", "reply")
    assert await turn_store.messages(conversation) == []


async def test_close_in_another_process_finds_the_turn_where_ids_are_stored(
    turn_store: TurnStore,
) -> None:
    conversation = await turn_store.new_conversation()
    await TurnMemory(turn_store.backend, conversation, "tests").open_turn("t1", "question")
    other = TurnMemory(await turn_store.open(), conversation, "tests")
    if not _full(turn_store):
        # NAMS stores no turn ids: the turn must be (re)opened in this TurnMemory.
        with pytest.raises(TurnNotOpenError):
            await other.close_turn("t1", "answer")
        await other.open_turn("t1", "question")
    await other.close_turn("t1", "answer")
    assert _pairs(await turn_store.messages(conversation)) == [
        ("user", "question"),
        ("assistant", "answer"),
    ]


async def test_degradation_where_the_backend_records_less(turn_store: TurnStore) -> None:
    """On NAMS: the pair is stored, what is missing is reported, replays follow the rules."""
    if _full(turn_store):
        assert TurnMemory(turn_store.backend, "c", "tests").not_recorded == ()
        return
    entity = await turn_store.entity("Initech")
    assert extract_identifiers(f'"{entity.name}" status?') == [entity.name]
    conversation = await turn_store.new_conversation()
    memory = TurnMemory(turn_store.backend, conversation, "tests")
    assert memory.not_recorded == DEGRADED
    opened = await memory.open_turn("t1", f'"{entity.name}" status?')
    assert opened.retrieved_entity_ids == [entity.id]
    assert opened.not_recorded == DEGRADED
    await memory.close_turn("t1", "fine", refers_to=[entity])
    # In this TurnMemory a replay of the complete turn writes nothing.
    assert (await memory.open_turn("t1", f'"{entity.name}" status?')).replayed
    # In another process, a turn whose reply is stored cannot be told apart from a new
    # turn with the same text: the documented rule stores a new pair.
    other = TurnMemory(await turn_store.open(), conversation, "tests")
    assert not (await other.open_turn("t1", f'"{entity.name}" status?')).replayed
    await other.close_turn("t1", "fine")
    assert len(await turn_store.messages(conversation)) == 4


async def test_concurrent_turns_keep_their_order(turn_store: TurnStore) -> None:
    conversation = await turn_store.new_conversation()

    async def agent(message: str, ctx: TurnContext) -> str:
        await anyio.sleep(0.05 if message == "u0" else 0)  # the first turn is the slowest
        return message.replace("u", "a")

    wrapped = with_memory(
        agent, backend=turn_store.backend, conversation_id=conversation, platform="tests"
    )
    entered = [anyio.Event() for _ in range(3)]

    async def call(i: int) -> None:
        entered[i].set()
        await wrapped(f"u{i}", turn_id=f"t{i}")

    async with anyio.create_task_group() as group:
        for i in range(3):
            group.start_soon(call, i)
            await entered[i].wait()
    assert _pairs(await turn_store.messages(conversation)) == [
        (role, f"{role[0]}{i}") for i in range(3) for role in ("user", "assistant")
    ]


async def test_a_user_owns_the_conversation_without_dropped_arguments(
    turn_store: TurnStore,
) -> None:
    # The user is given when the conversation is created; later calls carry it only where
    # the backend requires it, so no backend (NAMS included) is handed an argument it drops.
    backend = turn_store.backend
    memory = await TurnMemory.start_conversation(
        backend, "tests", conversation_id=f"owned-{turn_store.tag}", user_identifier="owner-1"
    )
    turn_store.conversations.append(memory.conversation_id)
    await memory.open_turn("t1", "hello from the owner")
    await memory.close_turn("t1", "hello owner")
    stored = await turn_store.messages(memory.conversation_id)
    assert _pairs(stored) == [("user", "hello from the owner"), ("assistant", "hello owner")]
    listed = await backend.list_conversations(user_identifier="owner-1", limit=200)
    assert memory.conversation_id in [
        c.session_id if backend.capabilities.client_chosen_ids else str(c.id) for c in listed
    ]
