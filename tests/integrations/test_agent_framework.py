"""The Microsoft Agent Framework integration on every backend (embedded, Bolt, NAMS,
PostgreSQL): the history provider's reads and writes, exact messages where the store keeps
metadata, role and text elsewhere (one warning, strict refusal), reads cut at the NAMS cap,
the context provider, agent runs with a scripted chat client, two users kept apart, bad
input, and the shape of the framework interfaces the integration relies on.
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Awaitable
from typing import Any

import anyio.to_thread
import pytest

pytest.importorskip("agent_framework", reason="extra 'agent-framework' not installed")

from agent_framework import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatResponse,
    Content,
    ContextProvider,
    FunctionInvocationLayer,
    HistoryProvider,
    Message,
    SessionContext,
    tool,
)

from memory_core import (
    CapabilityWarning,
    ConflictError,
    InvalidRequestError,
    NotSupportedError,
    open_backend,
)
from memory_core.integrations import astart_session
from memory_core.integrations.agent_framework import (
    METADATA_KEY,
    MemoryContextProvider,
    MemoryHistoryProvider,
)
from memory_core.sync import SyncMemoryBackend
from memory_core_dev.sync_stores import SyncStore

pytestmark = pytest.mark.anyio

# mutmut calls each mutated function through a trampoline, one frame more than the
# warnings' ``stacklevel`` counts; where warnings point is checked in every other run.
_UNDER_MUTMUT = "MUTANT_UNDER_TEST" in os.environ
LOSSY = (
    "nams.save_messages: message contents beyond text cannot be kept by this backend; only "
    "role and text are stored. keep messages elsewhere, or use a backend with "
    "message_metadata"
)


async def _a(func: Any, *args: Any, **kwargs: Any) -> Any:
    """``func(*args)`` in a worker thread: the blocking facade refuses the loop's thread."""
    return await anyio.to_thread.run_sync(lambda: func(*args, **kwargs))


def _said(seen: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in seen if issubclass(w.category, CapabilityWarning)]


def _stored(memory: SyncMemoryBackend, session: str, **scope: Any) -> list[tuple[str, str]]:
    found = memory.get_conversation(session, limit=100, **scope).messages
    return [(m.role.value, m.content) for m in found]


def _dicts(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.to_dict() for m in messages]


def _kinds() -> list[Message]:
    """A message of every content kind an agent run produces or a caller may store."""
    call = Content.from_function_call(call_id="c1", name="weather", arguments={"city": "Lisbon"})
    return [
        Message("system", ["Be brief."]),
        Message(
            "user",
            ["Weather in", "Lisbon?"],
            author_name="ana",
            message_id="m1",
            additional_properties={"channel": "web", "n": [1, True, None]},
        ),
        Message("assistant", [Content.from_text_reasoning(text="look it up"), call]),
        Message("tool", [Content.from_function_result(call_id="c1", result="21°C, sunny ☀️")]),
        Message("tool", [Content.from_function_result(call_id="c2", result={"t": 21})]),
        Message("user", [Content.from_data(data=b"\x89PNG\x00", media_type="image/png")]),
        Message(
            "assistant", [Content.from_uri("https://example.com/a.png", media_type="image/png")]
        ),
        Message(
            "assistant",
            [
                Content.from_function_approval_request(id="ap1", function_call=call),
                Content.from_error(message="quota", error_code="E1"),
                Content.from_usage({"input_token_count": 3, "output_token_count": 4}),
            ],
        ),
        Message("developer", ["prefer metric units"]),
        Message("assistant", ["Sunny, 21°C."]),
    ]


KINDS_STORED = [
    ("system", "Be brief."),
    ("user", "Weather in\nLisbon?"),
    ("assistant", ""),
    ("tool", "21°C, sunny ☀️"),
    ("tool", '{"t": 21}'),
    ("user", ""),
    ("assistant", ""),
    ("assistant", ""),
    ("system", "prefer metric units"),
    ("assistant", "Sunny, 21°C."),
]


def _plain_back(role: str, text: str) -> dict[str, Any]:
    """What a store without metadata gives back for a stored role and text."""
    return Message("assistant" if role == "tool" else role, [text] if text else []).to_dict()


# ---------------------------------------------------------------- history: reads and writes


async def test_every_content_kind_round_trips_where_the_store_keeps_metadata(
    sync_store: SyncStore,
) -> None:
    session = await _a(sync_store.session, "af")
    history = MemoryHistoryProvider(sync_store.memory)
    sent = _kinds()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        await history.save_messages(session, sent)
    keeps = sync_store.memory.capabilities.message_metadata
    assert _said(seen) == ([] if keeps else [LOSSY])
    if not _UNDER_MUTMUT:
        assert all(w.filename == __file__ for w in seen)  # points at the caller's line
    assert await _a(_stored, sync_store.memory, session) == KINDS_STORED
    got = await history.get_messages(session)
    if keeps:
        assert _dicts(got) == _dicts(sent)
        assert got[5].contents[0].uri == sent[5].contents[0].uri  # the bytes, exactly
        [stored] = await _a(lambda: sync_store.memory.get_conversation(session, limit=1).messages)
        assert stored.metadata[METADATA_KEY] == sent[-1].to_dict()
    else:
        assert _dicts(got) == [_plain_back(role, text) for role, text in KINDS_STORED]


async def test_plain_messages_are_kept_everywhere_without_a_warning(sync_store: SyncStore) -> None:
    session = await _a(sync_store.session, "af-plain")
    history = MemoryHistoryProvider(sync_store.memory)
    plain = [Message("user", ["I am Ana."]), Message("assistant", ["Hello Ana."])]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        await history.save_messages(session, plain)
        await history.save_messages(session, [])  # nothing to write: no call
        got = await history.get_messages(session, state={})
    assert _said(seen) == []
    assert _dicts(got) == _dicts(plain)
    assert [
        m.text
        for m in await MemoryHistoryProvider(sync_store.memory, limit=1).get_messages(session)
    ] == ["Hello Ana."]


async def test_an_unknown_session_has_no_messages(sync_store: SyncStore) -> None:
    session = await _a(sync_store.session, "af-empty")
    assert await MemoryHistoryProvider(sync_store.memory).get_messages(session) == []


async def test_messages_another_writer_stored_come_back_plain(sync_store: SyncStore) -> None:
    session = await _a(sync_store.session, "af-other")
    await _a(sync_store.memory.add_message, session, "tool", "from elsewhere")
    got = await MemoryHistoryProvider(sync_store.memory).get_messages(session)
    assert _dicts(got) == [Message("assistant", ["from elsewhere"]).to_dict()]


async def test_lossy_writes_warn_once_per_provider(sync_store: SyncStore) -> None:
    first_session = await _a(sync_store.session, "af-once-1")
    second_session = await _a(sync_store.session, "af-once-2")
    first, second = (
        MemoryHistoryProvider(sync_store.memory),
        MemoryHistoryProvider(sync_store.memory),
    )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for provider, session in (
            (first, first_session),
            (first, first_session),
            (second, second_session),
        ):
            await provider.save_messages(session, _kinds()[1:3])
    lossy = not sync_store.memory.capabilities.message_metadata
    assert _said(seen) == ([LOSSY, LOSSY] if lossy else [])


async def test_strict_refuses_lossy_writes_and_writes_nothing(sync_store: SyncStore) -> None:
    strict = await _a(sync_store.open, strict=True)
    session = await _a(sync_store.session, "af-strict")
    history = MemoryHistoryProvider(strict)
    await history.save_messages(session, [Message("user", ["plain is always kept"])])
    batch = [Message("user", ["ok"]), *_kinds()[2:4]]
    if strict.capabilities.message_metadata:
        await history.save_messages(session, batch)
        assert len(await history.get_messages(session)) == 4
        return
    with pytest.raises(NotSupportedError) as refused:
        await history.save_messages(session, batch)
    assert (refused.value.method, refused.value.message) == (
        "save_messages",
        "message contents beyond text cannot be kept",
    )
    assert await _a(_stored, strict, session) == [("user", "plain is always kept")]


async def test_a_full_read_at_the_read_cap_warns_once(sync_store: SyncStore) -> None:
    session = await _a(sync_store.session, "af-cap")
    items = [{"role": "user", "content": f"m{n}"} for n in range(200)]
    await _a(sync_store.memory.add_messages_batch, session, items)
    history = MemoryHistoryProvider(sync_store.memory)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert len(await history.get_messages(session)) == 200
        assert len(await history.get_messages(session)) == 200
        assert (
            len(await MemoryHistoryProvider(sync_store.memory, limit=200).get_messages(session))
            == 200
        )  # a limit the caller chose: nothing is cut behind its back
    cut = not sync_store.memory.capabilities.full_history
    assert _said(seen) == (
        [
            "nams.get_messages: only the newest 200 messages can be read from this backend; "
            "older ones are unreachable"
        ]
        if cut
        else []
    )
    strict = MemoryHistoryProvider(await _a(sync_store.open, strict=True))
    if cut:
        with pytest.raises(NotSupportedError, match="newest 200"):
            await strict.get_messages(session)
    else:
        assert len(await strict.get_messages(session)) == 200


async def test_an_async_backend_serves_the_providers(sync_store: SyncStore) -> None:
    async with open_backend(sync_store.url, **sync_store.options) as memory:
        session = await astart_session(memory, f"af-async-{sync_store.tag}")
        try:
            history = MemoryHistoryProvider(memory)
            await history.save_messages(session, [Message("user", ["the harbour tram"])])
            assert [m.text for m in await history.get_messages(session)] == ["the harbour tram"]
            recall = MemoryContextProvider(memory, across_sessions=False, preferences=False)
            found = await recall.recall("harbour", session_id=session)
            assert found == "Relevant earlier messages of this user:\n- [user] the harbour tram"
        finally:
            await memory.clear_session(session)


# ---------------------------------------------------------------- agent runs


class ScriptedClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """A chat client with canned replies that records what each model call received (the
    framework ships no test client)."""

    def __init__(self, replies: list[Message]) -> None:
        super().__init__()
        self.replies = replies
        self.calls: list[tuple[list[Message], str]] = []

    def _inner_get_response(
        self, *, messages: Any, stream: bool, options: Any, **kwargs: Any
    ) -> Awaitable[ChatResponse]:
        async def respond() -> ChatResponse:
            self.calls.append((list(messages), str(options.get("instructions") or "")))
            return ChatResponse(messages=[self.replies.pop(0)])

        return respond()


@tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"{city}: 21°C"


def _replies() -> list[Message]:
    call = Content.from_function_call(call_id="c1", name="weather", arguments={"city": "Lisbon"})
    return [
        Message("assistant", [call]),
        Message("assistant", ["Sunny, 21°C."]),
        Message("assistant", ["You asked about Lisbon."]),
    ]


async def test_an_agent_run_reads_and_writes_memory(sync_store: SyncStore) -> None:
    session_id = await _a(sync_store.session, "af-run")
    client = ScriptedClient(_replies())

    def agent() -> Agent[Any]:
        history = MemoryHistoryProvider(sync_store.memory)
        return Agent(client, instructions="Be brief.", tools=[weather], context_providers=[history])

    first = agent()
    session = first.create_session(session_id=session_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CapabilityWarning)  # NAMS keeps text only
        assert (await first.run("Weather in Lisbon?", session=session)).text == "Sunny, 21°C."
        # a new agent (a new process) with the session restored from its serialised form
        restored = AgentSession.from_dict(session.to_dict())
        answer = await agent().run("What did I ask?", session=restored)
    assert answer.text == "You asked about Lisbon."
    keeps = sync_store.memory.capabilities.message_metadata
    # without metadata the function call's message has no text left: the model gets none
    assert [len(messages) for messages, _ in client.calls] == [1, 3, 5 if keeps else 4]
    assert client.calls[2][0][0].text == "Weather in Lisbon?"  # read back from memory
    assert restored.state["memory_core"] == {"user_identifier": None, "session_id": session_id}
    assert await _a(_stored, sync_store.memory, session_id) == [
        ("user", "Weather in Lisbon?"),
        ("assistant", ""),
        ("tool", "Lisbon: 21°C"),
        ("assistant", "Sunny, 21°C."),
        ("user", "What did I ask?"),
        ("assistant", "You asked about Lisbon."),
    ]
    if keeps:
        seen = client.calls[2][0][1:4]
        assert [c.type for m in seen for c in m.contents] == [
            "function_call",
            "function_result",
            "text",
        ]
        assert seen[0].contents[0].arguments == {"city": "Lisbon"}


async def test_a_lossy_write_in_an_agent_run_points_at_the_applications_line(
    sync_store: SyncStore,
) -> None:
    session_id = await _a(sync_store.session, "af-where")
    client = ScriptedClient(_replies())
    agent = Agent(
        client, tools=[weather], context_providers=[MemoryHistoryProvider(sync_store.memory)]
    )
    session = agent.create_session(session_id=session_id)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        await agent.run("Weather in Lisbon?", session=session)
    lossy = not sync_store.memory.capabilities.message_metadata
    if _UNDER_MUTMUT:
        return
    where = [(w.filename, w.lineno) for w in seen if issubclass(w.category, CapabilityWarning)]
    assert where == ([(__file__, line)] if lossy else [])


# ---------------------------------------------------------------- context provider


def _user_store(sync_store: SyncStore) -> SyncMemoryBackend:
    """A backend on which every call acts for its user only: multi-tenant where the store
    can be, else (NAMS) one whose session names are looked up per user."""
    caps = sync_store.memory.capabilities
    assert caps.user_scoped_calls  # every store of the fixture keeps users apart
    return sync_store.open(multi_tenant=True) if caps.multi_tenant else sync_store.memory


async def test_the_context_provider_gives_the_agent_the_users_memories(
    sync_store: SyncStore,
) -> None:
    caps = sync_store.memory.capabilities
    user = f"ana-{sync_store.tag}"
    memory = await _a(_user_store, sync_store)
    earlier = f"af-earlier-{sync_store.tag}"
    said = "I am allergic to penicillin"
    await _a(memory.add_message, earlier, "user", said, user_identifier=user)
    if caps.preferences:
        await _a(memory.add_preference, "health", "no penicillin drugs", user_identifier=user)
    try:
        # across sessions where the store can search them all; else (NAMS) in the session
        across = caps.search_global
        recall = MemoryContextProvider(memory, user_identifier=user, across_sessions=across)
        assert recall.preferences is caps.preferences
        client = ScriptedClient([Message("assistant", ["Noted."])] * 2)
        agent = Agent(client, instructions="Be brief.", context_providers=[recall])
        session = agent.create_session(
            session_id=f"af-today-{sync_store.tag}" if across else earlier
        )
        await agent.run("Which drugs am I allergic to? penicillin", session=session)
        expected = f"Relevant earlier messages of this user:\n- [user] {said}"
        if caps.preferences:
            expected += "\n\nKnown preferences of this user:\n- (health) no penicillin drugs"
        assert client.calls[0][1] == f"Be brief.\n{expected}"
        await agent.run("   ", session=session)  # no text to search with: nothing added
        assert client.calls[1][1] == "Be brief."
        assert session.state["memory_core_context"] == {}
    finally:
        await _a(memory.clear_session, earlier, user_identifier=user)


async def test_the_context_provider_checks_capabilities_before_any_run(
    sync_store: SyncStore,
) -> None:
    caps = sync_store.memory.capabilities
    memory = sync_store.memory
    if caps.search_global:
        MemoryContextProvider(memory)  # no user: every session of this single-user store
        with pytest.raises(NotSupportedError) as refused:
            MemoryContextProvider(memory, user_identifier="ana")  # others' messages too
        assert "multi_tenant=True" in refused.value.workaround
        tenant = await _a(sync_store.open, multi_tenant=True)
        assert MemoryContextProvider(tenant, user_identifier="ana").across_sessions
    else:
        with pytest.raises(NotSupportedError, match="search_global"):
            MemoryContextProvider(memory)
    assert not MemoryContextProvider(memory, across_sessions=False, preferences=False).preferences
    if caps.preferences:
        assert MemoryContextProvider(memory, across_sessions=False, preferences=True).preferences
    else:
        with pytest.raises(NotSupportedError, match="preferences"):
            MemoryContextProvider(memory, across_sessions=False, preferences=True)


async def test_recall_without_a_session_and_without_hits(sync_store: SyncStore) -> None:
    recall = MemoryContextProvider(sync_store.memory, across_sessions=False, preferences=False)
    assert await recall.recall("anything") == ""  # no session to search in
    session = await _a(sync_store.session, "af-miss")
    await _a(sync_store.memory.add_message, session, "user", "the harbour tram")
    assert await recall.recall("zeppelin", session_id=session) == ""


# ---------------------------------------------------------------- two users


@pytest.mark.filterwarnings("ignore::memory_core.CapabilityWarning")  # NAMS: author names
async def test_one_users_agent_never_reads_anothers_memory(sync_store: SyncStore) -> None:
    caps = sync_store.memory.capabilities
    alice, bob = f"alice-{sync_store.tag}", f"bob-{sync_store.tag}"
    memory = await _a(_user_store, sync_store)
    shared = f"af-shared-{sync_store.tag}"  # one session name, a conversation per user

    def agent(user: str, reply: str) -> tuple[Agent[Any], ScriptedClient]:
        client = ScriptedClient([Message("assistant", [reply])])
        providers: list[ContextProvider] = [
            MemoryHistoryProvider(memory, user_identifier=user),
            MemoryContextProvider(memory, user_identifier=user, across_sessions=caps.multi_tenant),
        ]
        return Agent(client, context_providers=providers), client

    try:
        alice_agent, _ = agent(alice, "Noted, Alice.")
        alice_run = alice_agent.create_session(session_id=shared)
        await alice_agent.run("My secret word is marmalade", session=alice_run)
        bob_agent, bob_client = agent(bob, "Nothing about marmalade.")
        await bob_agent.run("marmalade?", session=bob_agent.create_session(session_id=shared))
        assert [len(m) for m, _ in bob_client.calls] == [1]  # no history of alice's
        assert bob_client.calls[0][1] == ""  # and no memory of hers
        assert await _a(_stored, memory, shared, user_identifier=alice) == [
            ("user", "My secret word is marmalade"),
            ("assistant", "Noted, Alice."),
        ]
        assert await _a(_stored, memory, shared, user_identifier=bob) == [
            ("user", "marmalade?"),
            ("assistant", "Nothing about marmalade."),
        ]
        # alice's agent session handed to bob's agent is refused before anything is read
        handed = AgentSession.from_dict(alice_run.to_dict())
        bob_again, bob_again_client = agent(bob, "x")
        with pytest.raises(ConflictError) as refused:
            await bob_again.run("what is the secret word?", session=handed)
        assert refused.value.argument == "session" and bob_again_client.calls == []
        assert len(await _a(_stored, memory, shared, user_identifier=bob)) == 2
    finally:
        for user in (alice, bob):
            await _a(memory.clear_session, shared, user_identifier=user)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("session_id", ["", 3, None])
async def test_a_bad_session_id_is_refused(session_id: Any, sync_store: SyncStore) -> None:
    history = MemoryHistoryProvider(sync_store.memory)
    for call in (
        history.get_messages(session_id),
        history.save_messages(session_id, [Message("user", ["hi"])]),
    ):
        with pytest.raises(InvalidRequestError) as caught:
            await call
        assert caught.value.argument == "session_id"


async def test_bad_messages_are_refused_and_nothing_is_written(sync_store: SyncStore) -> None:
    session = await _a(sync_store.session, "af-bad")
    history = MemoryHistoryProvider(sync_store.memory)
    cases: list[tuple[Any, str]] = [
        ("hi", "messages"),
        (None, "messages"),
        ([Message("user", ["ok"]), {"role": "user", "text": "x"}], "messages[1]"),
    ]
    for bad, argument in cases:
        with pytest.raises(InvalidRequestError) as caught:
            await history.save_messages(session, bad)
        assert caught.value.argument == argument
    assert await _a(_stored, sync_store.memory, session) == []


@pytest.mark.parametrize(
    ("options", "argument"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": True}, "limit"),
        ({"limit": "5"}, "limit"),
        ({"user_identifier": ""}, "user_identifier"),
        ({"user_identifier": 7}, "user_identifier"),
    ],
)
def test_bad_provider_options_are_refused(
    options: dict[str, Any], argument: str, sync_store: SyncStore
) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        MemoryHistoryProvider(sync_store.memory, **options)
    assert caught.value.argument == argument
    with pytest.raises(InvalidRequestError) as caught:
        MemoryContextProvider(sync_store.memory, across_sessions=False, **options)
    assert caught.value.argument == argument


async def test_bad_context_options_and_queries_are_refused(sync_store: SyncStore) -> None:
    memory = sync_store.memory
    with pytest.raises(InvalidRequestError, match=r"must be a positive int$"):
        MemoryContextProvider(memory, across_sessions=False, limit=None)  # type: ignore[arg-type]
    for options, argument in (
        ({"across_sessions": "yes"}, "across_sessions"),
        ({"across_sessions": False, "preferences": "no"}, "preferences"),
    ):
        with pytest.raises(InvalidRequestError) as caught:
            MemoryContextProvider(memory, **options)
        assert caught.value.argument == argument
    recall = MemoryContextProvider(memory, across_sessions=False)
    for query in ("", "  ", None):
        with pytest.raises(InvalidRequestError) as caught:
            await recall.recall(query)  # type: ignore[arg-type]
        assert caught.value.argument == "query"
    with pytest.raises(InvalidRequestError) as caught:
        MemoryHistoryProvider("memory://")  # type: ignore[arg-type]
    assert caught.value.argument == "memory"


# ---------------------------------------------------------------- the framework's interfaces


def _signature(func: Any) -> list[tuple[str, str]]:
    return [(p.name, p.kind.name) for p in inspect.signature(func).parameters.values()]


HOOK = [
    ("self", "POSITIONAL_OR_KEYWORD"),
    ("agent", "KEYWORD_ONLY"),
    ("session", "KEYWORD_ONLY"),
    ("context", "KEYWORD_ONLY"),
    ("state", "KEYWORD_ONLY"),
]


def test_the_framework_interfaces_keep_the_shape_the_integration_relies_on(
    sync_store: SyncStore,
) -> None:
    assert _signature(HistoryProvider.get_messages) == [
        ("self", "POSITIONAL_OR_KEYWORD"),
        ("session_id", "POSITIONAL_OR_KEYWORD"),
        ("state", "KEYWORD_ONLY"),
        ("kwargs", "VAR_KEYWORD"),
    ]
    assert _signature(HistoryProvider.save_messages) == [
        ("self", "POSITIONAL_OR_KEYWORD"),
        ("session_id", "POSITIONAL_OR_KEYWORD"),
        ("messages", "POSITIONAL_OR_KEYWORD"),
        ("state", "KEYWORD_ONLY"),
        ("kwargs", "VAR_KEYWORD"),
    ]
    abstract = [
        n for n, f in vars(HistoryProvider).items() if getattr(f, "__isabstractmethod__", 0)
    ]
    assert sorted(abstract) == ["get_messages", "save_messages"]  # what a subclass provides
    assert [n for n, _ in _signature(HistoryProvider.__init__)] == [
        "self",
        "source_id",
        "load_messages",
        "store_inputs",
        "store_context_messages",
        "store_context_from",
        "store_outputs",
    ]
    for hook in (ContextProvider.before_run, ContextProvider.after_run):
        assert _signature(hook) == HOOK
    assert {"input_messages", "session_id", "instructions"} <= set(
        vars(SessionContext(input_messages=[]))
    )
    assert _signature(SessionContext.extend_instructions)[1:] == [
        ("source_id", "POSITIONAL_OR_KEYWORD"),
        ("instructions", "POSITIONAL_OR_KEYWORD"),
    ]
    message = Message("user", ["x"])
    assert Message.from_dict(message.to_dict()).to_dict() == message.to_dict()
    assert AgentSession.from_dict(AgentSession(session_id="s").to_dict()).session_id == "s"
    assert "session_id" in inspect.signature(Agent.create_session).parameters
    assert "context_providers" in inspect.signature(Agent.__init__).parameters
    # ours are the framework's kinds, so an agent runs them in its provider pipeline
    assert isinstance(MemoryHistoryProvider(sync_store.memory), HistoryProvider)
    assert isinstance(
        MemoryContextProvider(sync_store.memory, across_sessions=False), ContextProvider
    )
