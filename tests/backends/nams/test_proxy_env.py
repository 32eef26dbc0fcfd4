"""Proxy variables and the NAMS adapter.

With the default ``trust_env=True`` the adapter honours ``HTTP(S)_PROXY``/``ALL_PROXY``
(users behind a corporate proxy need them), except for a loopback base URL, which is
always reached directly: a forgotten ``NO_PROXY`` must not send local traffic to a proxy.
The stand-in proxy here listens on 127.0.0.1 and answers every request itself, so no
request ever leaves the machine.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memory_core import TransportError, open_backend
from memory_core.backends.nams.transport import direct_mounts, is_loopback
from memory_core_dev.nams_server import API_KEY, NamsTestServer

pytestmark = pytest.mark.anyio

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


class RecordingProxy:
    """An HTTP proxy stand-in on 127.0.0.1: records request lines, answers an empty
    conversation page to everything, forwards nothing."""

    def __init__(self) -> None:
        self.request_lines: list[str] = []
        recorded = self.request_lines

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                recorded.append(self.requestline)
                body = json.dumps({"conversations": [], "next_cursor": None}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingProxy]:
    """Every proxy variable (both spellings) points at the stand-in; no NO_PROXY."""
    with RecordingProxy() as running:
        for name in PROXY_VARIABLES:
            monkeypatch.setenv(name, running.url)
            monkeypatch.setenv(name.lower(), running.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        yield running


@pytest.mark.nams
async def test_loopback_server_is_reached_directly_despite_proxy_variables(
    proxy: RecordingProxy, nams_server: NamsTestServer, workspace: str
) -> None:
    memory = open_backend(nams_server.url, api_key=API_KEY, workspace_id=workspace)
    async with memory:  # trust_env=True, the library default
        made = await memory.create_conversation("direct")
        await memory.add_message(str(made.id), "user", "hello")
        read = await memory.get_conversation(str(made.id))
    assert [m.content for m in read.messages] == ["hello"]
    assert proxy.request_lines == []
    assert len(nams_server.records(workspace)) >= 4


async def test_other_hosts_still_go_through_the_proxy(proxy: RecordingProxy) -> None:
    # The stand-in answers for nams.test: the client connects to 127.0.0.1 only and
    # never resolves nams.test.
    memory = open_backend("nams+http://nams.test/v1", api_key="k", max_retries=0)
    async with memory:
        assert await memory.list_conversations(limit=3) == []
    assert proxy.request_lines == [
        "GET http://nams.test/v1/conversations?limit=1 HTTP/1.1",
        "GET http://nams.test/v1/conversations?limit=3 HTTP/1.1",
    ]


async def test_with_trust_env_off_the_proxy_variables_are_not_read(
    proxy: RecordingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The client then looks nams.test up itself; the lookup is refused here, so nothing
    # leaves the machine.
    looked_up: list[str] = []
    real_lookup = socket.getaddrinfo

    def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("nams.test", b"nams.test"):
            looked_up.append(str(host))
            raise socket.gaierror(socket.EAI_NONAME, "not looked up in tests")
        return real_lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    memory = open_backend("nams+http://nams.test/v1", api_key="k", max_retries=0, trust_env=False)
    with pytest.raises(TransportError):
        await memory.connect()
    assert proxy.request_lines == []
    assert looked_up


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", True),
        ("127.10.20.30", True),
        ("localhost", True),
        ("LocalHost.", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.1", False),
        ("192.168.1.1", False),
        ("localhost.example.com", False),
        ("nams.test", False),
        # a zone index is part of the address; a name that only starts with a loopback
        # name, or an address with a malformed zone, is not reached around the proxy
        ("::1%lo", True),
        ("[::1%25lo]", True),
        ("fe80::1%eth0", False),
        ("::1%", False),
        ("LOCALHOSTX", False),
        ("127.0.0.1X", False),
    ],
)
def test_is_loopback(host: str, expected: bool) -> None:
    assert is_loopback(host) is expected


def test_direct_mounts_only_for_loopback() -> None:
    assert direct_mounts("http://127.0.0.1:8080/v1") == {"all://127.0.0.1": None}
    assert direct_mounts("http://[::1]:8080/v1") == {"all://[::1]": None}
    assert direct_mounts("https://localhost/v1") == {"all://localhost": None}
    assert direct_mounts("https://nams.example/v1") == {}
