"""NAMS client spans, and one trace from the app's call through the server to SQLite."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from memory_core import MemoryBackend, NotFoundError
from memory_core_dev.nams_server import API_KEY, NamsTestServer, start_nams_server

from .conftest import Recorded, no_content

pytestmark = [pytest.mark.anyio, pytest.mark.nams]

SECRET = "the door code is 0451"


async def test_a_nams_call_is_a_client_span_over_an_http_span(
    otel: Recorded, nams_server: NamsTestServer
) -> None:
    workspace = nams_server.workspace("otel")
    async with nams_server.backend(workspace, telemetry=otel.telemetry()) as backend:
        conversation = await backend.create_conversation("otel-session")
        stored = await backend.add_message(conversation.id, "user", SECRET)
    [memory] = otel.named("create_memory")
    assert memory.kind is SpanKind.CLIENT
    assert memory.attributes["memory_core.backend"] == "nams"
    assert memory.attributes["gen_ai.memory.store.id"] == str(conversation.id)
    assert memory.attributes["gen_ai.memory.record.id"] == str(stored.id)
    [http] = otel.children(memory)
    assert http.name == "POST"
    assert http.kind is SpanKind.CLIENT
    attributes = dict(http.attributes or {})
    assert attributes["http.request.method"] == "POST"
    assert attributes["http.response.status_code"] in (200, 201)
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["server.port"] == int(nams_server.base_url.split(":")[2].split("/")[0])
    assert attributes["url.full"].endswith(f"/v1/conversations/{conversation.id}/messages")
    assert "?" not in attributes["url.full"]
    no_content(otel.spans(), SECRET, API_KEY)
    ops = {p.attributes["http.request.method"] for p in otel.points("http.client.request.duration")}
    assert ops == {"POST"}


async def test_an_http_error_is_an_error_on_both_spans(
    otel: Recorded, nams_server: NamsTestServer
) -> None:
    async with nams_server.backend(
        nams_server.workspace("otel"), telemetry=otel.telemetry()
    ) as backend:
        with pytest.raises(NotFoundError):
            await backend.get_conversation(conversation_id=uuid.uuid4())
    [memory] = otel.named("search_memory")
    assert memory.status.status_code is StatusCode.ERROR
    assert memory.attributes["error.type"] == "NotFoundError"
    requests = otel.children(memory)
    assert len(requests) == 2  # the header and the messages, sent at once: both 404
    for http in requests:
        assert http.status.status_code is StatusCode.ERROR
        assert http.attributes["error.type"] == "404"
        assert http.attributes["http.response.status_code"] == 404


async def _server_span(otel: Recorded, trace_id: int) -> None:
    """Wait for the server span of the trace: it ends once the answer is sent, a moment
    after the client has it (an earlier request's may still end after the exporter was
    cleared, so any server span will not do)."""
    with anyio.fail_after(5):
        while not any(
            s.kind is SpanKind.SERVER and s.context.trace_id == trace_id for s in otel.spans()
        ):
            await anyio.sleep(0.01)


@pytest.fixture
def traced_server(otel: Recorded) -> Iterator[NamsTestServer]:
    """A private server whose spans go to this test's providers."""
    server = start_nams_server("memory://", telemetry=otel.telemetry())
    try:
        yield server
    finally:
        server.stop()


async def test_client_server_and_store_are_one_trace(
    otel: Recorded, traced_server: NamsTestServer
) -> None:
    workspace = traced_server.workspace("trace")
    async with traced_server.backend(workspace, telemetry=otel.telemetry()) as backend:
        conversation = await backend.create_conversation("otel-session")
        otel.exporter.clear()
        await backend.add_message(conversation.id, "user", SECRET)
    [client] = [s for s in otel.named("create_memory") if s.kind is SpanKind.CLIENT]
    await _server_span(otel, client.context.trace_id)
    # Everything of the add_message call, on both sides, is in the client span's trace.
    spans = [s for s in otel.spans() if s.context.trace_id == client.context.trace_id]
    [http] = otel.children(client)
    [server] = [s for s in spans if s.kind is SpanKind.SERVER]
    [hosted] = [s for s in spans if s.attributes.get("memory_core.backend") == "embedded"]
    [sqlite] = [s for s in spans if s.attributes.get("db.system.name") == "sqlite"]
    assert len(spans) == 5
    assert server.parent is not None and server.parent.span_id == http.context.span_id
    assert server.parent.is_remote
    assert hosted.parent is not None and hosted.parent.span_id == server.context.span_id
    assert sqlite.parent is not None and sqlite.parent.span_id == hosted.context.span_id
    assert server.name == "POST /v1/conversations/{conversation_id}/messages"
    attributes: dict[str, Any] = dict(server.attributes or {})
    assert attributes["memory_core.workspace"] == workspace
    assert attributes["http.route"] == "/v1/conversations/{conversation_id}/messages"
    assert attributes["http.response.status_code"] in (200, 201)
    no_content(spans, SECRET, API_KEY)
    routes = {
        (p.attributes["http.request.method"], p.attributes["http.route"]): p.count
        for p in otel.points("http.server.request.duration")
    }
    assert routes[("POST", "/v1/conversations/{conversation_id}/messages")] == 1


def portable(otel: Recorded, server: NamsTestServer, name: str) -> MemoryBackend:
    """A portable-mode backend, traced into ``otel``, on a new workspace."""
    return server.backend(
        server.workspace(name), session_names="portable", telemetry=otel.telemetry()
    )


def operations(otel: Recorded) -> list[tuple[str, Any]]:
    """(method, ``memory_core.nams.operation``) of each HTTP client span, in order."""
    http = [s for s in otel.spans() if "memory_core.nams.operation" in (s.attributes or {})]
    return [(s.name, (s.attributes or {})["memory_core.nams.operation"]) for s in http]


async def test_each_retry_is_a_span_counting_its_resends(
    otel: Recorded, nams_server: NamsTestServer
) -> None:
    workspace = nams_server.workspace("otel")
    async with nams_server.backend(workspace, telemetry=otel.telemetry()) as backend:
        before = len(otel.spans())
        nams_server.faults.set(unavailable=2, unavailable_retry_after=0.01)
        assert await backend.list_conversations(limit=3) == []
    http = [span for span in otel.spans()[before:] if span.name == "GET"]
    assert [span.attributes.get("http.response.status_code") for span in http] == [503, 503, 200]
    resends = [span.attributes.get("http.request.resend_count") for span in http]
    assert resends == [None, 1, 2]


async def test_each_request_names_its_contract_method_or_the_name_lookup(
    otel: Recorded, nams_server: NamsTestServer
) -> None:
    async with portable(otel, nams_server, "otel") as backend:
        await backend.add_message("chat", "user", "hi")
        await backend.create_conversation("chat")  # remembered: one read of its header
    assert operations(otel) == [
        ("GET", "resolve_session"),
        ("POST", "create_conversation"),
        ("GET", "resolve_session"),
        ("POST", "add_message"),
        ("GET", "create_conversation"),
    ]


async def test_a_read_a_new_names_create_and_a_clear_name_their_requests(
    otel: Recorded, nams_server: NamsTestServer
) -> None:
    async with portable(otel, nams_server, "otel-read") as backend:
        await backend.add_message("chat", "user", "hi")
        otel.exporter.clear()
        await backend.get_conversation("chat")  # remembered: its header, then its messages
        await backend.create_conversation("new")  # the lookup's header: no read of it
        await backend.clear_session("new")
    assert operations(otel) == [
        ("GET", "get_conversation"),
        ("GET", "get_conversation"),
        ("GET", "resolve_session"),
        ("POST", "create_conversation"),
        ("GET", "resolve_session"),
        ("DELETE", "clear_session"),
    ]


async def test_a_name_shaped_like_a_server_id_is_first_looked_up_as_one(
    otel: Recorded, nams_server: NamsTestServer
) -> None:
    workspace = nams_server.workspace("otel-uuid-name")
    name = str(uuid.uuid4())
    async with nams_server.backend(
        workspace, session_names="portable", telemetry=otel.telemetry()
    ) as backend:
        await backend.add_message(name, "user", "hi")
    http = [s for s in otel.spans() if "memory_core.nams.operation" in (s.attributes or {})]
    first = http[0].attributes or {}
    assert http[0].name == "GET" and first["memory_core.nams.operation"] == "resolve_session"
    assert str(first["url.full"]).endswith(f"/v1/conversations/{name}")
    assert first["http.response.status_code"] == 404
    assert [s.name for s in http[1:3]] == ["GET", "POST"]  # then the listing, the create


async def _server_spans(otel: Recorded, count: int) -> list[Any]:
    """The server spans once ``count`` of them ended (each ends a moment after its answer)."""
    with anyio.fail_after(10):
        while len(found := [s for s in otel.spans() if s.kind is SpanKind.SERVER]) < count:
            await anyio.sleep(0.01)
    return found


async def test_made_up_methods_are_one_series_and_one_span_name(
    otel: Recorded, traced_server: NamsTestServer
) -> None:
    """Each method a keyless client makes up was a metric series and a span name of its
    own (4,000 requests, 3,999 series): the conventions record it as ``_OTHER``."""
    import httpx

    made_up = [f"MADEUP{n}" for n in range(40)]
    async with httpx.AsyncClient(base_url=traced_server.base_url, trust_env=False) as http:
        for method in [*made_up, "DELETE"]:
            assert (await http.request(method, "/conversations")).status_code == 401
    spans = await _server_spans(otel, len(made_up) + 1)
    assert sorted({s.name for s in spans}) == ["DELETE", "HTTP"]
    originals = [s.attributes.get("http.request.method_original") for s in spans]
    assert sorted(filter(None, originals)) == sorted(made_up)
    series = {
        (p.attributes["http.request.method"], p.attributes["http.response.status_code"]): p.count
        for p in otel.points("http.server.request.duration")
    }
    assert series == {("_OTHER", 401): len(made_up), ("DELETE", 401): 1}


async def test_a_matched_route_keeps_http_as_the_method_of_its_span_name(
    otel: Recorded, traced_server: NamsTestServer
) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=traced_server.base_url, trust_env=False) as http:
        headers = traced_server.headers(traced_server.workspace("otel-method"))
        answer = await http.request("BREW", "/conversations", headers=headers)
        assert answer.status_code == 405
    [span] = await _server_spans(otel, 1)
    assert span.name == "HTTP /v1/conversations"
    assert span.attributes["http.request.method"] == "_OTHER"
    assert span.attributes["http.request.method_original"] == "BREW"


def test_the_known_methods_can_be_replaced_by_the_environment() -> None:
    from memory_core.telemetry.runtime import KNOWN_METHODS, KNOWN_METHODS_ENV, known_methods

    assert known_methods({}) == KNOWN_METHODS and "PATCH" in KNOWN_METHODS
    assert known_methods({KNOWN_METHODS_ENV: "GET, PROPFIND,,"}) == {"GET", "PROPFIND"}
