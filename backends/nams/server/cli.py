"""``memory-core serve``: run the NAMS-compatible API over any backend.

Examples::

    memory-core serve                                   # memory://, 127.0.0.1:8765, no keys
    memory-core serve --backend-url sqlite:///mem.db --api-key s3cret=team-a
    memory-core serve --backend-url bolt://localhost:7687 --host 0.0.0.0 --api-key k1

Keys also come from ``NAMS_SERVER_API_KEYS`` (comma-separated ``KEY`` or
``KEY=WORKSPACE``). Without any key the server only listens on a loopback address.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import Any

from memory_core.errors import ConfigurationError
from memory_core.settings import redact_url

from .app import DEFAULT_BACKEND_URL, create_app
from .auth import ENV_KEYS, ApiKeys, check_open_server
from .faults import Faults
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
    p.add_argument(
        "--backend-url",
        default=DEFAULT_BACKEND_URL,
        help="store to serve over (default memory://: in memory, gone on exit)",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port ({DEFAULT_PORT}; 0 picks a free one)"
    )
    p.add_argument(
        "--api-key",
        action="append",
        default=[],
        metavar="KEY[=WORKSPACE]",
        help=f"accepted API key, optionally bound to a workspace (repeatable; also {ENV_KEYS})",
    )
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
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    faults = p.add_argument_group("fault injection (for tests)")
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
        "--fail-503", type=int, default=0, metavar="N", help="answer the next N requests with 503"
    )
    faults.add_argument(
        "--fail-503-retry-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help="Retry-After of those 503s (none)",
    )
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
    return p


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
        return not record.getMessage().startswith("Exception in 'lifespan' protocol")


def _configure_logging(level: str, debug: bool) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
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
    keys = ApiKeys.from_env(args.api_key)
    check_open_server(keys, args.host)
    faults = Faults(
        rate_limit=args.fail_429,
        retry_after=args.retry_after,
        unavailable=args.fail_503,
        unavailable_retry_after=args.fail_503_retry_after,
        latency=args.latency,
        drop=args.drop,
        drop_mode=args.drop_mode,
    )
    app = create_app(
        args.backend_url,
        api_keys=keys,
        summarizer=_load_callable(args.summarizer) if args.summarizer else None,
        observation_window=args.observation_window,
        extraction_delay=args.test_extraction_delay,
        faults=faults,
        admin=args.test_admin,
    )
    _configure_logging(args.log_level, debug)
    sock = bind(args.host, args.port)
    port = sock.getsockname()[1]
    auth = f"{len(keys.bindings)} API key(s)" if keys.enabled else "no API keys (open)"
    print(
        f"memory-core serve: NAMS API on http://{args.host}:{port}/v1 over "
        f"{redact_url(args.backend_url)}, {auth}",
        flush=True,
    )
    server = make_server(app, log_level=args.log_level)
    try:
        asyncio.run(server.serve(sockets=[sock]))
    except KeyboardInterrupt:
        return 130
    except SystemExit as exc:
        startup = app.state.startup_error
        if startup is not None:
            raise startup from None
        return int(exc.code or 1) if isinstance(exc.code, int) else 1
    finally:
        sock.close()
    return 0
