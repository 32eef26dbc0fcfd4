"""``memory-core serve``: run the NAMS-compatible API over any backend.

Examples::

    memory-core serve                                   # memory://, 127.0.0.1:8765, no keys
    memory-core serve sqlite:///mem.db --api-key s3cret=team-a
    memory-core serve bolt://localhost:7687 --host 0.0.0.0 --api-key k1

Keys also come from ``NAMS_SERVER_API_KEYS`` (comma-separated ``KEY`` or
``KEY=WORKSPACE``): the recommended way, since a ``--api-key`` value is visible to every
local user in the process list (``/proc/PID/cmdline``); ``--api-key`` prints a warning
saying so. Without any key the server only listens on a loopback address. Size limits
(``--max-body-bytes`` …, or ``NAMS_SERVER_MAX_*``) are in :mod:`.limits`; connection
limits (``--header-timeout``, ``--body-timeout``, ``--keep-alive-timeout``,
``--max-connections``) in :mod:`.connections`.

The backing store is opened and connected once before the server starts: an unknown
scheme or an unreachable store is one line on stderr and exit code 1 (the traceback only
with ``--debug``), and the "NAMS API on …" line is printed only once the store answered.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import socket
import sys
from collections.abc import Sequence
from typing import Any

import uvicorn
from fastapi import FastAPI

from memory_core.errors import ConfigurationError
from memory_core.settings import redact_url

from .app import DEFAULT_BACKEND_URL, create_app, open_store
from .auth import ENV_KEYS, ApiKeys, check_open_server
from .connections import ENV as CONNECTION_ENV
from .connections import ConnectionLimits
from .faults import Faults
from .limits import ENV as LIMIT_ENV
from .limits import ServerLimits
from .logsafe import EscapingFormatter
from .runner import bind, make_server

DEFAULT_PORT = 8765


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise _UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    """The arguments of ``memory-core serve``."""
    p = _Parser(prog="memory-core serve", description="Serve the NAMS REST API (/v1).")
    _add_listening(p)
    _add_keys(p)
    _add_summaries(p)
    _add_logging(p)
    _add_limits(p)
    _add_connection_limits(p)
    faults = p.add_argument_group("fault injection (for tests)")
    _add_test_mode(faults)
    _add_retry_faults(faults)
    _add_transport_faults(faults)
    _add_refusal_faults(faults)
    return p


def _add_listening(p: argparse.ArgumentParser) -> None:
    """Adds the store served and the address and port the server listens on."""
    p.add_argument(
        "url",
        nargs="?",
        help="store to serve over, as in every other command (default memory://: in "
        "memory, gone on exit)",
    )
    p.add_argument("--backend-url", help="the same as URL (kept for existing scripts)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port ({DEFAULT_PORT}; 0 picks a free one)"
    )


def _add_keys(p: argparse.ArgumentParser) -> None:
    """Adds the API keys accepted, each optionally bound to a workspace."""
    p.add_argument(
        "--api-key",
        action="append",
        default=[],
        metavar="KEY[=WORKSPACE]",
        help=f"accepted API key, optionally bound to a workspace (repeatable; also {ENV_KEYS})",
    )


def _add_summaries(p: argparse.ArgumentParser) -> None:
    """Adds the summarizer behind observations and reflections, and its window."""
    p.add_argument(
        "--summarizer",
        metavar="MODULE:CALLABLE",
        help="list[Message] -> str; enables observations and reflections",
    )
    p.add_argument(
        "--observation-window",
        type=int,
        default=10,
        metavar="N",
        help="messages per observation (10)",
    )


def _add_logging(p: argparse.ArgumentParser) -> None:
    """Adds the log level, the access log's format and the tracebacks switch."""
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument(
        "--access-log",
        default="text",
        choices=["text", "json"],
        help="access log lines as text (default) or as JSON objects, one a line",
    )
    p.add_argument("--debug", action="store_true", help="show tracebacks on failure")


def _add_limits(p: argparse.ArgumentParser) -> None:
    """Adds the size limits group, one option per :class:`ServerLimits` field."""
    sizes = p.add_argument_group("limits (413/400 beyond them; defaults as in the README)")
    for name, variable in LIMIT_ENV.items():
        default = getattr(ServerLimits(), name)
        sizes.add_argument(
            "--" + name.replace("_", "-"),
            type=int,
            default=None,
            metavar="N",
            help=f"{default} (also {variable})",
        )


def _add_connection_limits(p: argparse.ArgumentParser) -> None:
    """Adds the connections group, one option per :class:`ConnectionLimits` field."""
    links = p.add_argument_group(
        "connections (closed past a deadline; at the cap the longest-waiting one, or 503)"
    )
    for name, variable in CONNECTION_ENV.items():
        default = getattr(ConnectionLimits(), name)
        whole = name == "max_connections"
        links.add_argument(
            "--" + name.replace("_", "-"),
            type=int if whole else float,
            default=None,
            metavar="N" if whole else "SECONDS",
            help=f"{default:g} (also {variable})",
        )


def _add_test_mode(faults: argparse._ArgumentGroup) -> None:
    """Adds the admin endpoints switch and the extraction delay of test mode."""
    faults.add_argument(
        "--test-admin", action="store_true", help="enable /_admin/faults and /_admin/traffic"
    )
    faults.add_argument(
        "--test-extraction-delay",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="keep each message's extraction pending this long (0)",
    )


def _add_retry_faults(faults: argparse._ArgumentGroup) -> None:
    """Adds the injected 429 and 503 answers and their Retry-After."""
    faults.add_argument(
        "--fail-429", type=int, default=0, metavar="N", help="answer the next N requests with 429"
    )
    faults.add_argument(
        "--retry-after",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="Retry-After of those 429s (1)",
    )
    faults.add_argument(
        "--no-retry-after", action="store_true", help="send those 429s without Retry-After"
    )
    faults.add_argument(
        "--fail-503", type=int, default=0, metavar="N", help="answer the next N requests with 503"
    )
    faults.add_argument(
        "--fail-503-retry-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help="Retry-After of those 503s (none)",
    )


def _add_transport_faults(faults: argparse._ArgumentGroup) -> None:
    """Adds the injected latency and dropped connections."""
    faults.add_argument(
        "--latency", type=float, default=0.0, metavar="SECONDS", help="delay every response"
    )
    faults.add_argument(
        "--drop",
        type=int,
        default=0,
        metavar="N",
        help="close the next N connections without a response",
    )
    faults.add_argument(
        "--drop-mode",
        choices=["before", "after"],
        default="before",
        help="drop before handling the request, or after (it is stored)",
    )


def _add_refusal_faults(faults: argparse._ArgumentGroup) -> None:
    """Adds the injected 413 and 401 answers, and the requests let through first."""
    faults.add_argument(
        "--fail-413", type=int, default=0, metavar="N", help="answer the next N requests with 413"
    )
    faults.add_argument(
        "--fail-413-limit",
        type=int,
        default=None,
        metavar="BYTES",
        help="the body limit those 413s name (the server's)",
    )
    faults.add_argument(
        "--fail-401",
        type=int,
        default=0,
        metavar="N",
        help="answer the next N requests with 401, as to a rejected API key",
    )
    faults.add_argument(
        "--faults-after",
        type=int,
        default=0,
        metavar="N",
        help="let the first N requests through before any fault fires",
    )


def faults_from(args: argparse.Namespace) -> Faults:
    """The fault knobs the parsed flags of :func:`build_parser` set at start-up."""
    return Faults(
        rate_limit=args.fail_429,
        retry_after=args.retry_after,
        unavailable=args.fail_503,
        unavailable_retry_after=args.fail_503_retry_after,
        latency=args.latency,
        drop=args.drop,
        drop_mode=args.drop_mode,
        omit_retry_after=args.no_retry_after,
        payload_too_large=args.fail_413,
        payload_limit=args.fail_413_limit,
        unauthorized=args.fail_401,
        pass_first=args.faults_after,
    )


def _load_callable(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigurationError("--summarizer must be MODULE:CALLABLE")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(f"--summarizer {spec}: {exc}") from None
    if not callable(target):
        raise ConfigurationError(f"--summarizer {spec} is not callable")
    return target


class _HideLifespanTraceback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not message.startswith(
            ("Exception in 'lifespan' protocol", "Traceback (most recent call last)")
        )


def _check_store(backend_url: str) -> None:
    """Open and connect the backing store once (then close it): raises its error."""

    async def probe() -> None:
        backend = open_store(backend_url)
        try:
            await backend.connect()
        finally:
            await backend.close()

    asyncio.run(probe())


def _configure_logging(level: str, debug: bool, access_log: str = "text") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(EscapingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    if access_log == "json":
        # Already escaped by JSON: the line is the message alone, one object a line.
        lines = logging.StreamHandler(sys.stderr)
        lines.setFormatter(logging.Formatter("%(message)s"))
        access = logging.getLogger("memory_core.server.access")
        access.addHandler(lines)
        access.propagate = False
    if not debug:
        logging.getLogger("uvicorn.error").addFilter(_HideLifespanTraceback())


def main(argv: Sequence[str], *, debug: bool = False) -> int:
    """Run the server until interrupted; returns the exit code (2 for a usage error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except _UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    if args.url and args.backend_url and args.url != args.backend_url:
        print(
            "memory-core serve: error: two store URLs: give URL or --backend-url, not both",
            file=sys.stderr,
        )
        return 2
    args.backend_url = args.url or args.backend_url or DEFAULT_BACKEND_URL
    debug = debug or args.debug
    if args.api_key:
        _warn_key_flags()
    keys = ApiKeys.from_env(args.api_key)
    limits = ServerLimits.from_env(**{name: getattr(args, name) for name in LIMIT_ENV})
    connections = ConnectionLimits.from_env(
        **{name: getattr(args, name) for name in CONNECTION_ENV}
    )
    check_open_server(keys, args.host)
    _check_store(args.backend_url)
    app = _app(args, keys, limits)
    _configure_logging(args.log_level, debug, args.access_log)
    sock = bind(args.host, args.port)
    _announce(args, sock.getsockname()[1], keys)
    server = make_server(app, log_level=args.log_level, connections=connections)
    return _serve(server, app, sock)


def _warn_key_flags() -> None:
    """Prints that ``--api-key`` values show in the process list."""
    print(
        f"memory-core serve: warning: --api-key values are visible to other local users "
        f"(process list); set {ENV_KEYS} instead",
        file=sys.stderr,
        flush=True,
    )


def _app(args: argparse.Namespace, keys: ApiKeys, limits: ServerLimits) -> FastAPI:
    """The app the parsed flags describe, its fault knobs set."""
    faults = faults_from(args)
    return create_app(
        args.backend_url,
        api_keys=keys,
        summarizer=_load_callable(args.summarizer) if args.summarizer else None,
        observation_window=args.observation_window,
        extraction_delay=args.test_extraction_delay,
        faults=faults,
        admin=args.test_admin,
        limits=limits,
        access_log=args.access_log,
    )


def _announce(args: argparse.Namespace, port: int, keys: ApiKeys) -> None:
    """Prints the "NAMS API on …" line: where the API is, over which store, with which keys."""
    auth = f"{len(keys.bindings)} API key(s)" if keys.enabled else "no API keys (open)"
    print(
        f"memory-core serve: NAMS API on http://{args.host}:{port}/v1 over "
        f"{redact_url(args.backend_url)}, {auth}",
        flush=True,
    )


def _serve(server: uvicorn.Server, app: FastAPI, sock: socket.socket) -> int:
    """Serves on ``sock`` until interrupted, then closes it; returns the exit code."""
    try:
        asyncio.run(server.serve(sockets=[sock]))
    except KeyboardInterrupt:
        return 130
    except SystemExit:
        startup = app.state.startup_error
        if startup is not None:
            raise startup from None
        return 1  # uvicorn's own start-up failures (its exit code 3), logged above
    finally:
        sock.close()
    return 0
