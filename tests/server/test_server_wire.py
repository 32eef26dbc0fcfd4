"""The NAMS-compatible server's wire behaviour, tested directly with httpx over a real
socket: routes, casing, envelopes, limits, status codes, paging, keys and workspaces."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any, cast

import httpx
import pytest

from memory_core import nams_wire as wire
from memory_core_dev.nams_server import BOUND_KEY, BOUND_WORKSPACE, NamsTestServer

pytestmark = pytest.mark.nams


@pytest.fixture
def http(nams_server: NamsTestServer, workspace: str) -> Iterator[httpx.Client]:
    """A client of the shared server acting in a fresh workspace."""
    with nams_server.client(workspace) as c:
        yield c


def create(http: httpx.Client, **body: Any) -> dict[str, Any]:
    response = http.post("/conversations", json=body)
    assert response.status_code == 201, response.text
    return cast(dict[str, Any], response.json())


def bulk(http: httpx.Client, cid: str, count: int, start: int = 0) -> None:
    items = [{"role": "user", "content": f"m{i}"} for i in range(start, start + count)]
    response = http.post(f"/conversations/{cid}/messages/bulk", json={"messages": items})
    assert response.status_code == 201, response.text


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = cast(dict[str, Any], response.json())
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body


# ----------------------------------------------------------------- conversations


def test_create_issues_uuid_and_answers_camel_case(http: httpx.Client, workspace: str) -> None:
    data = create(http, userId="alice", metadata={"k": [1, {"b": True}]})
    # The backing conversation's id: a UUID in canonical form (version 5 on the embedded
    # and Bolt stores: derived from a random session name, so no more guessable).
    assert str(uuid.UUID(data["id"])) == data["id"]
    assert data["userId"] == "alice"
    assert data["workspaceId"] == workspace
    assert data["metadata"] == {"k": [1, {"b": True}]}
    assert {"createdAt", "updatedAt"} <= set(data)
    assert not any("_" in key for key in data)


def test_each_create_gets_a_new_id(http: httpx.Client) -> None:
    assert create(http)["id"] != create(http)["id"]


def test_get_conversation_is_header_only(http: httpx.Client) -> None:
    cid = create(http)["id"]
    bulk(http, cid, 3)
    header = http.get(f"/conversations/{cid}").json()
    assert header["id"] == cid
    assert "messages" not in header
    assert set(header) == {"id", "userId", "workspaceId", "metadata", "createdAt", "updatedAt"}


def test_unknown_conversation_is_404_with_envelope(http: httpx.Client) -> None:
    for cid in (str(uuid.uuid4()), "not-a-uuid", "a%2Fb"):
        assert_error(http.get(f"/conversations/{cid}"), 404, "not_found")
        assert_error(http.get(f"/conversations/{cid}/messages"), 404, "not_found")
        body = {"role": "user", "content": "x"}
        assert_error(http.post(f"/conversations/{cid}/messages", json=body), 404, "not_found")
        assert_error(http.delete(f"/conversations/{cid}"), 404, "not_found")


def test_wrong_method_is_405_with_envelope(http: httpx.Client) -> None:
    cid = create(http)["id"]
    assert_error(http.put(f"/conversations/{cid}"), 405, "method_not_allowed")
    assert_error(http.patch("/conversations"), 405, "method_not_allowed")
    assert_error(http.delete(f"/conversations/{cid}/messages"), 405, "method_not_allowed")


def test_delete_then_gone(http: httpx.Client) -> None:
    cid = create(http)["id"]
    bulk(http, cid, 2)
    response = http.delete(f"/conversations/{cid}")
    assert response.status_code == 204 and not response.content
    assert_error(http.get(f"/conversations/{cid}"), 404, "not_found")
    assert_error(http.delete(f"/conversations/{cid}"), 404, "not_found")


# ----------------------------------------------------------------- messages


def test_post_message_response_has_no_created_at(http: httpx.Client) -> None:
    cid = create(http)["id"]
    response = http.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "hi"})
    assert response.status_code == 201
    data = response.json()
    assert "createdAt" not in data
    assert data["conversationId"] == cid
    assert data["role"] == "user" and data["content"] == "hi"
    uuid.UUID(data["id"])


def test_messages_newest_first_default_50_max_200(http: httpx.Client) -> None:
    cid = create(http)["id"]
    bulk(http, cid, 100)
    bulk(http, cid, 100, start=100)
    bulk(http, cid, 10, start=200)
    default = http.get(f"/conversations/{cid}/messages").json()["messages"]
    assert [m["content"] for m in default] == [f"m{i}" for i in range(209, 159, -1)]
    assert all("createdAt" in m and m["conversationId"] == cid for m in default)
    most = http.get(f"/conversations/{cid}/messages", params={"limit": 200}).json()["messages"]
    assert [m["content"] for m in most] == [f"m{i}" for i in range(209, 9, -1)]
    one = http.get(f"/conversations/{cid}/messages", params={"limit": 1}).json()["messages"]
    assert [m["content"] for m in one] == ["m209"]


@pytest.mark.parametrize("limit", ["0", "201", "-1", "abc", "1.5", "1000"])
def test_limit_outside_range_is_invalid_limit(http: httpx.Client, limit: str) -> None:
    cid = create(http)["id"]
    params = {"limit": limit}
    assert_error(http.get(f"/conversations/{cid}/messages", params=params), 400, "invalid_limit")
    assert_error(http.get("/conversations", params=params), 400, "invalid_limit")


def test_search_limit_is_checked(http: httpx.Client) -> None:
    cid = create(http)["id"]
    for limit in (0, 201):
        response = http.post(f"/conversations/{cid}/search", json={"query": "x", "limit": limit})
        assert_error(response, 400, "invalid_limit")


def test_bulk_limits(http: httpx.Client) -> None:
    cid = create(http)["id"]
    items = [{"role": "user", "content": str(i)} for i in range(101)]
    response = http.post(f"/conversations/{cid}/messages/bulk", json={"messages": items})
    assert_error(response, 400, "bulk_too_large")
    response = http.post(f"/conversations/{cid}/messages/bulk", json={"messages": []})
    assert_error(response, 400, "invalid_request")
    assert http.get(f"/conversations/{cid}/messages").json()["messages"] == []
    response = http.post(f"/conversations/{cid}/messages/bulk", json={"messages": items[:100]})
    assert response.status_code == 201
    stored = response.json()["messages"]
    assert [m["content"] for m in stored] == [str(i) for i in range(100)]


def test_bad_bodies_are_invalid_request(http: httpx.Client) -> None:
    cid = create(http)["id"]
    for body in ({"role": "robot", "content": "x"}, {"content": "x"}, {"role": "user"}):
        response = http.post(f"/conversations/{cid}/messages", json=body)
        assert_error(response, 400, "invalid_request")
    response = http.post(f"/conversations/{cid}/messages", content=b"{not json")
    assert_error(response, 400, "invalid_request")
    assert http.get(f"/conversations/{cid}/messages").json()["messages"] == []


def test_content_round_trips_exactly(http: httpx.Client) -> None:
    cid = create(http)["id"]
    texts = ["", "x" * 12_000, "👩‍👩‍👧 ok", 'tab\tnl\n"q"\\', "nul\x00end"]
    for text in texts:
        response = http.post(
            f"/conversations/{cid}/messages", json={"role": "tool", "content": text}
        )
        assert response.json()["content"] == text
    listed = http.get(f"/conversations/{cid}/messages").json()["messages"]
    assert [m["content"] for m in reversed(listed)] == texts


def test_search_returns_scored_messages_and_search_type(http: httpx.Client) -> None:
    cid = create(http)["id"]
    http.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "zebra crossing"})
    http.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "nothing here"})
    data = http.post(f"/conversations/{cid}/search", json={"query": "zebra"}).json()
    assert data["searchType"] == "text"
    assert [m["content"] for m in data["messages"]] == ["zebra crossing"]
    assert isinstance(data["messages"][0]["score"], float)


def test_context_observations_reflections_and_extraction_status(http: httpx.Client) -> None:
    cid = create(http)["id"]
    bulk(http, cid, 3)
    context = http.get(f"/conversations/{cid}/context").json()
    assert set(context) == {"reflections", "observations", "recentMessages"}
    assert context["reflections"] == [] and context["observations"] == []
    assert [m["content"] for m in context["recentMessages"]] == ["m2", "m1", "m0"]
    assert http.get(f"/conversations/{cid}/observations").json() == {"observations": []}
    assert http.get(f"/conversations/{cid}/reflections").json() == {"reflections": []}
    status = http.get(f"/conversations/{cid}/extraction-status").json()
    assert status["summary"] == {"completed": 3}
    assert [m["status"] for m in status["messages"]] == ["completed"] * 3


# ----------------------------------------------------------------- listing


def test_cursor_paging(http: httpx.Client) -> None:
    made = [create(http, userId="u")["id"] for _ in range(7)]
    seen: list[str] = []
    pages = []
    params: dict[str, Any] = {"limit": 3}
    while True:
        page = http.get("/conversations", params=params).json()
        assert set(page) == {"conversations", "next_cursor"}
        pages.append(len(page["conversations"]))
        seen += [c["id"] for c in page["conversations"]]
        if page["next_cursor"] is None:
            break
        params = {"limit": 3, "cursor": page["next_cursor"]}
    assert pages == [3, 3, 1]
    assert seen == list(reversed(made))  # most recently updated first


def test_listing_default_page_is_50(http: httpx.Client) -> None:
    made = {create(http)["id"] for _ in range(51)}
    page = http.get("/conversations").json()
    assert len(page["conversations"]) == 50
    assert page["next_cursor"]
    rest = http.get("/conversations", params={"cursor": page["next_cursor"]}).json()
    assert len(rest["conversations"]) == 1 and rest["next_cursor"] is None
    assert {c["id"] for c in page["conversations"] + rest["conversations"]} == made


def test_listing_follows_updates_and_filters_by_user(http: httpx.Client) -> None:
    first = create(http, userId="ann")["id"]
    second = create(http, userId="bob")["id"]
    http.post(f"/conversations/{first}/messages", json={"role": "user", "content": "bump"})
    ids = [c["id"] for c in http.get("/conversations").json()["conversations"]]
    assert ids == [first, second]
    only = http.get("/conversations", params={"userId": "bob"}).json()["conversations"]
    assert [c["id"] for c in only] == [second]


def test_invalid_cursor(http: httpx.Client) -> None:
    assert_error(http.get("/conversations", params={"cursor": "%%%"}), 400, "invalid_cursor")
    assert_error(http.get("/conversations", params={"cursor": "e30"}), 400, "invalid_cursor")


# ----------------------------------------------------------------- entities


def test_entities_create_merge_and_search(http: httpx.Client) -> None:
    response = http.post("/entities", json={"name": "Ada Lovelace", "type": "person"})
    assert response.status_code == 201
    ada = response.json()
    assert ada["type"] == "person" and ada["name"] == "Ada Lovelace"
    assert "resolution" not in ada or ada["resolution"] is None
    again = http.post("/entities", json={"name": "ada lovelace", "type": "person"}).json()
    assert again["resolution"] == "merged" and again["mergedInto"] == ada["id"]
    found = http.post("/entities/search", json={"query": "ADA LOVELACE"}).json()
    assert found["searchType"] == "text"
    assert [e["id"] for e in found["entities"]] == [ada["id"]]
    response = http.post("/entities", json={"name": "x", "type": "OBJECT"})
    assert_error(response, 400, "invalid_request")


# ----------------------------------------------------------------- keys and workspaces


def test_missing_or_wrong_key_is_401(nams_server: NamsTestServer) -> None:
    url = nams_server.base_url + "/conversations"
    response = httpx.get(url, trust_env=False)
    assert_error(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == "Bearer"
    assert_error(
        httpx.get(url, headers={"Authorization": "Bearer wrong"}, trust_env=False),
        401,
        "unauthorized",
    )
    assert_error(
        httpx.get(url, headers={"Authorization": "Basic abc"}, trust_env=False), 401, "unauthorized"
    )


def test_bound_key_stays_in_its_workspace(nams_server: NamsTestServer) -> None:
    url = nams_server.base_url + "/conversations"
    own = httpx.post(url, json={}, headers=nams_server.headers(key=BOUND_KEY), trust_env=False)
    assert own.json()["workspaceId"] == BOUND_WORKSPACE
    other = httpx.get(url, headers=nams_server.headers("elsewhere", key=BOUND_KEY), trust_env=False)
    assert_error(other, 403, "forbidden")
    same = httpx.get(
        url, headers=nams_server.headers(BOUND_WORKSPACE, key=BOUND_KEY), trust_env=False
    )
    assert same.status_code == 200


def test_workspaces_never_see_each_other(nams_server: NamsTestServer) -> None:
    a = nams_server.headers(NamsTestServer.workspace("a"))
    b = nams_server.headers(NamsTestServer.workspace("b"))
    with httpx.Client(base_url=nams_server.base_url, trust_env=False) as http:
        cid = http.post("/conversations", json={}, headers=a).json()["id"]
        http.post(
            f"/conversations/{cid}/messages", json={"role": "user", "content": "secret"}, headers=a
        )
        http.post("/entities", json={"name": "Secret", "type": "concept"}, headers=a)
        for method, route, body in [
            ("GET", f"/conversations/{cid}", None),
            ("GET", f"/conversations/{cid}/messages", None),
            ("GET", f"/conversations/{cid}/context", None),
            ("POST", f"/conversations/{cid}/messages", {"role": "user", "content": "x"}),
            ("POST", f"/conversations/{cid}/search", {"query": "secret"}),
            ("DELETE", f"/conversations/{cid}", None),
        ]:
            assert_error(http.request(method, route, json=body, headers=b), 404, "not_found")
        assert http.get("/conversations", headers=b).json()["conversations"] == []
        found = http.post("/entities/search", json={"query": "Secret"}, headers=b).json()
        assert found["entities"] == []
        texts = http.get(f"/conversations/{cid}/messages", headers=a).json()["messages"]
        assert [m["content"] for m in texts] == ["secret"]


def test_invalid_workspace_header(nams_server: NamsTestServer) -> None:
    response = httpx.get(
        nams_server.base_url + "/conversations",
        headers=nams_server.headers("bad workspace!"),
        trust_env=False,
    )
    assert_error(response, 400, "invalid_request")


# ----------------------------------------------------------------- operations


def test_openapi_document(nams_server: NamsTestServer) -> None:
    root = nams_server.base_url.removesuffix("/v1")
    doc = httpx.get(root + "/openapi.json", trust_env=False).json()
    for route in (wire.CONVERSATIONS, wire.MESSAGES, wire.MESSAGES_BULK, wire.ENTITIES_SEARCH):
        assert "/v1" + route in doc["paths"]
    created = doc["paths"]["/v1" + wire.MESSAGES]["post"]["responses"]["201"]
    schema = created["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert "createdAt" not in doc["components"]["schemas"][schema]["properties"]


def test_one_log_line_per_request_without_secrets(
    nams_server: NamsTestServer, workspace: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="memory_core.server")
    with nams_server.client(workspace) as c:
        cid = c.post("/conversations", json={}).json()["id"]
        c.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "TOPSECRET"})
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == "memory_core.server" and f"workspace={workspace}" in r.getMessage()
    ]
    assert len(lines) == 2
    assert lines[0].startswith("POST /v1/conversations 201 ")
    assert lines[1].startswith(f"POST /v1/conversations/{cid}/messages 201 ")
    text = caplog.text
    assert "TOPSECRET" not in text
    assert "test-key" not in text


def test_admin_routes_turn_knobs(nams_server: NamsTestServer, workspace: str) -> None:
    root = nams_server.base_url.removesuffix("/v1")
    headers = nams_server.headers(workspace)
    response = httpx.post(
        root + "/_admin/faults",
        json={"rate_limit": 1, "retry_after": 7},
        headers=headers,
        trust_env=False,
    )
    assert response.json()["rate_limit"] == 1
    limited = httpx.get(nams_server.base_url + "/conversations", headers=headers, trust_env=False)
    assert_error(limited, 429, "rate_limited")
    assert limited.headers["retry-after"] == "7"
    again = httpx.get(nams_server.base_url + "/conversations", headers=headers, trust_env=False)
    assert again.status_code == 200
    traffic = httpx.get(root + "/_admin/traffic", headers=headers, trust_env=False).json()
    assert [t["status"] for t in traffic if t["workspace"] == workspace][-1] == 200
    assert httpx.get(root + "/_admin/faults", trust_env=False).status_code == 401


def test_admin_routes_are_off_by_default() -> None:
    from memory_core_dev.nams_server import start_nams_server

    with start_nams_server(admin=False) as server:
        root = server.base_url.removesuffix("/v1")
        hidden = httpx.get(root + "/_admin/faults", headers=server.headers(), trust_env=False)
        assert hidden.status_code == 404


def test_a_failing_summarizer_is_a_500_envelope() -> None:
    from memory_core_dev.nams_server import start_nams_server

    def broken(messages: list[Any]) -> str:
        raise RuntimeError("summarizer down")

    server = start_nams_server(summarizer=broken, observation_window=1)
    with server, server.client("w") as http:
        cid = create(http)["id"]
        http.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "x"})
        assert_error(http.get(f"/conversations/{cid}/observations"), 500, "internal_error")
        # the keep-alive connection survives the error
        assert http.get(f"/conversations/{cid}/messages").status_code == 200
    assert len({r.client for r in server.traffic.records()}) == 1


def test_traffic_marks_keep_counting_once_the_record_is_full() -> None:
    """``since(mark)`` used positions in the bounded record: once it held its 10,000
    requests every later count was 0 (the full bench reported 0 requests per turn)."""
    from memory_core.server.traffic import RequestRecord, Traffic

    def record(n: int) -> RequestRecord:
        return RequestRecord("GET", f"/r{n}", 200, ("127.0.0.1", 1), "w", 0.1)

    traffic = Traffic(size=10)
    for n in range(15):
        traffic.add(record(n))
    mark = traffic.total
    for n in range(15, 19):
        traffic.add(record(n))
    assert [r.path for r in traffic.since(mark)] == ["/r15", "/r16", "/r17", "/r18"]
    assert traffic.since(traffic.total) == []
    traffic.clear()
    traffic.add(record(19))
    assert [r.path for r in traffic.since(mark)] == ["/r19"]


@pytest.mark.anyio
@pytest.mark.parametrize("admin", [False, True])
async def test_requests_are_recorded_only_for_the_test_admin_routes(
    admin: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """Only ``/_admin/traffic`` reads the record of requests, with their full paths: a
    server without it kept 10,000 of them (10,000 keyless requests: RSS 53 -> 202 MB)."""
    from memory_core.server import create_app

    caplog.set_level(logging.INFO, logger="memory_core.server")
    app = create_app("memory://", api_keys=["traffic-key"], admin=admin, telemetry=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        for n in range(5):
            assert (await client.get(f"/v1/conversations/{n}{'x' * 1000}")).status_code == 401
        listed = await client.get(
            "/_admin/traffic", headers={"Authorization": "Bearer traffic-key"}
        )
    lines = [r.getMessage() for r in caplog.records if r.name == "memory_core.server"]
    assert len([line for line in lines if " 401 " in line]) == 5  # each is still logged
    if not admin:
        assert app.state.traffic is None and listed.status_code == 404
        return
    paths = [r["path"] for r in listed.json()]
    assert paths[:5] == [f"/v1/conversations/{n}{'x' * 1000}" for n in range(5)]
    assert len(app.state.traffic.records()) == 6  # the listing itself is recorded too
