"""The Google ADK memory service on every backend (embedded, Bolt, NAMS, PostgreSQL):
sessions stored once however often they are added, exact events where the store keeps
metadata, role and text elsewhere (one warning, strict refusal), searches that stay within
one user and one app, the NAMS search session by session, ADK agent runs with a scripted
model (no network: only 127.0.0.1 is reachable), bad input, and the shape of the ADK
interfaces the service relies on.
"""

from __future__ import annotations

import inspect
import ipaddress
import os
import socket
import warnings
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import anyio
import anyio.to_thread
import pytest

pytest.importorskip("google.adk", reason="extra 'adk' not installed")

from google.adk import Runner
from google.adk.agents import LlmAgent
from google.adk.errors import StaleSessionError
from google.adk.events import Event, EventActions
from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.sessions import BaseSessionService, InMemorySessionService, Session, State
from google.adk.tools import load_memory, preload_memory
from google.genai import types
from pydantic import Field

from memory_core import (
    CapabilityWarning,
    InvalidRequestError,
    NotSupportedError,
    open_backend,
)
from memory_core.integrations.adk import (
    APP_KEY,
    METADATA_KEY,
    MemoryService,
    memory_session_id,
)
from memory_core.sync import SyncMemoryBackend
from memory_core_dev.sync_stores import SyncStore

pytestmark = pytest.mark.anyio

# mutmut calls each mutated function through a trampoline, one frame more than the
# warnings' ``stacklevel`` counts; where warnings point is checked in every other run.
_UNDER_MUTMUT = "MUTANT_UNDER_TEST" in os.environ
APP = "travel"
LOSSY = (
    "nams.add_session_to_memory: event contents beyond text cannot be kept by this backend; "
    "only role and text are stored. keep memories elsewhere, or use a backend with "
    "message_metadata"
)


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any connection to an address other than 127.0.0.1 (or ::1, or a Unix socket) fails
    the test; ADK's Google Cloud telemetry stays off (it runs only when asked for)."""
    connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            assert ipaddress.ip_address(address[0]).is_loopback, address
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    for name in ("GOOGLE_CLOUD_AGENT_ENGINE_ENABLE_TELEMETRY", "GOOGLE_CLOUD_AGENT_ENGINE_ID"):
        monkeypatch.delenv(name, raising=False)
    yield


async def _a(func: Any, *args: Any, **kwargs: Any) -> Any:
    """``func(*args)`` in a worker thread: the blocking facade refuses the loop's thread."""
    return await anyio.to_thread.run_sync(lambda: func(*args, **kwargs))


@dataclass
class Users:
    """A store on which every call acts for one user (multi-tenant where the store can be,
    else NAMS, whose calls name their user), and the test's users, forgotten afterwards."""

    store: SyncStore
    memory: SyncMemoryBackend
    names: list[str] = field(default_factory=list)

    def user(self, name: str = "ana") -> str:
        user = f"{name}-{self.store.tag}"
        self.names.append(user)
        return user

    def stored(self, app: str, session_id: str, user: str) -> list[tuple[str, str]]:
        found = self.memory.get_conversation(
            memory_session_id(app, session_id), user_identifier=user
        ).messages
        return [(m.role.value, m.content) for m in found]

    @property
    def keeps(self) -> bool:
        return self.memory.capabilities.message_metadata


@pytest.fixture
def users(sync_store: SyncStore) -> Iterator[Users]:
    caps = sync_store.memory.capabilities
    assert caps.user_scoped_calls  # every store of the fixture keeps users apart
    memory = sync_store.open(multi_tenant=True) if caps.multi_tenant else sync_store.memory
    found = Users(sync_store, memory)
    try:
        yield found
    finally:
        for user in found.names:
            memory.forget_user(user)


def _said(seen: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in seen if issubclass(w.category, CapabilityWarning)]


def _text(text: str, role: str = "user") -> types.Content:
    return types.Content(role=role, parts=[types.Part(text=text)])


def _event(author: str, content: types.Content | None, **more: Any) -> Event:
    return Event(author=author, invocation_id="inv-1", content=content, **more)


def _session(user: str, session_id: str, events: list[Event], app: str = APP) -> Session:
    return Session(id=session_id, app_name=app, user_id=user, events=events)


def _kinds() -> list[Event]:
    """An event of every kind a session holds; the ones with text are memories."""
    call = types.Part.from_function_call(name="weather", args={"city": "Lisbon"})
    answer = types.Part.from_function_response(name="weather", response={"t": "21°C ☀️"})
    return [
        _event("user", _text("Weather in Lisbon?")),
        _event("guide", types.Content(role="model", parts=[call])),  # no text: not a memory
        _event("guide", types.Content(role="user", parts=[answer])),  # no text
        _event(
            "guide",
            types.Content(
                role="model",
                parts=[
                    types.Part(text="look it up", thought=True),
                    types.Part(text="Sunny, 21°C."),
                    types.Part(inline_data=types.Blob(data=b"\x89PNG\x00", mime_type="image/png")),
                    call,
                ],
            ),
            actions=EventActions(state_delta={"user:city": "Lisbon", "n": [1, None]}),
            branch="guide",
        ),
        _event("guide", None, actions=EventActions(state_delta={"k": 1})),  # state only
        _event("guide", _text("partial", "model"), partial=True),  # a streamed fragment
        _event("user", types.Content(role="user", parts=[_part("Thanks"), _part("bye")])),
    ]


def _part(text: str) -> types.Part:
    return types.Part(text=text)


KINDS_STORED = [
    ("user", "Weather in Lisbon?"),
    ("assistant", "Sunny, 21°C."),
    ("user", "Thanks\nbye"),
]


def _plain_entry(role: str, text: str) -> dict[str, Any]:
    """What a search gives back for a memory kept as role and text."""
    return {
        "content": {"role": "user" if role == "user" else "model", "parts": [{"text": text}]},
        "author": "user" if role == "user" else None,
    }


def _entry(entry: MemoryEntry) -> dict[str, Any]:
    return {"content": entry.content.model_dump(exclude_none=True), "author": entry.author}


# ---------------------------------------------------------------- writes


async def test_every_event_kind_is_kept_exactly_where_the_store_keeps_metadata(
    users: Users,
) -> None:
    ana = users.user()
    service = MemoryService(users.memory)
    sent = _kinds()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        await service.add_session_to_memory(_session(ana, "kinds", sent))
    assert _said(seen) == ([] if users.keeps else [LOSSY])
    if not _UNDER_MUTMUT:
        assert all(w.filename == __file__ for w in seen)  # points at the caller's line
    assert await _a(users.stored, APP, "kinds", ana) == KINDS_STORED
    remembered = [sent[0], sent[3], sent[6]]
    [sunny] = (await service.search_memory(app_name=APP, user_id=ana, query="Sunny")).memories
    assert UUID(sunny.id or "")  # the memory-core message id
    if users.keeps:
        stored = await _a(
            lambda: (
                users.memory.get_conversation(
                    memory_session_id(APP, "kinds"), user_identifier=ana
                ).messages
            )
        )
        assert [Event.model_validate(m.metadata[METADATA_KEY]) for m in stored] == remembered
        assert {m.metadata[APP_KEY] for m in stored} == {APP}
        assert sunny.content == sent[3].content  # thought, text, bytes and call, exactly
        assert sunny.author == "guide"
        assert sunny.timestamp == datetime.fromtimestamp(sent[3].timestamp, UTC).isoformat()
    else:
        assert _entry(sunny) == _plain_entry("assistant", "Sunny, 21°C.")
        stamp = datetime.fromisoformat(sunny.timestamp or "")  # when it was stored
        assert stamp.tzinfo is not None
        assert abs((datetime.now(UTC) - stamp).total_seconds()) < 60


async def test_plain_text_is_kept_everywhere_without_a_warning(users: Users) -> None:
    ana = users.user()
    service = MemoryService(users.memory)
    events = [_event("user", _text("I collect harbour postcards"))]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        await service.add_session_to_memory(_session(ana, "plain", events))
        found = await service.search_memory(app_name=APP, user_id=ana, query="postcards")
    assert _said(seen) == []
    assert [_entry(e) for e in found.memories] == [
        _plain_entry("user", "I collect harbour postcards")
    ]


def _count_writes(memory: SyncMemoryBackend, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the write methods called on ``memory`` from now on."""
    calls: list[str] = []
    for name in ("add_message", "add_messages_batch"):
        real = getattr(memory, name)

        def counted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(memory, name, counted)
    return calls


async def test_adding_a_session_again_stores_only_its_new_events(
    users: Users, monkeypatch: pytest.MonkeyPatch
) -> None:
    ana = users.user()
    service = MemoryService(users.memory)
    session = _session(ana, "again", [_event("user", _text("first"))])
    writes = _count_writes(users.memory, monkeypatch)
    await service.add_session_to_memory(session)
    assert len(writes) == 1
    await service.add_session_to_memory(session)  # nothing new: nothing is sent to write
    assert len(writes) == 1
    session.events += [_event("user", _text("second")), _event("user", _text("third"))]
    await service.add_session_to_memory(session)
    await MemoryService(users.memory).add_session_to_memory(session)  # another service too
    stored = [("user", "first"), ("user", "second"), ("user", "third")]
    assert await _a(users.stored, APP, "again", ana) == stored
    if users.memory.capabilities.idempotency_keys:  # two at once: each event stored once
        session.events.append(_event("user", _text("fourth")))
        async with anyio.create_task_group() as group:
            for _ in range(2):
                group.start_soon(MemoryService(users.memory).add_session_to_memory, session)
        assert await _a(users.stored, APP, "again", ana) == [*stored, ("user", "fourth")]
    empty = _session(ana, "empty", [_event("user", None)])
    await service.add_session_to_memory(empty)  # no memories: nothing written
    assert await _a(users.stored, APP, "empty", ana) == []


async def test_keys_decide_what_is_stored_where_the_backend_has_them(users: Users) -> None:
    ana = users.user()
    service = MemoryService(users.memory)
    first, second = _event("user", _text("one")), _event("user", _text("two"))
    # another writer put a message in the session first
    await _a(
        users.memory.add_message,
        memory_session_id(APP, "keys"),
        "user",
        "from elsewhere",
        user_identifier=ana,
    )
    await service.add_session_to_memory(_session(ana, "keys", [first, second]))
    stored = await _a(users.stored, APP, "keys", ana)
    if users.memory.capabilities.idempotency_keys:
        # the events' ids are not among the stored keys: both are stored
        assert stored == [("user", "from elsewhere"), ("user", "one"), ("user", "two")]
    else:
        # without keys the first stored message counts as the first event
        assert stored == [("user", "from elsewhere"), ("user", "two")]


async def test_a_session_too_long_to_count_is_refused_without_keys(users: Users) -> None:
    ana = users.user()
    caps = users.memory.capabilities
    name = memory_session_id(APP, "long")
    filler = [{"role": "user", "content": f"m{i}"} for i in range(200)]
    await _a(users.memory.add_messages_batch, name, filler, user_identifier=ana)
    events = [_event("user", _text(f"e{i}")) for i in range(3)]
    service = MemoryService(users.memory)
    if caps.idempotency_keys:
        await service.add_session_to_memory(_session(ana, "long", events))
        assert len(await _a(users.stored, APP, "long", ana)) == 203
        return
    with pytest.raises(NotSupportedError) as refused:
        await service.add_session_to_memory(_session(ana, "long", events))
    assert refused.value.method == "add_session_to_memory"
    assert "add_events_to_memory" in refused.value.workaround
    assert len(await _a(users.stored, APP, "long", ana)) == 200  # nothing written
    await service.add_events_to_memory(
        app_name=APP, user_id=ana, session_id="long", events=events[2:]
    )
    assert (await _a(users.stored, APP, "long", ana))[-1] == ("user", "e2")


async def test_events_added_as_a_delta(users: Users) -> None:
    ana = users.user()
    service = MemoryService(users.memory)
    delta = [_event("user", _text("delta one")), _event("guide", None), _text_event("two")]
    replay = delta[2:]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CapabilityWarning)  # NAMS: the agent's name
        await service.add_events_to_memory(app_name=APP, user_id=ana, session_id="d", events=delta)
        await service.add_events_to_memory(app_name=APP, user_id=ana, session_id="d", events=[])
        await service.add_events_to_memory(
            app_name=APP, user_id=ana, session_id="d", events=replay, custom_metadata={}
        )
    stored = await _a(users.stored, APP, "d", ana)
    kept_once = [("user", "delta one"), ("assistant", "two")]
    # a replayed delta is stored once where the backend has keys; elsewhere as given
    if users.memory.capabilities.idempotency_keys:
        assert stored == kept_once
    else:
        assert stored == [*kept_once, ("assistant", "two")]


def _text_event(text: str) -> Event:
    return _event("guide", _text(text, "model"))


async def test_lossy_writes_warn_once_per_service(users: Users) -> None:
    ana = users.user()
    first, second = MemoryService(users.memory), MemoryService(users.memory)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for service, session_id in ((first, "w1"), (first, "w2"), (second, "w3")):
            await service.add_session_to_memory(
                _session(ana, session_id, [_text_event(f"reply {session_id}")])
            )
    assert _said(seen) == ([] if users.keeps else [LOSSY, LOSSY])


async def test_strict_refuses_lossy_writes_and_writes_nothing(users: Users) -> None:
    ana = users.user()
    caps = users.memory.capabilities
    strict = await _a(
        users.store.open, strict=True, **({"multi_tenant": True} if caps.multi_tenant else {})
    )
    service = MemoryService(strict)
    await service.add_session_to_memory(_session(ana, "s1", [_event("user", _text("kept"))]))
    batch = [_event("user", _text("ok")), _text_event("an agent's reply")]
    if users.keeps:
        await service.add_session_to_memory(_session(ana, "s2", batch))
        assert len(await _a(users.stored, APP, "s2", ana)) == 2
        return
    for call in (
        service.add_session_to_memory(_session(ana, "s2", batch)),
        service.add_events_to_memory(app_name=APP, user_id=ana, session_id="s2", events=batch),
    ):
        with pytest.raises(NotSupportedError) as refused:
            await call
        assert refused.value.message == "event contents beyond text cannot be kept"
    assert await _a(users.stored, APP, "s2", ana) == []
    assert await _a(users.stored, APP, "s1", ana) == [("user", "kept")]


# ---------------------------------------------------------------- search


async def test_a_search_finds_the_users_memories_of_this_app_only(users: Users) -> None:
    ana = users.user()
    service = MemoryService(users.memory, limit=2)
    for app, session_id, text in (
        (APP, "t1", "the tram to Belem leaves at nine"),
        (APP, "t2", "the tram back is at five"),
        (APP, "t3", "another tram, the number 28"),
        ("health", "h1", "the tram makes me dizzy"),
    ):
        await service.add_session_to_memory(
            _session(ana, session_id, [_event("user", _text(text))], app=app)
        )
    found = await service.search_memory(app_name=APP, user_id=ana, query="tram")
    texts = [e.content.parts[0].text for e in found.memories]
    assert len(texts) == 2  # the limit
    assert set(texts) < {
        "the tram to Belem leaves at nine",
        "the tram back is at five",
        "another tram, the number 28",
    }
    health = await service.search_memory(app_name="health", user_id=ana, query="tram")
    assert [e.content.parts[0].text for e in health.memories] == ["the tram makes me dizzy"]
    nothing = await service.search_memory(app_name=APP, user_id=ana, query="zeppelin")
    assert nothing == SearchMemoryResponse()
    assert (await service.search_memory(app_name="other", user_id=ana, query="tram")).memories == []


async def test_without_search_global_a_search_reads_the_newest_sessions(users: Users) -> None:
    ana = users.user()
    caps = users.memory.capabilities
    service = MemoryService(users.memory, sessions_searched=2)
    for session_id in ("n1", "n2", "n3"):
        await service.add_session_to_memory(
            _session(ana, session_id, [_event("user", _text(f"ferry note {session_id}"))])
        )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        found = await service.search_memory(app_name=APP, user_id=ana, query="ferry")
        await service.search_memory(app_name=APP, user_id=ana, query="ferry")
    texts = {e.content.parts[0].text for e in found.memories}
    if caps.search_global:
        assert texts == {"ferry note n1", "ferry note n2", "ferry note n3"}
        assert _said(seen) == []
        return
    assert texts == {"ferry note n2", "ferry note n3"}  # the newest two
    assert _said(seen) == [
        "nams.search_memory: only the user's newest 2 conversations are searched (this "
        "backend cannot search across sessions); older ones may hold more. Pass a larger "
        "sessions_searched"
    ]
    strict = MemoryService(await _a(users.store.open, strict=True), sessions_searched=2)
    with pytest.raises(NotSupportedError, match="sessions_searched"):
        await strict.search_memory(app_name=APP, user_id=ana, query="ferry")
    everything = MemoryService(users.memory, sessions_searched=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CapabilityWarning)  # all are read: no warning
        found = await everything.search_memory(app_name=APP, user_id=ana, query="ferry")
    assert len(found.memories) == 3


async def test_the_service_checks_capabilities_when_it_is_made(users: Users) -> None:
    caps = users.memory.capabilities
    if caps.search_global:
        with pytest.raises(NotSupportedError) as refused:
            MemoryService(users.store.memory)  # not multi-tenant: others' messages too
        assert refused.value.workaround == "open the backend with multi_tenant=True"
        assert isinstance(MemoryService(users.memory), BaseMemoryService)
        return
    assert isinstance(MemoryService(users.memory), BaseMemoryService)  # NAMS, portable
    server_ids = await _a(users.store.open, session_names="server")
    with pytest.raises(NotSupportedError) as refused:
        MemoryService(server_ids)
    assert "client_chosen_ids" in refused.value.message
    assert "session_names='portable'" in refused.value.workaround


async def test_an_async_backend_works_too() -> None:
    async with open_backend("memory://", multi_tenant=True) as memory:
        service = MemoryService(memory)
        events = [_event("user", _text("I am allergic to penicillin"))]
        await service.add_session_to_memory(_session("ana", "a1", events))
        found = await service.search_memory(app_name=APP, user_id="ana", query="penicillin")
        assert [e.content for e in found.memories] == [events[0].content]
        stored = await memory.get_conversation("travel:a1", user_identifier="ana")
        assert [m.idempotency_key for m in stored.messages] == [events[0].id]


# ---------------------------------------------------------------- two users


async def test_one_user_never_sees_anothers_memory(users: Users) -> None:
    alice, bob = users.user("alice"), users.user("bob")
    service = MemoryService(users.memory)
    # one ADK session id and one app for both: a memory-core conversation per user
    await service.add_session_to_memory(
        _session(alice, "shared", [_event("user", _text("My secret word is marmalade"))])
    )
    bobs = _session(bob, "shared", [_event("user", _text("I like marmalade trains"))])
    await service.add_session_to_memory(bobs)
    await service.add_session_to_memory(bobs)  # stored once, next to alice's
    mine = await service.search_memory(app_name=APP, user_id=bob, query="secret marmalade")
    assert [e.content.parts[0].text for e in mine.memories] == ["I like marmalade trains"]
    theirs = await service.search_memory(app_name=APP, user_id=alice, query="marmalade")
    assert [e.content.parts[0].text for e in theirs.memories] == ["My secret word is marmalade"]
    assert await _a(users.stored, APP, "shared", alice) == [("user", "My secret word is marmalade")]
    assert await _a(users.stored, APP, "shared", bob) == [("user", "I like marmalade trains")]


# ---------------------------------------------------------------- agent runs


class ScriptedModel(BaseLlm):
    """Stands in for a hosted model: answers each request with the next scripted content
    and records the requests."""

    model: str = "scripted"
    replies: list[types.Content] = Field(default_factory=list)
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncIterator[LlmResponse]:
        self.requests.append(llm_request)
        spent = types.GenerateContentResponseUsageMetadata(
            prompt_token_count=0, candidates_token_count=0
        )
        yield LlmResponse(content=self.replies.pop(0), usage_metadata=spent)


async def _run(runner: Runner, user: str, session_id: str, text: str) -> list[Event]:
    await runner.session_service.create_session(
        app_name=runner.app_name, user_id=user, session_id=session_id
    )
    return [
        event
        async for event in runner.run_async(
            user_id=user, session_id=session_id, new_message=_text(text)
        )
    ]


def _request_text(request: LlmRequest) -> str:
    return "\n".join(
        str(p.text or p.function_response or "") for c in request.contents for p in c.parts or []
    )


@pytest.mark.filterwarnings("ignore::memory_core.CapabilityWarning")  # NAMS: agent names
async def test_an_agent_remembers_what_an_earlier_session_stored(users: Users) -> None:
    ana = users.user()
    first_model = ScriptedModel(replies=[_text("Noted.", "model")])
    first = Runner(
        app_name=APP,
        agent=LlmAgent(name="guide", model=first_model),
        session_service=InMemorySessionService(),
        memory_service=MemoryService(users.memory),
    )
    await _run(first, ana, "monday", "I am allergic to penicillin")
    done = await first.session_service.get_session(app_name=APP, user_id=ana, session_id="monday")
    assert done is not None
    await first.memory_service.add_session_to_memory(done)  # type: ignore[union-attr]
    # a later run: a new process (new services) on the same store
    call = types.Part.from_function_call(name="load_memory", args={"query": "penicillin"})
    model = ScriptedModel(
        replies=[types.Content(role="model", parts=[call]), _text("Avoid penicillin.", "model")]
    )
    later = Runner(
        app_name=APP,
        agent=LlmAgent(name="guide", model=model, tools=[preload_memory, load_memory]),
        session_service=InMemorySessionService(),
        memory_service=MemoryService(users.memory),
    )
    events = await _run(later, ana, "friday", "Which drugs? penicillin")
    assert events[-1].content is not None and events[-1].content.parts is not None
    assert events[-1].content.parts[0].text == "Avoid penicillin."
    preloaded, loaded = (_request_text(r) for r in model.requests)
    assert "user: I am allergic to penicillin" in preloaded  # preload_memory
    assert "I am allergic to penicillin" in loaded.split("Which drugs? penicillin")[-1]
    [response] = [
        p.function_response
        for c in model.requests[1].contents
        for p in c.parts or []
        if p.function_response
    ]
    [entry] = (response.response or {})["result"].memories  # load_memory's answer
    assert (entry.author, entry.content) == ("user", _text("I am allergic to penicillin"))
    # nothing of ana's reaches another user's agent
    bob = users.user("bob")
    bob_model = ScriptedModel(replies=[_text("Hello.", "model")])
    bobs = Runner(
        app_name=APP,
        agent=LlmAgent(name="guide", model=bob_model, tools=[preload_memory]),
        session_service=InMemorySessionService(),
        memory_service=MemoryService(users.memory),
    )
    await _run(bobs, bob, "friday", "Which drugs? penicillin")
    assert "PAST_CONVERSATIONS" not in _request_text(bob_model.requests[0])


async def test_direct_memory_writes_and_deletes_are_left_to_adks_defaults(users: Users) -> None:
    ana = users.user()
    service = MemoryService(users.memory)
    entry = MemoryEntry(content=_text("remember me"))
    with pytest.raises(NotImplementedError):
        await service.add_memory(app_name=APP, user_id=ana, memories=[entry])
    with pytest.raises(NotImplementedError):
        await service.delete_memory(app_name=APP, user_id=ana, memory_id="m1")
    assert (await service.search_memory(app_name=APP, user_id=ana, query="remember")).memories == []


# ---------------------------------------------------------------- bad input


async def test_bad_arguments_are_refused_naming_them(users: Users) -> None:
    ana = users.user()
    service = MemoryService(users.memory)
    ok = [_event("user", _text("hello"))]
    cases: list[tuple[Any, str]] = [
        (service.add_session_to_memory("travel:s"), "session"),  # type: ignore[arg-type]
        (service.add_session_to_memory(_session(ana, "s", ok, app="a:b")), "session.app_name"),
        (service.add_session_to_memory(_session("", "s", ok)), "session.user_id"),
        (service.add_session_to_memory(_session(ana, "", ok)), "session.id"),
        (service.search_memory(app_name="", user_id=ana, query="x"), "app_name"),
        (service.search_memory(app_name="a:b", user_id=ana, query="x"), "app_name"),
        (service.search_memory(app_name=APP, user_id=None, query="x"), "user_id"),  # type: ignore[arg-type]
        (service.search_memory(app_name=APP, user_id=ana, query=" "), "query"),
        (service.search_memory(app_name=APP, user_id=ana, query=None), "query"),  # type: ignore[arg-type]
    ]
    delta: dict[str, Any] = {"app_name": APP, "user_id": ana, "session_id": "s", "events": ok}
    for changed, argument in (
        ({"session_id": None}, "session_id"),
        ({"user_id": 3}, "user_id"),
        ({"events": "hello"}, "events"),
        ({"events": None}, "events"),
        ({"events": [*ok, {"text": "x"}]}, "events[1]"),
        ({"custom_metadata": {"ttl": 3}}, "custom_metadata"),
    ):
        cases.append((service.add_events_to_memory(**{**delta, **changed}), argument))
    for call, argument in cases:
        with pytest.raises(InvalidRequestError) as caught:
            await call
        assert caught.value.argument == argument
    assert await _a(users.stored, APP, "s", ana) == []  # nothing written
    with pytest.raises(InvalidRequestError) as caught:
        memory_session_id(APP, "")
    assert caught.value.argument == "session_id"


@pytest.mark.parametrize(
    ("options", "argument"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": True}, "limit"),
        ({"limit": "5"}, "limit"),
        ({"sessions_searched": 0}, "sessions_searched"),
        ({"sessions_searched": None}, "sessions_searched"),
    ],
)
def test_bad_service_options_are_refused(
    options: dict[str, Any], argument: str, users: Users
) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        MemoryService(users.memory, **options)
    assert caught.value.argument == argument
    with pytest.raises(InvalidRequestError) as caught:
        MemoryService("memory://")  # type: ignore[arg-type]
    assert caught.value.argument == "memory"


# ---------------------------------------------------------------- ADK's interfaces


def _signature(func: Any) -> list[tuple[str, str]]:
    return [(p.name, p.kind.name) for p in inspect.signature(func).parameters.values()]


def _keywords(*names: str) -> list[tuple[str, str]]:
    return [("self", "POSITIONAL_OR_KEYWORD"), *((n, "KEYWORD_ONLY") for n in names)]


def test_adks_interfaces_keep_the_shape_the_service_relies_on(users: Users) -> None:
    assert sorted(BaseMemoryService.__abstractmethods__) == [
        "add_session_to_memory",
        "search_memory",
    ]
    assert _signature(BaseMemoryService.add_session_to_memory) == [
        ("self", "POSITIONAL_OR_KEYWORD"),
        ("session", "POSITIONAL_OR_KEYWORD"),
    ]
    assert _signature(BaseMemoryService.search_memory) == _keywords("app_name", "user_id", "query")
    assert _signature(BaseMemoryService.add_events_to_memory) == _keywords(
        "app_name", "user_id", "events", "session_id", "custom_metadata"
    )
    # what the service leaves to ADK's defaults (they raise NotImplementedError)
    assert _signature(BaseMemoryService.add_memory) == _keywords(
        "app_name", "user_id", "memories", "custom_metadata"
    )
    assert _signature(BaseMemoryService.delete_memory) == _keywords(
        "app_name", "user_id", "memory_id"
    )
    for name in ("add_session_to_memory", "search_memory", "add_events_to_memory"):
        ours, theirs = getattr(MemoryService, name), getattr(BaseMemoryService, name)
        assert _signature(ours) == _signature(theirs), name
    assert {"content", "author", "timestamp", "id", "custom_metadata"} <= set(
        MemoryEntry.model_fields
    )
    assert set(SearchMemoryResponse.model_fields) == {"memories"}
    assert {"id", "app_name", "user_id", "events", "state"} <= set(Session.model_fields)
    event = _kinds()[3]
    assert Event.model_validate(event.model_dump(mode="json", exclude_none=True)) == event
    assert "memory_service" in inspect.signature(Runner.__init__).parameters
    assert issubclass(StaleSessionError, Exception)  # what persistent session services raise
    # why there is no session service (docs/frameworks/adk.md): its abstract methods, a
    # listing of every user's sessions, and state in app-, user- and temp- scopes
    assert sorted(BaseSessionService.__abstractmethods__) == [
        "create_session",
        "delete_session",
        "get_session",
        "list_sessions",
    ]
    listing = inspect.signature(BaseSessionService.list_sessions).parameters["user_id"]
    assert listing.default is None
    assert (State.APP_PREFIX, State.USER_PREFIX, State.TEMP_PREFIX) == ("app:", "user:", "temp:")
    assert isinstance(MemoryService(users.memory), BaseMemoryService)
