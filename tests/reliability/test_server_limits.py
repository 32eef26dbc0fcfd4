"""The server's limits (issue 12, items 1-5): 413 before a large body is read, 400 for
oversized fields before anything is stored, escaped log lines, the ``--api-key`` hint."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from memory_core import DEFAULT_LIMITS, ConfigurationError
from memory_core.server.cli import build_parser, main
from memory_core.server.limits import ENV, ServerLimits
from memory_core.server.logsafe import EscapingFormatter, escape
from memory_core_dev.nams_server import NamsTestServer, start_nams_server

SMALL = ServerLimits(
    max_body_bytes=20_000,
    max_content_chars=1_000,
    max_metadata_bytes=2_000,
    max_metadata_depth=8,
    max_query_chars=500,
    max_identifier_bytes=100,
)


@pytest.fixture(scope="module")
def small_server() -> Iterator[NamsTestServer]:
    server = start_nams_server("memory://", limits=SMALL)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def client(small_server: NamsTestServer) -> Iterator[httpx.Client]:
    with small_server.client(NamsTestServer.workspace("limits")) as http:
        yield http


def conversation(client: httpx.Client) -> str:
    response = client.post("/conversations", json={})
    assert response.status_code == 201
    return str(response.json()["id"])


def error(response: httpx.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code
    return str(body["error"]["message"])


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


def count_messages(client: httpx.Client, conversation_id: str) -> int:
    response = client.get(f"/conversations/{conversation_id}/messages", params={"limit": 200})
    assert response.status_code == 200
    return len(response.json()["messages"])


def test_declared_oversize_body_is_refused_before_reading(
    client: httpx.Client, small_server: NamsTestServer
) -> None:
    cid = conversation(client)
    body = b'{"role": "user", "content": "' + b"x" * 30_000 + b'"}'
    response = client.post(
        f"/conversations/{cid}/messages",
        content=body,
        headers={"content-type": "application/json"},
    )
    assert "20000 bytes" in error(response, 413, "payload_too_large")
    assert count_messages(client, cid) == 0


def test_streamed_oversize_body_is_cut_off(client: httpx.Client) -> None:
    cid = conversation(client)

    def chunks() -> Iterator[bytes]:
        yield b'{"role": "user", "content": "'
        for _ in range(40):
            yield b"y" * 1_000
        yield b'"}'

    response = client.post(
        f"/conversations/{cid}/messages",
        content=chunks(),
        headers={"content-type": "application/json"},
    )
    error(response, 413, "payload_too_large")
    assert count_messages(client, cid) == 0


def test_oversize_fields_are_400_and_store_nothing(client: httpx.Client) -> None:
    cid = conversation(client)
    message = error(
        client.post(f"/conversations/{cid}/messages", json={"role": "user", "content": "z" * 1001}),
        400,
        "invalid_request",
    )
    assert "content" in message
    bulk = [{"role": "user", "content": "ok"}, {"role": "user", "content": "z" * 1001}]
    message = error(
        client.post(f"/conversations/{cid}/messages/bulk", json={"messages": bulk}),
        400,
        "invalid_request",
    )
    assert "messages[1].content" in message
    assert count_messages(client, cid) == 0
    query = "word " * 200
    assert "query" in error(
        client.post(f"/conversations/{cid}/search", json={"query": query}), 400, "invalid_request"
    )
    assert "query" in error(
        client.post("/entities/search", json={"query": query}), 400, "invalid_request"
    )
    assert "name" in error(
        client.post("/entities", json={"name": "n" * 101, "type": "person"}),
        400,
        "invalid_request",
    )


def test_deep_or_large_metadata_is_refused_and_listing_still_works(client: httpx.Client) -> None:
    """The probe's case: 300-deep metadata returned 500 but was stored, breaking listing."""
    for metadata in (nested(300), nested(9), {"blob": "b" * 2_100}):
        response = client.post("/conversations", json={"metadata": metadata})
        assert "metadata" in error(response, 400, "invalid_request")
    for user_id in ("u" * 101,):
        response = client.post("/conversations", json={"userId": user_id})
        assert "userId" in error(response, 400, "invalid_request")
    listed = client.get("/conversations")
    assert listed.status_code == 200 and listed.json()["conversations"] == []
    at_limit = nested(8)
    created = client.post("/conversations", json={"metadata": at_limit})
    assert created.status_code == 201 and created.json()["metadata"] == at_limit
    listed = client.get("/conversations")
    assert listed.status_code == 200
    assert [c["metadata"] for c in listed.json()["conversations"]] == [at_limit]


def test_default_limits_match_the_library_and_env_overrides() -> None:
    defaults = ServerLimits()
    assert defaults.max_body_bytes == 16 * 1024 * 1024
    assert defaults.caller() == DEFAULT_LIMITS
    library = defaults.library()
    assert library.max_metadata_depth == DEFAULT_LIMITS.max_metadata_depth + 2
    env = {ENV["max_query_chars"]: "123", ENV["max_body_bytes"]: " "}
    assert ServerLimits.from_env(env).max_query_chars == 123
    assert ServerLimits.from_env(env, max_query_chars=7).max_query_chars == 7
    with pytest.raises(ConfigurationError):
        ServerLimits.from_env({ENV["max_content_chars"]: "many"})
    with pytest.raises(ConfigurationError):
        ServerLimits(max_body_bytes=0)
    args = build_parser().parse_args(["--max-body-bytes", "1000", "--max-metadata-depth", "4"])
    assert args.max_body_bytes == 1000 and args.max_metadata_depth == 4


def test_api_key_flag_warns_once(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ConfigurationError):
        # The warning comes before the server binds; this port cannot be bound.
        main(["--api-key", "s3cret", "--port", "70000"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "warning" in line]
    assert len(lines) == 1 and "NAMS_SERVER_API_KEYS" in lines[0]
    assert "s3cret" not in err


def test_log_lines_cannot_be_forged(
    small_server: NamsTestServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="memory_core.server")
    with httpx.Client(trust_env=False) as http:
        base = small_server.base_url
        http.get(base + "/conversations/x%0D%0A2026-01-01 INFO forged%1B[31m%E2%80%A8")
    lines = [r.getMessage() for r in caplog.records if "forged" in r.getMessage()]
    assert lines, "the request was not logged"
    for line in lines:
        assert not any(ch in line for ch in "\r\n\x1b\u2028")
        assert "\\x0d\\x0a" in line and "\\x1b" in line and "\\u2028" in line


def test_escape_is_unambiguous_and_the_formatter_applies_it() -> None:
    assert escape("a\\x0a") == "a\\\\x0a" != escape("a\n")
    assert escape("tab\there\u202e") == "tab\\x09here\\u202e"
    record = logging.LogRecord("n", logging.INFO, "f", 1, "user %s", ("e\nvil",), None)
    assert EscapingFormatter("%(message)s").format(record) == "user e\\x0avil"
