"""The MCP server's own transport code run in-process: the stdio loop that answers every
unreadable line, the answer each kind of line gets, the HTTP token middleware, the
Host/Origin rules, the listening socket, the token's rules and the tool error wrapper.

The subprocess tests (``test_mcp_server.py``, ``tests/reliability/test_mcp_hostile.py``)
show the same through the real command; these pin each rule down where a change to one
of them shows as a failure of its own (and where the mutation tool can see the calls).
"""

from __future__ import annotations

import io
import json
import logging
import socket
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


@pytest.mark.parametrize(
    ("what", "line", "code", "request_id"), BAD_LINES, ids=[b[0] for b in BAD_LINES]
)
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


def test_a_line_that_is_not_json_names_the_reason(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger=mcp_server.logger.name):
        reply = mcp_server.unreadable_line_reply(_refusal("hello, server"))
    assert reply is not None and reply.id is None and reply.error.code == -32700
    assert reply.error.message.startswith("Parse error: ") and "hello" not in reply.error.message
    [record] = caplog.records
    assert record.getMessage().startswith("refused a line that cannot be parsed (")
    assert "hello" not in record.getMessage()


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
    """Two in-memory streams to hand ``serve_stdio`` instead of the process's own."""

    def __init__(self, lines: list[bytes | str]) -> None:
        text = "".join(
            (line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line) + "\n"
            for line in lines
        )
        self.stdin = anyio.wrap_file(io.StringIO(text))
        self._out = io.StringIO()
        self.stdout = anyio.wrap_file(self._out)

    def answers(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self._out.getvalue().splitlines()]


async def test_the_stdio_loop_answers_bad_lines_and_goes_on_serving() -> None:
    lines: list[bytes | str] = [b"before the handshake", json.dumps(INITIALIZE)]
    lines.append('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    lines += [line for _, line, _, _ in BAD_LINES]
    lines += ["", '{"jsonrpc":"2.0","id":99,"method":"ping"}']
    streams = _Streams(lines)
    server = mcp_server.build_server(open_backend("memory://"))
    with anyio.fail_after(30):
        await mcp_server.serve_stdio(server, streams.stdin, streams.stdout)
    answers = streams.answers()
    expected: list[tuple[object, object]] = [(-32700, None), ("initialize", 1)]
    expected += [(code, request_id) for _, _, code, request_id in BAD_LINES]
    expected.append(("ping", 99))
    got = [(a["error"]["code"], a["id"]) if "error" in a else (_kind(a), a["id"]) for a in answers]
    assert got == expected  # the blank line got no answer; the ping after them all did


def _kind(answer: dict[str, Any]) -> str:
    return "initialize" if "serverInfo" in answer.get("result", {}) else "ping"


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
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"inside"})


async def _get(app: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        return await client.get("/mcp", headers=headers or {})


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
    assert (answer.status_code, answer.text) == (200, "inside")


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


async def _nothing() -> None:
    return None


class _Bound:
    """A socket's name only (binding port 80 in a test is not ours to do)."""

    def __init__(self, address: str, port: int) -> None:
        self._name = (address, port)

    def getsockname(self) -> tuple[str, int]:
        return self._name


@pytest.mark.parametrize(
    ("host", "address", "port", "hosts"),
    [
        ("127.0.0.1", "127.0.0.1", 8766, ["127.0.0.1:8766", "localhost:8766"]),
        ("localhost", "127.0.0.1", 9000, ["127.0.0.1:9000", "localhost:9000"]),
        ("::1", "::1", 8766, ["[::1]:8766", "localhost:8766"]),
        ("127.0.0.2", "127.0.0.2", 8766, ["127.0.0.2:8766"]),
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
        with pytest.raises(ConfigurationError, match=f"cannot listen on 127.0.0.1:{port}: "):
            mcp_server._listen("127.0.0.1", port)
    finally:
        sock.close()


def test_an_ipv6_host_gets_an_ipv6_socket() -> None:
    try:
        sock = mcp_server._listen("::1", 0)
    except ConfigurationError as exc:
        pytest.skip(f"no IPv6 loopback here: {exc}")
    try:
        assert sock.family == socket.AF_INET6
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
