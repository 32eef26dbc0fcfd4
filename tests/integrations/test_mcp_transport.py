"""The MCP server's own transport code run in-process: the stdio loop that answers every
unreadable line, the answer each kind of line gets, the HTTP token middleware, the
Host/Origin rules, the listening socket, the token's rules and the tool error wrapper.

The subprocess tests (``test_mcp_server.py``, ``tests/reliability/test_mcp_hostile.py``)
show the same through the real command; these pin each rule down where a change to one
of them shows as a failure of its own (and where the mutation tool can see the calls).
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp", reason="extra 'mcp' not installed")

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import jsonrpc_message_adapter
from pydantic import ValidationError

from memory_core import ConfigurationError, NotFoundError, open_backend
from memory_core.integrations import mcp_server
from tests.reliability.test_mcp_hostile import BAD_LINES, INITIALIZE

pytestmark = pytest.mark.anyio

TOKEN = "tok-" + "x" * 28


def _refusal(line: str | bytes) -> Exception:
    """What the stdio transport hands on for ``line``: the exception parsing raised."""
    text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
    try:
        jsonrpc_message_adapter.validate_json(text, by_name=False)
    except Exception as exc:  # the transport's own catch-all
        return exc
    raise AssertionError(f"{line!r} parses")


# ---------------------------------------------------------------- unreadable lines


@pytest.fixture(name="default_recursion_limit")
def default_recursion_limit_fixture() -> Iterator[None]:
    """The interpreter's default recursion limit, as in the command's own process: whether
    ``json`` can read a line 5,000 levels deep (and so find its id) depends on it, and
    other tests of the run may have raised it."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


@pytest.mark.parametrize(
    ("what", "line", "code", "request_id"), BAD_LINES, ids=[b[0] for b in BAD_LINES]
)
@pytest.mark.usefixtures("default_recursion_limit")
def test_each_unreadable_line_gets_its_code_and_id(
    what: str, line: bytes, code: int, request_id: int | str | None
) -> None:
    reply = mcp_server.unreadable_line_reply(_refusal(line))
    assert reply is not None, what
    assert (reply.jsonrpc, reply.id, reply.error.code) == ("2.0", request_id, code), what
    assert reply.error.message.startswith("Parse error" if code == -32700 else "Invalid Request")


@pytest.mark.parametrize("line", ["", "   ", "\t"])
def test_a_blank_line_is_not_answered(line: str) -> None:
    assert mcp_server.unreadable_line_reply(_refusal(line)) is None


@pytest.mark.parametrize(
    "line",
    [
        '{"jsonrpc":"1.0","id":1,"result":{}}',
        '{"jsonrpc":"1.0","id":1,"error":{"code":1,"message":"m"}}',
    ],
)
def test_a_malformed_response_is_not_answered(line: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=mcp_server.logger.name):
        assert mcp_server.unreadable_line_reply(_refusal(line)) is None
    assert [r.getMessage() for r in caplog.records] == [
        "dropped a malformed response (no request to answer)"
    ]


def test_a_refused_request_keeps_its_id_and_says_what_json_is_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    line = '{"jsonrpc":"2.0","id":"q1","method":"ping","params":{"secret":"\\udc00"}}'
    with caplog.at_level(logging.WARNING, logger=mcp_server.logger.name):
        reply = mcp_server.unreadable_line_reply(_refusal(line))
    assert reply is not None and reply.id == "q1" and reply.error.code == -32600
    assert reply.error.message.startswith("Invalid Request: ")
    assert "lone surrogate escapes such as \\ud800, NaN and Infinity, very deep nesting" in (
        reply.error.message
    )
    [record] = caplog.records
    assert record.getMessage().startswith("refused a request the JSON parser does not accept (")
    assert "secret" not in record.getMessage()  # the line itself is never logged


def _reason(line: str) -> str:
    refusal = _refusal(line)
    assert isinstance(refusal, ValidationError)
    return str(refusal.errors()[0]["msg"])


def test_a_line_that_is_not_json_names_the_reason(caplog: pytest.LogCaptureFixture) -> None:
    reason = _reason("hello, server")
    assert reason.startswith("Invalid JSON: ")  # pydantic's words, passed on
    with caplog.at_level(logging.WARNING, logger=mcp_server.logger.name):
        reply = mcp_server.unreadable_line_reply(_refusal("hello, server"))
    assert reply is not None and reply.id is None and reply.error.code == -32700
    assert reply.error.message == f"Parse error: {reason}"
    [record] = caplog.records
    assert record.getMessage() == f"refused a line that cannot be parsed ({reason})"


def test_a_request_the_parser_refuses_names_the_reason(caplog: pytest.LogCaptureFixture) -> None:
    line = '{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":"\\udc00"}}'
    reason = _reason(line)
    with caplog.at_level(logging.WARNING, logger=mcp_server.logger.name):
        reply = mcp_server.unreadable_line_reply(_refusal(line))
    assert reply is not None and reply.error.message.startswith(f"Invalid Request: {reason} (")
    [record] = caplog.records
    assert record.getMessage() == (f"refused a request the JSON parser does not accept ({reason})")


def test_a_message_with_a_method_and_a_result_is_a_bad_request_not_a_response() -> None:
    line = '{"jsonrpc":"1.0","id":6,"method":"ping","result":{}}'
    reply = mcp_server.unreadable_line_reply(_refusal(line))
    assert reply is not None and (reply.id, reply.error.code) == (6, -32600)


def test_an_object_that_is_no_message_is_invalid(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=mcp_server.logger.name):
        reply = mcp_server.unreadable_line_reply(_refusal('{"jsonrpc":"2.0","id":9,"x":1}'))
    assert reply is not None and reply.id == 9 and reply.error.code == -32600
    assert reply.error.message == (
        "Invalid Request: not a JSON-RPC 2.0 request, notification or response object"
    )
    assert [r.getMessage() for r in caplog.records] == [
        "refused a line that is not a JSON-RPC message"
    ]


def test_an_exception_that_is_no_validation_error_is_a_parse_error() -> None:
    reply = mcp_server.unreadable_line_reply(ValueError("decoder said no"))
    assert reply is not None
    assert (reply.id, reply.error.code, reply.error.message) == (None, -32700, "Parse error")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"id": 3}, 3),
        ({"id": 0}, 0),
        ({"id": "a"}, "a"),
        ({"id": ""}, ""),
        ({"id": True}, None),
        ({"id": False}, None),
        ({"id": 1.5}, None),
        ({"id": None}, None),
        ({"id": [1]}, None),
        ({}, None),
        ({"id": "\ud800"}, None),  # cannot be written back
        ([{"id": 3}], None),
        ("id", None),
    ],
)
def test_only_an_id_that_can_be_sent_back_is_kept(value: object, expected: object) -> None:
    assert mcp_server._request_id(value) == expected


def test_the_whole_value_comes_from_the_error_about_it() -> None:
    value = {"jsonrpc": "2.0", "id": 4}
    errors = [
        {"loc": ("a", "b", "c"), "type": "missing", "input": "field"},
        {"loc": ("a", "b"), "type": "string_type", "input": "one field"},
        {"loc": ("a", "id"), "type": "missing", "input": value},
    ]
    assert mcp_server._whole_message(errors) is value
    assert mcp_server._whole_message([{"loc": ("x",), "type": "model_type", "input": 7}]) == 7
    assert mcp_server._whole_message([{"loc": (), "type": "model_type", "input": 8}]) == 8
    assert mcp_server._whole_message(errors[:2]) is None
    assert mcp_server._whole_message([]) is None


# ---------------------------------------------------------------- the stdio loop


class _Streams:
    """In-memory streams to hand ``serve_stdio`` instead of the process's own: the input
    ends only once ``answers`` lines were written (the server stops at the end of its
    input, dropping requests still running)."""

    def __init__(self, lines: list[bytes | str], answers: int) -> None:
        self._lines = [
            (line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line) + "\n"
            for line in lines
        ]
        self._answers = answers
        self._out = io.StringIO()
        self.stdout = anyio.wrap_file(self._out)

    @property
    def stdin(self) -> Any:
        return self._read()

    async def _read(self) -> AsyncIterator[str]:
        for line in self._lines:
            yield line
        with anyio.fail_after(30):
            while len(self._out.getvalue().splitlines()) < self._answers:
                await anyio.sleep(0.01)

    def answers(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self._out.getvalue().splitlines()]


@pytest.mark.usefixtures("default_recursion_limit")
async def test_the_stdio_loop_answers_bad_lines_and_goes_on_serving() -> None:
    lines: list[bytes | str] = [b"before the handshake", json.dumps(INITIALIZE)]
    lines.append('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    lines += [line for _, line, _, _ in BAD_LINES]
    lines += ["", '{"jsonrpc":"2.0","id":99,"method":"ping"}']
    lines.append('{"jsonrpc":"2.0","id":100,"method":"tools/list"}')
    expected: list[tuple[object, object]] = [(-32700, None), ("initialize", 1)]
    expected += [(code, request_id) for _, _, code, request_id in BAD_LINES]
    expected += [("ping", 99), ("tools", 100)]
    streams = _Streams(lines, len(expected))
    server = mcp_server.build_server(open_backend("memory://"))
    with anyio.fail_after(30):
        await mcp_server.serve_stdio(server, streams.stdin, streams.stdout)
    answers = streams.answers()
    got = [(a["error"]["code"], a["id"]) if "error" in a else (_kind(a), a["id"]) for a in answers]
    assert got == expected  # the blank line got no answer; the ping after them all did
    assert "tools" in answers[1]["result"]["capabilities"]  # the server's own options
    names = [t["name"] for t in answers[-1]["result"]["tools"]]
    assert names == mcp_server.tool_names(open_backend("memory://"))


def _kind(answer: dict[str, Any]) -> str:
    result = answer.get("result", {})
    return "initialize" if "serverInfo" in result else "tools" if "tools" in result else "ping"


class _Inner:
    """A read stream handing out ``items`` in turn, then the end of the stream."""

    def __init__(self, items: list[object]) -> None:
        self.items = list(items)
        self.closed = False
        self.last_context = object()

    async def receive(self) -> object:
        if not self.items:
            raise anyio.EndOfStream
        return self.items.pop(0)

    async def aclose(self) -> None:
        self.closed = True


class _Sent:
    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def send(self, message: Any) -> None:
        self.messages.append(message)


async def test_the_reader_answers_what_it_drops_and_passes_the_rest_on() -> None:
    first, second = object(), object()
    inner = _Inner([_refusal("nope"), first, _refusal("  "), _refusal('{"id":2}'), second])
    replies = _Sent()
    reader = mcp_server._AnsweringReader(inner, replies)
    assert reader.last_context is inner.last_context
    async with reader as same:
        assert same is reader and aiter(reader) is reader
        assert [item async for item in reader] == [first, second]
    assert inner.closed
    assert [(m.message.id, m.message.error.code) for m in replies.messages] == [
        (None, -32700),
        (2, -32600),
    ]  # the blank line is not answered


async def test_the_reader_without_a_context_says_none() -> None:
    class NoContext:
        pass

    assert mcp_server._AnsweringReader(NoContext(), _Sent()).last_context is None


# ---------------------------------------------------------------- HTTP


async def _app(scope: Any, receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    request = await receive()  # the request's body reaches the app too
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"inside " + request["body"]})


async def _get(app: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        return await client.post("/mcp", content=b"body", headers=headers or {})


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        f"Basic {TOKEN}",
        f"Token {TOKEN}",
        TOKEN,
    ],
)
async def test_a_request_without_the_token_gets_401_and_nothing_else(
    authorization: str | None,
) -> None:
    headers = {} if authorization is None else {"authorization": authorization}
    answer = await _get(mcp_server._RequireToken(_app, TOKEN), headers)
    assert answer.status_code == 401
    assert answer.json() == {"error": "unauthorized", "message": "missing or wrong bearer token"}
    assert answer.headers["www-authenticate"] == 'Bearer realm="memory-core"'
    assert answer.headers["content-type"] == "application/json"
    assert int(answer.headers["content-length"]) == len(answer.content)
    assert TOKEN not in answer.text


@pytest.mark.parametrize(
    "authorization", [f"Bearer {TOKEN}", f"bearer {TOKEN}", f"BEARER {TOKEN}", f"Bearer  {TOKEN} "]
)
async def test_a_request_with_the_token_reaches_the_app(authorization: str) -> None:
    answer = await _get(mcp_server._RequireToken(_app, TOKEN), {"Authorization": authorization})
    assert (answer.status_code, answer.text) == (200, "inside body")


async def test_lifespan_passes_and_a_websocket_is_closed_without_the_token() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["type"])

    sent = _Sent()
    guarded = mcp_server._RequireToken(app, TOKEN)
    await guarded({"type": "lifespan"}, _nothing, sent.send)
    await guarded({"type": "websocket", "headers": []}, _nothing, sent.send)
    bearer = [(b"authorization", f"Bearer {TOKEN}".encode())]
    await guarded({"type": "websocket", "headers": bearer}, _nothing, sent.send)
    assert seen == ["lifespan", "websocket"]
    assert sent.messages == [{"type": "websocket.close", "code": 1008}]


async def test_the_401_headers_are_lower_case_as_asgi_requires() -> None:
    sent = _Sent()
    no_headers = {"type": "http"}  # a scope may leave its headers out
    await mcp_server._RequireToken(_app, TOKEN)(no_headers, _nothing, sent.send)
    start, body = sent.messages
    assert (start["type"], start["status"], body["type"]) == (
        "http.response.start",
        401,
        "http.response.body",
    )
    assert [name for name, _ in start["headers"]] == [
        b"content-type",
        b"content-length",
        b"www-authenticate",
    ]


async def _nothing() -> None:
    return None


class _Bound:
    """A socket's name only (binding port 80 in a test is not ours to do); an IPv6
    socket's name has four fields."""

    def __init__(self, address: str, port: int) -> None:
        self._name: tuple[Any, ...] = (address, port, 0, 0) if ":" in address else (address, port)

    def getsockname(self) -> tuple[Any, ...]:
        return self._name


@pytest.mark.parametrize(
    ("host", "address", "port", "hosts"),
    [
        ("127.0.0.1", "127.0.0.1", 8766, ["127.0.0.1:8766", "localhost:8766"]),
        ("localhost", "127.0.0.1", 9000, ["127.0.0.1:9000", "localhost:9000"]),
        ("::1", "::1", 8766, ["[::1]:8766", "localhost:8766"]),
        ("127.0.0.2", "127.0.0.2", 8766, ["127.0.0.2:8766"]),
        ("localhost", "127.0.1.1", 8766, ["127.0.1.1:8766", "localhost:8766"]),
        ("127.0.0.1", "127.0.0.1", 80, ["127.0.0.1:80", "localhost:80", "127.0.0.1", "localhost"]),
    ],
)
def test_on_loopback_only_the_bound_names_are_accepted(
    host: str, address: str, port: int, hosts: list[str]
) -> None:
    settings = mcp_server._transport_security(host, _Bound(address, port))  # type: ignore[arg-type]
    assert settings.enable_dns_rebinding_protection
    assert settings.allowed_hosts == hosts
    assert settings.allowed_origins == [f"http://{h}" for h in hosts]


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "::", "memory.example"])
def test_off_loopback_the_names_are_not_checked(host: str) -> None:
    settings = mcp_server._transport_security(host, _Bound("192.0.2.1", 8766))  # type: ignore[arg-type]
    assert not settings.enable_dns_rebinding_protection


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("127.8.9.1", True),
        ("::1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.0.2.1", False),
        ("localhost.example", False),
        ("my-laptop", False),
    ],
)
def test_which_hosts_are_loopback(host: str, loopback: bool) -> None:
    assert mcp_server._is_loopback(host) is loopback


def test_the_listening_socket_is_bound_and_listening() -> None:
    sock = mcp_server._listen("127.0.0.1", 0)
    try:
        address, port = sock.getsockname()
        assert address == "127.0.0.1" and port > 0
        assert sock.family == socket.AF_INET and sock.type == socket.SOCK_STREAM
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR)
        with socket.create_connection((address, port), timeout=5):
            pass  # accepted into the backlog: it listens
        with pytest.raises(ConfigurationError) as in_use:
            mcp_server._listen("127.0.0.1", port)
        assert str(in_use.value) == f"cannot listen on 127.0.0.1:{port}: Address already in use"
    finally:
        sock.close()


def test_an_ipv6_host_gets_an_ipv6_socket() -> None:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError as exc:
        pytest.skip(f"no IPv6 loopback on this machine: {exc}")
    sock = mcp_server._listen("::1", 0)
    try:
        assert sock.family == socket.AF_INET6 and sock.getsockname()[0] == "::1"
    finally:
        sock.close()


def test_a_port_out_of_range_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError) as caught:
        mcp_server._listen("127.0.0.1", 70_000)
    assert str(caught.value) == "cannot listen on 127.0.0.1:70000: ports are 0-65535"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


# ---------------------------------------------------------------- the token's rules


def test_the_token_comes_from_the_flag_with_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    assert mcp_server._token(TOKEN) == TOKEN
    err = capsys.readouterr().err
    assert err.startswith("memory-core mcp: warning: a --token value is visible")
    assert mcp_server.TOKEN_ENV in err and TOKEN not in err


def test_the_token_comes_from_the_environment_quietly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(mcp_server.TOKEN_ENV, TOKEN)
    assert mcp_server._token(None) == TOKEN
    monkeypatch.setenv(mcp_server.TOKEN_ENV, "")
    assert mcp_server._token(None) is None
    monkeypatch.delenv(mcp_server.TOKEN_ENV)
    assert mcp_server._token(None) is None
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "token",
    [
        "x" * (mcp_server.MIN_TOKEN_CHARS - 1),
        "with space" + "x" * 20,
        "tab\t" + "x" * 20,
        "é" + "x" * 20,
        "~" * 16 + "\x7f",
    ],
)
def test_a_weak_or_malformed_token_is_refused_without_echoing_it(token: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        mcp_server._token(token)
    assert token not in str(caught.value)
    assert f"at least {mcp_server.MIN_TOKEN_CHARS} printable ASCII" in str(caught.value)


@pytest.mark.parametrize("token", ["!" * 16, "~" * 16, "x" * mcp_server.MIN_TOKEN_CHARS])
def test_the_bounds_of_a_good_token(token: str) -> None:
    assert mcp_server._token(token) == token


# ---------------------------------------------------------------- logs and errors


def test_http_client_logs_are_quiet_unless_verbose() -> None:
    loggers = [logging.getLogger(name) for name in mcp_server.HTTP_CLIENT_LOGGERS]
    assert [lg.name for lg in loggers] == ["httpx", "httpcore"]
    before = [lg.level for lg in loggers]
    try:
        for lg in loggers:
            lg.setLevel(logging.INFO)
        mcp_server._quiet_http_client_logs(True)
        assert [lg.level for lg in loggers] == [logging.INFO] * 2
        mcp_server._quiet_http_client_logs(False)
        assert [lg.level for lg in loggers] == [logging.WARNING] * 2
    finally:
        for lg, level in zip(loggers, before, strict=True):
            lg.setLevel(level)


async def test_a_memory_core_error_becomes_a_tool_error_with_its_text() -> None:
    async def fails(session_id: str) -> None:
        raise NotFoundError(f"no session {session_id}")

    wrapped = mcp_server._reported(fails)
    assert wrapped.__name__ == "fails"
    with pytest.raises(ToolError) as caught:
        await wrapped(session_id="s9")
    assert str(caught.value) == "NotFoundError: no session s9"
    assert isinstance(caught.value.__cause__, NotFoundError)


async def test_other_errors_and_results_pass_through_the_wrapper() -> None:
    async def answers(x: int) -> int:
        if x < 0:
            raise ValueError("negative")
        return x * 2

    wrapped = mcp_server._reported(answers)
    assert await wrapped(4) == 8
    with pytest.raises(ValueError, match="negative"):
        await wrapped(-1)


def test_validation_errors_are_what_the_transport_hands_on() -> None:
    # the premise of the tests above: a refused line arrives as pydantic's error
    assert isinstance(_refusal('{"id":1}'), ValidationError)


# ---------------------------------------------------------------- the command


def test_the_commands_arguments_and_their_defaults() -> None:
    parser = argparse.ArgumentParser()
    mcp_server.add_arguments(parser)
    assert vars(parser.parse_args([])) == {
        "url": None,
        "http": False,
        "host": "127.0.0.1",
        "port": mcp_server.DEFAULT_PORT,
        "token": None,
        "strict": False,
        "user": None,
        "verbose": False,
    }
    given = ["sqlite:///x.db", "--http", "--host", "::1", "--port", "9001", "--token", "t"]
    given += ["--strict", "--user", "alice", "--verbose"]
    assert vars(parser.parse_args(given)) == {
        "url": "sqlite:///x.db",
        "http": True,
        "host": "::1",
        "port": 9001,
        "token": "t",
        "strict": True,
        "user": "alice",
        "verbose": True,
    }
    shown = " ".join(parser.format_help().split())
    assert f"port (HTTP; default {mcp_server.DEFAULT_PORT})" in shown
    assert f"(better: set {mcp_server.TOKEN_ENV}; the value of this flag is visible" in shown


class _Served:
    """``_serve_http`` replaced: what ``main`` hands it, without serving."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    async def __call__(self, server: Any, sock: socket.socket, host: str, token: Any) -> None:
        self.calls.append((server, sock.getsockname(), sock.fileno() != -1, host, token))


def test_main_over_http_binds_first_and_hands_everything_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served = _Served()
    monkeypatch.setattr(mcp_server, "_serve_http", served)
    monkeypatch.setenv(mcp_server.TOKEN_ENV, TOKEN)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = ["memory://", "--http", "--port", str(port), "--strict", "--user", "alice"]
    assert mcp_server.main(argv) == 0
    [(server, bound, open_then, host, token)] = served.calls
    assert (bound, open_then, host, token) == (("127.0.0.1", port), True, "127.0.0.1", TOKEN)
    assert server.name == "memory-core (memory://)"
    said = capsys.readouterr().out
    assert said == (
        f"memory-core mcp: MCP (streamable HTTP) on http://127.0.0.1:{port}/mcp over "
        "memory://, a bearer token required\n"
    )


async def _no_stdio(server: Any) -> None:
    return None


def test_main_over_stdio_opens_the_store_as_asked_and_names_it_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[Any] = []

    async def keep(server: Any) -> None:
        built.append(server)

    monkeypatch.setattr(mcp_server, "serve_stdio", keep)
    monkeypatch.setenv(mcp_server.TOKEN_ENV, "short")  # read only for --http
    opened: list[dict[str, Any]] = []
    real_open = mcp_server.open_backend

    def open_backend_spy(url: str, **options: Any) -> Any:
        opened.append({"url": url, **options})
        return real_open("memory://", **options)

    monkeypatch.setattr(mcp_server, "open_backend", open_backend_spy)
    url = "nams+http://127.0.0.1:9/v1?api_key=sekrit"
    assert mcp_server.main([url, "--strict"]) == 0
    assert opened == [{"url": url, "strict": True}]
    [server] = built
    assert server.name.startswith("memory-core (nams+http://127.0.0.1:9/v1")
    assert "sekrit" not in server.name
    assert mcp_server.main([url]) == 0
    assert opened[-1] == {"url": url, "strict": False}


def test_main_takes_the_token_flag_and_serves_loopback_without_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served = _Served()
    monkeypatch.setattr(mcp_server, "_serve_http", served)
    monkeypatch.delenv(mcp_server.TOKEN_ENV, raising=False)
    assert mcp_server.main(["memory://", "--http", "--port", "0", "--token", TOKEN]) == 0
    assert mcp_server.main(["memory://", "--http", "--port", "0"]) == 0  # loopback: no token
    assert [call[-1] for call in served.calls] == [TOKEN, None]
    capsys.readouterr()  # the two "MCP on …" lines
    with pytest.raises(SystemExit):
        mcp_server.main(["--help"])
    assert capsys.readouterr().out.startswith("usage: memory-core mcp ")


def test_main_quiets_the_http_client_logs_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    said: list[bool] = []
    monkeypatch.setattr(mcp_server, "serve_stdio", _no_stdio)
    monkeypatch.setattr(mcp_server, "_quiet_http_client_logs", said.append)
    mcp_server.main(["memory://"])
    mcp_server.main(["memory://", "--verbose"])
    mcp_server.main(["memory://"], debug=True)
    assert said == [False, True, True]


def test_off_loopback_over_http_the_token_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(mcp_server.TOKEN_ENV, raising=False)
    monkeypatch.setattr(mcp_server, "serve_stdio", _no_stdio)
    with pytest.raises(ConfigurationError, match=r"--host 0\.0\.0\.0: serving off loopback needs"):
        mcp_server.main(["memory://", "--http", "--host", "0.0.0.0"])
    assert mcp_server.main(["memory://", "--host", "0.0.0.0"]) == 0  # stdio: no HTTP at all


@pytest.fixture(name="uvicorn_logging_kept")
def uvicorn_logging_kept_fixture() -> Iterator[None]:
    """uvicorn configures its loggers for the test's captured stderr: put them back, or
    the run's other uvicorn servers log into that stream once it is closed."""
    loggers = [logging.getLogger(name) for name in ("uvicorn", "uvicorn.error", "uvicorn.access")]
    saved = [(lg.handlers[:], lg.level, lg.propagate, lg.disabled) for lg in loggers]
    yield
    for lg, (handlers, level, propagate, disabled) in zip(loggers, saved, strict=True):
        lg.handlers[:] = handlers
        lg.setLevel(level)
        lg.propagate, lg.disabled = propagate, disabled


@pytest.mark.skipif(
    "MUTANT_UNDER_TEST" in os.environ,
    reason="under mutmut the middleware's __call__ is a plain function, which uvicorn "
    "takes for an app factory and calls with no arguments",
)
async def test_the_http_server_guards_every_request_and_serves_mcp(
    uvicorn_logging_kept: None,
) -> None:
    server = mcp_server.build_server(open_backend("memory://"))
    sock = mcp_server._listen("127.0.0.1", 0)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    bearer = {"authorization": f"Bearer {TOKEN}"}
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(mcp_server._serve_http, server, sock, "127.0.0.1", TOKEN)
            async with httpx.AsyncClient(trust_env=False, timeout=10) as client:
                with anyio.fail_after(30):
                    while True:
                        try:
                            answer = await client.post(base, json={})
                            break
                        except httpx.TransportError:
                            await anyio.sleep(0.05)
                assert answer.status_code == 401
                rebound = await client.post(
                    base, json={}, headers={**bearer, "host": "evil.example"}
                )
                assert rebound.status_code == 421  # the Host check, behind the token
                accept = {"accept": "application/json, text/event-stream"}
                initialize = await client.post(base, json=INITIALIZE, headers={**bearer, **accept})
                assert initialize.status_code == 200
                assert "memory-core" in initialize.text
            tasks.cancel_scope.cancel()
    finally:
        sock.close()
