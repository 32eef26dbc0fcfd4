"""Edges every integration shares: whole-session reads beyond a backend's default read,
NAMS's 200-message cap (one warning naming the method, and none for a limited read),
sequences refused as a whole, values JSON cannot hold, and the MCP tools' defaults."""

from __future__ import annotations

import datetime as dt
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest

from memory_core import CapabilityWarning, InvalidRequestError
from memory_core.sync import SyncMemoryBackend, open_backend
from memory_core_dev.sync_stores import SyncStore, opened_store, store_location

pytestmark = pytest.mark.anyio

BEYOND_DEFAULT = 1001  # the embedded backend reads 1000 messages when given no limit


@pytest.fixture(name="long_session")
def long_session_fixture() -> Iterator[SyncMemoryBackend]:
    with open_backend("memory://") as memory:
        many = [{"role": "user", "content": f"m{i}"} for i in range(BEYOND_DEFAULT)]
        memory.add_messages_batch("s", many)
        yield memory


@pytest.fixture(name="capped")
def capped_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SyncStore]:
    """A NAMS session holding exactly the 200 messages one read returns."""
    with opened_store("nams", request, tmp_path) as store:
        session = store.session("capped")
        for start in (0, 100):
            batch = [{"role": "user", "content": f"m{i}"} for i in range(start, start + 100)]
            store.memory.add_messages_batch(session, batch)
        yield store


def _said(seen: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in seen if issubclass(w.category, CapabilityWarning)]


def _truncated(method: str) -> str:
    return (
        f"nams.{method}: only the newest 200 messages can be read from this backend; "
        "older ones are unreachable"
    )


# ---------------------------------------------------------------- whole sessions


async def test_whole_session_reads_go_beyond_the_default_read(
    long_session: SyncMemoryBackend,
) -> None:
    pytest.importorskip("agents")
    from memory_core.integrations.openai_agents import MemorySession

    assert len(await MemorySession(long_session, "s").get_items()) == BEYOND_DEFAULT


def test_whole_session_reads_go_beyond_the_default_read_sync(
    long_session: SyncMemoryBackend,
) -> None:
    pytest.importorskip("llama_index.core")
    pytest.importorskip("pydantic_ai")
    pytest.importorskip("strands")
    from memory_core.integrations.llamaindex import MemoryChatStore
    from memory_core.integrations.pydantic_ai import MemoryMessageHistory
    from memory_core.integrations.strands import MemorySessionManager

    assert len(MemoryChatStore(memory=long_session).get_messages("s")) == BEYOND_DEFAULT
    assert len(MemoryMessageHistory(long_session, "s").load()) == BEYOND_DEFAULT

    class Agent:
        messages: list[Any] = []
        state = None

    agent = Agent()
    MemorySessionManager(long_session, "s").initialize(agent)
    assert len(agent.messages) == BEYOND_DEFAULT


# ---------------------------------------------------------------- NAMS's read cap


def test_a_full_read_at_the_cap_warns_naming_the_method(capped: SyncStore) -> None:
    pytest.importorskip("llama_index.core")
    pytest.importorskip("pydantic_ai")
    pytest.importorskip("strands")
    from memory_core.integrations.llamaindex import MemoryChatStore
    from memory_core.integrations.pydantic_ai import MemoryMessageHistory
    from memory_core.integrations.strands import MemorySessionManager

    session = capped.sessions[0]

    class Agent:
        messages: list[Any] = []
        state = None

    reads = [
        ("get_messages", lambda: MemoryChatStore(memory=capped.memory).get_messages(session)),
        ("load", lambda: MemoryMessageHistory(capped.memory, session).load()),
        ("initialize", lambda: MemorySessionManager(capped.memory, session).initialize(Agent())),
    ]
    for method, read in reads:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            read()
        assert _said(seen) == [_truncated(method)]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert len(MemoryMessageHistory(capped.memory, session, limit=200).load()) == 200
    assert _said(seen) == []  # a limited read asked for what it got


async def test_get_items_at_the_cap_warns_and_a_limited_read_does_not(capped: SyncStore) -> None:
    pytest.importorskip("agents")
    from memory_core.integrations.openai_agents import MemorySession

    session = MemorySession(capped.memory, capped.sessions[0])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert len(await session.get_items()) == 200
    assert _said(seen) == [_truncated("get_items")]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert len(await session.get_items(limit=200)) == 200
        assert len(await MemorySession(capped.memory, capped.sessions[0]).get_items(200)) == 200
    assert _said(seen) == []


# ---------------------------------------------------------------- bad sequences


@pytest.mark.parametrize("given", ["hello", b"hello", 42])
def test_langchain_and_pydantic_ai_refuse_what_is_no_sequence_of_messages(given: Any) -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("pydantic_ai")
    from memory_core.integrations.langchain import MemoryChatMessageHistory
    from memory_core.integrations.pydantic_ai import MemoryMessageHistory

    with open_backend("memory://") as memory:
        for save in (
            MemoryChatMessageHistory(memory, "s").add_messages,
            MemoryMessageHistory(memory, "s").save,
        ):
            with pytest.raises(InvalidRequestError) as caught:
                save(given)
            assert caught.value.argument == "messages"
        assert memory.list_sessions() == []


# ---------------------------------------------------------------- values JSON cannot hold


async def test_openai_agents_items_with_values_json_cannot_hold_are_stored_as_text(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    pytest.importorskip("agents")
    from memory_core.integrations.openai_agents import MemorySession

    when = dt.datetime(2026, 12, 2, 9, 30, tzinfo=dt.UTC)
    items: list[Any] = [
        {"type": "function_call_output", "call_id": "c", "output": {"at": when}},
        {"type": "function_call", "call_id": "d", "name": "f", "arguments": "{}", "at": when},
    ]
    store = store_location("nams", request, tmp_path)  # no metadata: only the text is kept
    await anyio.to_thread.run_sync(store.open)
    try:
        session = await anyio.to_thread.run_sync(store.session)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CapabilityWarning)
            await MemorySession(store.memory, session).add_items(items)
        found = await anyio.to_thread.run_sync(lambda: store.memory.get_conversation(session))
    finally:
        await anyio.to_thread.run_sync(store.close)
    assert [(m.role.value, m.content) for m in found.messages] == [
        ("tool", json.dumps({"at": str(when)})),
        ("assistant", json.dumps({**items[1], "at": str(when)}, sort_keys=True)),
    ]


def test_async_llamaindex_keys_page_through_several_pages() -> None:
    pytest.importorskip("llama_index.core")
    from memory_core.integrations import llamaindex
    from memory_core.integrations.llamaindex import MemoryChatStore

    names = [f"k{i:03d}" for i in range(llamaindex._SESSIONS_PAGE + 20)]

    async def keys() -> list[str]:
        async with _async_memory() as memory:
            for name in names:
                await memory.add_message(name, "user", name)
            chats = MemoryChatStore(memory=memory)
            assert await chats.adelete_message(names[0], 1) is None  # index == length
            assert await chats.adelete_message(names[0], -2) is None
            return await chats.aget_keys()

    assert anyio.run(keys) == names


def _async_memory() -> Any:
    from memory_core import open_backend as open_async

    return open_async("memory://")
