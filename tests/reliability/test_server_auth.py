"""Authentication on every route of the server's own OpenAPI document: a missing key, a
wrong key and a key of another workspace are refused, and reveal nothing of the data."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from memory_core_dev.nams_server import (
    API_KEY,
    BOUND_KEY,
    BOUND_WORKSPACE,
    NamsTestServer,
)

BODIES: dict[str, Any] = {
    "/v1/conversations": {"metadata": {"k": 1}},
    "/v1/conversations/{conversation_id}/messages": {"role": "user", "content": "secret"},
    "/v1/conversations/{conversation_id}/messages/bulk": {
        "messages": [{"role": "user", "content": "secret"}]
    },
    "/v1/conversations/{conversation_id}/search": {"query": "secret"},
    "/v1/entities": {"name": "Secret Person", "type": "person"},
    "/v1/entities/search": {"query": "Secret Person"},
}


def routes(server: NamsTestServer) -> list[tuple[str, str]]:
    with httpx.Client(trust_env=False) as http:
        document = http.get(server.base_url.removesuffix("/v1") + "/openapi.json").json()
    found = [
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method in operations
        if path.startswith(("/v1", "/_admin"))
    ]
    assert len(found) >= 15, found
    return found


def call(
    server: NamsTestServer,
    method: str,
    path: str,
    conversation_id: str,
    headers: dict[str, str],
) -> httpx.Response:
    url = server.base_url.removesuffix("/v1") + path.replace("{conversation_id}", conversation_id)
    body = BODIES.get(path) if method == "POST" else None
    if path == "/_admin/faults" and method == "POST":
        body = {"latency": 0}
    with httpx.Client(trust_env=False) as http:
        return http.request(method, url, json=body, headers=headers)


VICTIM_WORKSPACE = NamsTestServer.workspace("victim")


@pytest.fixture(scope="module")
def victim(nams_server: NamsTestServer) -> str:
    """A conversation with a message and an entity, in a workspace of its own."""
    workspace = VICTIM_WORKSPACE
    with nams_server.client(workspace) as http:
        created = http.post("/conversations", json={"metadata": {"owner": "victim"}})
        cid = str(created.json()["id"])
        http.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "secret"})
        http.post("/entities", json={"name": "Secret Person", "type": "person"})
    return cid


def test_every_route_refuses_missing_and_wrong_keys(
    nams_server: NamsTestServer, victim: str
) -> None:
    for method, path in routes(nams_server):
        for headers in ({}, {"Authorization": "Bearer wrong-key"}, {"Authorization": "Basic x"}):
            response = call(nams_server, method, path, victim, headers)
            assert response.status_code == 401, (method, path, headers, response.text)
            assert response.json()["error"]["code"] == "unauthorized"
            assert "secret" not in response.text.lower()


def test_another_workspace_key_sees_nothing(nams_server: NamsTestServer, victim: str) -> None:
    """The key bound to team-a: naming another workspace is 403; acting in its own
    workspace on the victim's conversation is 404, on its own lists empty."""
    for method, path in routes(nams_server):
        if path.startswith("/_admin"):
            continue
        forbidden = call(
            nams_server,
            method,
            path,
            victim,
            {"Authorization": f"Bearer {BOUND_KEY}", "X-Workspace-Id": "someone-else"},
        )
        assert forbidden.status_code == 403, (method, path, forbidden.text)
        own = call(nams_server, method, path, victim, {"Authorization": f"Bearer {BOUND_KEY}"})
        assert "secret" not in own.text.lower() or method == "POST", (method, path, own.text)
        if "{conversation_id}" in path:
            assert own.status_code == 404, (method, path, own.text)
    # Nothing the bound key did reached the victim's conversation, or leaked into its own.
    with nams_server.client(BOUND_WORKSPACE, API_KEY) as http:
        assert victim not in http.get("/conversations").text
    with nams_server.client(VICTIM_WORKSPACE, API_KEY) as http:
        messages = http.get(f"/conversations/{victim}/messages").json()["messages"]
        assert [m["content"] for m in messages] == ["secret"]
