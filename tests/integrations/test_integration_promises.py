"""Integration options and edge semantics, each guarded by a test that fails when that
one promise is broken (the round trips and capability rules on every backend are in
test_frameworks.py):

* LangChain: ``limit`` keeps the newest messages;
* OpenAI Agents SDK: ``pop_item`` acts for the session's user; ``SessionSettings.limit``
  is honoured;
* Pydantic AI: an exact round trip of every part kind where the store keeps metadata;
* LlamaIndex: the delete methods return what ``SimpleChatStore`` returns (negative and
  out-of-range indexes, keys without messages).

All on the embedded store (``memory://``): none of these depends on the backend.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_core.sync import SyncMemoryBackend, open_backend


@pytest.fixture
def memory() -> Iterator[SyncMemoryBackend]:
    with open_backend("memory://") as opened:
        yield opened


@pytest.fixture
def tenants() -> Iterator[SyncMemoryBackend]:
    with open_backend("memory://", multi_tenant=True) as opened:
        yield opened


# ---------------------------------------------------------------- LangChain


@pytest.fixture
def langchain_history(memory: SyncMemoryBackend) -> Any:
    pytest.importorskip("langchain_core", reason="extra 'langchain' not installed")
    from langchain_core.messages import AIMessage, HumanMessage

    from memory_core.integrations.langchain import MemoryChatMessageHistory

    MemoryChatMessageHistory(memory, "lc").add_messages(
        [
            HumanMessage("one", id="m1"),
            AIMessage("two", id="m2"),
            HumanMessage("three", id="m3"),
            AIMessage("four", id="m4"),
            HumanMessage("five", id="m5"),
        ]
    )
    return MemoryChatMessageHistory(memory, "lc", limit=2)


def test_langchain_limit_keeps_the_newest_messages(langchain_history: Any) -> None:
    got = langchain_history.messages
    assert [(m.type, m.text, m.id) for m in got] == [("ai", "four", "m4"), ("human", "five", "m5")]


@pytest.mark.anyio
async def test_langchain_limit_keeps_the_newest_messages_async(langchain_history: Any) -> None:
    got = await langchain_history.aget_messages()
    assert [(m.text, m.id) for m in got] == [("four", "m4"), ("five", "m5")]


# ---------------------------------------------------------------- OpenAI Agents SDK


def _said(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": text}


@pytest.mark.anyio
async def test_openai_agents_pop_item_acts_for_the_sessions_user(
    tenants: SyncMemoryBackend,
) -> None:
    """Two users with the same session id: each session pops its own user's newest item,
    never the other user's (even when that one is newer)."""
    pytest.importorskip("agents", reason="extra 'openai-agents' not installed")
    from memory_core.integrations.openai_agents import MemorySession

    alice = MemorySession(tenants, "shared", user_identifier="alice")
    bob = MemorySession(tenants, "shared", user_identifier="bob")
    await alice.add_items([_said("user", "alice asks"), _said("assistant", "alice is told")])
    await bob.add_items([_said("user", "bob asks")])  # the newest item of the store

    assert await alice.pop_item() == _said("assistant", "alice is told")
    assert await alice.get_items() == [_said("user", "alice asks")]
    assert await bob.get_items() == [_said("user", "bob asks")]
    assert await bob.pop_item() == _said("user", "bob asks")
    assert await bob.pop_item() is None
    assert await alice.get_items() == [_said("user", "alice asks")]


@pytest.mark.anyio
async def test_openai_agents_session_settings_limit_is_honoured(
    memory: SyncMemoryBackend,
) -> None:
    """``get_items()`` without a limit returns the newest ``SessionSettings.limit`` items;
    an explicit ``limit`` wins over it."""
    pytest.importorskip("agents", reason="extra 'openai-agents' not installed")
    from agents.memory import SessionSettings

    from memory_core.integrations.openai_agents import MemorySession

    items = [_said("user" if i % 2 == 0 else "assistant", f"item {i}") for i in range(5)]
    await MemorySession(memory, "oa").add_items(items)
    limited = MemorySession(memory, "oa", session_settings=SessionSettings(limit=2))
    assert await limited.get_items() == items[-2:]
    assert await limited.get_items(limit=3) == items[-3:]
    assert await MemorySession(memory, "oa").get_items() == items


@pytest.mark.anyio
async def test_openai_agents_runner_reads_session_settings_limit_items(
    memory: SyncMemoryBackend,
) -> None:
    """The Runner reads the history through the session: with ``limit=2`` the model sees
    the newest two stored items and the new input, not the whole session."""
    pytest.importorskip("agents", reason="extra 'openai-agents' not installed")
    from agents import Agent, RunConfig, Runner
    from agents.memory import SessionSettings

    from memory_core.integrations.openai_agents import MemorySession
    from tests.integrations.test_frameworks import _scripted_agents_model

    stored = [_said("user", "first"), _said("assistant", "ok 1"), _said("user", "second")]
    stored.append(_said("assistant", "ok 2"))
    await MemorySession(memory, "oa-run").add_items(stored)
    session = MemorySession(memory, "oa-run", session_settings=SessionSettings(limit=2))
    seen: list[list[Any]] = []
    agent = Agent(name="a", model=_scripted_agents_model(["ok 3"], seen))
    offline = RunConfig(tracing_disabled=True)
    await Runner.run(agent, "third", session=session, run_config=offline)
    assert [item["content"] for item in seen[0]] == ["second", "ok 2", "third"]


# ---------------------------------------------------------------- Pydantic AI


def _part_kinds(union: Any) -> set[str]:
    """The ``part_kind`` of each member of one of Pydantic AI's part unions (an annotated,
    discriminated union of annotated part classes)."""
    members = typing.get_args(typing.get_args(union)[0])
    return {str(typing.get_args(member)[0].part_kind) for member in members}


@functools.cache
def _capability_kinds() -> tuple[type[Any], type[Any]]:
    """Two capability part kinds, registered once per process as an application defines
    them: data with a typed field rendered as an attribute, and an instruction."""
    from pydantic_ai import messages as pm

    @dataclass(kw_only=True)
    class ForecastPart(
        pm.DataCapabilityPart[str],
        namespace="memory_core_test",
        tag="forecast",
        attributes=("city",),
    ):
        city: str

    @dataclass(kw_only=True)
    class BudgetPart(pm.InstructionCapabilityPart, namespace="memory_core_test"):
        pass

    return ForecastPart, BudgetPart


def _capability_parts(at: datetime) -> list[Any]:
    """Capability parts (``part_kind`` ``capability``): both registered kinds, one with
    structured content and a model's source, and one whose kind this process never
    registered (loaded back as ``UnknownCapabilityPart``, typed fields in ``data``)."""
    from pydantic_ai import messages as pm

    forecast, budget = _capability_kinds()
    source = pm.ToolResultSource(tool_name="weather", tool_call_id="c1")
    return [
        forecast(content="21 °C, sun", city="Lisbon", source=source, timestamp=at, record_id="r1"),
        budget(
            content="2 model requests left.",
            source=pm.OperatorSource(),
            scope="request",
            capability_id="budget-1",
            metadata={"left": 2},
            timestamp=at,
            record_id="r2",
        ),
        pm.UnknownCapabilityPart(
            kind="elsewhere.note",
            content=pm.StructuredContent(value={"rows": [1, 2.5, None], "ok": True}),
            data={"origin": "another process"},
            source=pm.ModelSource("trajectory judge"),
            rendering=pm.CapabilityPartRendering(tag="note", attributes=("origin",)),
            timestamp=at,
            record_id="r3",
        ),
    ]


def _every_part_kind() -> list[Any]:
    """A request and a response holding one part of every kind (several where a kind
    has variants: multimodal user content, tool results, retries), in the form Pydantic
    AI gives them back (an image's ``BinaryContent`` as ``BinaryImage``)."""
    from pydantic_ai import messages as pm
    from pydantic_ai.settings import RecordedModelSettings

    at = datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=UTC)
    image = pm.BinaryImage(data=b"\x89PNG\r\n\x1a\n\x00\xff", media_type="image/png")
    request = pm.ModelRequest(
        parts=[
            pm.SystemPromptPart("Be brief.", timestamp=at),
            pm.UserPromptPart("Weather in Lisbon? ☀️", timestamp=at),
            pm.UserPromptPart(
                [
                    "Look:",
                    pm.ImageUrl(url="https://example.com/a.png"),
                    image,
                    pm.BinaryContent(data=b"%PDF-1.7", media_type="application/pdf"),
                    pm.AudioUrl(url="https://example.com/a.mp3"),
                    pm.DocumentUrl(url="https://example.com/a.pdf"),
                    pm.VideoUrl(url="https://example.com/a.mp4"),
                ],
                timestamp=at,
            ),
            pm.ToolReturnPart("weather", {"temp": 21, "sky": ["sun", None]}, "c1", timestamp=at),
            pm.ToolReturnPart(
                "weather",
                "unknown city",
                "c2",
                timestamp=at,
                outcome="retried",
                retry=pm.RetryInfo(cause="validation_error", attempt=1, max_retries=3),
            ),
            pm.RetryFeedbackPart(
                "answer in JSON", retry=pm.RetryInfo(cause="no_output"), timestamp=at
            ),
            pm.SpeechPart(
                speaker="user",
                transcript="hello",
                audio=pm.BinaryContent(data=b"RIFF", media_type="audio/wav"),
                timestamps=[pm.SpeechTimestamp(text="hello", start_ms=0, duration_ms=400)],
            ),
            pm.ToolAvailabilityDeltaPart(tools_added=["weather"], tool_call_id="c1"),
            pm.CapabilityLoadDeltaPart(loaded=["search"], tool_call_id="c3"),
            pm.ModelSettingsDeltaPart(settings=RecordedModelSettings(thinking="high")),
            pm.InstructionDeltaPart(id=None, content="Answer in Portuguese.", base_hash="h0"),
            pm.InstructionBaselinePart(
                instructions=[
                    pm.InstructionPart("Be brief.", name="style"),
                    pm.InstructionDigest(content_hash="h1"),
                ]
            ),
            pm.CompactionPart("earlier turns, summarised", metadata={"turns": 3}),
            *_capability_parts(at),
        ],
        timestamp=at,
        instructions="Be brief.",
        run_id="run-1",
        metadata={"k": [1, True, None]},
    )
    response = pm.ModelResponse(
        parts=[
            pm.ThinkingPart(
                "Lisbon is usually sunny", id="th1", signature="sig", provider_name="p"
            ),
            pm.TextPart("Checking.", id="t1"),
            pm.ToolCallPart("weather", {"city": "Lisbon", "days": 2}, "c1"),
            pm.ToolCallPart("weather", '{"city": "Porto"}', "c2"),
            pm.NativeToolCallPart("web_search", {"query": "Lisbon"}, "b1", provider_name="p"),
            pm.NativeToolReturnPart("web_search", [{"title": "Lisbon"}], "b1", timestamp=at),
            pm.FilePart(image, id="f1", provider_name="p"),
            pm.SpeechPart(speaker="assistant", transcript="hi"),
            pm.CompactionPart("compacted", id="cp1", provider_details={"tokens": 12}),
        ],
        usage=pm.RequestUsage(input_tokens=12, output_tokens=7, details={"reasoning": 3}),
        model_name="test-model",
        timestamp=at,
        provider_name="test",
        provider_details={"x": {"y": 1.5}},
        provider_response_id="resp-1",
        finish_reason="tool_call",
        run_id="run-1",
    )
    return [request, response]


# Pydantic AI loads a part of this deprecated kind as the part it stood for (a retried
# ToolReturnPart or a RetryFeedbackPart, both covered): it never round-trips as itself.
DEPRECATED_PART_KINDS = {"retry-prompt"}


def test_pydantic_ai_round_trip_is_exact_for_every_part_kind(memory: SyncMemoryBackend) -> None:
    pytest.importorskip("pydantic_ai", reason="extra 'pydantic-ai' not installed")
    from pydantic_ai import messages as pm

    from memory_core.integrations.pydantic_ai import MemoryMessageHistory

    assert memory.capabilities.message_metadata
    sent = _every_part_kind()
    covered = {part.part_kind for message in sent for part in message.parts}
    supported = _part_kinds(pm.ModelRequestPart) | _part_kinds(pm.ModelResponsePart)
    assert covered == supported - DEPRECATED_PART_KINDS

    MemoryMessageHistory(memory, "pai").save(sent)
    # Pydantic AI's own warning: this process never registered the kind "elsewhere.note"
    with pytest.warns(UserWarning, match="Unknown capability part kind 'elsewhere.note'"):
        loaded = MemoryMessageHistory(memory, "pai").load()
    assert loaded == sent
    adapter = pm.ModelMessagesTypeAdapter
    assert adapter.dump_json(loaded) == adapter.dump_json(sent)


def test_pydantic_ai_capability_parts_add_their_text_to_the_stored_content() -> None:
    """A capability part's content is text the model sees: it joins the message's text
    (what search finds and what a backend without metadata keeps), structured content
    as the text it was rendered to; a file in a user prompt adds none."""
    pytest.importorskip("pydantic_ai", reason="extra 'pydantic-ai' not installed")
    from pydantic_ai import messages as pm

    from memory_core.integrations.pydantic_ai import MemoryMessageHistory

    at = datetime(2026, 3, 1, tzinfo=UTC)
    structured = pm.StructuredContent(value={"city": "Porto"})
    parts = [
        *_capability_parts(at)[:2],
        pm.UserPromptPart(["Look:", pm.ImageUrl(url="https://example.com/a.png"), structured]),
    ]
    with open_backend("memory://") as memory:
        MemoryMessageHistory(memory, "pai-text").save([pm.ModelRequest(parts=parts)])
        stored = memory.get_conversation("pai-text").messages
    assert [m.role.value for m in stored] == ["user"]
    assert stored[0].content.split("\n") == [
        "21 °C, sun",
        "2 model requests left.",
        "Look:",
        structured.content,
    ]
    assert "Porto" in structured.content


def test_pydantic_ai_deprecated_parts_load_as_pydantic_ai_loads_them(
    memory: SyncMemoryBackend,
) -> None:
    pytest.importorskip("pydantic_ai", reason="extra 'pydantic-ai' not installed")
    from pydantic_ai import messages as pm

    from memory_core.integrations.pydantic_ai import MemoryMessageHistory

    at = datetime(2026, 3, 1, tzinfo=UTC)
    with pytest.warns(UserWarning, match="RetryPromptPart` is deprecated"):
        parts = [
            pm.RetryPromptPart("try again", tool_name="weather", tool_call_id="c9", timestamp=at),
            pm.RetryPromptPart("answer in JSON", tool_call_id="c10", timestamp=at),
        ]
    assert {part.part_kind for part in parts} == DEPRECATED_PART_KINDS
    sent = [pm.ModelRequest(parts=parts, timestamp=at)]
    MemoryMessageHistory(memory, "pai-old").save(sent)
    adapter = pm.ModelMessagesTypeAdapter
    expected = adapter.validate_python(adapter.dump_python(sent, mode="json"))
    assert [type(part).__name__ for part in expected[0].parts] == [
        "ToolReturnPart",
        "RetryFeedbackPart",
    ]
    assert MemoryMessageHistory(memory, "pai-old").load() == expected


# ---------------------------------------------------------------- LlamaIndex


def _chat(*texts: str) -> list[Any]:
    from llama_index.core.base.llms.types import ChatMessage, MessageRole

    roles = (MessageRole.USER, MessageRole.ASSISTANT)
    return [ChatMessage(role=roles[i % 2], content=text) for i, text in enumerate(texts)]


@pytest.fixture
def chat_stores(memory: SyncMemoryBackend) -> tuple[Any, Any]:
    """The reference (LlamaIndex's in-memory SimpleChatStore) and ours, both holding the
    same four messages under key ``k``."""
    pytest.importorskip("llama_index.core", reason="extra 'llamaindex' not installed")
    from llama_index.core.storage.chat_store import SimpleChatStore

    from memory_core.integrations.llamaindex import MemoryChatStore

    reference, ours = SimpleChatStore(), MemoryChatStore(memory=memory)
    for store in (reference, ours):
        store.set_messages("k", _chat("a", "b", "c", "d"))
    return reference, ours


def _texts(messages: list[Any] | None) -> list[str] | None:
    return None if messages is None else [m.content for m in messages]


# newest; oldest; out of range; from the end; == len (of what is left by then)
INDEXES = (-1, 0, 5, -2, 2)


def test_llamaindex_delete_message_indexes_as_the_reference_does(
    chat_stores: tuple[Any, Any],
) -> None:
    reference, ours = chat_stores
    for idx in INDEXES:
        want, got = reference.delete_message("k", idx), ours.delete_message("k", idx)
        assert (idx, got) == (idx, want)
        assert _texts(ours.get_messages("k")) == _texts(reference.get_messages("k"))
    assert _texts(ours.get_messages("k")) == ["c"]
    # Below -len the reference raises IndexError; ours returns None and deletes nothing.
    with pytest.raises(IndexError):
        reference.delete_message("k", -2)
    assert ours.delete_message("k", -2) is None
    assert _texts(ours.get_messages("k")) == ["c"]


@pytest.mark.anyio
async def test_llamaindex_adelete_message_indexes_as_the_reference_does(
    chat_stores: tuple[Any, Any],
) -> None:
    reference, ours = chat_stores
    for idx in INDEXES:
        want, got = reference.delete_message("k", idx), await ours.adelete_message("k", idx)
        assert (idx, got) == (idx, want)
    assert _texts(await ours.aget_messages("k")) == _texts(reference.get_messages("k"))
    assert await ours.adelete_message("k", -2) is None
    assert _texts(await ours.aget_messages("k")) == ["c"]


def test_llamaindex_deletes_on_a_key_without_messages_return_none(
    chat_stores: tuple[Any, Any],
) -> None:
    reference, ours = chat_stores
    for store in (reference, ours):
        assert store.delete_messages("never-written") is None
        assert store.delete_message("never-written", 0) is None
        assert store.delete_message("never-written", -1) is None
        assert store.delete_last_message("never-written") is None
        assert _texts(store.delete_messages("k")) == ["a", "b", "c", "d"]
        assert store.get_messages("k") == []
        assert store.delete_messages("k") is None  # emptied above
        assert store.delete_last_message("k") is None


@pytest.mark.anyio
async def test_llamaindex_async_deletes_on_a_key_without_messages_return_none(
    chat_stores: tuple[Any, Any],
) -> None:
    _, ours = chat_stores
    assert await ours.adelete_messages("never-written") is None
    assert await ours.adelete_message("never-written", -1) is None
    assert await ours.adelete_last_message("never-written") is None
    assert _texts(await ours.adelete_messages("k")) == ["a", "b", "c", "d"]
    assert await ours.adelete_messages("k") is None
