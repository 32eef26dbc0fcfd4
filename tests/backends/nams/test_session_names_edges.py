"""Edges of portable session names on NAMS (``sessions.py``): which conversation wins a
name (createdAt with any offset, or none), what a race loser does with its own
conversation, what the name and id caches and the index file save (read from the
server's request record), and which rows of the index file are trusted.

The mocked service (respx) stands in where the real server cannot produce the case
(timestamps, a loser's conversation that already holds a message, a 502); everything
else runs against the real server.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import closing
from pathlib import Path
from typing import Any
from uuid import UUID

import anyio
import httpx
import pytest
import respx
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memory_core import MemoryBackend, NotFoundError, open_backend
from memory_core.backends.nams.sessions import INDEX_TABLE, SESSION_KEY, portable_id
from memory_core.telemetry import Telemetry
from memory_core_dev.nams_server import NamsTestServer

from .mocked import FAST, conversation, message, mocked_backend

pytestmark = pytest.mark.anyio

LIST = "/v1/conversations"
LOGGER = "memory_core.backends.nams"
MINE = "10000000-0000-4000-8000-000000000001"
RIVAL = "f0000000-0000-4000-8000-000000000002"

# ----------------------------------------------------------------- mocked service


def named(cid: str, created: str | None, name: str = "chat") -> dict[str, Any]:
    """A listed conversation carrying ``name`` (no user), created at ``created``."""
    extra = {} if created is None else {"createdAt": created}
    return conversation(cid, metadata={SESSION_KEY: name}, **extra)


def page(*conversations: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, json={"conversations": list(conversations), "next_cursor": None})


@pytest.fixture
async def mocked(api: respx.MockRouter) -> AsyncIterator[MemoryBackend]:
    """A portable-mode backend on the mocked service."""
    async with mocked_backend(session_names="portable") as backend:
        yield backend


async def test_oldest_by_created_at_wins_whatever_the_offset_or_its_absence(
    mocked: MemoryBackend, api: respx.MockRouter
) -> None:
    # Oldest first: no offset (read as UTC), +02:00, Z, none at all. Ids run the other way,
    # so a rule that fell back to the id (or failed to compare) would pick another.
    candidates = {
        "f0000000-0000-4000-8000-000000000000": "2025-01-01T00:00:00",
        "c0000000-0000-4000-8000-000000000000": "2025-01-01T02:30:00+02:00",
        "a0000000-0000-4000-8000-000000000000": "2025-01-01T00:45:00Z",
        "00000000-0000-4000-8000-000000000001": None,
    }
    api.get("/conversations", params={"limit": "200"}).mock(
        return_value=page(*(named(cid, created) for cid, created in candidates.items()))
    )
    reads = {
        cid: api.get(f"/conversations/{cid}/messages").respond(json={"messages": []})
        for cid in candidates
    }
    await mocked.get_conversation("chat")
    assert [cid for cid, route in reads.items() if route.called] == [next(iter(candidates))]


def race(api: respx.MockRouter) -> dict[str, respx.Route]:
    """The first write to "chat" creates MINE, then finds the older RIVAL: MINE loses."""
    mine = named(MINE, "2025-01-01T00:00:02Z")
    api.get("/conversations", params={"limit": "200"}).mock(
        side_effect=[page(), page(mine, named(RIVAL, "2025-01-01T00:00:01Z"))]
    )
    created = {"id": "m1", "conversationId": RIVAL, "role": "user", "content": "hi"}
    return {
        "create": api.post("/conversations").respond(201, json=mine),
        "check": api.get(f"/conversations/{MINE}/messages"),
        "delete": api.delete(f"/conversations/{MINE}"),
        "write": api.post(f"/conversations/{RIVAL}/messages").respond(201, json=created),
    }


async def test_a_race_loser_keeps_its_conversation_once_it_holds_a_message(
    mocked: MemoryBackend, api: respx.MockRouter
) -> None:
    routes = race(api)
    routes["check"].respond(json={"messages": [message(1, MINE)]})
    routes["delete"].respond(204)
    stored = await mocked.add_message("chat", "user", "hi")
    assert stored.conversation_id == portable_id("chat", None)
    assert routes["check"].call_count == 1 and routes["write"].call_count == 1
    assert not routes["delete"].called


async def test_a_race_losers_check_and_delete_are_retried_like_any_get_and_delete(
    mocked: MemoryBackend, api: respx.MockRouter
) -> None:
    routes = race(api)
    routes["check"].mock(side_effect=[httpx.Response(502), page()])
    routes["delete"].mock(side_effect=[httpx.Response(502), httpx.Response(204)])
    await mocked.add_message("chat", "user", "hi")
    assert routes["check"].call_count == 2
    assert routes["delete"].call_count == 2
    assert routes["write"].call_count == 1


async def test_a_race_losers_requests_are_spans_named_by_method_with_an_operation(
    api: respx.MockRouter,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    routes = race(api)
    routes["check"].mock(return_value=page())
    routes["delete"].respond(204)
    async with open_backend(
        "nams+https://nams.test/v1",
        api_key="k",
        workspace_id="w",
        trust_env=False,
        telemetry=Telemetry(tracer_provider=provider),
        **FAST,
    ) as backend:
        await backend.add_message("chat", "user", "hi")
    provider.shutdown()
    http = [s for s in exporter.get_finished_spans() if "http.request.method" in s.attributes]
    # lookup, create, rivals, the loser's check and delete, the write
    assert [s.name for s in http] == ["GET", "POST", "GET", "GET", "DELETE", "POST"]
    assert all(s.attributes["http.request.method"] == s.name for s in http)
    operations = [s.attributes.get("memory_core.nams.operation") for s in http]
    assert operations == [
        "resolve_session",
        "create_conversation",
        "resolve_session",
        "resolve_session",
        "resolve_session",
        "add_message",
    ]


async def test_a_name_that_is_a_listed_server_id_is_that_conversation_not_the_oldest(
    mocked: MemoryBackend, api: respx.MockRouter
) -> None:
    # Server ids the service issues need not be UUIDs (then there is no lookup by id): a
    # name equal to one is that conversation, as in server-id mode, even where an older
    # conversation carries the same text as its name.
    older = named("c-older", "2025-01-01T00:00:00Z", name="c-given")
    given = conversation("c-given", createdAt="2025-06-01T00:00:00Z")
    api.get("/conversations", params={"limit": "200"}).mock(return_value=page(older, given))
    reads = {
        cid: api.get(f"/conversations/{cid}/messages").respond(json={"messages": []})
        for cid in ("c-older", "c-given")
    }
    await mocked.get_conversation("c-given")
    assert [cid for cid, route in reads.items() if route.called] == ["c-given"]


async def test_a_remembered_name_does_not_wait_for_another_names_lookup(
    mocked: MemoryBackend, api: respx.MockRouter
) -> None:
    gate = anyio.Event()
    listings: list[str] = []

    async def listing(request: httpx.Request) -> httpx.Response:
        listings.append(str(request.url))
        if len(listings) == 1:
            return page(named(MINE, None, name="a"))
        await gate.wait()  # the lookup of "b" hangs until the end
        return page()

    api.get("/conversations", params={"limit": "200"}).mock(side_effect=listing)
    api.get(f"/conversations/{MINE}").respond(json=named(MINE, None, name="a"))
    api.get(f"/conversations/{MINE}/messages").respond(json={"messages": []})
    await mocked.get_conversation("a")  # remembered from now on
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(mocked.get_conversation, "b")
        try:
            with anyio.fail_after(5):
                while len(listings) < 2:
                    await anyio.sleep(0.01)
                read = await mocked.get_conversation("a")
        finally:
            gate.set()
    assert read.session_id == "a"


async def test_an_unnamed_conversation_reports_the_given_id_when_messages_omit_it(
    mocked: MemoryBackend, api: respx.MockRouter
) -> None:
    cid = "30000000-0000-4000-8000-000000000003"
    api.get(f"/conversations/{cid}").respond(json=conversation(cid))
    bare = {k: v for k, v in message(1, cid).items() if k != "conversationId"}
    api.get(f"/conversations/{cid}/messages").respond(json={"messages": [bare]})
    for _ in ("cold", "warm"):
        read = await mocked.get_conversation(conversation_id=UUID(cid))
        assert [m.conversation_id for m in read.messages] == [UUID(cid)]


async def test_every_listing_for_a_users_name_is_filtered_by_that_user(
    mocked: MemoryBackend, api: respx.MockRouter
) -> None:
    # The lookup and the listing after the create (to converge) both ask for alice's only.
    mine = conversation(MINE, userId="alice", metadata={SESSION_KEY: "chat"})
    listings = api.get("/conversations", params={"limit": "200"}).mock(
        side_effect=[page(), page(mine)]
    )
    api.post("/conversations").respond(201, json=mine)
    created = {"id": "m1", "conversationId": MINE, "role": "user", "content": "hi"}
    api.post(f"/conversations/{MINE}/messages").respond(201, json=created)
    await mocked.add_message("chat", "user", "hi", user_identifier="alice")
    assert listings.call_count == 2
    assert [dict(c.request.url.params) for c in listings.calls] == [
        {"limit": "200", "userId": "alice"}
    ] * 2


async def test_a_name_that_is_not_text_is_no_name(
    mocked: MemoryBackend, api: respx.MockRouter
) -> None:
    odd = conversation(RIVAL, metadata={SESSION_KEY: 7, "k": "v"})
    api.get("/conversations", params={"limit": "100"}).mock(return_value=page(odd))
    [listed] = await mocked.list_conversations()
    assert (listed.id, listed.session_id) == (UUID(RIVAL), RIVAL)
    assert listed.metadata == {"k": "v"}


def alias_lookup(api: respx.MockRouter, *listed: dict[str, Any]) -> dict[str, respx.Route]:
    """The service for a read of ``str(portable_id("chat", None))``: not a server id
    (404), then ``listed``; the header and message routes of each listed conversation."""
    pid = str(portable_id("chat", None))
    api.get(f"/conversations/{pid}").respond(404)
    api.get("/conversations", params={"limit": "200"}).mock(return_value=page(*listed))
    routes: dict[str, respx.Route] = {}
    for c in listed:
        routes[c["id"]] = api.get(f"/conversations/{c['id']}/messages").respond(
            json={"messages": []}
        )
        routes[f"header {c['id']}"] = api.get(f"/conversations/{c['id']}").respond(json=c)
    return routes


async def test_a_conversation_listed_but_gone_twice_is_not_found(
    mocked: MemoryBackend, api: respx.MockRouter
) -> None:
    # A listing that still shows a deleted conversation (a service's listing may lag):
    # looked up once more after the 404, then NotFoundError naming the session.
    listings = api.get("/conversations", params={"limit": "200"}).mock(
        return_value=page(named(MINE, None))
    )
    reads = api.get(f"/conversations/{MINE}/messages").respond(404)
    with pytest.raises(NotFoundError) as info:
        await mocked.get_conversation("chat")
    assert info.value.argument == "session_id"
    assert listings.call_count == 2 and reads.call_count == 2


async def test_the_id_callers_see_wins_over_a_name_spelled_like_it(
    mocked: MemoryBackend, api: respx.MockRouter
) -> None:
    # RIVAL, the older, is named with the very text of chat's Conversation.id.
    pid = portable_id("chat", None)
    routes = alias_lookup(
        api,
        named(RIVAL, "2025-01-01T00:00:00Z", name=str(pid)),
        named(MINE, "2025-06-01T00:00:00Z", name="chat"),
    )
    read = await mocked.get_conversation(str(pid))
    assert (read.id, read.session_id) == (pid, "chat")
    assert routes[MINE].called and not routes[RIVAL].called


async def test_the_id_callers_see_of_a_name_held_twice_is_the_oldests(
    mocked: MemoryBackend, api: respx.MockRouter
) -> None:
    # Two conversations carry "chat" (a race loser that kept a message); ids run the
    # other way round from their age. The lookup fetched the header: no second read.
    routes = alias_lookup(
        api,
        named(MINE, "2025-01-01T00:00:01Z"),
        named(RIVAL, "2025-01-01T00:00:00Z"),
    )
    read = await mocked.get_conversation(str(portable_id("chat", None)))
    assert read.session_id == "chat"
    assert routes[RIVAL].called and not routes[MINE].called
    assert not routes[f"header {RIVAL}"].called


# ----------------------------------------------------------------- real server


def portable(server: NamsTestServer, workspace: str, **options: Any) -> MemoryBackend:
    return server.backend(workspace, session_names="portable", **options)


def requests_since(server: NamsTestServer, workspace: str, mark: int) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in server.since(mark) if r.workspace == workspace]


def list_requests(server: NamsTestServer, workspace: str, mark: int) -> int:
    return requests_since(server, workspace, mark).count(("GET", LIST))


def server_id(server: NamsTestServer, workspace: str, name: str) -> str:
    """The server id of the one conversation of the workspace carrying ``name``."""
    with server.client(workspace) as c:
        listed = c.get("/conversations", params={"limit": 200}).json()["conversations"]
    [found] = [x["id"] for x in listed if x["metadata"].get(SESSION_KEY) == name]
    return str(found)


async def written(server: NamsTestServer, workspace: str) -> str:
    """Write "one" to the name "chat" (no user) from another backend object; the server id
    of its conversation."""
    async with portable(server, workspace) as writer:
        await writer.add_message("chat", "user", "one")
    return server_id(server, workspace, "chat")


async def test_a_cold_read_by_name_costs_one_listing_and_the_message_read(
    nams_server: NamsTestServer, workspace: str
) -> None:
    sid = await written(nams_server, workspace)
    async with portable(nams_server, workspace) as fresh:
        mark = nams_server.mark()
        read = await fresh.get_conversation("chat")
    assert [m.content for m in read.messages] == ["one"]
    assert requests_since(nams_server, workspace, mark) == [
        ("GET", LIST),
        ("GET", f"{LIST}/{sid}/messages"),
    ]


async def test_a_remembered_name_reports_its_portable_id(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with portable(nams_server, workspace) as memory:
        first = await memory.add_message("chat", "user", "one")
        second = await memory.add_message("chat", "user", "two")  # from the cache
        read = await memory.get_conversation("chat")
    pid = portable_id("chat", None)
    assert first.conversation_id == second.conversation_id == read.id == pid
    assert [(m.conversation_id, m.session_id) for m in read.messages] == [(pid, "chat")] * 2


async def test_tasks_writing_to_a_new_name_at_once_create_it_once_and_report_its_id(
    nams_server: NamsTestServer, workspace: str
) -> None:
    stored: list[Any] = []

    async with portable(nams_server, workspace) as memory:

        async def write(text: str) -> None:
            stored.append(await memory.add_message("chat", "user", text))

        mark = nams_server.mark()
        async with anyio.create_task_group() as tasks:
            for text in ("one", "two", "three"):
                tasks.start_soon(write, text)
    sent = requests_since(nams_server, workspace, mark)
    assert sent.count(("POST", LIST)) == 1
    # The lookup and the listing after the create: the other tasks, once they have the
    # lock, find the name remembered and look nothing up.
    assert sent.count(("GET", LIST)) == 2
    assert [m.conversation_id for m in stored] == [portable_id("chat", None)] * 3


async def test_no_users_session_and_a_users_of_the_same_name_are_two_whatever_the_user(
    nams_server: NamsTestServer, workspace: str
) -> None:
    users = (None, "XXXX", "None", "none")  # names a stand-in for "no user" could take
    async with portable(nams_server, workspace) as memory:
        for user in users:
            await memory.add_message("chat", "user", f"by {user}", user_identifier=user)
        for user in users:  # remembered
            read = await memory.get_conversation("chat", user_identifier=user)
            assert [m.content for m in read.messages] == [f"by {user}"]


async def test_a_users_session_reports_the_users_portable_id_however_it_is_named(
    nams_server: NamsTestServer, workspace: str
) -> None:
    pid = portable_id("chat", "alice")
    async with portable(nams_server, workspace) as writer:
        stored = await writer.add_message("chat", "user", "one", user_identifier="alice")
    assert stored.conversation_id == pid
    async with portable(nams_server, workspace) as fresh:
        by_text = await fresh.get_conversation(str(pid), user_identifier="alice")
        assert (by_text.id, by_text.session_id) == (pid, "chat")
        assert [(m.conversation_id, m.session_id) for m in by_text.messages] == [(pid, "chat")]
    async with portable(nams_server, workspace) as fresh:
        by_id = await fresh.get_conversation(conversation_id=pid)
        assert (by_id.id, by_id.session_id) == (pid, "chat")
        assert [m.content for m in by_id.messages] == ["one"]


async def test_a_server_id_given_as_name_reports_the_name_also_when_warm(
    nams_server: NamsTestServer, workspace: str
) -> None:
    sid = await written(nams_server, workspace)
    async with portable(nams_server, workspace) as fresh:
        for _ in ("cold", "warm"):
            read = await fresh.get_conversation(sid)
            assert read.session_id == "chat"
            assert [m.session_id for m in read.messages] == ["chat"]


async def test_the_portable_id_of_the_name_none_finds_no_unnamed_conversation(
    nams_server: NamsTestServer, workspace: str
) -> None:
    with nams_server.client(workspace) as c:
        assert c.post("/conversations", json={}).status_code == 201
    async with portable(nams_server, workspace) as fresh:
        with pytest.raises(NotFoundError):
            await fresh.get_conversation(conversation_id=portable_id("None", None))


async def test_a_conversation_id_costs_no_lookup_after_a_write_by_name(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with portable(nams_server, workspace) as memory:
        stored = await memory.add_message("chat", "user", "one")
        sid = server_id(nams_server, workspace, "chat")
        mark = nams_server.mark()
        await memory.add_message(conversation_id=stored.conversation_id, role="user", content="2")
    assert requests_since(nams_server, workspace, mark) == [("POST", f"{LIST}/{sid}/messages")]


async def test_a_conversation_id_is_looked_up_once_whichever_id_it_is(
    nams_server: NamsTestServer, workspace: str
) -> None:
    sid = await written(nams_server, workspace)
    with nams_server.client(workspace) as c:
        unnamed = str(c.post("/conversations", json={}).json()["id"])
    pid = portable_id("chat", None)
    cold = {
        str(pid): [("GET", f"{LIST}/{pid}"), ("GET", LIST), ("GET", f"{LIST}/{sid}/messages")],
        sid: [("GET", f"{LIST}/{sid}"), ("GET", f"{LIST}/{sid}/messages")],
        unnamed: [("GET", f"{LIST}/{unnamed}"), ("GET", f"{LIST}/{unnamed}/messages")],
    }
    for handle, expected in cold.items():
        target = sid if handle != unnamed else unnamed
        async with portable(nams_server, workspace) as fresh:
            mark = nams_server.mark()
            await fresh.get_conversation(conversation_id=UUID(handle))
            assert requests_since(nams_server, workspace, mark) == expected, handle
            mark = nams_server.mark()
            await fresh.add_message(conversation_id=UUID(handle), role="user", content="w")
            assert requests_since(nams_server, workspace, mark) == [
                ("POST", f"{LIST}/{target}/messages")
            ], handle


async def test_a_remembered_id_is_looked_up_again_after_a_404(
    nams_server: NamsTestServer, workspace: str
) -> None:
    pid = portable_id("chat", None)
    async with portable(nams_server, workspace) as a, portable(nams_server, workspace) as b:
        await a.add_message("chat", "user", "old")
        assert await b.clear_session("chat") is True
        await b.add_message("chat", "user", "new")  # elsewhere: a new conversation, same id
        read = await a.get_conversation(conversation_id=pid)
    assert [m.content for m in read.messages] == ["new"]


async def test_a_users_name_deleted_elsewhere_is_looked_up_again(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with portable(nams_server, workspace) as a, portable(nams_server, workspace) as b:
        await a.add_message("chat", "user", "old", user_identifier="alice")
        assert await b.clear_session("chat", user_identifier="alice") is True
        await a.add_message("chat", "user", "new", user_identifier="alice")
        read = await a.get_conversation("chat", user_identifier="alice")
    assert [m.content for m in read.messages] == ["new"]


@pytest.mark.parametrize("by", ["session_id", "conversation_id"])
async def test_clearing_forgets_the_conversation_id(
    nams_server: NamsTestServer, workspace: str, by: str
) -> None:
    pid = portable_id("chat", None)
    handle: dict[str, Any] = {"session_id": "chat", "conversation_id": pid}
    async with portable(nams_server, workspace) as memory:
        await memory.add_message("chat", "user", "one")
        assert await memory.clear_session(**{by: handle[by]}) is True
        mark = nams_server.mark()
        with pytest.raises(NotFoundError):
            await memory.get_conversation(conversation_id=pid)
    assert requests_since(nams_server, workspace, mark) == [("GET", f"{LIST}/{pid}"), ("GET", LIST)]


async def test_a_users_cleared_name_is_created_anew_without_a_request_to_the_old_one(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with portable(nams_server, workspace) as memory:
        await memory.add_message("chat", "user", "one", user_identifier="alice")
        old = server_id(nams_server, workspace, "chat")
        assert await memory.clear_session("chat", user_identifier="alice") is True
        mark = nams_server.mark()
        await memory.add_message("chat", "user", "two", user_identifier="alice")
    sent = requests_since(nams_server, workspace, mark)
    assert sent[:2] == [("GET", LIST), ("POST", LIST)]
    assert not [path for _, path in sent if old in path]


async def test_tasks_reading_by_the_id_callers_see_at_once_all_report_the_name(
    nams_server: NamsTestServer, workspace: str
) -> None:
    pid = portable_id("chat", "alice")
    async with portable(nams_server, workspace) as writer:
        await writer.add_message("chat", "user", "one", user_identifier="alice")
    reads: list[Any] = []
    async with portable(nams_server, workspace) as fresh:

        async def read() -> None:
            reads.append(await fresh.get_conversation(str(pid), user_identifier="alice"))

        mark = nams_server.mark()
        async with anyio.create_task_group() as tasks:
            for _ in range(3):
                tasks.start_soon(read)
    # One lookup: the other tasks waited for it and found the id remembered.
    assert requests_since(nams_server, workspace, mark).count(("GET", LIST)) == 1
    assert [(r.id, r.session_id) for r in reads] == [(pid, "chat")] * 3
    assert [m.session_id for r in reads for m in r.messages] == ["chat"] * 3


# ----------------------------------------------------------------- the index file


@pytest.fixture
def index(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Path:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    return tmp_path / "names.db"


def index_warnings(caplog: pytest.LogCaptureFixture, index: Path) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == LOGGER and r.levelno == logging.WARNING and str(index) in r.getMessage()
    ]


async def test_an_index_in_folders_not_made_yet_is_made_and_shared(
    nams_server: NamsTestServer, workspace: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    nested = tmp_path / "a" / "b" / "names.db"
    async with portable(nams_server, workspace, session_index=nested) as first:
        await first.add_message("chat", "user", "one")
    assert nested.is_file()
    async with portable(nams_server, workspace, session_index=nested) as second:
        mark = nams_server.mark()
        assert [m.content for m in (await second.get_conversation("chat")).messages] == ["one"]
        assert list_requests(nams_server, workspace, mark) == 0
    assert index_warnings(caplog, nested) == []


FOREIGN_ROWS: dict[str, Callable[[str, str], tuple[Any, Any]]] = {
    "empty-server-id": lambda sid, pid: ("", pid),
    "blob-server-id": lambda sid, pid: (sid.encode(), pid),
    "blob-conversation-id": lambda sid, pid: (sid, pid.encode()),
}
"""(server_id, conversation_id) of an index row the adapter did not write, from the real
server id and portable id."""


@pytest.mark.parametrize("row", FOREIGN_ROWS.values(), ids=FOREIGN_ROWS.keys())
async def test_an_index_row_the_adapter_did_not_write_is_looked_up_and_replaced(
    nams_server: NamsTestServer,
    workspace: str,
    index: Path,
    caplog: pytest.LogCaptureFixture,
    row: Callable[[str, str], tuple[Any, Any]],
) -> None:
    async with portable(nams_server, workspace, session_index=index) as first:
        await first.add_message("chat", "user", "one")
    sid = server_id(nams_server, workspace, "chat")
    with closing(sqlite3.connect(index)) as db, db:
        update = f"UPDATE {INDEX_TABLE} SET server_id = ?, conversation_id = ?"
        changed = db.execute(update, row(sid, str(portable_id("chat", None)))).rowcount
    assert changed == 1
    async with portable(nams_server, workspace, session_index=index) as memory:
        mark = nams_server.mark()
        assert [m.content for m in (await memory.get_conversation("chat")).messages] == ["one"]
        assert requests_since(nams_server, workspace, mark) == [
            ("GET", LIST),
            ("GET", f"{LIST}/{sid}/messages"),
        ]
    async with portable(nams_server, workspace, session_index=index) as again:
        mark = nams_server.mark()
        await again.get_conversation("chat")
        assert list_requests(nams_server, workspace, mark) == 0  # the row was replaced
    assert index_warnings(caplog, index) == []


async def test_a_name_read_from_the_index_is_remembered_in_the_process(
    nams_server: NamsTestServer, workspace: str, index: Path
) -> None:
    async with portable(nams_server, workspace, session_index=index) as first:
        await first.add_message("chat", "user", "one")
    async with portable(nams_server, workspace, session_index=index) as second:
        mark = nams_server.mark()
        await second.get_conversation("chat")  # from the index file
        with closing(sqlite3.connect(index)) as db, db:
            assert db.execute(f"DELETE FROM {INDEX_TABLE}").rowcount == 1
        read = await second.get_conversation("chat")  # from memory: the row is gone
        assert [m.content for m in read.messages] == ["one"]
        assert list_requests(nams_server, workspace, mark) == 0


async def test_a_cleared_name_leaves_no_row_in_the_index(
    nams_server: NamsTestServer, workspace: str, index: Path
) -> None:
    async with portable(nams_server, workspace, session_index=index) as first:
        await first.add_message("chat", "user", "one")
        assert await first.clear_session("chat") is True
    async with portable(nams_server, workspace, session_index=index) as second:
        mark = nams_server.mark()
        assert (await second.get_conversation("chat")).messages == []
        assert requests_since(nams_server, workspace, mark) == [("GET", LIST)]


async def test_a_session_found_by_id_is_indexed_under_its_users_name(
    nams_server: NamsTestServer, workspace: str, index: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with portable(nams_server, workspace) as writer:
        await writer.add_message("chat", "user", "alice's", user_identifier="alice")
    async with portable(nams_server, workspace, session_index=index) as fresh:
        by_id = await fresh.get_conversation(conversation_id=portable_id("chat", "alice"))
        assert [m.content for m in by_id.messages] == ["alice's"]
        mark = nams_server.mark()
        await fresh.get_conversation("chat", user_identifier="alice")
        assert list_requests(nams_server, workspace, mark) == 0
        assert (await fresh.get_conversation("chat")).messages == []  # not alice's
    async with portable(nams_server, workspace, session_index=index) as other:
        mark = nams_server.mark()
        read = await other.get_conversation("chat", user_identifier="alice")
        assert [m.content for m in read.messages] == ["alice's"]
        assert list_requests(nams_server, workspace, mark) == 0
    assert index_warnings(caplog, index) == []


async def test_an_index_locked_elsewhere_is_given_up_after_half_a_second(
    nams_server: NamsTestServer, workspace: str, index: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with portable(nams_server, workspace, session_index=index) as first:
        await first.add_message("kept", "user", "one")
    holder = sqlite3.connect(index, isolation_level=None, check_same_thread=False)
    released = threading.Event()

    def release() -> None:
        holder.execute("ROLLBACK")
        released.set()

    holder.execute("BEGIN EXCLUSIVE")
    timer = threading.Timer(3.0, release)  # what a client that waited would wait for
    timer.start()
    try:
        async with portable(nams_server, workspace, session_index=index) as memory:
            await memory.add_message("new", "user", "first")
            assert not released.is_set()  # it did not wait for the lock
    finally:
        timer.cancel()
        timer.join()
        holder.close()
    [warning] = index_warnings(caplog, index)
    assert "locked" in warning
