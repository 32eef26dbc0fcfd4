"""Idle and slow connections (issue 25, item 4): the server closes a connection that sends
nothing, trickles its request head, or stops after a response; answers a body that comes
too late ``408``; and at its connection cap makes room by closing the connection that
has waited longest for a request, or answers ``503`` at once when every connection is
busy. No key is needed for any of this, so no test sends one before the deadline.

Before: uvicorn timed out only connections idle after a response, and any byte received
cancelled that timer: 19,500 silent connections were all still held after 20 s, and
connections trickling a head or a body stayed open for minutes (each a file descriptor).
Deadlines here are a second or two (set with :class:`ConnectionLimits`); each socket
waits at most :data:`PATIENCE` seconds, so a server that never closes fails the test."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from memory_core import ConfigurationError
from memory_core.server import connections
from memory_core.server.cli import build_parser
from memory_core.server.connections import ENV, RESERVED_FILES, ConnectionLimits
from memory_core_dev.nams_server import API_KEY, NamsTestServer, start_nams_server

PATIENCE = 8.0  # seconds a test waits for the server to act, well past every deadline
FAST = ConnectionLimits(
    header_timeout=1.0, body_timeout=1.5, keep_alive_timeout=0.5, max_connections=50
)


@pytest.fixture(scope="module")
def server() -> Iterator[NamsTestServer]:
    started = start_nams_server("memory://", connections=FAST)
    try:
        yield started
    finally:
        started.stop()


def connect(server: NamsTestServer) -> socket.socket:
    port = int(server.base_url.rsplit(":", 1)[1].split("/")[0])
    return socket.create_connection(("127.0.0.1", port), timeout=PATIENCE)


def closed_by_server(sock: socket.socket) -> tuple[bool, bytes]:
    """Read until the server closes ``sock`` (True) or PATIENCE passes (False)."""
    received = b""
    sock.settimeout(PATIENCE)
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        return False, received
    except ConnectionResetError:
        pass
    return True, received


def answered(sock: socket.socket) -> bytes:
    """One whole response read from ``sock``: its head, then ``Content-Length`` bytes of
    body (a single ``recv`` may return the head alone)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head_part, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head_part.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length and (chunk := sock.recv(65536)):
        body += chunk
    return head_part + b"\r\n\r\n" + body


def head(workspace: str = "slow", *, length: int | None = None) -> bytes:
    """The head of ``POST /v1/conversations`` in ``workspace``."""
    lines = ["POST /v1/conversations HTTP/1.1", "Host: test", f"Authorization: Bearer {API_KEY}"]
    lines += [f"X-Workspace-Id: {workspace}", "Content-Type: application/json"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def trickle(sock: socket.socket, data: bytes, every: float = 0.1) -> bool:
    """Send ``data`` a byte at a time; True if the server closed the connection first."""
    deadline = time.monotonic() + PATIENCE
    for byte in data:
        if time.monotonic() > deadline:
            return False
        try:
            sock.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            return True
        time.sleep(every)
    return False


def test_a_silent_connection_is_closed(server: NamsTestServer) -> None:
    with connect(server) as sock:
        closed, received = closed_by_server(sock)
        assert closed and received == b""


def test_a_trickled_head_is_closed(server: NamsTestServer) -> None:
    endless = b"GET /health HTTP/1.1\r\nHost: test\r\nX-Pad: " + b"a" * 1000
    with connect(server) as sock:
        assert trickle(sock, endless), "the server kept reading a head sent a byte at a time"


def test_a_trickled_body_is_answered_408_and_nothing_is_stored(
    server: NamsTestServer,
) -> None:
    body = json.dumps({"metadata": {"pad": "x" * 200}}).encode()
    workspace = NamsTestServer.workspace("slow")
    with connect(server) as sock:
        sock.sendall(head(workspace, length=len(body)))
        trickle(sock, body)
        closed, received = closed_by_server(sock)
    assert closed
    status, _, rest = received.partition(b"\r\n")
    assert status == b"HTTP/1.1 408 Request Timeout"
    error = json.loads(rest.partition(b"\r\n\r\n")[2])["error"]
    assert error["code"] == "request_timeout"
    with server.client(workspace) as http:
        assert http.get("/conversations").json()["conversations"] == []
    assert [r.status for r in server.records(workspace)] == [408, 200]


def test_a_connection_idle_after_a_response_is_closed(server: NamsTestServer) -> None:
    request = b"GET /health HTTP/1.1\r\nHost: test\r\n\r\n"
    with connect(server) as sock:
        sock.sendall(request)
        assert answered(sock).startswith(b"HTTP/1.1 200")
        assert closed_by_server(sock)[0], "kept alive past keep_alive_timeout"
    with connect(server) as sock:
        sock.sendall(request)
        assert answered(sock).startswith(b"HTTP/1.1 200")
        sock.sendall(b"G")  # the next request starts, and stops
        assert closed_by_server(sock)[0], "a partial second request kept the connection"


def test_the_idle_deadline_is_the_protocols_at_a_whole_number_of_seconds(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # uvicorn's own idle timer (a backstop) must not close the connection first: the
    # protocol's close is the one that is logged.
    caplog.set_level("DEBUG", logger="memory_core.server")
    limits = ConnectionLimits(keep_alive_timeout=1)
    with NamsTestServer("memory://", connections=limits) as srv, connect(srv) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: test\r\n\r\n")
        assert answered(sock).startswith(b"HTTP/1.1 200")
        assert closed_by_server(sock)[0], "kept alive past keep_alive_timeout"
    assert "closing a connection: idle deadline passed" in caplog.text


def test_at_the_cap_the_longest_waiting_connection_makes_room() -> None:
    limits = ConnectionLimits(header_timeout=30, max_connections=3)
    with NamsTestServer("memory://", connections=limits) as server:
        silent = [connect(server) for _ in range(3)]
        time.sleep(0.2)
        with httpx.Client(trust_env=False, timeout=PATIENCE) as http:
            response = http.get(server.base_url.removesuffix("/v1") + "/health")
        assert response.status_code == 200
        assert closed_by_server(silent[0])[0], "the oldest waiting connection was kept"
        for sock in silent:
            sock.close()


def test_at_the_cap_with_every_connection_busy_a_new_one_gets_503() -> None:
    limits = ConnectionLimits(body_timeout=30, max_connections=2)
    with NamsTestServer("memory://", connections=limits) as server:
        busy = [connect(server) for _ in range(2)]
        for sock in busy:  # heads in, bodies still to come
            sock.sendall(head(length=100) + b"{")
        time.sleep(0.2)
        with httpx.Client(trust_env=False, timeout=PATIENCE) as http:
            response = http.get(server.base_url.removesuffix("/v1") + "/health")
        assert response.status_code == 503
        assert response.headers["retry-after"] == "1"
        assert response.json()["error"]["code"] == "service_unavailable"
        for sock in busy:
            sock.close()
        time.sleep(0.2)
        with httpx.Client(trust_env=False, timeout=PATIENCE) as http:
            assert http.get(server.base_url.removesuffix("/v1") + "/health").status_code == 200


def test_limits_come_from_flags_env_and_fit_the_file_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    defaults = ConnectionLimits()
    assert (defaults.header_timeout, defaults.body_timeout) == (10.0, 60.0)
    assert (defaults.keep_alive_timeout, defaults.max_connections) == (5.0, 1000)
    env = {ENV["header_timeout"]: "2.5", ENV["max_connections"]: "7", ENV["body_timeout"]: " "}
    assert ConnectionLimits.from_env(env) == ConnectionLimits(header_timeout=2.5, max_connections=7)
    assert ConnectionLimits.from_env(env, max_connections=9).max_connections == 9
    for bad_env in ({ENV["max_connections"]: "many"}, {ENV["keep_alive_timeout"]: "soon"}):
        with pytest.raises(ConfigurationError):
            ConnectionLimits.from_env(bad_env)
    for bad in ({"header_timeout": 0}, {"body_timeout": float("inf")}, {"max_connections": 0}):
        with pytest.raises(ConfigurationError):
            ConnectionLimits(**bad)  # type: ignore[arg-type]
    args = build_parser().parse_args(["--header-timeout", "3", "--max-connections", "12"])
    assert (args.header_timeout, args.max_connections, args.body_timeout) == (3.0, 12, None)
    monkeypatch.setattr(connections, "_file_limit", lambda: 600)
    assert ConnectionLimits().fitted().max_connections == 600 - RESERVED_FILES
    assert ConnectionLimits(max_connections=50).fitted().max_connections == 50


def test_at_the_cap_a_connection_idle_after_a_response_waited_less_than_a_silent_one() -> None:
    """The first connection is the oldest, but it was answered after the others arrived:
    the one waiting longest for a request head is the second, silent since it connected."""
    limits = ConnectionLimits(header_timeout=30, keep_alive_timeout=30, max_connections=3)
    request = b"GET /health HTTP/1.1\r\nHost: test\r\n\r\n"
    with NamsTestServer("memory://", connections=limits) as server:
        oldest = connect(server)
        time.sleep(0.05)
        silent = [connect(server) for _ in range(2)]
        time.sleep(0.05)
        oldest.sendall(request)  # answered now: idle after a response from here on
        assert answered(oldest).startswith(b"HTTP/1.1 200")
        time.sleep(0.2)
        with httpx.Client(trust_env=False, timeout=PATIENCE) as http:
            response = http.get(server.base_url.removesuffix("/v1") + "/health")
        assert response.status_code == 200
        assert closed_by_server(silent[0])[0], "the longest-waiting connection was kept"
        oldest.sendall(request)  # still open: it had waited the least
        assert answered(oldest).startswith(b"HTTP/1.1 200")
        for sock in (oldest, *silent):
            sock.close()
