"""Edge cases of the NAMS adapter against a mocked service (respx): spellings and
statuses the real server does not produce, URL encoding, request bodies, retry rules."""

from __future__ import annotations

import dataclasses
import json
import warnings
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from uuid import NAMESPACE_URL, UUID, uuid5

import httpx
import pytest
import respx

from memory_core import (
    CapabilityWarning,
    ConfigurationError,
    Conversation,
    InvalidRequestError,
    MemoryBackend,
    Message,
    NotFoundError,
    NotSupportedError,
    TransportError,
    open_backend,
)
from memory_core import nams_wire as wire
from memory_core.backends.nams import NamsStore
from memory_core.backends.nams.transport import RetryPolicy, parse_retry_after
from memory_core.scoring import text_score

from .mocked import CID, body, conversation, message

pytestmark = pytest.mark.anyio

# ----------------------------------------------------------------- paging


async def test_next_cursor_camel_case_spelling_is_followed(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    pages = [
        {
            "conversations": [
                conversation(f"{i:08d}-0000-4000-8000-000000000000") for i in range(2)
            ],
            "nextCursor": "c2",
        },
        {
            "conversations": [conversation("00000009-0000-4000-8000-000000000000")],
            "nextCursor": None,
        },
    ]
    route = api.get("/conversations").mock(side_effect=[httpx.Response(200, json=p) for p in pages])
    listed = await memory.list_conversations(limit=10)
    assert len(listed) == 3
    assert route.call_count == 2
    second = route.calls[1].request.url.params
    assert second["cursor"] == "c2" and second["limit"] == "8"


async def test_paging_stops_on_empty_page_and_at_limit(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    route = api.get("/conversations").mock(
        side_effect=[
            httpx.Response(200, json={"conversations": [conversation()], "next_cursor": "x"}),
            httpx.Response(200, json={"conversations": [], "next_cursor": "y"}),
        ]
    )
    assert len(await memory.list_conversations(limit=50)) == 1
    assert route.call_count == 2
    many = [conversation(f"{i:08d}-0000-4000-8000-000000000000") for i in range(200)]
    route.mock(return_value=httpx.Response(200, json={"conversations": many, "next_cursor": "z"}))
    route.reset()
    assert len(await memory.list_conversations(limit=200)) == 200
    assert route.call_count == 1


async def test_list_sends_user_id(memory: MemoryBackend, api: respx.MockRouter) -> None:
    route = api.get("/conversations").respond(json={"conversations": [], "next_cursor": None})
    await memory.list_conversations(user_identifier="alice", limit=5)
    assert dict(route.calls.last.request.url.params) == {"limit": "5", "userId": "alice"}


# ----------------------------------------------------------------- statuses


@pytest.mark.parametrize("status", [405, 501])
async def test_405_and_501_are_not_supported(
    memory: MemoryBackend, api: respx.MockRouter, status: int
) -> None:
    api.get(f"/conversations/{CID}/observations").respond(status, json={"error": "nope"})
    with pytest.raises(NotSupportedError) as caught:
        await memory.get_observations(CID)
    assert caught.value.method == "get_observations" and caught.value.backend == "nams"


async def test_400_is_invalid_request_with_details(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    api.get(f"/conversations/{CID}").respond(json=conversation())
    api.get(f"/conversations/{CID}/messages").respond(
        400, json=wire.error_body("invalid_limit", "limit must be 1..200", {"got": 0})
    )
    with pytest.raises(InvalidRequestError) as caught:
        await memory.get_conversation(CID)
    assert caught.value.argument == "limit"
    assert caught.value.details["code"] == "invalid_limit"
    assert caught.value.details["details"] == {"got": 0}


async def test_500_and_bad_bodies_are_transport_errors(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    route = api.get(f"/conversations/{CID}").respond(500, text="boom")
    with pytest.raises(TransportError):
        await memory.get_conversation(CID)
    route.respond(200, text="<html>")
    with pytest.raises(TransportError, match="non-JSON"):
        await memory.get_conversation(CID)
    route.respond(200, json={"no": "id"})
    with pytest.raises(TransportError, match="unexpected response"):
        await memory.get_conversation(CID)


async def test_unknown_role_is_transport_error(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    api.get(f"/conversations/{CID}").respond(json=conversation())
    api.get(f"/conversations/{CID}/messages").respond(json={"messages": [message(1, role="bot")]})
    with pytest.raises(TransportError, match="role"):
        await memory.get_conversation(CID)


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        (json.dumps({"messages": [message(1, content=5)]}), r"unexpected.*messages\.0\.content"),
        (json.dumps({"messages": [message(1, createdAt="soon")]}), r"messages\.0\.createdAt"),
        (json.dumps({"messages": "none"}), r"unexpected.*messages"),
        ('{"messages": [', "non-JSON"),
        ("[1, 2", "non-JSON"),
    ],
)
async def test_malformed_message_lists_are_transport_errors(
    memory: MemoryBackend, api: respx.MockRouter, answer: str, match: str
) -> None:
    # Answers are validated straight from the bytes; a bad one is still a typed error.
    api.get(f"/conversations/{CID}").respond(json=conversation())
    api.get(f"/conversations/{CID}/messages").respond(
        200, content=answer.encode(), headers={"Content-Type": "application/json"}
    )
    with pytest.raises(TransportError, match=match):
        await memory.get_conversation(CID)
    api.post(f"/conversations/{CID}/messages/bulk").respond(
        200, content=answer.encode(), headers={"Content-Type": "application/json"}
    )
    with pytest.raises(TransportError, match=match):
        await memory.add_messages_batch(CID, [{"role": "user", "content": "x"}])


async def test_malformed_pages_and_headers_are_transport_errors(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    api.get("/conversations").respond(json={"conversations": [{"id": 7}], "next_cursor": None})
    with pytest.raises(TransportError, match=r"conversations\.0\.id"):
        await memory.list_conversations(limit=5)
    api.get(f"/conversations/{CID}").respond(json=conversation(createdAt=[1]))
    with pytest.raises(TransportError, match="createdAt"):
        await memory.get_conversation(CID)


async def test_bodies_only_json_loads_reads_still_read(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    # A bare list of messages, a BOM and UTF-16 take the slower json.loads path.
    api.get(f"/conversations/{CID}").respond(
        200, content=b"\xef\xbb\xbf" + json.dumps(conversation()).encode()
    )
    route = api.get(f"/conversations/{CID}/messages")
    route.respond(json=[message(2), message(1)])
    read = await memory.get_conversation(CID)
    assert [m.content for m in read.messages] == ["m1", "m2"]
    route.respond(200, content=json.dumps({"messages": [message(1)]}).encode("utf-16"))
    assert [m.content for m in (await memory.get_conversation(CID)).messages] == ["m1"]


async def test_404_on_delete_means_already_gone(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    route = api.delete(f"/conversations/{CID}").respond(404, json=wire.error_body("x", "y"))
    assert await memory.clear_session(CID) is False
    route.respond(204)
    assert await memory.clear_session(CID) is True
    api.get(f"/conversations/{CID}").respond(404)
    with pytest.raises(NotFoundError):
        await memory.get_conversation(CID)


# ----------------------------------------------------------------- URLs and bodies


@pytest.mark.parametrize(
    ("handle", "raw"),
    [
        ("a/b c?d#e%f", "/v1/conversations/a%2Fb%20c%3Fd%23e%25f"),
        ("..", "/v1/conversations/%2E%2E"),
        ("ü", "/v1/conversations/%C3%BC"),
    ],
)
async def test_path_ids_are_url_encoded(
    memory: MemoryBackend, api: respx.MockRouter, handle: str, raw: str
) -> None:
    route = api.delete(url__regex=r".*").respond(204)
    await memory.clear_session(handle)
    assert route.calls.last.request.url.raw_path.decode() == raw


async def test_add_message_sends_only_role_and_content(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    route = api.post(f"/conversations/{CID}/messages").respond(
        201, json={"id": message(1)["id"], "conversationId": CID, "role": "user", "content": "hi"}
    )
    with pytest.warns(CapabilityWarning, match="metadata"):
        stored = await memory.add_message(CID, "user", "hi", metadata={"a": 1})
    assert body(route.calls.last) == {"role": "user", "content": "hi"}
    assert stored.created_at.tzinfo is not None  # the response has no createdAt
    request = route.calls.last.request
    assert request.headers["authorization"] == "Bearer k-123"
    assert request.headers["x-workspace-id"] == "w"


async def test_bulk_sends_role_and_content_as_json(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    sent = [
        {"role": "User", "content": 'ünï \u2028 "q"', "metadata": {"dropped": 1}},
        {"role": "tool", "content": ""},
    ]
    route = api.post(f"/conversations/{CID}/messages/bulk").respond(
        json={"messages": [message(1, role="user"), message(2, role="tool")]}
    )
    with pytest.warns(CapabilityWarning, match="metadata"):
        stored = await memory.add_messages_batch(CID, sent)
    assert body(route.calls.last) == {
        "messages": [
            {"role": "user", "content": 'ünï \u2028 "q"'},
            {"role": "tool", "content": ""},
        ]
    }
    assert route.calls.last.request.headers["content-type"] == "application/json"
    assert [m.role.value for m in stored] == ["user", "tool"]


async def test_create_sends_only_user_id_and_metadata(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    route = api.post("/conversations").respond(201, json=conversation(userId="u"))
    made = await memory.create_conversation("my-name", metadata={"x": 1}, user_identifier="u")
    assert body(route.calls.last) == {"userId": "u", "metadata": {"x": 1}}
    assert made.session_id == CID and str(made.id) == CID
    await memory.create_conversation(conversation_id=CID)
    assert body(route.calls.last) == {}


async def test_search_sends_query_and_limit_keeps_score(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    route = api.post(f"/conversations/{CID}/search").respond(
        json={"messages": [message(1, score=0.75)], "searchType": "vector"}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hits = await memory.search_messages("q", session_id=CID, limit=5, threshold=0.2)
    assert body(route.calls.last) == {"query": "q", "limit": 5}
    assert hits[0].score == 0.75  # a vector hit keeps the service's score
    with pytest.warns(CapabilityWarning, match="clamped"):
        await memory.search_messages("q", session_id=CID, limit=500)
    assert body(route.calls.last) == {"query": "q", "limit": 200}


async def test_text_hits_are_scored_on_the_shared_scale(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    """The service's text scores are not ours: each text hit is scored from its content
    by memory_core.scoring, hits are re-ranked best first and cut to ``limit``, and a
    hit holding none of the query's words is not a text hit."""
    contents = ["a late parcel", "late order", "nothing relevant", "order", "late order late"]
    served = [message(i, content=c, score=0.99 - i / 100) for i, c in enumerate(contents, start=1)]
    api.post(f"/conversations/{CID}/search").respond(
        json={"messages": served, "searchType": "text"}
    )
    hits = await memory.search_messages("Late ORDER", session_id=CID, limit=3)
    terms = ["late", "order"]
    expected = sorted(
        (c for c in contents if text_score(terms, c) > 0), key=lambda c: -text_score(terms, c)
    )[:3]
    assert [h.content for h in hits] == expected == ["late order late", "late order", "order"]
    assert [h.score for h in hits] == [text_score(terms, c) for c in expected]


async def test_merged_entity_without_fields(memory: MemoryBackend, api: respx.MockRouter) -> None:
    api.post("/entities").respond(
        201, json={"id": "e-new", "resolution": "merged", "merged_into": "e-old", "confidence": 0.9}
    )
    with pytest.warns(CapabilityWarning, match="EVENT is kept as CUSTOM"):
        entity = await memory.add_entity("Ada", "EVENT")
    # the type the service keeps: EVENT travels as custom
    assert entity.id == "e-old" and entity.name == "Ada" and entity.type == "CUSTOM"
    route = api.post("/entities/search").respond(
        json={"entities": [{"id": "e-old", "name": "Ada", "type": "person"}]}
    )
    found = await memory.find_entities("Ada", type="OBJECT")
    assert body(route.calls.last) == {"query": "Ada", "limit": 8, "type": "custom"}
    assert found[0].type == "PERSON"


async def test_non_uuid_ids_map_to_stable_uuids(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    api.get("/conversations/itest-abc").respond(json=conversation("itest-abc"))
    api.get("/conversations/itest-abc/messages").respond(
        json={"messages": [message(1, cid="itest-abc", id="msg-1")]}
    )
    one = await memory.get_conversation("itest-abc")
    two = await memory.get_conversation("itest-abc")
    assert one.id == two.id and one.messages[0].id == two.messages[0].id
    assert one.session_id == "itest-abc"


@pytest.mark.parametrize(
    "ids",
    [
        [f"urn:uuid:{CID}", "{" + CID.upper() + "}", CID.replace("-", "")],
        [CID, "msg-1", "{" + CID.replace("-", "") + "}"],  # one odd id: each parsed alone
    ],
)
async def test_message_ids_map_as_uuid_does(
    memory: MemoryBackend, api: respx.MockRouter, ids: list[str]
) -> None:
    api.get(f"/conversations/{CID}").respond(json=conversation())
    api.get(f"/conversations/{CID}/messages").respond(
        json={"messages": [message(i, id=value) for i, value in enumerate(ids)]}
    )
    read = await memory.get_conversation(CID)
    expected = [_as_uuid(value) for value in reversed(ids)]
    assert [m.id for m in read.messages] == expected
    assert read.messages[0] == Message.model_validate(read.messages[0].model_dump())


def _as_uuid(value: str) -> UUID:
    try:
        return UUID(value)
    except ValueError:
        return uuid5(NAMESPACE_URL, f"nams:{value}")


async def test_listed_conversations_equal_validated_ones(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    stamp = "2025-01-01T00:00:00+00:00"
    api.get("/conversations").respond(
        json={
            "conversations": [
                conversation(CID, userId="u", metadata={"k": [1]}, createdAt=stamp),
                conversation("plain-id", updatedAt=stamp),
            ],
            "next_cursor": None,
        }
    )
    listed = await memory.list_conversations(limit=5)
    assert [c.id for c in listed] == [UUID(CID), _as_uuid("plain-id")]
    for one in listed:
        assert one == Conversation.model_validate(one.model_dump())
    assert listed[0].metadata == {"k": [1]} and listed[0].user_identifier == "u"


# ----------------------------------------------------------------- retries


async def test_read_timeout_on_post_is_not_resent(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    route = api.post(f"/conversations/{CID}/messages").mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(TransportError, match="not resent") as info:
        await memory.add_message(CID, "user", "x")
    assert route.call_count == 1
    assert info.value.maybe_applied is True


async def test_connect_error_on_post_is_retried(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    ok = httpx.Response(
        201, json={"id": message(1)["id"], "conversationId": CID, "role": "user", "content": "x"}
    )
    route = api.post(f"/conversations/{CID}/messages").mock(
        side_effect=[httpx.ConnectError("refused"), ok]
    )
    await memory.add_message(CID, "user", "x")
    assert route.call_count == 2


async def test_read_error_on_get_is_retried(memory: MemoryBackend, api: respx.MockRouter) -> None:
    route = api.get(f"/conversations/{CID}").mock(
        side_effect=[httpx.RemoteProtocolError("dropped"), httpx.Response(200, json=conversation())]
    )
    api.get(f"/conversations/{CID}/messages").respond(json={"messages": []})
    await memory.get_conversation(CID)
    assert route.call_count == 2


async def test_502_is_retried_for_get_not_for_post(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    route = api.get(f"/conversations/{CID}/reflections").mock(
        side_effect=[httpx.Response(502), httpx.Response(200, json={"reflections": []})]
    )
    assert await memory.get_reflections(CID) == []
    assert route.call_count == 2
    post = api.post(f"/conversations/{CID}/messages").respond(502)
    with pytest.raises(TransportError):
        await memory.add_message(CID, "user", "x")
    assert post.call_count == 1


def test_retry_after_parsing() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.25") == 0.25
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    parsed = parse_retry_after(later)
    assert parsed is not None and 25 <= parsed <= 31


def test_backoff_policy() -> None:
    policy = RetryPolicy(backoff=0.5, max_backoff=2.0)
    assert all(2.0 <= policy.delay(0, 2.0) <= 2.2 for _ in range(50))
    assert all(0 <= policy.delay(5, None) <= 2.0 for _ in range(50))


# ----------------------------------------------------------------- configuration


def test_urls_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_ENDPOINT", "http://127.0.0.1:9/v1/")
    monkeypatch.setenv("MEMORY_API_KEY", "env-key")
    monkeypatch.setenv("MEMORY_WORKSPACE_ID", "env-ws")
    bare = open_backend("nams://")
    assert isinstance(bare.store, NamsStore)
    assert bare.store.base_url == "http://127.0.0.1:9/v1"
    assert bare.store.workspace_id == "env-ws"
    assert bare.store._http._headers()["Authorization"] == "Bearer env-key"
    assert "env-key" not in repr(bare)
    for url, base in [
        ("https://h.test/v1", "https://h.test/v1"),
        ("nams+https://h.test", "https://h.test/v1"),
        ("nams+http://127.0.0.1:8/api/v1/", "http://127.0.0.1:8/api/v1"),
    ]:
        opened = open_backend(url, backend="nams")
        assert isinstance(opened.store, NamsStore) and opened.store.base_url == base
    for url in ("nams+https://user:pw@h.test/v1", "nams+https://h.test/v1?api_key=x"):
        with pytest.raises(ConfigurationError) as caught:
            open_backend(url)
        assert "pw" not in str(caught.value) and "api_key=x" not in str(caught.value)
    monkeypatch.delenv("MEMORY_ENDPOINT")
    with pytest.raises(ConfigurationError, match="MEMORY_ENDPOINT"):
        open_backend("nams://")
    with pytest.raises(ConfigurationError):
        open_backend("nams+https://h.test/v1", max_retries=-1)
    with pytest.raises(ConfigurationError):
        open_backend("nams+https://h.test/v1", unknown_option=1)


def test_capabilities_declared() -> None:
    caps = NamsStore.server_capabilities
    assert caps.max_messages_per_read == 200 and caps.default_messages_per_read == 200
    assert caps.max_page_size == 200 and caps.max_bulk_messages == 100
    assert caps.observations and caps.reflections and caps.extraction_status and caps.entities
    assert caps.trio
    assert not (caps.client_chosen_ids or caps.delete_message or caps.message_metadata)
    assert not caps.message_neighbours  # the hosted wire has no read around a message
    assert not caps.auto_create_conversation
    server = open_backend("nams+https://h.test/v1", session_names="server")
    assert server.capabilities is caps
    assert not caps.user_scoped_calls and caps.max_search_hits == 200
    # Portable names (the default) change exactly the naming flags: names are the caller's,
    # created on first write, and looked up per user.
    portable = open_backend("nams+https://h.test/v1")
    assert portable.capabilities is NamsStore.capabilities
    assert portable.capabilities == dataclasses.replace(
        caps, client_chosen_ids=True, auto_create_conversation=True, user_scoped_calls=True
    )
    with pytest.raises(ConfigurationError, match="session_names"):
        open_backend("nams+https://h.test/v1", session_names="names")
    with pytest.raises(ConfigurationError, match="session_index"):
        open_backend("nams+https://h.test/v1", session_names="server", session_index="x.db")
    with pytest.raises(NotSupportedError):
        open_backend("nams+https://h.test/v1", multi_tenant=True)


async def test_limits_option_is_honoured() -> None:
    from memory_core import InvalidRequestError, Limits

    backend = open_backend(
        "nams+https://h.test/v1", api_key="k", limits=Limits(max_content_chars=5)
    )
    assert backend.limits.max_content_chars == 5
    with pytest.raises(InvalidRequestError) as info:
        await backend.add_message("s", "user", "too long")  # refused before any request
    assert info.value.argument == "content"
