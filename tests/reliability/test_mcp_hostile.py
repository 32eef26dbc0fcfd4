"""``memory-core mcp`` under hostile input: bad lines over stdio, DNS rebinding on every
loopback address, and the bearer token of HTTP mode.

Every server here is a real subprocess (``python -m memory_core.cli mcp``) on loopback;
reads have time-outs, so a server that does not answer fails the test instead of hanging
it. The refusal to serve off loopback without a token is checked in-process with the
socket binding replaced, so no test ever binds a non-loopback address.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx
import pytest

pytest.importorskip("mcp", reason="extra 'mcp' not installed")

from memory_core.integrations import mcp_server

ROOT = Path(__file__).resolve().parents[2]
MCP = [sys.executable, "-m", "memory_core.cli", "mcp"]
TOKEN = "t0ken-for-tests-0123456789abcdef"
TOKEN_ENV = "MEMORY_CORE_MCP_TOKEN"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _env(token: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    if token is not None:
        env[TOKEN_ENV] = token
    return env


# ---------------------------------------------------------------- stdio


class Lines:
    """The server's stdout, line by line, each read with a time-out (a reader thread)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            self._lines.put(line)

    def next(self, timeout: float = 20) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer within {timeout} s") from None
        answer: dict[str, Any] = json.loads(line)
        return answer


@contextmanager
def stdio_server() -> Iterator[tuple[subprocess.Popen[bytes], Lines]]:
    server = subprocess.Popen(
        [*MCP, "memory://"],
        cwd=ROOT,
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert server.stdout is not None
        yield server, Lines(server.stdout)
    finally:
        server.kill()
        server.wait(timeout=30)


def _send(server: subprocess.Popen[bytes], line: bytes) -> None:
    assert server.stdin is not None
    server.stdin.write(line + b"\n")
    server.stdin.flush()


DEEP = 5_000
BAD_LINES: list[tuple[str, bytes, int, int | str | None]] = [
    # (what, line, expected code, expected id)
    (
        f"a request {DEEP} levels deep",
        b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_message",'
        b'"arguments":' + b"[" * DEEP + b"]" * DEEP + b"}}",
        -32700,
        None,
    ),
    (
        "a lone surrogate escape",
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add_message",'
        b'"arguments":{"session_id":"s","role":"user","content":"\\ud800"}}}',
        -32600,
        3,
    ),
    ("a line that is not JSON", b"hello, server", -32700, None),
    ("invalid UTF-8", b"\xff\xfe{", -32700, None),
    ("an object with no method", b'{"jsonrpc":"2.0","id":5}', -32600, 5),
    ("the wrong version", b'{"jsonrpc":"1.0","id":"six","method":"ping"}', -32600, "six"),
    ("a batch", b'[{"jsonrpc":"2.0","id":7,"method":"ping"}]', -32600, None),
    ("a number", b"42", -32600, None),
    ("params that are a list", b'{"jsonrpc":"2.0","id":8,"method":"ping","params":[1]}', -32600, 8),
]


def test_stdio_answers_every_bad_line_and_keeps_serving() -> None:
    with stdio_server() as (server, lines):
        _send(server, b"not even the handshake")  # before the first request, too
        assert lines.next(timeout=60)["error"]["code"] == -32700
        _send(server, json.dumps(INITIALIZE).encode())
        assert lines.next()["id"] == 1
        _send(server, b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for what, line, code, request_id in BAD_LINES:
            _send(server, line)
            answer = lines.next()
            assert answer.get("error", {}).get("code") == code, (what, answer)
            assert answer["id"] == request_id, (what, answer)
            assert answer["jsonrpc"] == "2.0"
        # Not answered (JSON-RPC answers neither): a blank line, a malformed response.
        _send(server, b"")
        _send(server, b'{"jsonrpc":"2.0","id":9,"result":[]}')
        _send(server, b'{"jsonrpc":"2.0","id":10,"method":"tools/list"}')
        answer = lines.next()
        assert answer["id"] == 10, answer
        assert "add_message" in {tool["name"] for tool in answer["result"]["tools"]}
        assert server.poll() is None


# ---------------------------------------------------------------- HTTP


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _loopback_available(host: str) -> bool:
    try:
        _free_port(host)
    except OSError:
        return False
    return True


@contextmanager
def http_server(host: str, token: str | None = None) -> Iterator[str]:
    """A ``memory-core mcp --http`` subprocess on ``host`` (loopback); yields its URL."""
    port = _free_port(host)
    server = subprocess.Popen(
        [*MCP, "memory://", "--http", "--host", host, "--port", str(port)],
        cwd=ROOT,
        env=_env(token),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection((host, port), timeout=1):
                    break
            except OSError:
                assert server.poll() is None, server.stderr.read()  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.2)
        netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        yield f"http://{netloc}"
    finally:
        server.terminate()
        try:
            _, errors = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            _, errors = server.communicate(timeout=30)
        if token is not None:
            assert token.encode() not in errors  # never logged


def _post(base: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(
        f"{base}/mcp", json=INITIALIZE, headers={**ACCEPT, **(headers or {})}, timeout=30
    )


@pytest.mark.parametrize("host", ["127.0.0.2", "127.0.0.1", "::1"])
def test_dns_rebinding_is_refused_on_every_loopback_address(host: str) -> None:
    if not _loopback_available(host):
        pytest.skip(f"{host} is not configured here")
    with http_server(host) as base:
        own = base.removeprefix("http://")
        assert _post(base).status_code == 200  # the Host the client used: the bound one
        assert _post(base, {"Host": "evil.example"}).status_code == 421
        assert _post(base, {"Host": f"evil.example:{own.rsplit(':', 1)[1]}"}).status_code == 421
        assert _post(base, {"Origin": "http://evil.example"}).status_code == 403
        assert _post(base, {"Origin": f"http://{own}"}).status_code == 200


def test_a_token_is_required_once_set() -> None:
    with http_server("127.0.0.1", token=TOKEN) as base:
        for headers in (
            {},
            {"Authorization": "Bearer wrong-token-0123456789abcdef"},
            {"Authorization": f"Bearer {TOKEN}x"},
            {"Authorization": f"Basic {TOKEN}"},
            {"Authorization": TOKEN},
        ):
            refused = _post(base, headers)
            assert refused.status_code == 401, headers
            assert refused.headers["www-authenticate"].startswith("Bearer")
            assert TOKEN not in refused.text
        assert _post(base, {"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        # and a real MCP client session with the token works end to end
        _client_round_trip(base, {"Authorization": f"Bearer {TOKEN}"})


def _client_round_trip(base: str, headers: dict[str, str]) -> None:
    import anyio
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> list[str]:
        with anyio.fail_after(60):
            return await session_round_trip()

    async def session_round_trip() -> list[str]:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as client,
            streamable_http_client(f"{base}/mcp", http_client=client) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            await session.call_tool(
                "add_message", {"session_id": "t", "role": "user", "content": "with token"}
            )
            result = await session.call_tool("recent_messages", {"session_id": "t"})
            assert not result.is_error, result.content
            payload = json.loads(result.content[0].text)  # type: ignore[union-attr]
            return [m["content"] for m in payload["messages"]]

    assert anyio.run(run) == ["with token"]


# ---------------------------------------------------------------- refusing to start


class Bound(Exception):
    """Raised instead of binding: the server got past every check."""


@pytest.fixture
def no_binding(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Replace the HTTP socket binding: a test that gets that far records the address
    and stops there, so nothing is ever bound off loopback."""
    attempts: list[tuple[str, int]] = []

    def refuse(host: str, port: int) -> socket.socket:
        attempts.append((host, port))
        raise Bound

    monkeypatch.setattr(mcp_server, "_listen", refuse)
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    return attempts


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.com"])
def test_off_loopback_without_a_token_is_refused_before_binding(
    host: str, no_binding: list[tuple[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    from memory_core.cli import main

    assert main(["mcp", "memory://", "--http", "--host", host]) == 1
    assert no_binding == []
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 1, errors
    assert TOKEN_ENV in errors[0] and host in errors[0]


def test_off_loopback_with_a_token_gets_as_far_as_binding(
    no_binding: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    with pytest.raises(Bound):
        mcp_server.main(["memory://", "--http", "--host", "0.0.0.0", "--port", "8766"])
    assert no_binding == [("0.0.0.0", 8766)]


@pytest.mark.parametrize("token", ["short", "has a space in it 0123", "tab\tinside-0123456789"])
def test_a_weak_or_malformed_token_is_refused_without_echoing_it(
    token: str,
    no_binding: list[tuple[str, int]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from memory_core.cli import main

    monkeypatch.setenv(TOKEN_ENV, token)
    assert main(["mcp", "memory://", "--http"]) == 1
    assert no_binding == []
    errors = capsys.readouterr().err
    assert token not in errors and len(errors.strip().splitlines()) == 1


def test_the_token_flag_warns_that_it_is_visible(
    no_binding: list[tuple[str, int]], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(Bound):
        mcp_server.main(["memory://", "--http", "--token", TOKEN])
    errors = capsys.readouterr().err
    assert TOKEN_ENV in errors and TOKEN not in errors
