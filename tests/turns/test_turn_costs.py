"""What the turn protocol asks of each real store: the calls a turn makes.

Where the store tells replays (``Store.tells_replays``), a new turn is the retrieval, the
question's keyed write and the reply's write, with no read of the conversation; where it
also opens turns (``Store.opens_turns``) the retrieval and the question are one call. A
replay reads once to find the stored reply. Elsewhere the newest messages are read first.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import pytest

from memory_core import MemoryBackend
from memory_core.turns import TurnMemory

from .conftest import TurnStore

pytestmark = pytest.mark.anyio

_COUNTED = (
    "open_turn",
    "add_message",
    "add_keyed_message",
    "get_conversation",
    "find_entities",
    "create_conversation",
)


def _count_calls(backend: MemoryBackend) -> Counter[str]:
    """Counts the store calls of ``backend`` by hook name, from now on."""
    calls: Counter[str] = Counter()
    store = backend.store
    for name in _COUNTED:
        hook = getattr(store, name)

        def counted(*args: Any, _name: str = name, _hook: Any = hook) -> Any:
            calls[_name] += 1
            return _hook(*args)

        setattr(store, name, counted)
    return calls


async def test_a_new_turn_reads_nothing_where_the_store_tells_replays(
    turn_store: TurnStore,
) -> None:
    backend = await turn_store.open()
    conversation = await turn_store.new_conversation(backend)
    acme = await turn_store.entity("Acme Corp")
    memory = TurnMemory(backend, conversation, "tests")
    calls = _count_calls(backend)
    opened = await memory.open_turn("t1", f"What about {acme.name}?")
    await memory.close_turn("t1", "It is a company.")
    assert opened.retrieved_entity_ids == [acme.id] and not opened.replayed
    if backend.store.opens_turns:
        # the retrieval and the question in one call of the store
        assert turn_store.kind in ("embedded", "bolt", "postgres")
        expected = {"open_turn": 1, "add_message": 1}
    elif backend.store.tells_replays:
        expected = {"find_entities": 1, "add_keyed_message": 1, "add_message": 1}
    else:
        assert turn_store.kind.startswith("nams")
        expected = {"find_entities": 1, "get_conversation": 1, "add_message": 2}
    assert dict(calls) == {k: v for k, v in expected.items() if _kept(backend, k)}


async def test_a_replay_from_storage_reads_once_for_the_reply(turn_store: TurnStore) -> None:
    backend = await turn_store.open()
    conversation = await turn_store.new_conversation(backend)
    first = TurnMemory(backend, conversation, "tests")
    await first.open_turn("t1", "hello there")
    reply = await first.close_turn("t1", "hi")
    other = await turn_store.open()  # another process, which never saw the turn
    again = TurnMemory(other, conversation, "tests")
    calls = _count_calls(other)
    opened = await again.open_turn("t1", "hello there")
    if not other.store.tells_replays:
        return  # NAMS cannot recognise an answered turn from another process
    assert opened.replayed and opened.assistant_message is not None
    assert opened.assistant_message.id == reply.id
    opening = "open_turn" if other.store.opens_turns else "add_keyed_message"
    assert dict(calls) == {opening: 1, "get_conversation": 1}
    assert len((await other.get_conversation(conversation)).messages) == 2


def _kept(backend: MemoryBackend, hook: str) -> bool:
    return hook != "find_entities" or backend.capabilities.entities


async def test_a_lookup_that_fails_in_the_questions_statement_fails_the_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memory_core import StoreError, open_backend
    from memory_core.backends.embedded import entities

    def broken(*_args: Any) -> list[Any]:
        raise StoreError("the entity lookup broke")

    async with open_backend("memory://") as backend:
        assert backend.store.opens_turns
        memory = TurnMemory(backend, "c", "tests")
        with monkeypatch.context() as patch:
            patch.setattr(entities, "find_entities", broken)
            with pytest.raises(StoreError, match="lookup broke"):
                await memory.open_turn("t1", "What about Acme Corp?")
        assert (await backend.get_conversation("c")).messages == []  # nothing written
        opened = await memory.open_turn("t1", "What about Acme Corp?")  # the retry
        assert not opened.replayed
        assert [m.content for m in (await backend.get_conversation("c")).messages] == [
            "What about Acme Corp?"
        ]


async def test_a_read_first_turn_sends_its_retrieval_and_its_read_at_once(
    read_first_store: TurnStore,
) -> None:
    backend = await read_first_store.open()
    assert not backend.store.tells_replays
    conversation = await read_first_store.new_conversation(backend)
    acme = await read_first_store.entity("Acme Corp")
    memory = TurnMemory(backend, conversation, "tests")
    reading = anyio.Event()
    store = backend.store
    find, read = store.find_entities, store.get_conversation

    async def find_while_reading(req: Any) -> Any:
        with anyio.fail_after(5):
            await reading.wait()  # only the read sets it: the two are under way at once
        return await find(req)

    async def read_and_say(req: Any) -> Any:
        reading.set()
        return await read(req)

    store.find_entities = find_while_reading  # type: ignore[method-assign]
    store.get_conversation = read_and_say  # type: ignore[method-assign]
    opened = await memory.open_turn("t1", f"What about {acme.name}?")
    assert opened.retrieved_entity_ids == [acme.id] and not opened.replayed
    again = await memory.open_turn("t1", f"What about {acme.name}?")
    assert again.replayed and again.user_message.id == opened.user_message.id
