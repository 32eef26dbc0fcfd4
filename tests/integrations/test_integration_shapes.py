"""What each integration stores for each kind of framework message, and what it gives back
where the store keeps no metadata (NAMS).

The role and text written are what every other reader of the session sees (search, other
frameworks, ``get_conversation``), so they are pinned here for every kind of message. On
NAMS only role and text come back: each framework's plain form of them is pinned too,
with the one warning (text and location) that says what was lost, and strict mode's
refusal that writes nothing.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest

from memory_core import CapabilityWarning, NotSupportedError
from memory_core.integrations import start_session
from memory_core.sync import SyncMemoryBackend, open_backend
from memory_core_dev.sync_stores import SyncStore, opened_store

pytestmark = pytest.mark.anyio


@pytest.fixture(name="embedded")
def embedded_fixture() -> Iterator[SyncMemoryBackend]:
    with open_backend("memory://") as memory:
        yield memory


@pytest.fixture(name="nams")
def nams_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SyncStore]:
    with opened_store("nams", request, tmp_path) as store:
        yield store


def _stored(memory: SyncMemoryBackend, session: str) -> list[tuple[str, str]]:
    found = memory.get_conversation(session, limit=100).messages
    return [(m.role.value, m.content) for m in found]


def _said(seen: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in seen if issubclass(w.category, CapabilityWarning)]


async def _a(func: Any, *args: Any) -> Any:
    return await anyio.to_thread.run_sync(func, *args)


# ---------------------------------------------------------------- OpenAI Agents

AGENT_ITEMS: list[Any] = [
    {"role": "user", "content": "plain"},
    {"role": "developer", "content": "be brief"},
    {"role": "system", "content": "sys"},
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "one"},
            {"type": "input_image", "image_url": "x"},
            {"type": "input_text", "text": "two"},
            "not a part",
        ],
    },
    {"role": "assistant", "content": None},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    {"type": "function_call_output", "call_id": "c2", "output": {"t": 21, "u": "C"}},
    {"type": "computer_call_output", "call_id": "c3", "output": ["a", 1]},
    {"role": "critic", "content": "unknown role", "type": "message"},
]
AGENT_STORED = [
    ("user", "plain"),
    ("system", "be brief"),
    ("system", "sys"),
    ("user", "one\ntwo"),
    ("assistant", ""),
    ("assistant", json.dumps(AGENT_ITEMS[5], sort_keys=True)),
    ("tool", "sunny"),
    ("tool", json.dumps({"t": 21, "u": "C"})),
    ("tool", json.dumps(["a", 1])),
    ("assistant", json.dumps(AGENT_ITEMS[9], sort_keys=True)),
]


async def test_openai_agents_items_are_stored_as_role_and_text(
    embedded: SyncMemoryBackend,
) -> None:
    pytest.importorskip("agents")
    from memory_core.integrations.openai_agents import MemorySession

    session = MemorySession(embedded, "s")
    await session.add_items(AGENT_ITEMS)
    assert await _a(_stored, embedded, "s") == AGENT_STORED
    assert await session.get_items() == AGENT_ITEMS  # exact, from the metadata


async def test_openai_agents_on_nams_gives_back_role_and_text(nams: SyncStore) -> None:
    pytest.importorskip("agents")
    from memory_core.integrations.openai_agents import MemorySession

    session = MemorySession(nams.memory, await _a(nams.session))
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        await session.add_items(plain)
        assert _said(seen) == []  # nothing beyond role and text: nothing lost
        await session.add_items(AGENT_ITEMS)
        await session.add_items(AGENT_ITEMS[1:2])
    assert _said(seen) == [
        "nams.add_items: item fields beyond role and text cannot be kept by this backend; "
        "only role and text are stored. keep items elsewhere, or use a backend with "
        "message_metadata"
    ]  # once per session object
    if "MUTANT_UNDER_TEST" not in os.environ:  # mutmut's trampoline is one frame more
        assert [w.filename for w in seen] == [__file__]
    expected = plain + [
        {"role": "assistant" if role == "tool" else role, "content": text}
        for role, text in [*AGENT_STORED, ("system", "be brief")]
    ]
    assert await session.get_items() == expected


async def test_openai_agents_strict_refuses_lossy_items_and_writes_nothing(
    nams: SyncStore,
) -> None:
    pytest.importorskip("agents")
    from memory_core.integrations.openai_agents import MemorySession

    session_id = await _a(nams.session)
    session = MemorySession(await _a(lambda: nams.open(strict=True)), session_id)
    with pytest.raises(NotSupportedError) as refused:
        await session.add_items([{"role": "user", "content": "ok"}, AGENT_ITEMS[6]])
    assert (refused.value.backend, refused.value.method) == ("nams", "add_items")
    assert refused.value.message == "item fields beyond role and text cannot be kept"
    assert await session.get_items() == []
    await session.add_items([{"role": "user", "content": "ok"}])
    assert await session.get_items() == [{"role": "user", "content": "ok"}]
    with pytest.raises(NotSupportedError) as popped:
        await session.pop_item()
    assert (popped.value.method, popped.value.message) == (
        "pop_item",
        "needs the 'delete_message' capability, which it lacks",
    )


# ---------------------------------------------------------------- LangChain


def _langchain_kinds() -> list[Any]:
    from langchain_core.messages import (
        AIMessage,
        ChatMessage,
        FunctionMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
    )

    return [
        HumanMessage("h"),
        AIMessage("a"),
        SystemMessage("s"),
        ToolMessage("t", tool_call_id="c1"),
        FunctionMessage("f", name="fn"),
        ChatMessage(role="assistant", content="ca"),
        ChatMessage(role="system", content="cs"),
        ChatMessage(role="tool", content="ct"),
        ChatMessage(role="user", content="cu"),
        ChatMessage(role="critic", content="cc"),
    ]


LANGCHAIN_STORED = [
    ("user", "h"),
    ("assistant", "a"),
    ("system", "s"),
    ("tool", "t"),
    ("tool", "f"),
    ("assistant", "ca"),
    ("system", "cs"),
    ("tool", "ct"),
    ("user", "cu"),
    ("user", "cc"),
]


def test_langchain_messages_are_stored_as_role_and_text(embedded: SyncMemoryBackend) -> None:
    pytest.importorskip("langchain_core")
    from memory_core.integrations.langchain import MemoryChatMessageHistory

    history = MemoryChatMessageHistory(embedded, "s")
    history.add_messages(_langchain_kinds())
    assert _stored(embedded, "s") == LANGCHAIN_STORED
    assert history.messages == _langchain_kinds()


def test_langchain_on_nams_gives_back_role_and_text(nams: SyncStore) -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    from memory_core.integrations.langchain import MemoryChatMessageHistory

    history = MemoryChatMessageHistory(nams.memory, nams.session())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        history.add_messages([HumanMessage("h"), AIMessage("a"), SystemMessage("s")])
        assert _said(seen) == []
        history.add_messages(_langchain_kinds())
    assert _said(seen) == [
        "nams.add_messages: message fields beyond role and content cannot be kept by this "
        "backend; only role and text are stored. keep the full messages elsewhere, or use a "
        "backend with message_metadata"
    ]
    plain = {"user": HumanMessage, "assistant": AIMessage, "system": SystemMessage}
    expected = [HumanMessage("h"), AIMessage("a"), SystemMessage("s")] + [
        ToolMessage(text, tool_call_id="") if role == "tool" else plain[role](text)
        for role, text in LANGCHAIN_STORED
    ]
    assert history.messages == expected


async def test_langchain_retriever_documents_carry_the_hit(embedded: SyncMemoryBackend) -> None:
    pytest.importorskip("langchain_core")
    from memory_core.integrations.langchain import MemoryRetriever

    stored = await _a(lambda: embedded.add_message("s", "assistant", "tram 28 at noon"))
    for documents in (
        await _a(MemoryRetriever(memory=embedded, session_id="s").invoke, "tram"),
        await MemoryRetriever(memory=embedded).ainvoke("tram"),
    ):
        [document] = documents
        assert document.page_content == "tram 28 at noon"
        metadata = dict(document.metadata)
        score = metadata.pop("score")
        assert isinstance(score, float) and score > 0
        assert metadata == {
            "id": str(stored.id),
            "role": "assistant",
            "session_id": "s",
            "created_at": stored.created_at.isoformat(),
        }


# ---------------------------------------------------------------- LlamaIndex


def _llama_kinds() -> list[Any]:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    return [
        ChatMessage(role=MessageRole.USER, content="u"),
        ChatMessage(role=MessageRole.ASSISTANT, content="a"),
        ChatMessage(role=MessageRole.SYSTEM, content="s"),
        ChatMessage(role=MessageRole.DEVELOPER, content="d"),
        ChatMessage(role=MessageRole.TOOL, content="t"),
        ChatMessage(role=MessageRole.FUNCTION, content="f"),
        ChatMessage(role=MessageRole.CHATBOT, content="c"),
        ChatMessage(role=MessageRole.USER, content=None),
    ]


LLAMA_STORED = [
    ("user", "u"),
    ("assistant", "a"),
    ("system", "s"),
    ("system", "d"),
    ("tool", "t"),
    ("tool", "f"),
    ("assistant", "c"),
    ("user", ""),
]


def test_llamaindex_messages_are_stored_as_role_and_text(embedded: SyncMemoryBackend) -> None:
    pytest.importorskip("llama_index.core")
    from memory_core.integrations.llamaindex import MemoryChatStore

    chats = MemoryChatStore(memory=embedded)
    assert MemoryChatStore.class_name() == "MemoryCoreChatStore"
    chats.set_messages("s", _llama_kinds())
    assert _stored(embedded, "s") == LLAMA_STORED
    assert chats.get_messages("s") == _llama_kinds()


def test_llamaindex_on_nams_gives_back_role_and_text(nams: SyncStore) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    from memory_core.integrations.llamaindex import MemoryChatStore

    chats = MemoryChatStore(memory=nams.memory)
    key = nams.session()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        chats.add_message(key, ChatMessage(role=MessageRole.USER, content="plain"))
        chats.add_message(key, ChatMessage(role=MessageRole.ASSISTANT, content="plain too"))
        assert _said(seen) == []
        for message in _llama_kinds():
            chats.add_message(key, message)
    assert _said(seen) == [
        "nams.add_message: ChatMessage fields beyond role and text cannot be kept by this "
        "backend; only role and text are stored. keep messages elsewhere, or use a backend "
        "with message_metadata"
    ]
    back = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT}
    back |= {"system": MessageRole.SYSTEM, "tool": MessageRole.TOOL}
    expected = [
        ChatMessage(role=MessageRole.USER, content="plain"),
        ChatMessage(role=MessageRole.ASSISTANT, content="plain too"),
    ] + [ChatMessage(role=back[role], content=text) for role, text in LLAMA_STORED]
    assert chats.get_messages(key) == expected


def test_llamaindex_on_nams_refuses_what_it_cannot_do_before_writing(nams: SyncStore) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.llms.types import ChatMessage

    from memory_core.integrations.llamaindex import MemoryChatStore

    server_ids = nams.open(session_names="server")  # the reference mode: no auto-create
    chats = MemoryChatStore(memory=server_ids)
    key = start_session(server_ids, "refusals")
    chats.add_message(key, ChatMessage(role="user", content="kept"))
    refusals = [
        ("get_keys", "list_sessions", chats.get_keys),
        ("delete_message", "delete_message", lambda: chats.delete_message(key, 0)),
        ("delete_last_message", "delete_message", lambda: chats.delete_last_message(key)),
        (
            "set_messages",
            "auto_create_conversation",
            lambda: chats.set_messages(key, [ChatMessage(role="user", content="new")]),
        ),
    ]
    for method, flag, call in refusals:
        with pytest.raises(NotSupportedError) as refused:
            call()
        assert (refused.value.backend, refused.value.method) == ("nams", method)
        assert refused.value.message == f"needs the {flag!r} capability, which it lacks"
    assert [m.content for m in chats.get_messages(key)] == ["kept"]
    fresh = start_session(server_ids, "fresh")  # a session with no messages yet
    chats.set_messages(fresh, [ChatMessage(role="user", content="first")])
    assert [m.content for m in chats.get_messages(fresh)] == ["first"]


async def test_llamaindex_async_on_nams_refuses_what_it_cannot_do(nams: SyncStore) -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core.base.llms.types import ChatMessage

    from memory_core.integrations.llamaindex import MemoryChatStore

    server_ids = await _a(lambda: nams.open(session_names="server"))
    chats = MemoryChatStore(memory=server_ids)
    key = await _a(start_session, server_ids, "refusals")
    await chats.async_add_message(key, ChatMessage(role="user", content="kept"))
    refusals = [
        ("get_keys", chats.aget_keys()),
        ("delete_message", chats.adelete_message(key, 0)),
        ("delete_last_message", chats.adelete_last_message(key)),
        ("set_messages", chats.aset_messages(key, [ChatMessage(role="user", content="new")])),
    ]
    for method, call in refusals:
        with pytest.raises(NotSupportedError) as refused:
            await call
        assert refused.value.method == method
    assert [m.content for m in await chats.aget_messages(key)] == ["kept"]


def test_llamaindex_get_keys_pages_through_every_session_in_order(
    embedded: SyncMemoryBackend,
) -> None:
    pytest.importorskip("llama_index.core")
    from memory_core.integrations import llamaindex
    from memory_core.integrations.llamaindex import MemoryChatStore

    names = [f"k{i:03d}" for i in range(2 * llamaindex._SESSIONS_PAGE + 1)]
    for name in reversed(names):
        embedded.add_message(name, "user", name)
    assert MemoryChatStore(memory=embedded).get_keys() == names


async def test_llamaindex_aget_keys_pages_through_every_session_in_order(
    embedded: SyncMemoryBackend,
) -> None:
    pytest.importorskip("llama_index.core")
    from memory_core.integrations import llamaindex
    from memory_core.integrations.llamaindex import MemoryChatStore

    names = [f"k{i:03d}" for i in range(llamaindex._SESSIONS_PAGE)]  # exactly one page
    for name in reversed(names):
        await _a(lambda n=name: embedded.add_message(n, "user", n))
    assert await MemoryChatStore(memory=embedded).aget_keys() == names


def test_langchain_messages_get_embeddings_where_the_backend_makes_them() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.messages import HumanMessage

    from memory_core import HashingEmbedder
    from memory_core.integrations.langchain import MemoryChatMessageHistory

    with open_backend("memory://", embedder=HashingEmbedder(16)) as memory:
        MemoryChatMessageHistory(memory, "s").add_messages([HumanMessage("tram 28")])
        [stored] = memory.get_conversation("s").messages
        assert stored.embedding is not None and len(stored.embedding) == 16


# ---------------------------------------------------------------- Pydantic AI


def _pydantic_kinds() -> list[Any]:
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    return [
        ModelRequest(parts=[SystemPromptPart(content="be brief")]),
        ModelRequest(parts=[UserPromptPart(content="weather?")]),
        ModelRequest(parts=[UserPromptPart(content=["look:", "here"])]),
        ModelRequest(parts=[SystemPromptPart(content="sys"), UserPromptPart(content="both")]),
        ModelResponse(parts=[TextPart(content="calling"), ToolCallPart(tool_name="w", args={})]),
        ModelRequest(parts=[ToolReturnPart(tool_name="w", content={"t": 21}, tool_call_id="c")]),
        ModelResponse(parts=[TextPart(content="21 degrees")]),
    ]


PYDANTIC_STORED = [
    ("system", "be brief"),
    ("user", "weather?"),
    ("user", "look:\nhere"),
    ("user", "sys\nboth"),
    ("assistant", "calling"),
    ("tool", '{"t":21}'),
    ("assistant", "21 degrees"),
]


def test_pydantic_ai_messages_are_stored_as_role_and_text(embedded: SyncMemoryBackend) -> None:
    pytest.importorskip("pydantic_ai")
    kinds = _pydantic_kinds()  # once: parts carry the time they were made
    from memory_core.integrations.pydantic_ai import MemoryMessageHistory

    history = MemoryMessageHistory(embedded, "s")
    history.save(kinds)
    assert _stored(embedded, "s") == PYDANTIC_STORED
    assert history.load() == kinds
    assert MemoryMessageHistory(embedded, "s", limit=2).load() == kinds[-2:]


def test_pydantic_ai_loads_messages_another_writer_stored_as_plain_ones(
    embedded: SyncMemoryBackend,
) -> None:
    pytest.importorskip("pydantic_ai")
    kinds = _pydantic_kinds()  # once: parts carry the time they were made
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    from memory_core.integrations.pydantic_ai import MemoryMessageHistory

    history = MemoryMessageHistory(embedded, "s")
    history.save(kinds[1:2])
    other = embedded.add_message("s", "assistant", "from elsewhere")
    loaded = history.load()
    assert loaded[0] == kinds[1]
    assert loaded[1] == ModelResponse(
        parts=[TextPart(content="from elsewhere")], timestamp=other.created_at
    )
    assert len(loaded) == 2 and isinstance(loaded[0], ModelRequest)
    assert isinstance(loaded[0].parts[0], UserPromptPart)


def test_pydantic_ai_on_nams_gives_back_role_and_text(nams: SyncStore) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        UserPromptPart,
    )

    from memory_core.integrations.pydantic_ai import MemoryMessageHistory

    history = MemoryMessageHistory(nams.memory, nams.session())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        history.save([])
        assert _said(seen) == []  # nothing saved, nothing lost
        history.save(_pydantic_kinds())
        history.save(_pydantic_kinds()[:1])
    assert _said(seen) == [
        "nams.save: Pydantic AI message parts cannot be kept by this backend; only role and "
        "text are stored. keep messages elsewhere, or use a backend with message_metadata"
    ]
    stored = nams.memory.get_conversation(history.session_id).messages
    assert [(m.role.value, m.content) for m in stored] == [*PYDANTIC_STORED, ("system", "be brief")]
    expected: list[Any] = []
    for m in stored:
        if m.role.value in ("assistant", "tool"):
            expected.append(
                ModelResponse(parts=[TextPart(content=m.content)], timestamp=m.created_at)
            )
        elif m.role.value == "system":
            part: Any = SystemPromptPart(content=m.content, timestamp=m.created_at)
            expected.append(ModelRequest(parts=[part]))
        else:
            expected.append(
                ModelRequest(parts=[UserPromptPart(content=m.content, timestamp=m.created_at)])
            )
    assert history.load() == expected


def test_pydantic_ai_strict_refuses_and_writes_nothing(nams: SyncStore) -> None:
    pytest.importorskip("pydantic_ai")
    from memory_core.integrations.pydantic_ai import MemoryMessageHistory

    session_id = nams.session()
    history = MemoryMessageHistory(nams.open(strict=True), session_id)
    with pytest.raises(NotSupportedError) as refused:
        history.save(_pydantic_kinds()[:2])
    assert (refused.value.method, refused.value.message) == (
        "save",
        "Pydantic AI message parts cannot be kept",
    )
    assert history.load() == []


async def test_pydantic_ai_async_writes_and_reads_the_same(embedded: SyncMemoryBackend) -> None:
    pytest.importorskip("pydantic_ai")
    kinds = _pydantic_kinds()  # once: parts carry the time they were made
    from memory_core.integrations.pydantic_ai import MemoryMessageHistory

    history = MemoryMessageHistory(embedded, "s")
    await history.asave([])
    await history.asave(kinds)
    assert await _a(_stored, embedded, "s") == PYDANTIC_STORED
    assert await history.aload() == kinds


# ---------------------------------------------------------------- Strands


class _StrandsAgent:
    def __init__(self, messages: list[Any], state: dict[str, Any] | None = None) -> None:
        from strands.agent.state import AgentState

        self.messages = messages
        self.state = AgentState(state) if state is not None else None


STRANDS_MESSAGES: list[Any] = [
    {"role": "user", "content": [{"text": "one"}, {"text": "two"}]},
    {"role": "assistant", "content": [{"text": "calling"}, {"toolUse": {"toolUseId": "t"}}]},
    {"role": "user", "content": [{"toolResult": {"toolUseId": "t", "content": [{"text": "21"}]}}]},
    {"role": "assistant", "content": [{"text": "21 degrees"}]},
    {"role": "user", "content": [{"image": {"format": "png", "source": {"bytes": b"\x89P"}}}]},
]
STRANDS_STORED = [
    ("user", "one\ntwo"),
    ("assistant", "calling"),
    ("tool", ""),
    ("assistant", "21 degrees"),
    ("user", ""),
]


def test_strands_messages_are_stored_as_role_and_text(embedded: SyncMemoryBackend) -> None:
    pytest.importorskip("strands")
    from memory_core.integrations.strands import MemorySessionManager

    manager = MemorySessionManager(embedded, "s")
    agent = _StrandsAgent(list(STRANDS_MESSAGES))
    manager.initialize(agent)
    assert _stored(embedded, "s") == STRANDS_STORED
    restored = _StrandsAgent([])
    manager.initialize(restored)
    assert restored.messages == STRANDS_MESSAGES  # bytes included


def test_strands_on_nams_gives_back_role_and_text(nams: SyncStore) -> None:
    pytest.importorskip("strands")
    from memory_core.integrations.strands import MemorySessionManager

    manager = MemorySessionManager(nams.memory, nams.session())
    agent = _StrandsAgent([])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        manager.append_message({"role": "user", "content": [{"text": "plain"}]}, agent)
        manager.append_message({"role": "assistant", "content": [{"text": "too"}]}, agent)
        assert _said(seen) == []
        for message in STRANDS_MESSAGES:
            manager.append_message(message, agent)
    assert _said(seen) == [
        "nams.append_message: Strands content blocks cannot be kept by this backend; only "
        "role and text are stored. keep messages elsewhere, or use a backend with "
        "message_metadata"
    ]
    restored = _StrandsAgent([])
    manager.initialize(restored)
    assert restored.messages == [
        {"role": "user", "content": [{"text": "plain"}]},
        {"role": "assistant", "content": [{"text": "too"}]},
    ] + [
        {"role": "assistant" if role == "assistant" else "user", "content": [{"text": text}]}
        for role, text in STRANDS_STORED
    ]
    with pytest.raises(NotSupportedError) as refused:
        manager.redact_latest_message({"role": "user", "content": [{"text": "x"}]}, agent)
    assert (refused.value.method, refused.value.message) == (
        "redact_latest_message",
        "needs the 'delete_message' capability, which it lacks",
    )


def test_strands_agent_state_is_not_kept_and_says_so(embedded: SyncMemoryBackend) -> None:
    pytest.importorskip("strands")
    from memory_core.integrations.strands import MemorySessionManager

    manager = MemorySessionManager(embedded, "s")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        manager.sync_agent(_StrandsAgent([]))  # no state
        manager.sync_agent(_StrandsAgent([], {}))  # empty state
        assert _said(seen) == []
        manager.sync_agent(_StrandsAgent([], {"city": "Lisbon"}))
        manager.sync_agent(_StrandsAgent([], {"city": "Porto"}))
    assert _said(seen) == [
        "embedded.sync_agent: agent state cannot be kept by this backend; only role and "
        "text are stored. keep agent.state elsewhere; only messages are stored"
    ]

    class Stateless:
        messages: list[Any] = []

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        MemorySessionManager(embedded, "t").sync_agent(Stateless())  # an agent without state
    assert _said(seen) == []
    with open_backend("memory://", strict=True) as strict:
        with pytest.raises(NotSupportedError) as refused:
            MemorySessionManager(strict, "s").sync_agent(_StrandsAgent([], {"a": 1}))
        assert (refused.value.method, refused.value.message) == (
            "sync_agent",
            "agent state cannot be kept",
        )


async def test_strands_hooks_run_on_the_agents_event_loop_thread(
    embedded: SyncMemoryBackend,
) -> None:
    pytest.importorskip("strands")
    from memory_core.integrations.strands import MemorySessionManager

    # Strands calls its hooks synchronously on its own loop's thread: they may block it
    manager = MemorySessionManager(embedded, "s")
    agent = _StrandsAgent([{"role": "user", "content": [{"text": "first"}]}])
    manager.initialize(agent)
    manager.append_message({"role": "assistant", "content": [{"text": "second"}]}, agent)
    manager.redact_latest_message({"role": "assistant", "content": [{"text": "[r]"}]}, agent)
    restored = _StrandsAgent([])
    manager.initialize(restored)
    assert [m["content"][0]["text"] for m in restored.messages] == ["first", "[r]"]


@pytest.mark.parametrize("session_id", ["", 3, None])
def test_strands_refuses_a_bad_session_id(session_id: Any, embedded: SyncMemoryBackend) -> None:
    pytest.importorskip("strands")
    from memory_core import InvalidRequestError
    from memory_core.integrations.strands import MemorySessionManager

    with pytest.raises(InvalidRequestError) as caught:
        MemorySessionManager(embedded, session_id)
    assert caught.value.argument == "session_id"
