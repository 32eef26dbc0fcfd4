"""``user_identifier`` on the NAMS adapter (mocked service, respx).

The service scopes data by conversation id: only ``create_conversation`` (``userId`` in the
body) and ``list_conversations`` (``userId`` filter) can honour a user. Every other call
given one warns once per method, or raises ``NotSupportedError`` under ``strict=True``
before any request is sent (DESIGN §3: never a silently dropped argument).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
import respx

from memory_core import CapabilityWarning, MemoryBackend, NotSupportedError, open_backend
from memory_core.backends.nams import NamsStore

pytestmark = pytest.mark.anyio

BASE = "https://nams.test/v1"
CID = "3f2b1c4e-5d6a-4b7c-8d9e-0f1a2b3c4d5e"
MID = "00000000-0000-4000-8000-000000000001"
HEADER = {"id": CID, "userId": "alice", "workspaceId": "w", "metadata": {}}
STORED = {"id": MID, "conversationId": CID, "role": "user", "content": "hi"}
ENTITY = {"id": "e-1", "name": "Ada", "type": "person"}

Call = Callable[..., Awaitable[Any]]

# Every public call that accepts user_identifier but cannot send it.
UNSCOPED: dict[str, Call] = {
    "add_message": lambda m, **kw: m.add_message(CID, "user", "hi", **kw),
    "add_messages_batch": lambda m, **kw: m.add_messages_batch(
        CID, [{"role": "user", "content": "hi"}], **kw
    ),
    "get_conversation": lambda m, **kw: m.get_conversation(CID, **kw),
    "search_messages": lambda m, **kw: m.search_messages("hi", session_id=CID, **kw),
    "get_context": lambda m, **kw: m.get_context("hi", session_id=CID, **kw),
    "clear_session": lambda m, **kw: m.clear_session(CID, **kw),
    "get_observations": lambda m, **kw: m.get_observations(CID, **kw),
    "get_reflections": lambda m, **kw: m.get_reflections(CID, **kw),
    "get_extraction_status": lambda m, **kw: m.get_extraction_status(CID, **kw),
    "add_entity": lambda m, **kw: m.add_entity("Ada", "PERSON", **kw),
    "find_entities": lambda m, **kw: m.find_entities("Ada", **kw),
}


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    """Every route the calls above use, answering with minimal valid bodies."""
    page = {"conversations": [HEADER], "next_cursor": None}
    conv = f"/conversations/{CID}"
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        router.get("/conversations", name="list").respond(json=page)
        router.post("/conversations", name="create").respond(201, json=HEADER)
        router.get(conv).respond(json=HEADER)
        router.delete(conv).respond(204)
        router.get(f"{conv}/messages").respond(json={"messages": [STORED]})
        router.post(f"{conv}/messages").respond(201, json=STORED)
        router.post(f"{conv}/messages/bulk").respond(201, json={"messages": [STORED]})
        router.post(f"{conv}/search").respond(json={"messages": [], "searchType": "text"})
        router.get(f"{conv}/context").respond(
            json={"reflections": [], "observations": [], "recentMessages": [STORED]}
        )
        router.get(f"{conv}/observations").respond(json={"observations": []})
        router.get(f"{conv}/reflections").respond(json={"reflections": []})
        router.get(f"{conv}/extraction-status").respond(json={"messages": [], "summary": {}})
        router.post("/entities").respond(201, json=ENTITY)
        router.post("/entities/search").respond(json={"entities": [ENTITY]})
        yield router


async def _open(strict: bool = False) -> MemoryBackend:
    backend = open_backend(
        "nams+https://nams.test/v1",
        api_key="k",
        workspace_id="w",
        trust_env=False,
        strict=strict,
        session_names="server",
    )
    assert isinstance(backend.store, NamsStore)
    await backend.connect()
    return backend


@pytest.fixture
async def memory(api: respx.MockRouter) -> AsyncIterator[MemoryBackend]:
    backend = await _open()
    yield backend
    await backend.close()


@pytest.fixture
async def strict_memory(api: respx.MockRouter) -> AsyncIterator[MemoryBackend]:
    backend = await _open(strict=True)
    yield backend
    await backend.close()


def capability_warnings(caught: list[warnings.WarningMessage]) -> list[warnings.WarningMessage]:
    return [w for w in caught if issubclass(w.category, CapabilityWarning)]


def user_ids_sent(api: respx.MockRouter) -> list[str]:
    """Every ``userId`` that left the client, in query strings or JSON bodies."""
    found: list[str] = []
    for call in api.calls:
        request = call.request
        found += request.url.params.get_list("userId")
        if request.content:
            payload = json.loads(request.content)
            if isinstance(payload, dict) and "userId" in payload:
                found.append(payload["userId"])
    return found


@pytest.mark.parametrize("method", sorted(UNSCOPED))
async def test_unscoped_call_warns_once_and_still_runs(
    memory: MemoryBackend, api: respx.MockRouter, method: str
) -> None:
    call = UNSCOPED[method]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await call(memory, user_identifier="alice")
        await call(memory, user_identifier="alice")
    [warning] = capability_warnings(caught)
    text = str(warning.message)
    assert f"nams.{method}" in text and "'user_identifier'" in text
    assert "create_conversation" in text  # the workaround
    assert warning.filename == __file__  # points at the caller, not at library code
    assert user_ids_sent(api) == []


@pytest.mark.parametrize("method", sorted(UNSCOPED))
async def test_unscoped_call_without_user_does_not_warn(memory: MemoryBackend, method: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await UNSCOPED[method](memory)
    assert capability_warnings(caught) == []


@pytest.mark.parametrize("method", sorted(UNSCOPED))
async def test_strict_refuses_before_any_request(
    strict_memory: MemoryBackend, api: respx.MockRouter, method: str
) -> None:
    sent = len(api.calls)
    with pytest.raises(NotSupportedError) as caught:
        await UNSCOPED[method](strict_memory, user_identifier="alice")
    error = caught.value
    assert (error.backend, error.method) == ("nams", method)
    assert "user_identifier" in error.message
    assert "create_conversation" in error.workaround
    assert len(api.calls) == sent  # nothing was sent, so nothing was written


async def test_bulk_add_messages_is_refused_under_the_batch_name(
    strict_memory: MemoryBackend, api: respx.MockRouter
) -> None:
    batch = [{"role": "user", "content": f"m{i}"} for i in range(3)]
    with pytest.raises(NotSupportedError) as caught:
        await strict_memory.bulk_add_messages(CID, batch, user_identifier="alice")
    assert caught.value.method == "add_messages_batch"
    assert not api.routes["create"].called and len(api.calls) == 1  # only the connect probe


async def test_context_warns_for_itself_not_for_its_inner_search(memory: MemoryBackend) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await memory.get_context("hi", session_id=CID, user_identifier="alice")
    assert [str(w.message).split(":")[0] for w in capability_warnings(caught)] == [
        "nams.get_context"
    ]


async def test_create_and_list_send_user_id_without_warning(
    strict_memory: MemoryBackend, api: respx.MockRouter
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = await strict_memory.create_conversation("mine", user_identifier="alice")
        listed = await strict_memory.list_conversations(limit=5, user_identifier="alice")
    assert capability_warnings(caught) == []
    assert json.loads(api.routes["create"].calls.last.request.content) == {"userId": "alice"}
    assert api.routes["list"].calls.last.request.url.params["userId"] == "alice"
    assert made.user_identifier == "alice"
    assert [c.user_identifier for c in listed] == ["alice"]
    assert user_ids_sent(api) == ["alice", "alice"]
