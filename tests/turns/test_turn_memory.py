"""Unit tests of the turn protocol's edge cases on small in-process fakes.

The protocol on the real backends is in ``test_protocol.py``; here fakes make failures,
concurrency and capability gaps easy to set up.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import replace
from typing import Any

import anyio
import pytest

from memory_core import (
    CapabilityWarning,
    EntityRef,
    InvalidRequestError,
    MemoryCoreError,
    NotFoundError,
    NotSupportedError,
    TransportError,
)
from memory_core import requests as rq
from memory_core.models import Entity
from memory_core.turns import (
    Reply,
    TurnConflictError,
    TurnContext,
    TurnIncompleteError,
    TurnMemory,
    TurnNotOpenError,
    with_memory,
)
from memory_core.turns.memory import LOOKUPS_AT_ONCE
from tests.fakes import public
from tests.turns.fakes import FullFake, FullFakeStore, NamsLikeFake

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("error")]


async def _entities(backend: FullFake, *names: str) -> list[Entity]:
    return [await backend.add_entity(name, "ORGANIZATION") for name in names]


def _stored(backend: FullFake, session: str) -> list[tuple[str, str]]:
    return [(m.role.value, m.content) for m in backend.sessions.get(session, [])]


# ------------------------------------------------------------------ storage shape


async def test_pair_is_stored_with_metadata_keys_and_mentions() -> None:
    backend = FullFake()
    acme, globex = await _entities(backend, "Acme Corp", "Globex")
    memory = TurnMemory(backend, "conv-1", "unit")
    opened = await memory.open_turn("t1", "Compare Acme Corp with Globex")
    assert opened.retrieved_entity_ids == [acme.id, globex.id]
    assert not opened.replayed and opened.assistant_message is None
    user = opened.user_message
    assert user.metadata == {
        "turn_key": "conv-1:t1",
        "sender_kind": "user",
        "platform": "unit",
        "turn_id": "t1",
    }
    assert user.idempotency_key == "conversation-conv-1-t1-user"
    assert [ref.id for ref in user.mentions] == [acme.id, globex.id]

    reply = await memory.close_turn("t1", "Globex is bigger", refers_to=[globex])
    assert reply.metadata["turn_key"] == "conv-1:t1:assistant"
    assert reply.metadata["sender_kind"] == "assistant"
    assert reply.idempotency_key == "conversation-conv-1-t1-assistant"
    assert [ref.id for ref in reply.mentions] == [globex.id]
    assert _stored(backend, "conv-1") == [
        ("user", "Compare Acme Corp with Globex"),
        ("assistant", "Globex is bigger"),
    ]
    assert memory.not_recorded == ("reasoning",)  # the fake has no traces


async def test_refers_to_accepts_ids_refs_and_entities_deduplicated() -> None:
    backend = FullFake()
    acme, globex = await _entities(backend, "Acme", "Globex")
    memory = TurnMemory(backend, "c", "unit")
    await memory.open_turn("t", "hi")
    reply = await memory.close_turn(
        "t", "ok", refers_to=[acme.id, EntityRef(id=globex.id), acme, acme.id]
    )
    assert [ref.id for ref in reply.mentions] == [acme.id, globex.id]


async def test_no_mentions_means_skip_mode() -> None:
    extracted: list[str] = []

    def extractor(text: str) -> list[EntityRef]:
        extracted.append(text)
        return [EntityRef(name="Acme", type="ORGANIZATION")]

    backend = FullFake(extractor=extractor)
    memory = TurnMemory(backend, "c", "unit")
    calls: list[rq.AddMessage] = []
    original = backend.store.add_message

    async def spy(req: rq.AddMessage) -> Any:
        calls.append(req)
        return await original(req)

    backend.store.add_message = spy  # type: ignore[method-assign]
    await memory.open_turn("t", "nothing to look up here")
    await memory.close_turn("t", "fine")
    assert len(calls) == 2
    assert extracted == []  # skip mode: the backend's extractor never ran
    assert all(c.mentions == [] for c in calls)


# ------------------------------------------------------------------ retrieval


async def test_retrieval_is_capped_and_stops_looking_once_full() -> None:
    backend = FullFake()
    names = [f"name {i}" for i in range(12)]
    entities = await _entities(backend, *names)
    memory = TurnMemory(backend, "c", "unit", retrieval_limit=8)
    text = " ".join(f'"{n}"' for n in names)
    opened = await memory.open_turn("t", text)
    assert opened.retrieved == entities[:8]
    assert backend.lookups == names[:8]


async def test_retrieval_sends_its_lookups_a_group_at_a_time() -> None:
    backend = FullFake()
    lookup = backend.find_entities
    in_flight, most = 0, 0

    async def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await anyio.sleep(0.01)  # the others of its group start meanwhile
        in_flight -= 1
        return await lookup(*args, **kwargs)

    backend.find_entities = counted  # type: ignore[method-assign]
    names = [f"unknown {i}" for i in range(6)]
    retrieved = await TurnMemory(backend, "c", "unit").retrieve(" ".join(f'"{n}"' for n in names))
    assert retrieved == [] and backend.lookups == names  # every one, in order
    assert most == LOOKUPS_AT_ONCE


async def test_retrieval_sends_no_further_group_once_full() -> None:
    backend = FullFake()
    names = [f"name {i}" for i in range(6)]
    entities = await _entities(backend, *names)
    memory = TurnMemory(backend, "c", "unit", retrieval_limit=2)
    retrieved = await memory.retrieve(" ".join(f'"{n}"' for n in names))
    assert retrieved == entities[:2]
    assert backend.lookups == names[:LOOKUPS_AT_ONCE]  # the first group only


async def test_retrieval_looks_up_at_most_max_identifiers() -> None:
    backend = FullFake()
    memory = TurnMemory(backend, "c", "unit", max_identifiers=16)
    await memory.open_turn("t", " ".join(f'"unknown {i}"' for i in range(30)))
    assert backend.lookups == [f"unknown {i}" for i in range(16)]


async def test_retrieval_dedupes_entities_by_id() -> None:
    backend = FullFake()
    (acme,) = await _entities(backend, "Acme")
    memory = TurnMemory(backend, "c", "unit")
    opened = await memory.open_turn("t", f'Acme, "acme" and {acme.id}')
    assert opened.retrieved == [acme]


class _BrokenLookupsStore(FullFakeStore):
    async def find_entities(self, req: rq.FindEntities) -> list[Entity]:
        raise TransportError(f"lookup of {req.identifier} failed")


class _NoEntitiesStore(FullFakeStore):
    capabilities = replace(FullFakeStore.capabilities, entities=False)


class _NoKeysStore(FullFakeStore):
    """Metadata and mentions but no idempotency keys."""

    capabilities = replace(FullFakeStore.capabilities, idempotency_keys=False)


_BrokenLookups = public(_BrokenLookupsStore)
_NoEntities = public(_NoEntitiesStore)
_NoKeys = public(_NoKeysStore)


async def test_retrieval_failure_is_logged_without_content_and_turn_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    backend = _BrokenLookups()
    memory = TurnMemory(backend, "c", "unit")
    with caplog.at_level(logging.WARNING, logger="memory_core.turns"):
        opened = await memory.open_turn("t", "Secret Project Zeus and ORD-42")
    assert opened.retrieved == []
    assert _stored(backend, "c") == [("user", "Secret Project Zeus and ORD-42")]
    records = [r for r in caplog.records if r.name == "memory_core.turns"]
    assert len(records) == 1
    line = records[0].getMessage()
    assert "2 identifiers" in line
    assert "Zeus" not in line and "ORD-42" not in line


async def test_backend_without_entities_retrieves_nothing_without_calling() -> None:
    backend = _NoEntities()
    memory = TurnMemory(backend, "c", "unit")
    opened = await memory.open_turn("t", "Acme Corp")
    assert opened.retrieved == [] and backend.lookups == []
    with pytest.raises(NotSupportedError):
        await backend.find_entities("Acme Corp")


async def test_unexpected_errors_in_retrieval_are_non_fatal() -> None:
    backend = FullFake()

    async def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("driver exploded")

    backend.find_entities = boom  # type: ignore[method-assign]
    opened = await TurnMemory(backend, "c", "unit").open_turn("t", "Acme Corp")
    assert opened.retrieved == []


# ------------------------------------------------------------------ replays and errors


async def test_replays_write_nothing_and_return_stored_messages() -> None:
    backend = FullFake()
    memory = TurnMemory(backend, "c", "unit")
    first = await memory.open_turn("t", "hello there")
    again = await memory.open_turn("t", "hello there")
    assert again.replayed and again.user_message == first.user_message
    reply = await memory.close_turn("t", "hi")
    assert await memory.close_turn("t", "a different reply") == reply
    fresh = TurnMemory(backend, "c", "unit")
    replay = await fresh.open_turn("t", "hello there")
    assert replay.replayed and replay.assistant_message == reply
    assert await fresh.close_turn("t", "hi") == reply
    assert len(backend.writes) == 2


async def test_close_turn_finds_a_turn_opened_by_another_process() -> None:
    backend = FullFake()
    await TurnMemory(backend, "c", "unit").open_turn("t", "question")
    reply = await TurnMemory(backend, "c", "unit").close_turn("t", "answer")
    assert reply.content == "answer"
    assert _stored(backend, "c") == [("user", "question"), ("assistant", "answer")]


async def test_replay_beyond_the_lookback_still_writes_nothing() -> None:
    backend = FullFake()
    memory = TurnMemory(backend, "c", "unit", replay_lookback=2)
    await memory.open_turn("old", "first words")
    await memory.close_turn("old", "reply")
    for i in range(3):
        await memory.open_turn(f"t{i}", f"msg {i}")
    fresh = TurnMemory(backend, "c", "unit", replay_lookback=2)
    replay = await fresh.open_turn("old", "first words")
    assert replay.replayed  # detected: older than the newest stored message
    assert await fresh.close_turn("old", "reply 2") == (await memory.close_turn("old", "x"))
    assert len(backend.writes) == 5


async def test_reusing_a_turn_id_with_other_content_is_a_conflict() -> None:
    backend = FullFake()
    memory = TurnMemory(backend, "c", "unit")
    await memory.open_turn("t", "one")
    with pytest.raises(TurnConflictError) as info:
        await memory.open_turn("t", "two")
    assert info.value.argument == "turn_id" and "two" not in str(info.value)
    with pytest.raises(TurnConflictError):
        await TurnMemory(backend, "c", "unit").open_turn("t", "two")
    assert len(backend.writes) == 1


async def test_close_without_open_is_a_clear_error_and_writes_nothing() -> None:
    backend = FullFake()
    memory = TurnMemory(backend, "c", "unit")
    with pytest.raises(TurnNotOpenError) as info:
        await memory.close_turn("nope", "reply")
    assert isinstance(info.value, NotFoundError) and info.value.turn_id == "nope"
    assert "open_turn" in str(info.value)
    assert backend.writes == []


async def test_failed_reply_write_raises_turn_incomplete_then_retry_completes() -> None:
    backend = FullFake()
    memory = TurnMemory(backend, "c", "unit")
    await memory.open_turn("t", "question")
    original = backend.store.add_message

    async def failing(req: rq.AddMessage) -> Any:
        raise TransportError("connection reset")

    backend.store.add_message = failing  # type: ignore[method-assign]
    with pytest.raises(TurnIncompleteError) as info:
        await memory.close_turn("t", "answer", refers_to=["e1"])
    error = info.value
    assert isinstance(error, MemoryCoreError)
    assert isinstance(error.__cause__, TransportError)
    assert error.turn_id == "t" and error.assistant_message == "answer"
    assert error.refers_to == [EntityRef(id="e1")]
    assert "user message is stored" in str(error) and "close_turn" in str(error)
    assert _stored(backend, "c") == [("user", "question")]

    backend.store.add_message = original  # type: ignore[method-assign]
    await memory.close_turn(error.turn_id, error.assistant_message)
    assert _stored(backend, "c") == [("user", "question"), ("assistant", "answer")]


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda m: m.open_turn("", "x"), "turn_id"),
        (lambda m: m.open_turn(7, "x"), "turn_id"),
        (lambda m: m.open_turn("t", None), "user_message"),
        (lambda m: m.close_turn("t", b"x"), "assistant_message"),
        (lambda m: m.close_turn("t", "x", refers_to="e1"), "refers_to"),
        (lambda m: m.close_turn("t", "x", refers_to=[3]), "refers_to"),
        (lambda m: m.close_turn("t", "x", refers_to=[""]), "refers_to"),
    ],
)
async def test_bad_input_names_the_argument_and_writes_nothing(call: Any, argument: str) -> None:
    backend = FullFake()
    memory = TurnMemory(backend, "c", "unit")
    with pytest.raises(InvalidRequestError) as info:
        await call(memory)
    assert info.value.argument == argument
    assert backend.writes == []


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"conversation_id": ""}, "conversation_id"),
        ({"platform": 3}, "platform"),
        ({"retrieval_limit": 0}, "retrieval_limit"),
        ({"max_identifiers": True}, "max_identifiers"),
        ({"replay_lookback": -1}, "replay_lookback"),
    ],
)
def test_bad_options_name_the_argument(kwargs: dict[str, Any], argument: str) -> None:
    options: dict[str, Any] = {"conversation_id": "c", "platform": "p", **kwargs}
    with pytest.raises(InvalidRequestError) as info:
        TurnMemory(FullFake(), **options)
    assert info.value.argument == argument


# ------------------------------------------------------------------ order


async def test_turns_opened_before_closing_interleave_in_call_order() -> None:
    backend = FullFake()
    memory = TurnMemory(backend, "c", "unit")
    await memory.open_turn("t1", "u1")
    await memory.open_turn("t2", "u2")
    await memory.close_turn("t2", "a2")
    await memory.close_turn("t1", "a1")
    assert _stored(backend, "c") == [
        ("user", "u1"),
        ("user", "u2"),
        ("assistant", "a2"),
        ("assistant", "a1"),
    ]


async def test_concurrent_wrapped_calls_store_whole_turns_in_call_order() -> None:
    backend = FullFake()
    started: list[str] = []

    async def agent(message: str, ctx: TurnContext) -> str:
        started.append(message)
        # The first turn is the slowest: without serialisation its reply would land last.
        await anyio.sleep(0.05 if message == "u0" else 0)
        return message.replace("u", "a")

    wrapped = with_memory(agent, backend=backend, conversation_id="c", platform="unit")
    entered = [anyio.Event() for _ in range(4)]

    async def call(i: int) -> None:
        entered[i].set()
        await wrapped(f"u{i}", turn_id=f"t{i}")

    async with anyio.create_task_group() as group:
        for i in range(4):
            group.start_soon(call, i)
            await entered[i].wait()
    assert started == ["u0", "u1", "u2", "u3"]
    assert _stored(backend, "c") == [
        (role, f"{role[0]}{i}") for i in range(4) for role in ("user", "assistant")
    ]


# ------------------------------------------------------------------ with_memory


async def test_with_memory_sync_agent_gets_context_and_result_has_both_halves() -> None:
    backend = FullFake()
    (acme,) = await _entities(backend, "Acme Corp")
    seen: list[TurnContext] = []

    def agent(message: str, ctx: TurnContext) -> str:
        seen.append(ctx)
        return f"I know {len(ctx.retrieved)} thing(s) about Acme Corp"

    wrapped = with_memory(agent, backend=backend, conversation_id="c", platform="unit")
    result = await wrapped("Tell me about Acme Corp", turn_id="t1")
    ctx = seen[0]
    assert ctx.turn_id == "t1" and ctx.conversation_id == "c" and ctx.memory is wrapped.memory
    assert ctx.retrieved_entity_ids == [acme.id]
    assert ctx.user_message == result.user_message
    assert result.text == "I know 1 thing(s) about Acme Corp"
    assert result.retrieved == [acme] and not result.replayed
    # A plain str reply links the retrieved entities it names.
    assert [ref.id for ref in result.assistant_message.mentions] == [acme.id]


async def test_with_memory_reply_object_controls_refers_to() -> None:
    backend = FullFake()
    _, globex = await _entities(backend, "Acme", "Globex")

    async def agent(message: str, ctx: TurnContext) -> Reply:
        return Reply("Acme and Globex", refers_to=[globex.id])

    wrapped = with_memory(agent, backend=backend, conversation_id="c", platform="unit")
    result = await wrapped("Acme?")
    assert [ref.id for ref in result.assistant_message.mentions] == [globex.id]
    assert len(result.turn_id) == 32  # a generated id when none is given

    async def silent(message: str, ctx: TurnContext) -> Reply:
        return Reply("Acme", refers_to=[])

    quiet = with_memory(silent, backend=backend, conversation_id="c2", platform="unit")
    assert (await quiet("Acme?")).assistant_message.mentions == []


async def test_with_memory_replay_of_a_complete_turn_does_not_run_the_agent() -> None:
    backend = FullFake()
    runs: list[str] = []

    async def agent(message: str, ctx: TurnContext) -> str:
        runs.append(message)
        return f"reply {len(runs)}"

    wrapped = with_memory(agent, backend=backend, conversation_id="c", platform="unit")
    first = await wrapped("hello", turn_id="t")
    again = await wrapped("hello", turn_id="t")
    assert runs == ["hello"] and again.replayed
    assert again.assistant_message == first.assistant_message
    other = with_memory(agent, backend=backend, conversation_id="c", platform="unit")
    assert (await other("hello", turn_id="t")).text == "reply 1"
    assert len(backend.writes) == 2


async def test_with_memory_callable_object_and_bad_replies() -> None:
    backend = FullFake()

    class Agent:
        async def __call__(self, message: str, ctx: TurnContext) -> str:
            return "async object"

    wrapped = with_memory(Agent(), backend=backend, conversation_id="c", platform="unit")
    assert (await wrapped("x")).text == "async object"

    def bad(message: str, ctx: TurnContext) -> Any:
        return 42

    broken = with_memory(bad, backend=backend, conversation_id="c", platform="unit")
    with pytest.raises(InvalidRequestError) as info:
        await broken("y", turn_id="b")
    assert info.value.argument == "reply"
    with pytest.raises(InvalidRequestError) as info:
        with_memory("nope", backend=backend, conversation_id="c", platform="u")  # type: ignore[arg-type]
    assert info.value.argument == "agent_fn"


async def test_agent_error_leaves_the_user_half_and_a_rerun_completes_the_turn() -> None:
    backend = FullFake()
    fail = [True]

    async def agent(message: str, ctx: TurnContext) -> str:
        if fail[0]:
            raise RuntimeError("model timeout")
        return "done"

    wrapped = with_memory(agent, backend=backend, conversation_id="c", platform="unit")
    with pytest.raises(RuntimeError):
        await wrapped("do it", turn_id="t")
    assert _stored(backend, "c") == [("user", "do it")]
    fail[0] = False
    result = await wrapped("do it", turn_id="t")
    assert result.text == "done" and not result.replayed
    assert _stored(backend, "c") == [("user", "do it"), ("assistant", "done")]


# ------------------------------------------------------------------ degraded backends


async def test_nams_like_backend_degrades_without_capability_warnings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    backend = NamsLikeFake()
    (acme,) = await _entities(backend, "Acme")
    memory = await TurnMemory.start_conversation(backend, "unit")
    assert memory.not_recorded == ("metadata", "mentions", "idempotency_keys", "reasoning")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CapabilityWarning)
        with caplog.at_level(logging.WARNING, logger="memory_core.turns"):
            opened = await memory.open_turn("t1", "Acme?")
            await memory.close_turn("t1", "Acme!", refers_to=[acme])
            await memory.open_turn("t2", "again")
            await memory.close_turn("t2", "sure")
    assert opened.retrieved == [acme]
    assert opened.not_recorded == memory.not_recorded
    assert all(m.metadata == {} and m.mentions == [] for m in backend.writes)
    warned = [r for r in caplog.records if "cannot record" in r.getMessage()]
    assert len(warned) == 1


async def test_degraded_turns_are_logged_once_per_backend_not_per_turn_memory(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An application that makes a TurnMemory per turn (as the bench does) hears about the
    backend's gaps once per backend object."""
    first, second = NamsLikeFake(), NamsLikeFake()
    with caplog.at_level(logging.WARNING, logger="memory_core.turns"):
        for backend in (first, first, first, second, second):
            memory = await TurnMemory.start_conversation(backend, "unit")
            await memory.open_turn("t", "hello")
            await memory.close_turn("t", "hi")
    warned = [r.getMessage() for r in caplog.records if "cannot record" in r.getMessage()]
    assert len(warned) == 2, warned  # one per backend object
    assert all("metadata, mentions, idempotency_keys" in text for text in warned)


async def test_nams_like_needs_an_existing_conversation() -> None:
    backend = NamsLikeFake()
    memory = TurnMemory(backend, "made-up", "unit")
    with pytest.raises(NotFoundError) as info:
        await memory.open_turn("t", "hi")
    assert "start_conversation" in str(info.value)
    assert backend.writes == []


async def test_nams_like_replay_rules() -> None:
    backend = NamsLikeFake()
    memory = await TurnMemory.start_conversation(backend, "unit")
    conv = memory.conversation_id
    await memory.open_turn("t1", "ok")
    # The process dies before the reply; a new process replays the whole turn.
    fresh = TurnMemory(backend, conv, "unit")
    replay = await fresh.open_turn("t1", "ok")
    assert replay.replayed
    await fresh.close_turn("t1", "fine")
    assert _stored(backend, conv) == [("user", "ok"), ("assistant", "fine")]
    # A new turn with the same text after a reply is a new turn ("ok" twice is real).
    again = await fresh.open_turn("t2", "ok")
    assert not again.replayed
    # ...and a second turn id cannot claim a user message already claimed here.
    third = await fresh.open_turn("t3", "ok")
    assert not third.replayed
    assert [m for _, m in _stored(backend, conv)] == ["ok", "fine", "ok", "ok"]
    # Without turn ids in storage, close_turn needs open_turn in this object.
    with pytest.raises(TurnNotOpenError):
        await TurnMemory(backend, conv, "unit").close_turn("t2", "x")


async def test_nams_like_retry_after_a_reply_write_that_reached_the_store() -> None:
    backend = NamsLikeFake()
    memory = await TurnMemory.start_conversation(backend, "unit")
    await memory.open_turn("t", "question")
    original = backend.store.add_message

    async def lost_response(req: rq.AddMessage) -> Any:
        await original(req)
        raise TransportError("read timeout")

    backend.store.add_message = lost_response  # type: ignore[method-assign]
    with pytest.raises(TurnIncompleteError):
        await memory.close_turn("t", "answer")
    backend.store.add_message = original  # type: ignore[method-assign]
    reply = await memory.close_turn("t", "answer")
    assert reply.content == "answer"
    assert _stored(backend, memory.conversation_id) == [
        ("user", "question"),
        ("assistant", "answer"),
    ]


async def test_metadata_without_keys_adopts_a_reply_that_reached_the_store() -> None:
    backend = _NoKeys()
    memory = TurnMemory(backend, "c", "unit")
    assert memory.not_recorded == ("idempotency_keys", "reasoning")
    await memory.open_turn("t", "question")
    await memory.open_turn("t2", "another question")  # the reply is not at the tail
    original = backend.store.add_message

    async def lost_response(req: rq.AddMessage) -> Any:
        await original(req)
        raise TransportError("read timeout")

    backend.store.add_message = lost_response  # type: ignore[method-assign]
    with pytest.raises(TurnIncompleteError):
        await memory.close_turn("t", "answer")
    backend.store.add_message = original  # type: ignore[method-assign]
    await memory.close_turn("t", "answer")
    assert _stored(backend, "c") == [
        ("user", "question"),
        ("user", "another question"),
        ("assistant", "answer"),
    ]


async def test_retry_that_cannot_read_storage_is_still_turn_incomplete() -> None:
    backend = NamsLikeFake()
    memory = await TurnMemory.start_conversation(backend, "unit")
    await memory.open_turn("t", "question")

    async def down(*args: Any, **kwargs: Any) -> Any:
        raise TransportError("down")

    backend.store.add_message = down  # type: ignore[method-assign]
    with pytest.raises(TurnIncompleteError):
        await memory.close_turn("t", "answer")
    backend.store.get_conversation = down  # type: ignore[method-assign]
    with pytest.raises(TurnIncompleteError) as info:
        await memory.close_turn("t", "answer")
    assert isinstance(info.value.__cause__, TransportError)
