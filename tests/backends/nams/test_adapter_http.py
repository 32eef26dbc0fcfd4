"""The NAMS adapter against the real server over real sockets (uvicorn on 127.0.0.1):
paging, clamping, chunking, retries, faults, keys and workspaces."""

from __future__ import annotations

import logging
import socket
import time
import warnings
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest

from memory_core import (
    AuthenticationError,
    CapabilityWarning,
    ExtractionStatus,
    MemoryBackend,
    Message,
    NotFoundError,
    NotSupportedError,
    RateLimitedError,
    TransportError,
    open_backend,
)
from memory_core_dev.nams_server import (
    API_KEY,
    BOUND_KEY,
    NamsTestServer,
    start_nams_server,
)

pytestmark = [pytest.mark.nams, pytest.mark.anyio]

FAST: dict[str, Any] = {"backoff": 0.01, "max_backoff": 0.05}


@pytest.fixture
async def memory(nams_server: NamsTestServer, workspace: str) -> AsyncIterator[MemoryBackend]:
    """A connected adapter in a fresh workspace, with quick backoff."""
    async with nams_server.backend(workspace, **FAST) as backend:
        yield backend


async def new_conversation(memory: MemoryBackend, **kwargs: Any) -> str:
    return str((await memory.create_conversation("my-session", **kwargs)).id)


async def eventually(check: Callable[[], bool], timeout: float = 15.0) -> None:
    """Wait until the server has recorded requests still in flight when the client gave
    up (a record is written when the response starts, or when a connection is dropped)."""
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.02)


def requests(server: NamsTestServer, mark: int, method: str, suffix: str = "") -> list[Any]:
    """Requests since ``mark`` with this method whose path ends with ``suffix``."""
    return [
        r
        for r in server.since(mark)
        if r.method == method and (not suffix or r.path.endswith(suffix))
    ]


# ----------------------------------------------------------------- the four quirks


async def test_list_1000_conversations_is_5_requests_on_one_connection(
    nams_server: NamsTestServer, workspace: str
) -> None:
    with nams_server.client(workspace) as c:
        made = {c.post("/conversations", json={}).json()["id"] for _ in range(1000)}
    async with nams_server.backend(workspace) as memory:
        before = len(nams_server.records(workspace))
        listed = await memory.list_conversations(limit=1000)
    after = nams_server.records(workspace)[before:]
    lists = [r for r in after if r.method == "GET" and r.path == "/v1/conversations"]
    assert len(lists) == 5
    assert len(after) == 5
    assert len({r.client for r in lists}) == 1, "the pages must share one keep-alive connection"
    assert len(listed) == 1000
    assert {str(c.id) for c in listed} == made
    stamps = [c.updated_at or c.created_at for c in listed]
    assert stamps == sorted(stamps, reverse=True)


async def test_default_listing_is_100(memory: MemoryBackend, nams_server: NamsTestServer) -> None:
    workspace = memory.store.workspace_id
    assert workspace is not None
    with nams_server.client(workspace) as c:
        for _ in range(101):
            c.post("/conversations", json={})
    assert len(await memory.list_conversations()) == 100
    assert len(await memory.list_conversations(limit=7)) == 7


async def test_250_messages_read_newest_200_in_order_with_one_warning(
    memory: MemoryBackend,
) -> None:
    cid = await new_conversation(memory)
    await memory.bulk_add_messages(cid, [{"role": "user", "content": f"m{i}"} for i in range(250)])
    newest = [f"m{i}" for i in range(50, 250)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plain = await memory.get_conversation(cid)
    assert [m.content for m in plain.messages] == newest
    assert not [w for w in caught if issubclass(w.category, CapabilityWarning)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clamped = await memory.get_conversation(cid, limit=250)
    assert [m.content for m in clamped.messages] == newest
    assert len([w for w in caught if issubclass(w.category, CapabilityWarning)]) == 1
    stamps = [m.created_at for m in clamped.messages]
    assert stamps == sorted(stamps)
    few = await memory.get_conversation(cid, limit=3)
    assert [m.content for m in few.messages] == ["m247", "m248", "m249"]


async def test_250_message_bulk_is_3_ordered_requests(
    memory: MemoryBackend, nams_server: NamsTestServer
) -> None:
    cid = await new_conversation(memory)
    workspace = memory.store.workspace_id
    assert workspace is not None
    mark = nams_server.mark()
    sizes: list[int] = []
    stored = await memory.bulk_add_messages(
        cid,
        [{"role": "assistant", "content": f"b{i}"} for i in range(250)],
        on_batch_complete=lambda n, batch: sizes.append(len(batch)),
    )
    assert len(requests(nams_server, mark, "POST", "/messages/bulk")) == 3
    assert sizes == [100, 100, 50]
    assert [m.content for m in stored] == [f"b{i}" for i in range(250)]
    with nams_server.client(workspace) as c:
        page = c.get(f"/conversations/{cid}/messages", params={"limit": 200}).json()["messages"]
    assert [m["content"] for m in reversed(page)] == [f"b{i}" for i in range(50, 250)]
    assert await memory.bulk_add_messages(cid, []) == []
    assert len(requests(nams_server, mark, "POST", "/messages/bulk")) == 3


async def test_create_sends_only_user_and_metadata(memory: MemoryBackend) -> None:
    conversation = await memory.create_conversation(
        "local-name", metadata={"team": "x", "n": [1, 2]}, user_identifier="alice"
    )
    # Server-id mode: the returned session_id is the handle to use (the server id), not
    # the name passed, which the service never sees.
    assert conversation.session_id == str(conversation.id)
    read = await memory.get_conversation(str(conversation.id))
    assert read.id == conversation.id
    assert read.metadata == {"team": "x", "n": [1, 2]}
    assert read.user_identifier == "alice"
    mine = await memory.list_conversations(user_identifier="alice")
    assert [c.id for c in mine] == [conversation.id]
    assert await memory.list_conversations(user_identifier="nobody") == []
    with pytest.warns(CapabilityWarning, match="title"):
        await memory.create_conversation("x", title="a title")


async def test_aliases_and_not_supported(memory: MemoryBackend) -> None:
    cid = await new_conversation(memory)
    await memory.add_message(conversation_id=cid, role="user", content="via alias")
    conversation = await memory.get_conversation(session_id=cid, conversation_id=None)
    assert [m.content for m in conversation.messages] == ["via alias"]
    with pytest.raises(TypeError):
        await memory.add_message(role="user", content="x")
    with pytest.raises(ValueError):
        await memory.search_messages("x")
    with pytest.raises(NotSupportedError):
        await memory.list_sessions()
    with pytest.raises(NotSupportedError):
        await memory.delete_message(conversation.messages[0].id)
    with pytest.raises(NotSupportedError):
        await memory.get_conversation_summary(cid)


# ----------------------------------------------------------------- reads and writes


async def test_add_search_context_since(memory: MemoryBackend) -> None:
    cid = await new_conversation(memory)
    first = await memory.add_message(cid, "user", "the zebra fact")
    assert isinstance(first, Message) and first.session_id == cid
    await memory.add_message(cid, "assistant", "noted")
    hits = await memory.search_messages("zebra", session_id=cid)
    assert [h.content for h in hits] == ["the zebra fact"]
    assert hits[0].score is not None and hits[0].score > 0
    with pytest.warns(CapabilityWarning, match="threshold"):
        await memory.search_messages("zebra", session_id=cid, threshold=0.5)
    context = await memory.get_context(session_id=cid, max_messages=1)
    assert context == "## Recent messages\n[assistant] noted"
    with_query = await memory.get_context("zebra", session_id=cid, max_messages=1)
    assert "## Relevant messages\n[" in with_query
    assert "] [user] the zebra fact (score " in with_query
    stored = await memory.get_conversation(cid)
    later = await memory.get_conversation(cid, since=stored.messages[0].created_at)
    assert [m.content for m in later.messages] == ["noted"]


async def test_missing_conversation_is_not_found(memory: MemoryBackend) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    with pytest.raises(NotFoundError):
        await memory.get_conversation(missing)
    with pytest.raises(NotFoundError):
        await memory.add_message(missing, "user", "x")
    with pytest.raises(NotFoundError):
        await memory.get_conversation("not a server id / at all")
    assert await memory.clear_session(missing) is False


async def test_clear_session_is_idempotent(memory: MemoryBackend) -> None:
    cid = await new_conversation(memory)
    await memory.add_message(cid, "user", "x")
    assert await memory.clear_session(cid) is True
    assert await memory.clear_session(cid) is False
    with pytest.raises(NotFoundError):
        await memory.get_conversation(cid)


async def test_extraction_entities(memory: MemoryBackend) -> None:
    cid = await new_conversation(memory)
    await memory.bulk_add_messages(cid, [{"role": "user", "content": "a"}] * 2)
    status = await memory.get_extraction_status(cid)
    assert isinstance(status, ExtractionStatus)
    assert status.summary == {"completed": 2} and status.is_complete
    assert await memory.wait_for_extraction(cid, timeout=1) is True
    assert await memory.get_observations(cid) == []
    assert await memory.get_reflections(cid) == []
    ada = await memory.add_entity("Ada", "PERSON", description="pioneer")
    assert ada.type == "PERSON" and ada.description == "pioneer"
    again = await memory.add_entity("ada", "person")
    assert again.id == ada.id
    with pytest.warns(CapabilityWarning, match="OBJECT is kept as CUSTOM"):
        thing = await memory.add_entity("Engine", "OBJECT")
    assert thing.type == "CUSTOM"
    assert [e.id for e in await memory.find_entities("ADA")] == [ada.id]
    assert [e.id for e in await memory.find_entities("engine", type="OBJECT")] == [thing.id]


async def test_observations_and_reflections_with_a_summarizer() -> None:
    def summarize(messages: list[Message]) -> str:
        return "summary of " + ",".join(m.content for m in messages)

    with start_nams_server(summarizer=summarize, observation_window=3) as server:
        async with server.backend() as memory:
            cid = await new_conversation(memory)
            await memory.bulk_add_messages(
                cid, [{"role": "user", "content": f"m{i}"} for i in range(7)]
            )
            observations = await memory.get_observations(cid)
            reflections = await memory.get_reflections(cid)
            context = await memory.get_context(session_id=cid, max_messages=1)
    assert [o["content"] for o in observations] == ["summary of m0,m1,m2", "summary of m3,m4,m5"]
    assert all({"id", "conversationId", "windowStart", "windowEnd"} <= set(o) for o in observations)
    assert [r["content"] for r in reflections] == ["summary of m0,m1,m2,m3,m4,m5"]
    assert context == (
        "## Reflections\n- summary of m0,m1,m2,m3,m4,m5\n\n"
        "## Observations\n- summary of m0,m1,m2\n- summary of m3,m4,m5\n\n"
        "## Recent messages\n[user] m6"
    )


async def test_strict_refuses_dropped_arguments(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace, strict=True) as memory:
        cid = await new_conversation(memory)
        with pytest.raises(NotSupportedError):
            await memory.add_message(cid, "user", "x", metadata={"a": 1})
        with pytest.raises(NotSupportedError):
            await memory.create_conversation("x", title="t")
        with pytest.raises(NotSupportedError, match="user_identifier"):
            await memory.add_message(cid, "user", "x", user_identifier="alice")
        assert (await memory.get_conversation(cid)).messages == []


async def test_user_identifier_is_kept_at_create_and_warned_about_elsewhere(
    memory: MemoryBackend,
) -> None:
    cid = await new_conversation(memory, user_identifier="alice")
    with pytest.warns(CapabilityWarning, match="user_identifier"):
        await memory.add_message(cid, "user", "hello", user_identifier="alice")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per method: the second call is silent
        await memory.add_message(cid, "user", "again", user_identifier="alice")
    read = await memory.get_conversation(cid)
    assert read.user_identifier == "alice"
    assert [m.content for m in read.messages] == ["hello", "again"]


# ----------------------------------------------------------------- retries and faults


async def test_429_then_success_waits_retry_after(
    memory: MemoryBackend, nams_server: NamsTestServer
) -> None:
    mark = nams_server.mark()
    nams_server.faults.set(rate_limit=1, retry_after=1)
    started = time.monotonic()
    assert await memory.list_conversations() == []
    waited = time.monotonic() - started
    statuses = [r.status for r in requests(nams_server, mark, "GET", "/conversations")]
    assert statuses == [429, 200]
    assert waited >= 1.0, f"the adapter waited {waited:.3f}s, less than Retry-After"


async def test_429_exhausted_raises_with_last_retry_after(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace, max_retries=2, **FAST) as memory:
        mark = nams_server.mark()
        nams_server.faults.set(rate_limit=5, retry_after=0.05)
        with pytest.raises(RateLimitedError) as caught:
            await memory.list_conversations()
    assert caught.value.retry_after == pytest.approx(0.05)
    assert [r.status for r in nams_server.since(mark)] == [429, 429, 429]


async def test_retry_after_above_the_cap_is_not_waited_for(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace, max_retry_after=1) as memory:
        mark = nams_server.mark()
        nams_server.faults.set(rate_limit=1, retry_after=120)
        with pytest.raises(RateLimitedError) as caught:
            await memory.list_conversations()
    assert caught.value.retry_after == 120
    assert [r.status for r in nams_server.since(mark)] == [429]


async def test_503_burst_recovers(memory: MemoryBackend, nams_server: NamsTestServer) -> None:
    cid = await new_conversation(memory)
    mark = nams_server.mark()
    nams_server.faults.set(unavailable=3)
    stored = await memory.add_message(cid, "user", "after the burst")
    posts = requests(nams_server, mark, "POST", "/messages")
    assert [r.status for r in posts] == [503, 503, 503, 201]
    conversation = await memory.get_conversation(cid)
    assert [m.id for m in conversation.messages] == [stored.id]


async def test_503_exhausted_is_transport_error(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace, max_retries=1, **FAST) as memory:
        nams_server.faults.set(unavailable=2, unavailable_retry_after=0.01)
        with pytest.raises(TransportError):
            await memory.list_conversations()


async def test_read_timeout_on_post_does_not_duplicate(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace, timeout=0.3, **FAST) as memory:
        cid = await new_conversation(memory)
        mark = nams_server.mark()
        nams_server.faults.set(latency=1.0)
        with pytest.raises(TransportError, match="not resent"):
            await memory.add_message(cid, "user", "only once")
        nams_server.faults.reset()
        await eventually(lambda: bool(requests(nams_server, mark, "POST", "/messages")))
        assert len(requests(nams_server, mark, "POST", "/messages")) == 1
        conversation = await memory.get_conversation(cid)
    assert [m.content for m in conversation.messages] == ["only once"]


async def test_read_timeout_on_get_is_retried(nams_server: NamsTestServer, workspace: str) -> None:
    async with nams_server.backend(workspace, timeout=0.3, **FAST) as memory:
        cid = await new_conversation(memory)
        mark = nams_server.mark()
        nams_server.faults.set(latency=1.0)
        try:
            with pytest.raises(TransportError):
                await memory.get_conversation(cid)
        finally:
            nams_server.faults.reset()
    await eventually(lambda: len(requests(nams_server, mark, "GET", cid)) >= 4)
    gets = requests(nams_server, mark, "GET", cid)
    assert len(gets) == 4, "a GET that timed out is retried (1 + max_retries attempts)"


async def test_a_read_sends_its_header_and_messages_requests_at_once(
    memory: MemoryBackend, nams_server: NamsTestServer
) -> None:
    cid = await new_conversation(memory)
    await memory.add_message(cid, "user", "x")
    mark = nams_server.mark()
    nams_server.faults.set(latency=0.2)  # each response waits: the two are in flight at once
    try:
        conversation = await memory.get_conversation(cid)
    finally:
        nams_server.faults.reset()
    assert [m.content for m in conversation.messages] == ["x"]
    await eventually(lambda: len(requests(nams_server, mark, "GET")) >= 2)
    header, messages = (
        requests(nams_server, mark, "GET", cid),
        requests(nams_server, mark, "GET", "/messages"),
    )
    assert len(header) == len(messages) == 1
    # one after the other, the second would reuse the first's connection
    assert header[0].client != messages[0].client


async def test_a_missing_conversation_is_named_by_its_header_request(
    memory: MemoryBackend,
) -> None:
    with pytest.raises(NotFoundError):
        await memory.get_conversation(conversation_id="00000000-0000-4000-8000-000000000000")


async def test_dropped_connection_is_retried_for_reads(
    memory: MemoryBackend, nams_server: NamsTestServer
) -> None:
    cid = await new_conversation(memory)
    await memory.add_message(cid, "user", "x")
    mark = nams_server.mark()
    nams_server.faults.set(drop=1)
    conversation = await memory.get_conversation(cid)
    assert [m.content for m in conversation.messages] == ["x"]
    await eventually(lambda: len(nams_server.since(mark)) >= 3)
    assert sorted(map(str, (r.status for r in nams_server.since(mark)))) == [
        "200",
        "200",
        "None",
    ]


@pytest.mark.parametrize(("mode", "stored"), [("before", 0), ("after", 1)])
async def test_dropped_connection_on_post_is_never_resent(
    memory: MemoryBackend, nams_server: NamsTestServer, mode: str, stored: int
) -> None:
    cid = await new_conversation(memory)
    mark = nams_server.mark()
    nams_server.faults.set(drop=1, drop_mode=mode)
    with pytest.raises(TransportError, match="may have reached the server") as info:
        await memory.add_message(cid, "user", "maybe stored")
    assert info.value.maybe_applied is True
    await eventually(lambda: bool(requests(nams_server, mark, "POST", "/messages")))
    assert len(requests(nams_server, mark, "POST", "/messages")) == 1
    conversation = await memory.get_conversation(cid)
    assert len(conversation.messages) == stored


async def test_connection_refused_is_transport_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    memory = open_backend(
        f"nams+http://127.0.0.1:{port}/v1", api_key="k", max_retries=1, trust_env=False, **FAST
    )
    with pytest.raises(TransportError):
        await memory.connect()
    assert memory.store._http._client is None  # the failed probe closed the pool


# ----------------------------------------------------------------- keys and workspaces


async def test_wrong_or_missing_key_is_authentication_error(
    nams_server: NamsTestServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for key in ("wrong-secret-value", None):
        options: dict[str, Any] = {"api_key": key} if key else {}
        memory = open_backend(nams_server.url, trust_env=False, **options)
        with pytest.raises(AuthenticationError) as caught:
            await memory.connect()
        assert "wrong-secret-value" not in str(caught.value)
        assert memory.store._http._client is None
    assert "wrong-secret-value" not in caught.value.args[0]
    assert "wrong-secret-value" not in caplog.text


async def test_bound_key_in_another_workspace_is_authentication_error(
    nams_server: NamsTestServer,
) -> None:
    memory = open_backend(
        nams_server.url, api_key=BOUND_KEY, workspace_id="not-mine", trust_env=False
    )
    with pytest.raises(AuthenticationError):
        await memory.connect()


async def test_other_workspace_conversation_is_not_found(nams_server: NamsTestServer) -> None:
    async with nams_server.backend(NamsTestServer.workspace("a")) as a:
        cid = await new_conversation(a)
        await a.add_message(cid, "user", "private")
        async with nams_server.backend(NamsTestServer.workspace("b")) as b:
            with pytest.raises(NotFoundError):
                await b.get_conversation(cid)
            with pytest.raises(NotFoundError):
                await b.add_message(cid, "user", "intrusion")
            with pytest.raises(NotFoundError):
                await b.search_messages("private", session_id=cid)
            assert await b.clear_session(cid) is False
            assert await b.list_conversations() == []
        assert [m.content for m in (await a.get_conversation(cid)).messages] == ["private"]


async def test_secrets_stay_out_of_repr_and_describe(nams_server: NamsTestServer) -> None:
    memory = nams_server.backend("ws-x", api_key="very-secret-key")
    for text in (repr(memory), memory.describe(), repr(memory.store._http)):
        assert "very-secret-key" not in text
    assert "ws-x" in memory.describe()
    assert API_KEY not in repr(nams_server.backend())


# ----------------------------------------------------------------- trio


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_runs_under_trio(nams_server: NamsTestServer, workspace: str) -> None:
    nams_server.faults.set(rate_limit=1, retry_after=0.01)
    async with nams_server.backend(workspace, **FAST) as memory:
        cid = await new_conversation(memory)
        await memory.bulk_add_messages(cid, [{"role": "user", "content": "t"}] * 3)
        assert len((await memory.get_conversation(cid)).messages) == 3
        assert await memory.search_messages("t", session_id=cid)
