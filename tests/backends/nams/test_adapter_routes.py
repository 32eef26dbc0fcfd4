"""Every route of the NAMS adapter against a mocked service (respx): the contract method
each request is made for (named by a ``NotSupportedError``), the retry rule of its HTTP
method, the bodies it sends and what it keeps of the answers, the error for a
conversation the service does not know, and reads of a portable name nobody wrote."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, NamedTuple
from uuid import NAMESPACE_URL, UUID, uuid5

import httpx
import pytest
import respx

from memory_core import (
    ExtractionStatus,
    MemoryBackend,
    NotFoundError,
    NotSupportedError,
    open_backend,
)
from memory_core.backends.nams import NamsStore

from .mocked import CID, FAST, body, conversation, message

pytestmark = pytest.mark.anyio

Call = Callable[[MemoryBackend], Awaitable[Any]]


class Route(NamedTuple):
    """One request a contract method makes first, and a call that makes it."""

    operation: str
    method: str
    path: str
    call: Call


# The header GET of get_conversation comes before its messages GET.
ROUTES: list[Route] = [
    Route(*row)
    for row in [
        ("get_conversation", "GET", f"/conversations/{CID}", lambda m: m.get_conversation(CID)),
        (
            "get_context",
            "GET",
            f"/conversations/{CID}/context",
            lambda m: m.get_context(session_id=CID),
        ),
        (
            "get_observations",
            "GET",
            f"/conversations/{CID}/observations",
            lambda m: m.get_observations(CID),
        ),
        (
            "get_reflections",
            "GET",
            f"/conversations/{CID}/reflections",
            lambda m: m.get_reflections(CID),
        ),
        (
            "get_extraction_status",
            "GET",
            f"/conversations/{CID}/extraction-status",
            lambda m: m.get_extraction_status(CID),
        ),
        ("list_conversations", "GET", "/conversations", lambda m: m.list_conversations(limit=5)),
        (
            "add_message",
            "POST",
            f"/conversations/{CID}/messages",
            lambda m: m.add_message(CID, "user", "x"),
        ),
        (
            "add_messages_batch",
            "POST",
            f"/conversations/{CID}/messages/bulk",
            lambda m: m.add_messages_batch(CID, [{"role": "user", "content": "x"}]),
        ),
        (
            "create_conversation",
            "POST",
            "/conversations",
            lambda m: m.create_conversation("s", user_identifier="u"),
        ),
        (
            "search_messages",
            "POST",
            f"/conversations/{CID}/search",
            lambda m: m.search_messages("x", session_id=CID),
        ),
        ("add_entity", "POST", "/entities", lambda m: m.add_entity("Ada", "PERSON")),
        ("find_entities", "POST", "/entities/search", lambda m: m.find_entities("Ada")),
        ("clear_session", "DELETE", f"/conversations/{CID}", lambda m: m.clear_session(CID)),
    ]
]
GETS = [row for row in ROUTES if row.method == "GET"]


def _route(api: respx.MockRouter, method: str, path: str) -> respx.Route:
    # GET /conversations with limit=5: not the connect probe's route (limit=1)
    params = {"limit": "5"} if (method, path) == ("GET", "/conversations") else None
    route: respx.Route = getattr(api, method.lower())(path, params=params)
    return route


@pytest.mark.parametrize("row", ROUTES, ids=[row.operation for row in ROUTES])
async def test_an_unsupported_route_names_the_method_it_serves(
    memory: MemoryBackend, api: respx.MockRouter, row: Route
) -> None:
    route = _route(api, row.method, row.path).respond(501, json={"error": "no"})
    with pytest.raises(NotSupportedError) as caught:
        await row.call(memory)
    assert route.call_count == 1
    assert (caught.value.backend, caught.value.method) == ("nams", row.operation)


_ANSWERS: dict[str, Any] = {
    "get_conversation": conversation(),
    "get_context": {"recentMessages": [], "observations": [], "reflections": []},
    "get_observations": {"observations": []},
    "get_reflections": {"reflections": []},
    "get_extraction_status": {"messages": [], "summary": {}},
    "list_conversations": {"conversations": [], "next_cursor": None},
}


@pytest.mark.parametrize("row", GETS, ids=[row.operation for row in GETS])
async def test_every_read_is_retried_after_a_502(
    memory: MemoryBackend, api: respx.MockRouter, row: Route
) -> None:
    """A GET is idempotent: a 502 (which a POST is never resent after) is retried."""
    api.get(f"/conversations/{CID}/messages").respond(json={"messages": []})
    route = _route(api, row.method, row.path).mock(
        side_effect=[httpx.Response(502), httpx.Response(200, json=_ANSWERS[row.operation])]
    )
    await row.call(memory)
    assert route.call_count == 2


# ----------------------------------------------------------------- bodies and answers


async def test_absent_optional_fields_are_left_out_both_ways(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    """What is not given is not sent as ``null``; what the service leaves out is not
    handed back as ``None``."""
    created = api.post("/entities").respond(201, json={"id": "e1", "name": "Ada", "type": "person"})
    await memory.add_entity("Ada", "PERSON")
    assert body(created.calls.last) == {"name": "Ada", "type": "person"}
    searched = api.post("/entities/search").respond(json={"entities": []})
    await memory.find_entities("Ada", limit=3)
    assert body(searched.calls.last) == {"query": "Ada", "limit": 3}

    base = f"/conversations/{CID}"
    api.get(f"{base}/observations").respond(
        json={"observations": [{"id": "o1", "content": "likes tea"}]}
    )
    api.get(f"{base}/reflections").respond(json={"reflections": [{"id": "r1", "content": "kind"}]})
    api.get(f"{base}/extraction-status").respond(
        json={"messages": [{"id": "m1", "status": "done"}], "summary": {"done": 1}}
    )
    assert await memory.get_observations(CID) == [{"id": "o1", "content": "likes tea"}]
    assert await memory.get_reflections(CID) == [{"id": "r1", "content": "kind"}]
    status = await memory.get_extraction_status(CID)
    assert status.messages == [{"id": "m1", "status": "done"}]
    assert status.summary == {"done": 1}


async def test_entities_keep_what_the_service_answers(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    created, updated = "2025-01-02T03:04:05+00:00", "2025-02-03T04:05:06+00:00"
    api.post("/entities").respond(
        201,
        json={
            "id": "e1",
            "name": "Ada",
            "type": "person",
            "confidence": 0.75,
            "createdAt": created,
            "updatedAt": updated,
            "mergedInto": "e0",  # not merged: the id stays its own
            "resolution": "created",
        },
    )
    entity = await memory.add_entity("Ada", "PERSON")
    assert (entity.id, entity.confidence) == ("e1", 0.75)
    assert entity.created_at == datetime.fromisoformat(created)
    assert entity.updated_at == datetime.fromisoformat(updated)

    api.post("/entities").respond(201, json={"id": "e2", "resolution": "merged"})
    assert (await memory.add_entity("Bob", "PERSON")).id == "e2"  # merged into nothing named

    # a search hit without name or type: an empty name and the CUSTOM type
    api.post("/entities/search").respond(json={"entities": [{"id": "e3"}]})
    [hit] = await memory.find_entities("x")
    assert (hit.id, hit.name, hit.type) == ("e3", "", "CUSTOM")


async def test_context_asks_search_for_the_hits_and_the_recent_ones(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    """With a query, the search asks for ``max_hits`` plus the recent messages shown
    (those are dropped from the hits), so ``max_hits`` others can remain."""
    recent = [message(2), message(1)]
    api.get(f"/conversations/{CID}/context").respond(
        json={"recentMessages": recent, "observations": [], "reflections": []}
    )
    hits = [message(i, content=f"m{i} tea", score=1.0) for i in (1, 3, 4, 5)]
    search = api.post(f"/conversations/{CID}/search").respond(
        json={"messages": hits, "searchType": "vector"}
    )
    text = await memory.get_context("tea", session_id=CID, max_messages=2, max_hits=3)
    assert body(search.calls.last) == {"query": "tea", "limit": 5}
    assert "m3 tea" in text and "m4 tea" in text and "m5 tea" in text
    assert text.count("m1 tea") == 0  # m1 is a recent message (shown as "m1")


# ----------------------------------------------------------------- unknown conversations


@pytest.mark.parametrize("by", ["session_id", "conversation_id"])
async def test_an_unknown_conversation_names_the_argument_and_the_id(
    memory: MemoryBackend, api: respx.MockRouter, by: str
) -> None:
    api.get(f"/conversations/{CID}").respond(404, json={"error": "no"})
    with pytest.raises(NotFoundError) as caught:
        await memory.get_conversation(**{by: CID})
    error = caught.value
    assert (error.backend, error.kind, error.argument) == ("nams", "conversation", by)
    assert error.identifier == CID


# ----------------------------------------------------------------- portable names


@pytest.fixture
async def portable(api: respx.MockRouter) -> AsyncIterator[MemoryBackend]:
    backend = open_backend(
        "nams+https://nams.test/v1", api_key="k", trust_env=False, session_names="portable", **FAST
    )
    assert isinstance(backend.store, NamsStore)
    async with backend:
        yield backend


async def test_reads_of_a_name_nobody_wrote_are_empty_and_create_nothing(
    portable: MemoryBackend, api: respx.MockRouter
) -> None:
    listing = api.get("/conversations", params={"limit": "200"}).respond(
        json={"conversations": [], "next_cursor": None}
    )
    created = api.post("/conversations").respond(201, json=conversation())
    assert await portable.get_observations("nobody") == []
    assert await portable.get_reflections("nobody") == []
    assert await portable.get_extraction_status("nobody") == ExtractionStatus()
    assert await portable.search_messages("tea", session_id="nobody") == []
    assert await portable.get_context(session_id="nobody") == await portable.get_context(
        session_id="nobody"
    )
    assert listing.call_count >= 5 and created.call_count == 0


async def test_a_server_id_given_as_a_name_keeps_one_id_for_messages_and_header(
    portable: MemoryBackend, api: respx.MockRouter
) -> None:
    """A name that is a (non-UUID) server id names that conversation; its messages carry
    the id its header maps to."""
    api.get("/conversations", params={"limit": "200"}).respond(
        json={"conversations": [conversation("conv-1")], "next_cursor": None}
    )
    api.get("/conversations/conv-1/messages").respond(json={"messages": [message(1, cid="conv-1")]})
    api.get("/conversations/conv-1").respond(json=conversation("conv-1"))
    found = await portable.get_conversation(session_id="conv-1")
    expected = uuid5(NAMESPACE_URL, "nams:conv-1")
    assert found.id == expected
    assert [m.conversation_id for m in found.messages] == [expected]
    assert isinstance(found.messages[0].created_at, datetime)
    assert found.messages[0].created_at.tzinfo is not None
    assert found.messages[0].created_at == datetime(2025, 1, 1, 0, 0, 1, tzinfo=UTC)
    assert UUID(str(found.id)) == expected


async def test_roles_are_read_in_any_case(memory: MemoryBackend, api: respx.MockRouter) -> None:
    api.get(f"/conversations/{CID}").respond(json=conversation())
    api.get(f"/conversations/{CID}/messages").respond(
        json={"messages": [message(2, role="Assistant"), message(1, role="USER")]}
    )
    read = await memory.get_conversation(CID)
    assert [m.role.value for m in read.messages] == ["user", "assistant"]


def test_describe_names_the_url_and_the_workspace_never_the_key() -> None:
    with_workspace = NamsStore("nams+https://nams.test/v1", api_key="k-secret", workspace_id="w")
    assert with_workspace.describe() == "nams https://nams.test/v1 workspace=w"
    without = NamsStore("nams+https://nams.test/v1", api_key="k-secret", workspace_id="")
    assert without.describe() == "nams https://nams.test/v1"
