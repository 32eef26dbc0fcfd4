"""The ``memory-core`` command.

Exit codes: 0 success, 1 failure (one line on stderr; the traceback only with ``--debug``),
2 usage error, 130 interrupted (Ctrl-C; ``export``/``import``/``copy`` first print what was
done and how to resume). A port in use (``serve``, ``mcp --http``) is a failure: one line,
``cannot listen on HOST:PORT: …``, exit 1. Subcommands that live outside ``memory_core``
(``conformance``, ``serve``, ``mcp``, ``postgres-schema``) are imported only when run, so
the core never imports a backend or the test suite; without their extra, ``--help`` says
which extra to install (exit 0) and running one is a failure in one line naming ``pip
install 'memory-core[EXTRA]'`` (exit 1).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any
from uuid import uuid4

import anyio

from . import __version__, long_term_cli, retention_cli, users_cli
from .backend import MemoryBackend
from .errors import ConfigurationError, MemoryCoreError
from .open import open_backend
from .settings import default_url, redact_url

SIGPIPE_EXIT = 141  # 128 + SIGPIPE: what a shell reports for a tool the signal ended

# name -> (dotted "module:function" taking (args) -> int, which installs its arguments
# via "module:add_arguments", help line)
EXTERNAL_COMMANDS: dict[str, tuple[str, str]] = {
    "conformance": (
        "memory_core.conformance.runner",
        "run the conformance suite against backend URLs",
    ),
    "serve": ("memory_core.server.cli", "serve the NAMS REST API over any backend"),
    "mcp": ("memory_core.integrations.mcp_server", "serve a backend over MCP (stdio or HTTP)"),
    "postgres-schema": (
        "memory_core.backends.postgres.cli",
        "print or apply the PostgreSQL backend's schema migrations, or purge deleted rows",
    ),
}
EXTRA_FOR = {
    "serve": "server",
    "conformance": "conformance",
    "mcp": "mcp",
    "postgres-schema": "postgres",
}


class UsageError(Exception):
    """Bad command-line usage (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise UsageError(f"{self.prog}: {message}")


def _capabilities(args: argparse.Namespace) -> int:
    url = args.url or default_url()
    backend = open_backend(url)
    if args.check:
        return _check(backend, url, args.json)
    caps = backend.capabilities
    if args.json:
        print(caps.to_json(backend=backend.name, url=redact_url(url)))
    else:
        print(f"backend: {backend.name}  ({redact_url(url)})")
        print(caps.to_table())
    return 0


def _check(backend: Any, url: str, as_json: bool) -> int:
    """Connect (which authenticates where the backend has keys) and say whether it worked:
    exit code 0 when reachable and authenticated, 1 otherwise."""

    async def probe() -> None:
        async with backend:
            pass

    error: str | None = None
    try:
        anyio.run(probe)
    except MemoryCoreError as exc:
        error = f"{type(exc).__name__}: {_one_line(exc)}"
    if as_json:
        print(
            json.dumps(
                {
                    "backend": backend.name,
                    "url": redact_url(url),
                    "ok": error is None,
                    "error": error,
                }
            )
        )
    elif error is None:
        print(f"ok: {backend.name} at {redact_url(url)} is reachable and accepts the credentials")
    else:
        print(f"failed: {backend.name} at {redact_url(url)}: {error}", file=sys.stderr)
    return 0 if error is None else 1


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def _demo(args: argparse.Namespace) -> int:
    """Store, read and search three messages in a session of its own (a new name each
    run), then delete that session again: the store may be the user's real one, and the
    demo touches nothing it did not create."""

    async def run() -> None:
        async with open_backend(args.url or default_url()) as memory:
            session = f"memory-core-demo-{uuid4().hex[:12]}"
            try:
                await _demo_in(memory, session)
            finally:
                await memory.clear_session(session)
            print(f"(the demo's session {session} was deleted again)")

    anyio.run(run)
    return 0


async def _demo_in(memory: MemoryBackend, session: str) -> None:
    for role, text in (
        ("user", "Hi! I am planning a trip to Lisbon in May."),
        ("assistant", "Lovely. Lisbon in May is warm; book trams early."),
        ("user", "Remind me to look at the Lisbon tram 28 timetable."),
    ):
        await memory.add_message(session, role, text)
    conversation = await memory.get_conversation(session)
    print(f"stored {len(conversation.messages)} messages in {memory.describe()}:")
    for m in conversation.messages:
        print(f"  [{m.role.value}] {m.content}")
    print("search 'tram':")
    for hit in await memory.search_messages("tram", session_id=session):
        print(f"  {hit.score:.2f}  {hit.content}")
    print(memory.capabilities.to_table())


def _external(name: str, rest: list[str], debug: bool) -> int:
    """Run an external subcommand. Without its extra: ``--help`` says which extra to
    install (exit 0); anything else is one line naming it (exit 1)."""
    module_name, help_text = EXTERNAL_COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        missing = exc.name or "a dependency"
        if missing.partition(".")[0] == "memory_core":
            raise  # a broken install, not a missing extra
        install = f"pip install 'memory-core[{EXTRA_FOR[name]}]'"
        if "-h" in rest or "--help" in rest:
            print(
                f"usage: memory-core {name} ...\n\n{help_text}.\n\n"
                f"This command needs the extra '{EXTRA_FOR[name]}', which is not installed "
                f"({missing} is missing):\n\n    {install}\n\n"
                f"then 'memory-core {name} --help' lists its options."
            )
            return 0
        raise ConfigurationError(
            f"'memory-core {name}' needs the extra '{EXTRA_FOR[name]}' ({missing} is not "
            f"installed): {install}"
        ) from None
    code: int = module.main(rest, debug=debug)
    return code


# ---------------------------------------------------------------- transfer (issue 14)


def _add_transfer_commands(subs: Any) -> None:
    """``export``, ``import`` and ``copy`` (see :mod:`memory_core.transfer.cli`)."""
    from .transfer.cli import add_commands

    add_commands(subs)


# ---------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = _Parser(
        prog="memory-core",
        description="Agent conversation memory, one API.",
        epilog="exit codes: 0 success; 1 failure, one line on stderr (a port in use and a "
        "missing extra included); 2 usage error; 130 interrupted; 141 the reader of the "
        "output went away (| head)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on failure")
    parser.add_argument("--version", action="version", version=f"memory-core {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    caps = subs.add_parser("capabilities", help="print a backend's capability flags and limits")
    caps.add_argument(
        "url",
        nargs="?",
        help="backend URL (default: MEMORY_BACKEND_URL or "
        "the embedded store in your data directory)",
    )
    caps.add_argument("--json", action="store_true", help="print JSON instead of a table")
    caps.add_argument(
        "--check",
        action="store_true",
        help="connect and report whether the backend is reachable and accepts the "
        "credentials (exit 0 / 1; for health checks)",
    )
    caps.set_defaults(handler=_capabilities)

    demo = subs.add_parser("demo", help="store, read and search a few messages")
    demo.add_argument(
        "url",
        nargs="?",
        help="backend URL (default: MEMORY_BACKEND_URL or "
        "the embedded store in your data directory)",
    )
    demo.set_defaults(handler=_demo)

    _add_transfer_commands(subs)
    retention_cli.add_command(subs)
    users_cli.add_commands(subs)
    long_term_cli.add_commands(subs)

    for name, (_, help_text) in EXTERNAL_COMMANDS.items():
        sub = subs.add_parser(name, help=f"{help_text} (extra: {EXTRA_FOR[name]})", add_help=False)
        sub.add_argument("rest", nargs=argparse.REMAINDER)
        sub.set_defaults(handler=None, external=name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memory-core`` console script; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    debug = "--debug" in args_list
    if not debug:
        _quiet_driver_logs()
    try:
        head = 1 if args_list[:1] == ["--debug"] else 0
        if args_list[head : head + 1] and args_list[head] in EXTERNAL_COMMANDS:
            # argparse's REMAINDER rejects a subcommand's own leading options (--help,
            # --json …), so hand everything after the name to the subcommand untouched.
            return _external(args_list[head], args_list[head + 1 :], debug)
        args = parser.parse_args(args_list)
        if args.command is None:
            parser.print_help()
            return 2
        handler: Callable[[argparse.Namespace], int] | None = args.handler
        if handler is None:
            return _external(args.external, args.rest, args.debug)
        return handler(args)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return 2
    except BrokenPipeError:
        return _reader_left()
    except (MemoryCoreError, OSError) as exc:
        if debug:
            traceback.print_exc()
        print(f"memory-core: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _quiet_driver_logs() -> None:
    """The Neo4j driver logs a failed connection at ERROR, which Python prints to stderr
    when the program set up no logging: a stray line before our one-line error. A
    handler on its logger keeps its records off stderr (``--debug`` shows them)."""
    driver = logging.getLogger("neo4j")
    if not any(isinstance(h, logging.NullHandler) for h in driver.handlers):
        driver.addHandler(logging.NullHandler())


def _reader_left() -> int:
    """The program reading our output stopped (``| head``): end quietly, as a tool killed
    by SIGPIPE does, and keep Python's final flush from complaining about the pipe."""
    with contextlib.suppress(OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
    return SIGPIPE_EXIT


if __name__ == "__main__":
    sys.exit(main())
