"""An MCP server over any backend: ``memory-core mcp URL``.

``pip install "memory-core[mcp]"``. Stdio transport by default; ``--http`` serves streamable
HTTP on a loopback address only (port 8766 by default, so that it can run beside
``memory-core serve`` on 8765; a port in use is one line on stderr and exit code 1);
``--user USER`` opens the store multi-tenant and scopes every tool call to that user (one
server per user). The HTTP client's per-request log lines (``httpx``/``httpcore`` at INFO,
e.g. over NAMS) are not shown unless ``--verbose``. Tools (each offered only where the
backend's capability flags allow it; descriptions state the backend's limits):

``add_message``, ``recent_messages``, ``search_messages``, ``get_context``,
``list_sessions`` (needs ``list_sessions``), ``clear_session``, and ``start_session`` where
the backend does not create sessions on first write (NAMS in its reference mode).

Tool errors (bad input, a missing capability, an unknown session) come back as MCP tool
errors carrying memory-core's message.
"""

from __future__ import annotations

import argparse
import functools
import ipaddress
import logging
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from ..backend import MemoryBackend
from ..errors import ConfigurationError, MemoryCoreError, NotSupportedError
from ..models import Message
from ..open import open_backend
from ..settings import default_url, redact_url
from ..warning_channel import add_framework
from ._bridge import astart_session

# The framework's frames call this module: capability warnings point past them.
add_framework("mcp")

__all__ = ["DEFAULT_PORT", "build_server", "main", "tool_names"]

DEFAULT_PORT = 8766
"""``--http``'s port: not ``memory-core serve``'s 8765, so both can run side by side."""
# Loggers that log every HTTP request the backend makes (the NAMS client) at INFO.
HTTP_CLIENT_LOGGERS = ("httpx", "httpcore")


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

    async def list_sessions(prefix: str | None = None, limit: int = 50) -> dict[str, Any]:
        rows = await backend.list_sessions(prefix=prefix, limit=limit, user_identifier=user)
        return {"sessions": [r.model_dump(mode="json") for r in rows]}

    async def clear_session(session_id: str) -> dict[str, Any]:
        return {"deleted": await backend.clear_session(session_id, user_identifier=user)}

    async def start_session(name: str | None = None) -> dict[str, Any]:
        return {"session_id": await astart_session(backend, name, user_identifier=user)}

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
        add_message: (
            "Store one message (role: user, assistant, system or tool) at the end of a "
            f"session. {session_note} {metadata_note}"
        ),
        recent_messages: (
            "The newest `limit` messages of a session, oldest first. " + _read_cap(backend)
        ),
        search_messages: (
            f"Messages matching a text query, best first, each with a score in 0..1. {search_scope}"
        ),
        get_context: (
            "Prompt-ready text: the session's recent messages plus, with a query, relevant ones."
        ),
        list_sessions: "Sessions with message counts and previews, most recently updated first.",
        clear_session: f"Delete every message of a session. {clear_note}",
        start_session: (
            "Create a session and return its session_id (on this backend the store issues "
            "the id; `name` is only a label)."
        ),
    }


# ---------------------------------------------------------------- command line


def _loopback(host: str) -> str:
    try:
        if host == "localhost" or ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise ConfigurationError(f"--host {host!r}: the MCP server listens on loopback only")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``memory-core mcp``."""
    parser.add_argument("url", nargs="?", help="backend URL (default: MEMORY_BACKEND_URL)")
    parser.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address (HTTP)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (HTTP; default {DEFAULT_PORT})"
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


async def _serve_http(server: MCPServer[Any], sock: socket.socket, host: str) -> None:
    """What ``run_streamable_http_async`` does, on a socket already bound."""
    import uvicorn

    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, log_level=server.settings.log_level.lower())
    await uvicorn.Server(config).serve(sockets=[sock])


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
    host = _loopback(args.host) if args.http else args.host
    options: dict[str, Any] = {"multi_tenant": True} if args.user else {}
    backend = open_backend(url, strict=args.strict, **options)
    label = f"memory-core ({redact_url(url)})"
    server = build_server(backend, name=label, user_identifier=args.user)
    _quiet_http_client_logs(args.verbose or debug)  # after the server set up logging
    if not args.http:
        anyio.run(server.run_stdio_async)
        return 0
    sock = _listen(host, args.port)
    try:
        anyio.run(_serve_http, server, sock, host)
    except SystemExit as exc:  # uvicorn's start-up failure (its code 3): logged above
        if exc.code:
            raise ConfigurationError("the MCP HTTP server failed to start") from None
    finally:
        sock.close()
    return 0
