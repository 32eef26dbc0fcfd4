"""An MCP server over any backend: ``memory-core mcp URL``.

``pip install "memory-core[mcp]"``. Stdio transport by default; ``--http`` serves streamable
HTTP on 127.0.0.1 (another address with ``--host``: off loopback only with a token; port
8766 by default, so that it can run beside ``memory-core serve`` on 8765; a port in use is
one line on stderr and exit code 1);
``--user USER`` opens the store multi-tenant and scopes every tool call to that user (one
server per user). The HTTP client's per-request log lines (``httpx``/``httpcore`` at INFO,
e.g. over NAMS) are not shown unless ``--verbose``. Tools (each offered only where the
backend's capability flags allow it; descriptions state the backend's limits):

``add_message``, ``recent_messages``, ``search_messages``, ``get_context``,
``list_sessions`` (needs ``list_sessions``), ``clear_session``, and ``start_session`` where
the backend does not create sessions on first write (NAMS in its reference mode); for
long-term memory ``add_preference`` and ``search_preferences`` (needs ``preferences``),
``add_fact`` and ``facts_about`` (``facts``), ``search_entities`` (``entity_search``),
``related_entities`` (``entity_graph``), ``get_entity_by_name`` (``entity_updates``) and
``merge_entities`` (``entity_merge``).

Tool errors (bad input, a missing capability, an unknown session) come back as MCP tool
errors carrying memory-core's message. Over stdio, a line that is not a JSON-RPC message
(not JSON, nested past the parser's limit, a lone surrogate ``"\ud800"``, not a request
object) is answered with a JSON-RPC error (``-32700`` parse error, ``-32600`` invalid
request; the request's id when it can be read, else ``null``) and the server reads on.

Over HTTP, the Host and Origin headers must name the address the server is bound to (any
loopback address: DNS rebinding cannot reach it), and with a token
(``MEMORY_CORE_MCP_TOKEN`` or ``--token``) every request must carry ``Authorization:
Bearer TOKEN`` (compared in constant time; 401 otherwise). Binding anywhere but loopback
requires the token: without one the server refuses to start (exit code 1).
"""

from __future__ import annotations

import argparse
import contextvars
import functools
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

from ..backend import MemoryBackend
from ..errors import ConfigurationError, MemoryCoreError, NotSupportedError
from ..models import Message, utcnow
from ..open import open_backend
from ..settings import default_url, redact_url
from ..warning_channel import add_framework
from ._bridge import astart_session

# The framework's frames call this module: capability warnings point past them.
add_framework("mcp")

__all__ = ["DEFAULT_PORT", "TOKEN_ENV", "build_server", "main", "serve_stdio", "tool_names"]

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8766
"""``--http``'s port: not ``memory-core serve``'s 8765, so both can run side by side."""
#: Where the streamable HTTP transport answers (the MCP SDK's usual path).
MCP_PATH = "/mcp"
# Loggers that log every HTTP request the backend makes (the NAMS client) at INFO.
HTTP_CLIENT_LOGGERS = ("httpx", "httpcore")
TOKEN_ENV = "MEMORY_CORE_MCP_TOKEN"
"""The bearer token HTTP clients must present (``--token`` sets it too)."""
MIN_TOKEN_CHARS = 16


def _message(m: Message) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": str(m.id),
        "role": m.role.value,
        "content": m.content,
        "created_at": m.created_at.isoformat(),
    }
    if m.metadata:
        out["metadata"] = m.metadata
    if m.score is not None:
        out["score"] = m.score
    return out


def _read_cap(backend: MemoryBackend) -> str:
    cap = backend.capabilities.max_messages_per_read
    if cap is None:
        return "Any number of messages can be read."
    return f"At most {cap} messages can be read; older ones are unreachable on this backend."


def tool_names(backend: MemoryBackend) -> list[str]:
    """The tools :func:`build_server` offers for this backend."""
    caps = backend.capabilities
    names = ["add_message", "recent_messages", "search_messages", "get_context"]
    if caps.list_sessions:
        names.append("list_sessions")
    names.append("clear_session")
    if not caps.auto_create_conversation:
        names.append("start_session")
    if caps.preferences:
        names += ["add_preference", "search_preferences"]
    if caps.facts:
        names += ["add_fact", "facts_about"]
    if caps.entity_search:
        names.append("search_entities")
    if caps.entity_graph:
        names.append("related_entities")
    if caps.entity_updates:
        names.append("get_entity_by_name")
    if caps.entity_merge:
        names.append("merge_entities")
    if caps.traces:
        names += ["start_trace", "add_step", "record_tool_call", "complete_trace"]
    if caps.similar_traces:
        names.append("similar_traces")
    return names


def build_server(
    backend: MemoryBackend, *, name: str = "memory-core", user_identifier: str | None = None
) -> MCPServer:
    """An MCP server whose tools call ``backend`` (connected on first use, closed with the
    server's lifespan). ``user_identifier`` scopes every call to that user (required when
    the backend is multi-tenant)."""

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await backend.close()

    server: MCPServer[Any] = MCPServer(
        name,
        instructions=(
            f"Conversation memory on the {backend.name} backend. Messages are grouped in "
            "sessions named by session_id."
        ),
        lifespan=lifespan,
    )
    wanted = set(tool_names(backend))
    for tool, description in _tools(backend, user_identifier).items():
        if tool.__name__ in wanted:
            server.add_tool(_reported(tool), name=tool.__name__, description=description)
    return server


def _reported(tool: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """memory-core errors reach the client as tool errors with their message (the MCP
    server hides the text of any other exception)."""

    @functools.wraps(tool)
    async def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return await tool(*args, **kwargs)
        except MemoryCoreError as exc:
            raise ToolError(f"{type(exc).__name__}: {exc}") from exc

    return run


def _tools(backend: MemoryBackend, user: str | None) -> dict[Any, str]:
    """Every tool over ``backend`` for ``user``, with its description, in the order offered."""
    descriptions = _descriptions(backend)
    tools = (
        _message_tools(backend, user)
        + _session_tools(backend, user)
        + _long_term_tools(backend, user)
        + _reasoning_tools(backend, user)
    )
    return {tool: descriptions[tool.__name__] for tool in tools}


ToolFunction = Callable[..., Awaitable[dict[str, Any]]]


def _message_tools(backend: MemoryBackend, user: str | None) -> list[ToolFunction]:
    """The tools that write, read and search the messages of a session."""
    caps = backend.capabilities

    async def add_message(
        session_id: str, role: str, content: str, metadata: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        if metadata and not caps.message_metadata:
            raise NotSupportedError(
                backend.name, "add_message", "metadata cannot be stored", "omit metadata"
            )
        stored = await backend.add_message(
            session_id, role, content, metadata=metadata, user_identifier=user
        )
        return _message(stored)

    async def recent_messages(session_id: str, limit: int = 20) -> dict[str, Any]:
        conversation = await backend.get_conversation(session_id, limit=limit, user_identifier=user)
        return {"session_id": session_id, "messages": [_message(m) for m in conversation.messages]}

    async def search_messages(
        query: str, session_id: str | None = None, limit: int = 10
    ) -> dict[str, Any]:
        hits = await backend.search_messages(
            query, session_id=session_id, limit=limit, user_identifier=user
        )
        return {"messages": [_message(m) for m in hits]}

    async def get_context(
        session_id: str, query: str | None = None, max_messages: int = 10
    ) -> dict[str, Any]:
        text = await backend.get_context(
            query, session_id=session_id, max_messages=max_messages, user_identifier=user
        )
        return {"context": text}

    return [add_message, recent_messages, search_messages, get_context]


def _session_tools(backend: MemoryBackend, user: str | None) -> list[ToolFunction]:
    """The tools that list, clear and start sessions."""

    async def list_sessions(prefix: str | None = None, limit: int = 50) -> dict[str, Any]:
        rows = await backend.list_sessions(prefix=prefix, limit=limit, user_identifier=user)
        return {"sessions": [r.model_dump(mode="json") for r in rows]}

    async def clear_session(session_id: str) -> dict[str, Any]:
        return {"deleted": await backend.clear_session(session_id, user_identifier=user)}

    async def start_session(name: str | None = None) -> dict[str, Any]:
        return {"session_id": await astart_session(backend, name, user_identifier=user)}

    return [list_sessions, clear_session, start_session]


def _long_term_tools(backend: MemoryBackend, user: str | None) -> list[ToolFunction]:
    """The tools that keep and recall preferences and facts, and search entities."""

    async def add_preference(
        category: str, preference: str, context: str | None = None
    ) -> dict[str, Any]:
        made = await backend.add_preference(
            category, preference, context=context, user_identifier=user
        )
        return made.model_dump(mode="json", exclude={"score"})

    async def search_preferences(
        query: str, category: str | None = None, limit: int = 10
    ) -> dict[str, Any]:
        hits = await backend.search_preferences(
            query, category=category, limit=limit, user_identifier=user
        )
        return {"preferences": [h.model_dump(mode="json") for h in hits]}

    async def add_fact(subject: str, predicate: str, object: str) -> dict[str, Any]:
        made = await backend.add_fact(subject, predicate, object, user_identifier=user)
        return made.model_dump(mode="json", exclude={"score"})

    async def facts_about(subject: str, limit: int = 20) -> dict[str, Any]:
        found = await backend.facts_about(
            subject, as_of=utcnow(), limit=limit, user_identifier=user
        )
        return {"facts": [f.model_dump(mode="json", exclude={"score"}) for f in found]}

    async def search_entities(query: str, limit: int = 10) -> dict[str, Any]:
        hits = await backend.search_entities(
            query, limit=limit, user_identifier=_owner(backend, user)
        )
        return {"entities": [h.model_dump(mode="json") for h in hits]}

    async def related_entities(entity_id: str, depth: int = 1) -> dict[str, Any]:
        found = await backend.related_entities(
            entity_id, depth=depth, user_identifier=_owner(backend, user)
        )
        return {"entities": [e.model_dump(mode="json", exclude={"score"}) for e in found]}

    return [
        add_preference,
        search_preferences,
        add_fact,
        facts_about,
        search_entities,
        related_entities,
        *_entity_tools(backend, user),
    ]


def _entity_tools(backend: MemoryBackend, user: str | None) -> list[ToolFunction]:
    """``get_entity_by_name`` and ``merge_entities``."""

    async def get_entity_by_name(name: str) -> dict[str, Any]:
        found = await backend.get_entity_by_name(name, user_identifier=_owner(backend, user))
        return {"entity": None if found is None else found.model_dump(mode="json")}

    async def merge_entities(source_id: str, target_id: str) -> dict[str, Any]:
        merged = await backend.merge_entities(
            source_id, target_id, user_identifier=_owner(backend, user)
        )
        return {"entity": merged.model_dump(mode="json", exclude={"score"})}

    return [get_entity_by_name, merge_entities]


def _reasoning_tools(backend: MemoryBackend, user: str | None) -> list[ToolFunction]:
    """The tools that record how the agent went about a task, and recall similar ones."""

    async def start_trace(session_id: str, task: str) -> dict[str, Any]:
        made = await backend.start_trace(session_id, task, user_identifier=user)
        return made.model_dump(mode="json", exclude={"score", "steps"})

    async def add_step(
        trace_id: str,
        thought: str | None = None,
        action: str | None = None,
        observation: str | None = None,
    ) -> dict[str, Any]:
        made = await backend.add_step(
            trace_id, thought=thought, action=action, observation=observation, user_identifier=user
        )
        return made.model_dump(mode="json", exclude={"score"})

    async def record_tool_call(
        step_id: str,
        tool_name: str,
        arguments: dict[str, Any] | None = None,
        result: Any = None,
        status: str = "success",
        duration_ms: int | None = None,
        error: str | None = None,
    ) -> dict[str, Any]:
        made = await backend.record_tool_call(
            step_id,
            tool_name,
            arguments,
            result=result,
            status=status,
            duration_ms=duration_ms,
            error=error,
            user_identifier=user,
        )
        return made.model_dump(mode="json")

    async def complete_trace(
        trace_id: str, outcome: str | None = None, success: bool | None = None
    ) -> dict[str, Any]:
        done = await backend.complete_trace(
            trace_id, outcome=outcome, success=success, user_identifier=user
        )
        return done.model_dump(mode="json", exclude={"score"})

    async def similar_traces(
        task: str, limit: int = 5, success_only: bool = True
    ) -> dict[str, Any]:
        hits = await backend.similar_traces(
            task, limit=limit, success_only=success_only, user_identifier=user
        )
        return {"traces": [h.model_dump(mode="json", exclude={"steps"}) for h in hits]}

    return [start_trace, add_step, record_tool_call, complete_trace, similar_traces]


def _owner(backend: MemoryBackend, user: str | None) -> str | None:
    """The user entity calls are made for: entities are per user only when the backend
    is multi-tenant (elsewhere passing one would warn that it is dropped)."""
    return user if backend.multi_tenant else None


_REASONING_DESCRIPTIONS = {
    "start_trace": (
        "Start recording how you go about a task in a session; returns the trace (its "
        "id is what add_step and complete_trace take)."
    ),
    "add_step": (
        "Add the next step to a trace: what you thought, the action you took and what "
        "you observed (at least one). Steps are numbered 1, 2, 3... in order."
    ),
    "record_tool_call": (
        "Record a tool call made during a step: tool name, arguments, result, status "
        "(pending, success, failure, error, timeout or cancelled), duration in ms, error."
    ),
    "complete_trace": (
        "Finish a trace with its outcome and whether it succeeded. A trace is completed "
        "once: calling again changes nothing."
    ),
    "similar_traces": (
        "Past traces whose task is like `task`, best first with a score in 0..1; only "
        "successful ones unless success_only is false. Use them to reuse what worked."
    ),
}


def _descriptions(backend: MemoryBackend) -> dict[str, str]:
    """Each tool's description by tool name, stating this backend's limits."""
    caps = backend.capabilities
    metadata_note = (
        "metadata (a JSON object) is stored with the message."
        if caps.message_metadata
        else "This backend stores no metadata: passing it is refused."
    )
    session_note = (
        "Writing to a new session_id creates the session."
        if caps.auto_create_conversation
        else "The session must exist: create it with start_session and use the id it returns."
    )
    search_scope = (
        "Without session_id it searches every session."
        if caps.search_global
        else "session_id is required on this backend (no search across sessions)."
    )
    clear_note = (
        "The session accepts new messages afterwards."
        if caps.auto_create_conversation
        else "The session itself is deleted; start a new one to write again."
    )
    return {
        "add_message": (
            "Store one message (role: user, assistant, system or tool) at the end of a "
            f"session. {session_note} {metadata_note}"
        ),
        "recent_messages": (
            "The newest `limit` messages of a session, oldest first. " + _read_cap(backend)
        ),
        "search_messages": (
            f"Messages matching a text query, best first, each with a score in 0..1. {search_scope}"
        ),
        "get_context": (
            "Prompt-ready text: the session's recent messages plus, with a query, relevant ones."
        ),
        "list_sessions": "Sessions with message counts and previews, most recently updated first.",
        "clear_session": (
            "Delete every message of a session"
            + (", and its reasoning traces. " if caps.traces else ". ")
            + clear_note
        ),
        "start_session": (
            "Create a session and return its session_id (on this backend the store issues "
            "the id; `name` is only a label)."
        ),
        "add_preference": (
            "Remember a preference of the user: a statement (`likes spicy food`) in a "
            "category (`food`), with when it applies (`context`). Each call adds one."
        ),
        "search_preferences": (
            "The user's preferences matching a text query, best first, each with a score in "
            "0..1; `category` narrows it."
        ),
        "add_fact": ("Remember a fact as subject, predicate, object (`Ada`, `WORKS_AT`, `Acme`)."),
        "facts_about": "The facts valid now whose subject is `subject` (any case), newest first.",
        "search_entities": (
            "Entities (people, organisations, places...) with a word of the query in their "
            "name or description, best first."
        ),
        "related_entities": (
            "Entities linked to an entity (by its id) through relationships, up to `depth` "
            "(1 to 3) steps away, nearest first."
        ),
        "get_entity_by_name": (
            "The entity whose name or one of whose aliases is `name` (any case), with its "
            "aliases and attributes; null when there is none."
        ),
        "merge_entities": (
            "Merge a duplicate entity (source_id) into another (target_id): its mentions, "
            "relationships, preference links and facts move to the target, its names become "
            "aliases of the target, and the source is deleted. Returns the target."
        ),
        **_REASONING_DESCRIPTIONS,
    }


# ---------------------------------------------------------------- stdio


async def serve_stdio(
    server: MCPServer[Any],
    stdin: anyio.AsyncFile[str] | None = None,
    stdout: anyio.AsyncFile[str] | None = None,
) -> None:
    """``server.run_stdio_async()``, except that every line that is not a JSON-RPC message
    is answered with a JSON-RPC error instead of being dropped (a client waiting for its
    answer would otherwise wait forever); the server then reads the next line.
    ``stdin``/``stdout``: other streams than the process's (its own by default)."""
    lowlevel = server._lowlevel_server  # what run_stdio_async itself runs
    async with stdio_server(stdin, stdout) as (read_stream, write_stream):
        await lowlevel.run(
            _AnsweringReader(read_stream, write_stream),
            write_stream,
            lowlevel.create_initialization_options(),
        )


class _AnsweringReader:
    """The stdio transport's read stream, minus the lines it could not read: the
    transport hands those on as exceptions, which the MCP server drops. Each is answered
    here, on the transport's write stream, and reading goes on."""

    def __init__(self, inner: Any, replies: Any) -> None:
        self._inner = inner
        self._replies = replies

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender context of the last message (the server runs handlers in it)."""
        context: contextvars.Context | None = getattr(self._inner, "last_context", None)
        return context

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item: SessionMessage | Exception = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            reply = unreadable_line_reply(item)
            if reply is not None:
                await self._replies.send(SessionMessage(reply))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _AnsweringReader:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _AnsweringReader:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()


def unreadable_line_reply(exc: Exception) -> JSONRPCError | None:
    """The JSON-RPC error answering a line the stdio transport could not read (``exc``,
    what it raised), or ``None`` for a line JSON-RPC does not answer: a blank one, and a
    malformed response (a response is never answered).

    Not JSON at all → ``-32700`` with id ``null``. JSON that the transport's parser
    refuses (nested deeper than it allows, a lone surrogate ``"\\ud800"``, ``NaN``) or that
    is no JSON-RPC message → ``-32600``, with the request's id when one can be read, so
    the client's call ends instead of waiting. The line itself is never echoed or logged.
    """
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if not errors:
        return _jsonrpc_error(None, PARSE_ERROR, "Parse error")
    first = errors[0]
    if first["type"] == "json_invalid":
        line = first.get("input")
        if isinstance(line, str) and not line.strip():
            return None
        reason = str(first.get("msg", "invalid JSON"))
        try:
            parsed = json.loads(line) if isinstance(line, str) else None
        except (ValueError, RecursionError):
            logger.warning("refused a line that cannot be parsed (%s)", reason)
            return _jsonrpc_error(None, PARSE_ERROR, f"Parse error: {reason}")
        logger.warning("refused a request the JSON parser does not accept (%s)", reason)
        return _jsonrpc_error(
            _request_id(parsed),
            INVALID_REQUEST,
            f"Invalid Request: {reason} (refused: lone surrogate escapes such as \\ud800, "
            "NaN and Infinity, very deep nesting)",
        )
    value = _whole_message(errors)
    if isinstance(value, dict) and "method" not in value and value.keys() & {"result", "error"}:
        logger.warning("dropped a malformed response (no request to answer)")
        return None
    logger.warning("refused a line that is not a JSON-RPC message")
    return _jsonrpc_error(
        _request_id(value),
        INVALID_REQUEST,
        "Invalid Request: not a JSON-RPC 2.0 request, notification or response object",
    )


def _whole_message(errors: Sequence[Any]) -> object:
    """The JSON value of the line, from the validation errors: an error about the whole
    value (``model_type``) or a missing top-level field carries it as its input (an
    error about one field carries only that field's value)."""
    for error in errors:
        loc = error["loc"]
        if len(loc) <= 1 or (error["type"] == "missing" and len(loc) == 2):
            return error.get("input")
    return None


def _request_id(value: object) -> int | str | None:
    """The ``id`` of a request object, if it has a valid one that can be sent back."""
    if not isinstance(value, dict):
        return None
    found = value.get("id")
    if isinstance(found, bool) or not isinstance(found, int | str):
        return None
    if isinstance(found, str):
        try:
            found.encode("utf-8")  # a lone surrogate cannot be written back
        except UnicodeEncodeError:
            return None
    return found


def _jsonrpc_error(request_id: int | str | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


# ---------------------------------------------------------------- HTTP


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def _transport_security(host: str, sock: socket.socket) -> TransportSecuritySettings:
    """The Host and Origin values accepted: on loopback, the bound address and port (and
    ``localhost`` where it resolves to that address), so a page whose name an attacker
    rebinds to this address is refused (421 for the Host, 403 for the Origin). Off
    loopback the names clients use cannot be known; the token guards the server there."""
    if not _is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    address, port = sock.getsockname()[:2]
    names = {f"[{address}]" if ":" in address else address}
    if host == "localhost" or address in ("127.0.0.1", "::1"):
        names.add("localhost")
    hosts = [f"{name}:{port}" for name in sorted(names)]
    if port == 80:
        hosts += sorted(names)  # a client may leave the default port out
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{h}" for h in hosts],
    )


ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]


class _RequireToken:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer TOKEN``, else
    401 before anything else of it is looked at. The comparison is of SHA-256 digests
    with :func:`hmac.compare_digest`, so its time says nothing about the token (not even
    its length); the token is never logged or sent back."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._digest = hashlib.sha256(token.encode()).digest()

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] == "lifespan" or self._authorized(scope):
            await self._app(scope, receive, send)
        elif scope["type"] == "http":
            body = json.dumps(
                {"error": "unauthorized", "message": "missing or wrong bearer token"}
            ).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="memory-core"'),
            ]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": body})
        else:  # a websocket: not served, and never without the token
            await send({"type": "websocket.close", "code": 1008})

    def _authorized(self, scope: MutableMapping[str, Any]) -> bool:
        presented = b""
        for name, value in scope.get("headers", ()):
            if name.lower() == b"authorization":
                presented = value
                break
        scheme, _, credentials = presented.partition(b" ")
        given = hashlib.sha256(credentials.strip()).digest()
        return hmac.compare_digest(given, self._digest) and scheme.lower() == b"bearer"


def _token(flag: str | None) -> str | None:
    """The token from ``--token`` or :data:`TOKEN_ENV` (an empty variable is none)."""
    if flag is not None:
        print(
            f"memory-core mcp: warning: a --token value is visible to other local users "
            f"(process list); set {TOKEN_ENV} instead",
            file=sys.stderr,
            flush=True,
        )
    token = flag if flag is not None else os.environ.get(TOKEN_ENV) or None
    if token is None:
        return None
    if len(token) < MIN_TOKEN_CHARS or not all("!" <= c <= "~" for c in token):
        raise ConfigurationError(
            f"the MCP token ({TOKEN_ENV} or --token) must be at least {MIN_TOKEN_CHARS} "
            "printable ASCII characters without spaces, e.g. the output of: python -c "
            '"import secrets; print(secrets.token_urlsafe(32))"'
        )
    return token


# ---------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``memory-core mcp``."""
    parser.add_argument("url", nargs="?", help="backend URL (default: MEMORY_BACKEND_URL)")
    parser.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (HTTP; default 127.0.0.1); off loopback a token is required",
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (HTTP; default {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--token",
        help=f"bearer token every HTTP request must carry (better: set {TOKEN_ENV}; the "
        "value of this flag is visible in the process list)",
    )
    parser.add_argument("--strict", action="store_true", help="open the backend strict")
    parser.add_argument(
        "--user",
        help="open the store multi-tenant and scope every tool call to this user",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also log each HTTP request the backend makes (httpx at INFO; e.g. over NAMS)",
    )


def _listen(host: str, port: int) -> socket.socket:
    """The HTTP transport's listening socket, bound before the server starts: a port in
    use is a ConfigurationError (exit code 1), not uvicorn's exit code 3."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except (OSError, OverflowError) as exc:
        sock.close()
        reason = exc.strerror if isinstance(exc, OSError) else "ports are 0-65535"
        raise ConfigurationError(f"cannot listen on {host}:{port}: {reason}") from None
    sock.listen(128)
    return sock


async def _serve_http(
    server: MCPServer[Any], sock: socket.socket, host: str, token: str | None
) -> None:
    """What ``run_streamable_http_async`` does, on a socket already bound, with the
    Host/Origin check derived from that socket and the token required when set."""
    import uvicorn

    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        transport_security=_transport_security(host, sock),
    )
    if token is not None:
        app = _RequireToken(app, token)
    config = uvicorn.Config(app, log_level=server.settings.log_level.lower())
    await uvicorn.Server(config).serve(sockets=[sock])


def _announce(sock: socket.socket, url: str, token: bool) -> None:
    """Print where the MCP endpoint listens (the URL a client is configured with)."""
    address, port = sock.getsockname()[:2]
    host = f"[{address}]" if ":" in address else address
    access = "a bearer token required" if token else "no token"
    print(
        f"memory-core mcp: MCP (streamable HTTP) on http://{host}:{port}{MCP_PATH} over "
        f"{redact_url(url)}, {access}",
        flush=True,
    )


def _quiet_http_client_logs(verbose: bool) -> None:
    """The NAMS client's HTTP library logs every request at INFO, and the MCP server logs
    at INFO to stderr: keep those lines out unless asked for."""
    if not verbose:
        for name in HTTP_CLIENT_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)


def main(argv: Sequence[str], *, debug: bool = False) -> int:
    """Run ``memory-core mcp``; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="memory-core mcp", description="Serve a backend over MCP."
    )
    add_arguments(parser)
    args = parser.parse_args(list(argv))
    url = args.url or default_url()
    token = _token(args.token) if args.http else None
    if args.http and token is None and not _is_loopback(args.host):
        raise ConfigurationError(
            f"--host {args.host}: serving off loopback needs a token; set {TOKEN_ENV} "
            "(every request must then carry 'Authorization: Bearer TOKEN')"
        )
    options: dict[str, Any] = {"multi_tenant": True} if args.user else {}
    backend = open_backend(url, strict=args.strict, **options)
    label = f"memory-core ({redact_url(url)})"
    server = build_server(backend, name=label, user_identifier=args.user)
    _quiet_http_client_logs(args.verbose or debug)  # after the server set up logging
    if not args.http:
        anyio.run(serve_stdio, server)
        return 0
    sock = _listen(args.host, args.port)
    _announce(sock, url, token is not None)
    try:
        anyio.run(_serve_http, server, sock, args.host, token)
    except SystemExit as exc:  # uvicorn's start-up failure (its code 3): logged above
        if exc.code:
            raise ConfigurationError("the MCP HTTP server failed to start") from None
    finally:
        sock.close()
    return 0
