"""Edges of the NAMS backend the other NAMS tests leave open: errors that name the
request that failed, answers of unexpected shapes, foreign-looking cursors, text hits
without the query's words, and what reading a never-written portable name returns for
a user."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
import respx

from memory_core import (
    InvalidRequestError,
    MemoryBackend,
    NotSupportedError,
    TransportError,
)
from memory_core.backends.nams.sessions import portable_id
from memory_core.cursors import encode_cursor
from memory_core_dev.nams_server import NamsTestServer

from .mocked import CID, conversation, message, mocked_backend

pytestmark = pytest.mark.anyio

BULK = f"/conversations/{CID}/messages/bulk"
SEARCH = f"/conversations/{CID}/search"

Call = Callable[[MemoryBackend], Awaitable[Any]]


async def list_page(memory: MemoryBackend) -> Any:
    return await memory.list_conversations_page(limit=5)


async def add_batch(memory: MemoryBackend) -> Any:
    return await memory.add_messages_batch(CID, [{"role": "user", "content": "hello"}])


async def search(memory: MemoryBackend) -> Any:
    return await memory.search_messages("hello", session_id=CID)


CALLS = [
    pytest.param(list_page, "GET", "/conversations", id="list_conversations"),
    pytest.param(add_batch, "POST", BULK, id="add_messages_batch"),
    pytest.param(search, "POST", SEARCH, id="search_messages"),
]


# ----------------------------------------------------------------- errors name the request


@pytest.mark.parametrize(("call", "method", "route"), CALLS)
async def test_an_unreadable_answer_names_the_method_and_route(
    memory: MemoryBackend, api: respx.MockRouter, call: Call, method: str, route: str
) -> None:
    api.request(method, route).respond(200, content=b"<html>busy</html>")
    with pytest.raises(TransportError) as raised:
        await call(memory)
    assert f"nams: {method} {route} answered with a non-JSON body" in str(raised.value)


@pytest.mark.parametrize(("call", "method", "route"), CALLS)
async def test_an_error_status_names_the_method_and_route(
    memory: MemoryBackend, api: respx.MockRouter, call: Call, method: str, route: str
) -> None:
    api.request(method, route).respond(500, json={"detail": "boom"})
    with pytest.raises(TransportError) as raised:
        await call(memory)
    assert f"nams: {method} {route} → 500" in str(raised.value)


@pytest.mark.parametrize("status", [300, 301, 307])
async def test_a_redirect_is_not_followed_but_raised_naming_its_status(
    memory: MemoryBackend, api: respx.MockRouter, status: int
) -> None:
    # The body is a readable page: only the status tells the client it is not an answer.
    page = {"conversations": [conversation()], "next_cursor": None}
    api.get("/conversations").respond(status, json=page, headers={"Location": "/elsewhere"})
    with pytest.raises(TransportError) as raised:
        await memory.list_conversations_page(limit=5)
    assert f"nams: GET /conversations → {status}" in str(raised.value)


async def test_a_search_hit_with_an_unknown_role_names_the_route(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    hit = message(1, role="robot", content="hello", score=0.9)
    api.post(SEARCH).respond(json={"messages": [hit], "search_type": "vector"})
    with pytest.raises(TransportError) as raised:
        await memory.search_messages("hello", session_id=CID)
    assert f"nams: {SEARCH} returned an unknown role 'robot'" in str(raised.value)


# ----------------------------------------------------------------- the connect probe


async def test_an_unreadable_answer_to_the_connect_probe_names_its_method_and_route(
    api: respx.MockRouter,
) -> None:
    api["probe"].respond(200, content=b"<html>busy</html>")
    backend = mocked_backend()
    with pytest.raises(TransportError) as raised:
        await backend.connect()
    assert "nams: GET /conversations answered with a non-JSON body" in str(raised.value)


async def test_the_connect_probe_is_retried_after_a_502(api: respx.MockRouter) -> None:
    api["probe"].mock(
        side_effect=[httpx.Response(502), httpx.Response(200, json={"conversations": []})]
    )
    async with mocked_backend():
        pass
    assert api["probe"].call_count == 2


async def test_a_service_without_the_listing_is_not_supported_naming_connect(
    api: respx.MockRouter,
) -> None:
    api["probe"].respond(501)
    with pytest.raises(NotSupportedError) as raised:
        await mocked_backend().connect()
    assert raised.value.method == "connect"
    assert "GET /conversations" in str(raised.value)


# ----------------------------------------------------------------- listing


async def test_a_page_without_conversations_is_an_empty_last_page(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    listed = api.get("/conversations", params={"limit": "5"}).respond(json={"next_cursor": "more"})
    page = await memory.list_conversations_page(limit=5)
    assert page.conversations == []
    assert page.next_cursor is None
    assert await memory.list_conversations(limit=5) == []
    assert listed.call_count == 2


@pytest.mark.parametrize("wrapped", ["", 5, ["c2"], {"c": "c2"}, True])
async def test_a_nams_cursor_not_wrapping_a_service_cursor_is_refused(
    memory: MemoryBackend, api: respx.MockRouter, wrapped: Any
) -> None:
    listed = api.get("/conversations", params={"limit": "5"}).respond(
        json={"conversations": [conversation()], "next_cursor": None}
    )
    with pytest.raises(InvalidRequestError) as raised:
        await memory.list_conversations_page(limit=5, cursor=encode_cursor("nams", wrapped))
    assert raised.value.argument == "cursor"
    assert listed.call_count == 0


async def test_a_nams_cursor_wrapping_a_service_cursor_is_sent_unwrapped(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    listed = api.get("/conversations", params={"limit": "5"}).respond(
        json={"conversations": [conversation()], "next_cursor": None}
    )
    page = await memory.list_conversations_page(limit=5, cursor=encode_cursor("nams", "c2"))
    assert [c.session_id for c in page.conversations] == [CID]
    assert listed.calls.last.request.url.params["cursor"] == "c2"


# ----------------------------------------------------------------- text search


async def test_text_hits_without_the_querys_words_are_dropped(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    hits = [
        message(1, content="nothing of the sort", score=0.99),
        message(2, content="hello there", score=0.5),
        message(3, content="unrelated words", score=0.4),
    ]
    api.post(SEARCH).respond(json={"messages": hits, "search_type": "text"})
    found = await memory.search_messages("hello world", session_id=CID)
    assert [m.content for m in found] == ["hello there"]
    assert found[0].score is not None and found[0].score > 0.0


async def test_a_message_list_without_messages_is_an_empty_conversation(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    # The wire model's ``messages`` defaults to an empty list: an answer of {} is valid.
    api.get(f"/conversations/{CID}").respond(json=conversation())
    api.get(f"/conversations/{CID}/messages").respond(json={})
    read = await memory.get_conversation(CID)
    assert read.messages == []
    assert read.session_id == CID


async def test_clearing_a_session_retries_its_delete_after_a_502(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    deleted = api.delete(f"/conversations/{CID}").mock(
        side_effect=[httpx.Response(502), httpx.Response(204)]
    )
    assert await memory.clear_session(CID) is True
    assert deleted.call_count == 2


@pytest.mark.nams
@pytest.mark.parametrize("names", ["server", "portable"])
async def test_a_handle_in_another_spelling_is_reported_as_it_was_given(
    nams_server: NamsTestServer, workspace: str, names: str
) -> None:
    # The service accepts its ids in upper case; the conversation it names carries no
    # name, so it is reported under the handle the caller passed, as spelled.
    with nams_server.client(workspace) as c:
        sid = str(c.post("/conversations", json={}).json()["id"])
        assert c.post(f"/conversations/{sid}/messages", json={"role": "user", "content": "hi"})
    spelled = sid.upper()
    async with nams_server.backend(workspace, session_names=names) as memory:
        if names == "portable":  # (in server-id mode it always creates a new one)
            made = await memory.create_conversation(spelled)
            assert (made.session_id, str(made.id)) == (spelled, sid)
        read = await memory.get_conversation(spelled)
    assert (read.session_id, str(read.id)) == (spelled, sid)
    assert [(m.content, m.session_id) for m in read.messages] == [("hi", spelled)]


# ----------------------------------------------------------------- portable names


@pytest.mark.nams
async def test_a_never_written_name_of_a_user_reads_as_that_users_empty_conversation(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace, session_names="portable") as memory:
        before = await memory.get_conversation("notes", user_identifier="alice")
        assert before.messages == []
        assert before.session_id == "notes"
        assert before.user_identifier == "alice"
        assert before.id == portable_id("notes", "alice")
        nobody = await memory.get_conversation("notes")
        assert nobody.user_identifier is None
        assert nobody.id != before.id
        assert await memory.list_conversations(limit=10) == []  # reads create nothing
        await memory.add_message("notes", "user", "hi", user_identifier="alice")
        after = await memory.get_conversation("notes", user_identifier="alice")
        assert [m.content for m in after.messages] == ["hi"]
        assert after.id == before.id
        assert after.user_identifier == "alice"
