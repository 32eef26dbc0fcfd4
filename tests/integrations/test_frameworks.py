"""Every framework integration on every backend (embedded, Bolt, NAMS), with the
framework's own objects and, where it ships a test model, a real agent run.

Each framework's tests skip (with the reason) only when its extra is not installed.
"""

from __future__ import annotations

import inspect
import os
import warnings
from typing import Any

import anyio.to_thread
import pytest

from memory_core import CapabilityWarning, NotSupportedError
from memory_core_dev.sync_stores import SyncStore

# mutmut calls each mutated function through a trampoline, one frame more than the
# warnings' ``stacklevel`` counts; where warnings point is checked in every other run.
_UNDER_MUTMUT = "MUTANT_UNDER_TEST" in os.environ


def _capability_warnings(seen: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in seen if issubclass(w.category, CapabilityWarning)]


def _writes(store: SyncStore, expected_lossy: bool, action: Any) -> list[Any]:
    """Run ``action``; on a backend without metadata exactly one CapabilityWarning is
    expected when the data is lossy, none otherwise."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = action()
    lossy = expected_lossy and not store.memory.capabilities.message_metadata
    said = _capability_warnings(seen)
    assert len(said) == (1 if lossy else 0), [str(w.message) for w in seen]
    if not _UNDER_MUTMUT:
        assert all(w.filename == __file__ for w in said)  # points at the caller's line
    return result if isinstance(result, list) else []


# ---------------------------------------------------------------- LangChain


def _langchain_messages() -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    return [
        SystemMessage("You are terse."),
        HumanMessage("Weather in Lisbon?", id="h1", name="ana"),
        AIMessage(
            "",
            id="a1",
            tool_calls=[{"name": "weather", "args": {"city": "Lisbon", "days": 2}, "id": "c1"}],
            additional_kwargs={"refusal": None, "extra": [1, True]},
            response_metadata={"model_name": "fake"},
        ),
        ToolMessage("21°C, sunny ☀️", tool_call_id="c1", name="weather"),
        AIMessage("Sunny, 21°C."),
    ]


def test_langchain_history_round_trip(sync_store: SyncStore) -> None:
    pytest.importorskip("langchain_core", reason="extra 'langchain' not installed")
    from memory_core.integrations.langchain import MemoryChatMessageHistory

    session = sync_store.session("lc")
    history = MemoryChatMessageHistory(sync_store.memory, session)
    sent = _langchain_messages()
    _writes(sync_store, True, lambda: history.add_messages(sent))
    got = history.messages
    assert [m.type for m in got] == [m.type for m in sent]
    assert [m.text for m in got] == [m.text for m in sent]
    if sync_store.memory.capabilities.message_metadata:
        assert got == sent
        assert got[2].tool_calls == sent[2].tool_calls
        assert got[2].additional_kwargs == {"refusal": None, "extra": [1, True]}
    history.clear()
    assert history.messages == []


def test_langchain_strict_refuses_lossy_writes(sync_store: SyncStore) -> None:
    pytest.importorskip("langchain_core", reason="extra 'langchain' not installed")
    from langchain_core.messages import HumanMessage

    from memory_core.integrations.langchain import MemoryChatMessageHistory

    strict = sync_store.open(strict=True)
    session = sync_store.session("lc-strict")
    history = MemoryChatMessageHistory(strict, session)
    history.add_messages([HumanMessage("plain is always kept")])
    if strict.capabilities.message_metadata:
        history.add_messages(_langchain_messages())
        assert len(history.messages) == 6
    else:
        with pytest.raises(NotSupportedError, match="message_metadata"):
            history.add_messages(_langchain_messages())
        assert [m.text for m in history.messages] == ["plain is always kept"]


@pytest.mark.anyio
async def test_langchain_async_methods_and_retriever(sync_store: SyncStore) -> None:
    pytest.importorskip("langchain_core", reason="extra 'langchain' not installed")
    from langchain_core.messages import AIMessage, HumanMessage

    from memory_core.integrations.langchain import MemoryChatMessageHistory, MemoryRetriever

    session = await anyio.to_thread.run_sync(sync_store.session, "lc-async")
    history = MemoryChatMessageHistory(sync_store.memory, session)
    await history.aadd_messages([HumanMessage("the harbour tram"), AIMessage("line 28")])
    assert [m.text for m in await history.aget_messages()] == ["the harbour tram", "line 28"]
    retriever = MemoryRetriever(memory=sync_store.memory, session_id=session, k=3)
    docs = await retriever.ainvoke("harbour")
    assert [d.page_content for d in docs] == ["the harbour tram"]
    assert docs[0].metadata["role"] == "user" and docs[0].metadata["score"] is not None
    sync_docs = await anyio.to_thread.run_sync(retriever.invoke, "harbour")
    assert [d.page_content for d in sync_docs] == ["the harbour tram"]
    await history.aclear()
    assert await history.aget_messages() == []


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_langchain_fake_model_run_reads_and_writes_memory(sync_store: SyncStore) -> None:
    pytest.importorskip("langchain_core", reason="extra 'langchain' not installed")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables import RunnableLambda
    from langchain_core.runnables.history import RunnableWithMessageHistory

    from memory_core.integrations.langchain import MemoryChatMessageHistory

    seen: list[int] = []

    def record(prompt: Any) -> list[BaseMessage]:
        seen.append(len(prompt.to_messages()))
        return prompt.to_messages()  # type: ignore[no-any-return]

    model = GenericFakeChatModel(messages=iter([AIMessage("Hello Ana."), AIMessage("Ana.")]))
    prompt = ChatPromptTemplate.from_messages(
        [MessagesPlaceholder("history"), ("human", "{question}")]
    )
    chain = RunnableWithMessageHistory(
        prompt | RunnableLambda(record) | model,
        lambda session_id: MemoryChatMessageHistory(sync_store.memory, session_id),
        input_messages_key="question",
        history_messages_key="history",
    )
    session = sync_store.session("lc-run")
    config = {"configurable": {"session_id": session}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CapabilityWarning)  # model ids/metadata on NAMS
        chain.invoke({"question": "I am Ana."}, config=config)
        answer = chain.invoke({"question": "Who am I?"}, config=config)
    assert answer.content == "Ana."
    assert seen == [1, 3]  # the second run read the first exchange from memory
    stored = sync_store.memory.get_conversation(session).messages
    assert [(m.role.value, m.content) for m in stored] == [
        ("user", "I am Ana."),
        ("assistant", "Hello Ana."),
        ("user", "Who am I?"),
        ("assistant", "Ana."),
    ]


# ---------------------------------------------------------------- OpenAI Agents SDK


def _agent_items() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Book a table"},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "book",
            "arguments": '{"people": 2}',
            "id": "fc_1",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "booked #12"},
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Done: #12", "annotations": []}],
        },
    ]


@pytest.mark.anyio
async def test_openai_agents_session(sync_store: SyncStore) -> None:
    pytest.importorskip("agents", reason="extra 'openai-agents' not installed")
    from agents.memory import Session

    from memory_core.integrations.openai_agents import MemorySession

    session_id = await anyio.to_thread.run_sync(sync_store.session, "oa")
    session = MemorySession(sync_store.memory, session_id)
    assert isinstance(session, Session)
    items = _agent_items()
    caps = sync_store.memory.capabilities
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        await session.add_items(items)
    assert len(_capability_warnings(seen)) == (0 if caps.message_metadata else 1)
    got = await session.get_items()
    if caps.message_metadata:
        assert got == items
        assert await session.get_items(limit=2) == items[2:]
    else:
        assert got[0] == {"role": "user", "content": "Book a table"}
        assert got[3] == {"role": "assistant", "content": "Done: #12"}
        assert len(await session.get_items(limit=2)) == 2
    if caps.delete_message:
        assert await session.pop_item() == got[-1]
        assert len(await session.get_items()) == 3
    else:
        with pytest.raises(NotSupportedError) as caught:
            await session.pop_item()
        assert "clear_session" in caught.value.workaround
        assert len(await session.get_items()) == 4
    await session.clear_session()
    assert await session.get_items() == []
    assert await session.pop_item() is None if caps.delete_message else True


def _scripted_agents_model(replies: list[str], seen: list[list[Any]]) -> Any:
    """An Agents SDK model with canned replies that records its input (the SDK ships no
    test model)."""
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseOutputMessage, ResponseOutputText

    class Scripted(Model):
        async def get_response(self, system_instructions: Any, input: Any, *a: Any, **k: Any):
            seen.append(list(input) if isinstance(input, list) else [input])
            text = ResponseOutputText(
                type="output_text", text=replies[len(seen) - 1], annotations=[]
            )
            message = ResponseOutputMessage(
                id=f"msg_{len(seen)}",
                type="message",
                role="assistant",
                status="completed",
                content=[text],
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    return Scripted()


@pytest.mark.anyio
async def test_openai_agents_runner_reads_and_writes_memory(sync_store: SyncStore) -> None:
    pytest.importorskip("agents", reason="extra 'openai-agents' not installed")
    from agents import Agent, RunConfig, Runner

    from memory_core.integrations.openai_agents import MemorySession

    session_id = await anyio.to_thread.run_sync(sync_store.session, "oa-run")
    session = MemorySession(sync_store.memory, session_id)
    seen: list[list[Any]] = []
    agent = Agent(name="a", model=_scripted_agents_model(["Hello Ana.", "Ana."], seen))
    offline = RunConfig(tracing_disabled=True)  # never export traces anywhere
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CapabilityWarning)  # NAMS keeps text only
        await Runner.run(agent, "I am Ana.", session=session, run_config=offline)
        result = await Runner.run(agent, "Who am I?", session=session, run_config=offline)
    assert result.final_output == "Ana."
    assert len(seen[1]) == 3  # the second run read the first exchange from memory
    items = await session.get_items()
    assert len(items) == 4
    if sync_store.memory.capabilities.message_metadata:
        assert items[1]["id"] == "msg_1"  # type: ignore[typeddict-item]
        assert items[1]["content"][0]["text"] == "Hello Ana."  # type: ignore[typeddict-item,index]
    stored = await anyio.to_thread.run_sync(
        lambda: sync_store.memory.get_conversation(session_id).messages
    )
    assert [(m.role.value, m.content) for m in stored] == [
        ("user", "I am Ana."),
        ("assistant", "Hello Ana."),
        ("user", "Who am I?"),
        ("assistant", "Ana."),
    ]


# ---------------------------------------------------------------- Pydantic AI


def test_pydantic_ai_agent_run_reads_and_writes_memory(sync_store: SyncStore) -> None:
    pytest.importorskip("pydantic_ai", reason="extra 'pydantic-ai' not installed")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.test import TestModel

    from memory_core.integrations.pydantic_ai import MemoryMessageHistory

    session = sync_store.session("pai")
    history = MemoryMessageHistory(sync_store.memory, session)
    agent = Agent(TestModel(), system_prompt="Be brief.")

    @agent.tool_plain
    def lookup(city: str) -> str:
        return f"{city}: 21C"

    first = agent.run_sync("Weather?", message_history=history.load())
    _writes(sync_store, True, lambda: history.save(first.new_messages()))
    loaded = history.load()
    assert len(loaded) == len(first.all_messages())
    if sync_store.memory.capabilities.message_metadata:
        assert loaded == first.all_messages()

    seen: list[list[ModelMessage]] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart("still 21C")])

    second = agent.run_sync("And tomorrow?", model=FunctionModel(reply), message_history=loaded)
    prompts = [p.content for m in seen[0] for p in m.parts if p.part_kind == "user-prompt"]
    assert prompts[0].endswith("Weather?")  # the model saw the first run, read from memory
    assert prompts[-1] == "And tomorrow?"
    if sync_store.memory.capabilities.message_metadata:
        assert seen[0][:-1] == loaded
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CapabilityWarning)
        history.save(second.new_messages())
    stored = history.load()
    assert len(stored) == len(loaded) + 2
    assert stored[-1].parts[0].content == "still 21C"  # type: ignore[union-attr]
    history.clear()
    assert history.load() == []


# ---------------------------------------------------------------- LlamaIndex


def test_llamaindex_chat_store(sync_store: SyncStore) -> None:
    pytest.importorskip("llama_index.core", reason="extra 'llamaindex' not installed")
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    from memory_core.integrations.llamaindex import MemoryChatStore

    caps = sync_store.memory.capabilities
    # a user of its own where get_keys lists sessions: on a store others write to (a
    # shared Neo4j) the listing of everyone's sessions moves under offset paging
    user = f"li-{sync_store.tag}" if caps.list_sessions else None
    store = MemoryChatStore(memory=sync_store.memory, user_identifier=user)
    key = sync_store.session("li")
    sent = [
        ChatMessage(role=MessageRole.USER, content="first"),
        ChatMessage(role=MessageRole.ASSISTANT, content="second", additional_kwargs={"k": 1}),
        ChatMessage(role=MessageRole.USER, content="third"),
    ]
    _writes(sync_store, True, lambda: store.set_messages(key, sent))
    got = store.get_messages(key)
    assert [m.content for m in got] == ["first", "second", "third"]
    if caps.message_metadata:
        assert got == sent
    store.add_message(key, ChatMessage(role=MessageRole.ASSISTANT, content="fourth"))
    if caps.delete_message:
        assert store.delete_message(key, 1).content == "second"  # type: ignore[union-attr]
        assert store.delete_last_message(key).content == "fourth"  # type: ignore[union-attr]
        assert [m.content for m in store.get_messages(key)] == ["first", "third"]
        assert store.delete_message(key, 9) is None
    else:
        with pytest.raises(NotSupportedError):
            store.delete_last_message(key)
        assert len(store.get_messages(key)) == 4
    if caps.list_sessions:
        assert store.get_keys() == [key]
    else:
        with pytest.raises(NotSupportedError):
            store.get_keys()
    if caps.auto_create_conversation:
        store.set_messages(key, sent[:1])
        assert [m.content for m in store.get_messages(key)] == ["first"]
    else:
        with pytest.raises(NotSupportedError, match="auto_create_conversation"):
            store.set_messages(key, sent[:1])
    held = store.delete_messages(key)
    assert held is not None and held[0].content == "first"
    assert store.get_messages(key) == []


@pytest.mark.anyio
async def test_llamaindex_async_methods(sync_store: SyncStore) -> None:
    pytest.importorskip("llama_index.core", reason="extra 'llamaindex' not installed")
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    from memory_core.integrations.llamaindex import MemoryChatStore

    store = MemoryChatStore(memory=sync_store.memory)
    key = await anyio.to_thread.run_sync(sync_store.session, "li-async")
    await store.aset_messages(key, [ChatMessage(role=MessageRole.USER, content="a")])
    await store.async_add_message(key, ChatMessage(role=MessageRole.ASSISTANT, content="b"))
    assert [m.content for m in await store.aget_messages(key)] == ["a", "b"]
    if sync_store.memory.capabilities.delete_message:
        assert (await store.adelete_last_message(key)).content == "b"  # type: ignore[union-attr]
    else:
        with pytest.raises(NotSupportedError):
            await store.adelete_message(key, 0)
    assert (await store.adelete_messages(key))[0].content == "a"  # type: ignore[index]
    assert await store.aget_messages(key) == []


def test_llamaindex_chat_engine_run_reads_and_writes_memory(sync_store: SyncStore) -> None:
    pytest.importorskip("llama_index.core", reason="extra 'llamaindex' not installed")
    from llama_index.core.chat_engine import SimpleChatEngine
    from llama_index.core.llms import MockLLM
    from llama_index.core.memory import ChatMemoryBuffer

    from memory_core.integrations.llamaindex import MemoryChatStore

    key = sync_store.session("li-run")
    store = MemoryChatStore(memory=sync_store.memory)
    buffer = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key=key)
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=5), memory=buffer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CapabilityWarning)
        engine.chat("My name is Ana")
        engine.chat("What is my name?")
    stored = sync_store.memory.get_conversation(key).messages
    assert [m.role.value for m in stored] == ["user", "assistant", "user", "assistant"]
    assert [stored[0].content, stored[2].content] == ["My name is Ana", "What is my name?"]
    fresh = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key=key)
    assert fresh.get_all()[0].content == "My name is Ana"


# ---------------------------------------------------------------- Strands


def _scripted_strands_model(replies: list[str], seen: list[int]) -> Any:
    """A Strands model that streams canned replies and records how many messages it got
    (Strands ships no test model)."""
    from strands.models.model import Model

    class Scripted(Model):
        def update_config(self, **model_config: Any) -> None:
            pass

        def get_config(self) -> Any:
            return {}

        async def structured_output(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError
            yield {}

        async def stream(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            seen.append(len(messages))
            text = replies[len(seen) - 1]
            yield {"messageStart": {"role": "assistant"}}
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": text}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}

    return Scripted()


@pytest.mark.filterwarnings("ignore::memory_core.CapabilityWarning")  # NAMS keeps text only
def test_strands_agent_run_reads_and_writes_memory(sync_store: SyncStore) -> None:
    pytest.importorskip("strands", reason="extra 'strands' not installed")
    from strands import Agent

    from memory_core.integrations.strands import MemorySessionManager

    session = sync_store.session("strands")
    seen: list[int] = []
    model = _scripted_strands_model(["Hello Ana.", "You are Ana."], seen)
    first = Agent(
        model=model,
        callback_handler=None,
        session_manager=MemorySessionManager(sync_store.memory, session),
    )
    first("I am Ana.")
    # a new agent (a new process) restores the conversation from memory
    second = Agent(
        model=model,
        callback_handler=None,
        session_manager=MemorySessionManager(sync_store.memory, session),
    )
    assert len(second.messages) == 2
    answer = second("Who am I?")
    assert str(answer).strip() == "You are Ana."
    assert seen == [1, 3]
    stored = sync_store.memory.get_conversation(session).messages
    assert [(m.role.value, m.content) for m in stored] == [
        ("user", "I am Ana."),
        ("assistant", "Hello Ana."),
        ("user", "Who am I?"),
        ("assistant", "You are Ana."),
    ]
    if sync_store.memory.capabilities.message_metadata:
        assert second.messages[1] == first.messages[1]


def test_strands_redaction_needs_delete_message(sync_store: SyncStore) -> None:
    pytest.importorskip("strands", reason="extra 'strands' not installed")
    from memory_core.integrations.strands import MemorySessionManager

    session = sync_store.session("strands-redact")
    manager = MemorySessionManager(sync_store.memory, session)
    manager.append_message({"role": "user", "content": [{"text": "my card is 4111"}]}, None)
    redacted = {"role": "user", "content": [{"text": "[redacted]"}]}
    if sync_store.memory.capabilities.delete_message:
        manager.redact_latest_message(redacted, None)  # type: ignore[arg-type]
        stored = sync_store.memory.get_conversation(session).messages
        assert [m.content for m in stored] == ["[redacted]"]
    else:
        with pytest.raises(NotSupportedError, match="delete_message"):
            manager.redact_latest_message(redacted, None)  # type: ignore[arg-type]
        stored = sync_store.memory.get_conversation(session).messages
        assert [m.content for m in stored] == ["my card is 4111"]


# ---------------------------------------------------------------- where warnings point

# NAMS keeps role and text only: the one store on which these runs warn.
ON_NAMS = pytest.mark.parametrize(
    "sync_store", [pytest.param("nams", marks=pytest.mark.nams)], indirect=True
)


def _lines(seen: list[warnings.WarningMessage]) -> list[tuple[str, int]]:
    return [(w.filename, w.lineno) for w in _capability_warnings(seen)]


@ON_NAMS
@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_a_warning_inside_a_langchain_run_points_at_the_applications_line(
    sync_store: SyncStore,
) -> None:
    """The history is written by LangChain's RunnableWithMessageHistory, not by the
    application: the warning skips LangChain's frames."""
    pytest.importorskip("langchain_core", reason="extra 'langchain' not installed")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
    from langchain_core.runnables.history import RunnableWithMessageHistory

    from memory_core.integrations.langchain import MemoryChatMessageHistory

    model = GenericFakeChatModel(messages=iter([AIMessage("Hi.", response_metadata={"m": 1})]))
    chain = RunnableWithMessageHistory(
        ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{q}")])
        | model,
        lambda session_id: MemoryChatMessageHistory(sync_store.memory, session_id),
        input_messages_key="q",
        history_messages_key="history",
    )
    config = {"configurable": {"session_id": sync_store.session("lc-where")}}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        chain.invoke({"q": "Hello"}, config=config)
    assert _lines(seen) == [(__file__, line)], [str(w.message) for w in seen]


@ON_NAMS
@pytest.mark.anyio
async def test_a_warning_inside_an_openai_agents_run_points_at_the_applications_line(
    sync_store: SyncStore,
) -> None:
    """The session is written by the Agents SDK's Runner, through a worker thread (a
    blocking backend awaited): the warning skips the SDK's and anyio's frames."""
    pytest.importorskip("agents", reason="extra 'openai-agents' not installed")
    from agents import Agent, RunConfig, Runner

    from memory_core.integrations.openai_agents import MemorySession

    session = MemorySession(
        sync_store.memory, await anyio.to_thread.run_sync(sync_store.session, "oa-where")
    )
    agent = Agent(name="a", model=_scripted_agents_model(["Hello Ana."], []))
    offline = RunConfig(tracing_disabled=True)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        await Runner.run(agent, "I am Ana.", session=session, run_config=offline)
        clamped = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        await session.get_items(limit=5000)  # above the NAMS read cap of 200
    assert _lines(seen) == [(__file__, line), (__file__, clamped)], [str(w.message) for w in seen]


@pytest.mark.parametrize(
    "sync_store", [pytest.param("nams", marks=pytest.mark.nams)], indirect=True
)
def test_langchain_lossy_writes_warn_once_per_history_object(sync_store: SyncStore) -> None:
    """One CapabilityWarning per integration object, not per backend object: two
    histories on one NAMS backend (no message metadata) say it once each."""
    pytest.importorskip("langchain_core", reason="extra 'langchain' not installed")
    from memory_core.integrations.langchain import MemoryChatMessageHistory

    first = MemoryChatMessageHistory(sync_store.memory, sync_store.session("lc-1"))
    second = MemoryChatMessageHistory(sync_store.memory, sync_store.session("lc-2"))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        first.add_messages(_langchain_messages())
        first.add_messages(_langchain_messages())  # the same object: said already
        second.add_messages(_langchain_messages())  # another object on the same backend
        second.add_messages(_langchain_messages())
    said = _capability_warnings(seen)
    assert len(said) == 2, [str(w.message) for w in said]
