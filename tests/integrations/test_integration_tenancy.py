"""Every integration acts for its ``user_identifier`` only, in every method, sync and async.

Alice and bob each hold a session under the same id in one multi-tenant store. After each
of alice's calls, bob's session must be exactly as it was, and alice's must show her call's
effect (a call that lost the user is refused by the multi-tenant store, or reaches bob's).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio.to_thread
import pytest

from memory_core.sync import SyncMemoryBackend, open_backend

pytestmark = pytest.mark.anyio

SESSION = "shared"


@pytest.fixture(name="store")
def store_fixture() -> Iterator[SyncMemoryBackend]:
    with open_backend("memory://", multi_tenant=True) as memory:
        for text in ("bob one", "bob two"):
            memory.add_message(SESSION, "user", text, user_identifier="bob")
        memory.add_message("bob-only", "user", "bob's other", user_identifier="bob")
        yield memory


def _texts(store: SyncMemoryBackend, user: str, session: str = SESSION) -> list[str]:
    found = store.get_conversation(session, limit=100, user_identifier=user)
    return [m.content for m in found.messages]


async def _a(func: Any, *args: Any) -> Any:
    """``func(*args)`` in a worker thread: the blocking facade refuses the loop's thread."""
    return await anyio.to_thread.run_sync(func, *args)


def _bob_untouched(store: SyncMemoryBackend) -> None:
    assert _texts(store, "bob") == ["bob one", "bob two"]
    assert _texts(store, "bob", "bob-only") == ["bob's other"]


# ---------------------------------------------------------------- LangChain


def test_langchain_history_acts_for_its_user(store: SyncMemoryBackend) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, HumanMessage

    from memory_core.integrations.langchain import MemoryChatMessageHistory

    history = MemoryChatMessageHistory(store, SESSION, user_identifier="alice")
    assert history.messages == []
    history.add_messages([HumanMessage("alice asks"), AIMessage("alice hears")])
    assert [m.text for m in history.messages] == ["alice asks", "alice hears"]
    _bob_untouched(store)
    history.clear()
    assert _texts(store, "alice") == []
    _bob_untouched(store)


async def test_langchain_history_acts_for_its_user_async(store: SyncMemoryBackend) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import HumanMessage

    from memory_core.integrations.langchain import MemoryChatMessageHistory

    history = MemoryChatMessageHistory(store, SESSION, user_identifier="alice")
    await history.aadd_messages([HumanMessage("alice asks")])
    assert [m.text for m in await history.aget_messages()] == ["alice asks"]
    await _a(_bob_untouched, store)
    await history.aclear()
    assert await _a(_texts, store, "alice") == []
    await _a(_bob_untouched, store)


async def test_langchain_retriever_searches_its_users_messages(store: SyncMemoryBackend) -> None:
    pytest.importorskip("langchain_core")
    from memory_core.integrations.langchain import MemoryRetriever

    await _a(lambda: store.add_message(SESSION, "user", "alice one", user_identifier="alice"))
    for session_id in (SESSION, None):
        retriever = MemoryRetriever(memory=store, session_id=session_id, user_identifier="alice")
        assert [d.page_content for d in await _a(retriever.invoke, "one")] == ["alice one"]
        assert [d.page_content for d in await retriever.ainvoke("one")] == ["alice one"]


# ---------------------------------------------------------------- LlamaIndex


def test_llamaindex_store_acts_for_its_user(store: SyncMemoryBackend) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.llms.types import ChatMessage

    from memory_core.integrations.llamaindex import MemoryChatStore

    chats = MemoryChatStore(memory=store, user_identifier="alice")
    assert chats.get_keys() == []
    chats.set_messages(SESSION, [ChatMessage(role="user", content="a1")])
    chats.add_message(SESSION, ChatMessage(role="assistant", content="a2"))
    chats.add_message(SESSION, ChatMessage(role="user", content="a3"))
    assert [m.content for m in chats.get_messages(SESSION)] == ["a1", "a2", "a3"]
    assert chats.get_keys() == [SESSION]
    chats.set_messages(SESSION, [ChatMessage(role="user", content="b1")])  # replaces hers
    assert _texts(store, "alice") == ["b1"]
    chats.add_message(SESSION, ChatMessage(role="user", content="b2"))
    chats.add_message(SESSION, ChatMessage(role="user", content="b3"))
    assert chats.delete_message(SESSION, 0) is not None
    assert chats.delete_last_message(SESSION) is not None
    assert _texts(store, "alice") == ["b2"]
    _bob_untouched(store)
    assert [m.content for m in chats.delete_messages(SESSION) or []] == ["b2"]
    assert _texts(store, "alice") == []
    _bob_untouched(store)


async def test_llamaindex_store_acts_for_its_user_async(store: SyncMemoryBackend) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.llms.types import ChatMessage

    from memory_core.integrations.llamaindex import MemoryChatStore

    chats = MemoryChatStore(memory=store, user_identifier="alice")
    assert await chats.aget_keys() == []
    await chats.aset_messages(SESSION, [ChatMessage(role="user", content="a1")])
    await chats.async_add_message(SESSION, ChatMessage(role="user", content="a2"))
    assert await chats.aget_keys() == [SESSION]
    await chats.aset_messages(SESSION, [ChatMessage(role="user", content="b1")])
    for text in ("b2", "b3"):
        await chats.async_add_message(SESSION, ChatMessage(role="user", content=text))
    assert [m.content for m in await chats.aget_messages(SESSION)] == ["b1", "b2", "b3"]
    assert await chats.adelete_message(SESSION, 0) is not None
    assert await chats.adelete_last_message(SESSION) is not None
    assert await _a(_texts, store, "alice") == ["b2"]
    await _a(_bob_untouched, store)
    assert [m.content for m in await chats.adelete_messages(SESSION) or []] == ["b2"]
    assert await _a(_texts, store, "alice") == []
    await _a(_bob_untouched, store)


# ---------------------------------------------------------------- OpenAI Agents


async def test_openai_agents_session_acts_for_its_user(store: SyncMemoryBackend) -> None:
    pytest.importorskip("agents")
    from memory_core.integrations.openai_agents import MemorySession

    session = MemorySession(store, SESSION, user_identifier="alice")
    assert await session.get_items() == []
    await session.add_items([{"role": "user", "content": "a1"}, {"role": "user", "content": "a2"}])
    assert [i["content"] for i in await session.get_items()] == ["a1", "a2"]  # type: ignore[typeddict-item]
    assert (await session.pop_item() or {}).get("content") == "a2"
    assert await _a(_texts, store, "alice") == ["a1"]
    await _a(_bob_untouched, store)
    await session.clear_session()
    assert await _a(_texts, store, "alice") == []
    await _a(_bob_untouched, store)


# ---------------------------------------------------------------- Pydantic AI


def _model_messages(text: str) -> list[Any]:
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    return [
        ModelRequest(parts=[UserPromptPart(content=f"{text}?")]),
        ModelResponse(parts=[TextPart(content=f"{text}!")]),
    ]


def test_pydantic_ai_history_acts_for_its_user(store: SyncMemoryBackend) -> None:
    pytest.importorskip("pydantic_ai")
    from memory_core.integrations.pydantic_ai import MemoryMessageHistory

    history = MemoryMessageHistory(store, SESSION, user_identifier="alice")
    assert history.load() == []
    history.save(_model_messages("alice"))
    assert len(history.load()) == 2
    assert _texts(store, "alice") == ["alice?", "alice!"]
    _bob_untouched(store)
    history.clear()
    assert _texts(store, "alice") == []
    _bob_untouched(store)


async def test_pydantic_ai_history_acts_for_its_user_async(store: SyncMemoryBackend) -> None:
    pytest.importorskip("pydantic_ai")
    from memory_core.integrations.pydantic_ai import MemoryMessageHistory

    history = MemoryMessageHistory(store, SESSION, user_identifier="alice")
    await history.asave(_model_messages("alice"))
    assert len(await history.aload()) == 2
    assert await _a(_texts, store, "alice") == ["alice?", "alice!"]
    await _a(_bob_untouched, store)
    await history.aclear()
    assert await _a(_texts, store, "alice") == []
    await _a(_bob_untouched, store)


# ---------------------------------------------------------------- Strands


class _Agent:
    """What the session manager reads of a Strands agent: its messages and state."""

    def __init__(self, messages: list[Any]) -> None:
        self.messages = messages
        self.state = None


def test_strands_manager_acts_for_its_user(store: SyncMemoryBackend) -> None:
    pytest.importorskip("strands")
    from memory_core.integrations.strands import MemorySessionManager

    manager = MemorySessionManager(store, SESSION, user_identifier="alice")
    agent = _Agent([{"role": "user", "content": [{"text": "a0"}]}])
    manager.initialize(agent)  # a new session for alice: the agent's messages are stored
    assert _texts(store, "alice") == ["a0"]
    manager.append_message({"role": "assistant", "content": [{"text": "a1"}]}, agent)
    manager.redact_latest_message({"role": "assistant", "content": [{"text": "[x]"}]}, agent)
    assert _texts(store, "alice") == ["a0", "[x]"]
    _bob_untouched(store)
    restored = _Agent([])
    manager.initialize(restored)
    assert [m["content"][0]["text"] for m in restored.messages] == ["a0", "[x]"]
