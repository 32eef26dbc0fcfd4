"""The server's routes outside the API (issue 25, item 13): the trailing-slash redirect
never builds its ``Location`` from the ``Host`` header; ``/health`` and ``/openapi.json``
answer without a key and give nothing away (no backend, no key, no data).

Before: ``GET /v1/conversations/`` with ``Host: evil.example`` was redirected to
``http://evil.example/v1/conversations``; there was no ``/health``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memory_core_dev.nams_server import API_KEY, NamsTestServer, start_nams_server

SECRET_KEY = "key-that-must-not-leak"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NamsTestServer]:
    path = tmp_path_factory.mktemp("routes") / "private-store-name.db"
    started = start_nams_server(f"sqlite:///{path}", api_keys=[API_KEY, SECRET_KEY])
    try:
        yield started
    finally:
        started.stop()


def root(server: NamsTestServer) -> str:
    return server.base_url.removesuffix("/v1")


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("/v1/conversations/", "/v1/conversations"),
        ("/v1/conversations//?limit=2&userId=a%20b", "/v1/conversations?limit=2&userId=a%20b"),
        ("/openapi.json/", "/openapi.json"),
        ("/health/", "/health"),
    ],
)
@pytest.mark.parametrize("host", ["evil.example", "evil.example/x?", "[::1]:1", "a@b"])
def test_trailing_slash_redirect_is_relative_whatever_the_host(
    server: NamsTestServer, path: str, location: str, host: str
) -> None:
    headers = {**server.headers("routes"), "Host": host}
    with httpx.Client(trust_env=False) as http:
        response = http.get(root(server) + path, headers=headers)
    assert response.status_code == 307
    assert response.headers["location"] == location


def test_redirect_never_leaves_the_server_and_needs_the_key(server: NamsTestServer) -> None:
    with httpx.Client(trust_env=False) as http:
        for path in ("//evil.example/", "//evil.example/v1/conversations/", "/nothing/"):
            response = http.get(root(server) + path, headers=server.headers("routes"))
            assert response.status_code == 404, path
        response = http.get(root(server) + "/v1/conversations/", headers={"Host": "evil.example"})
        assert response.status_code == 401  # the key is checked before any redirect
        assert "location" not in response.headers


def test_health_needs_no_key_and_tells_nothing(server: NamsTestServer) -> None:
    with httpx.Client(trust_env=False) as http:
        for headers in ({}, {"Authorization": "Bearer wrong"}, server.headers("routes")):
            response = http.get(root(server) + "/health", headers=headers)
            assert response.status_code == 200
            assert response.json() == {"status": "ok"}
        assert http.post(root(server) + "/health").status_code == 405


def test_openapi_needs_no_key_and_holds_no_secret(server: NamsTestServer) -> None:
    with httpx.Client(trust_env=False) as http:
        response = http.get(root(server) + "/openapi.json")
    assert response.status_code == 200
    text = response.text
    assert "/health" in response.json()["paths"]
    backing = Path(server.backend_url.removeprefix("sqlite:///"))
    for secret in (SECRET_KEY, API_KEY, backing.name, str(backing.parent), "sqlite"):
        assert secret not in text
