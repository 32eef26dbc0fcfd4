"""What the turn protocol asks of each real store: the calls a turn makes.

Where the store tells replays (``Store.tells_replays``), a new turn is the retrieval, the
question's keyed write and the reply's write, with no read of the conversation; a replay
reads once to find the stored reply. Elsewhere the newest messages are read first.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from memory_core import MemoryBackend
from memory_core.turns import TurnMemory

from .conftest import TurnStore

pytestmark = pytest.mark.anyio

_COUNTED = (
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
    if backend.store.tells_replays:
        assert turn_store.kind in ("embedded", "bolt", "postgres")
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
    assert dict(calls) == {"add_keyed_message": 1, "get_conversation": 1}
    assert len((await other.get_conversation(conversation)).messages) == 2


def _kept(backend: MemoryBackend, hook: str) -> bool:
    return hook != "find_entities" or backend.capabilities.entities
