"""The ``forget-user`` and ``stats`` subcommands of ``memory-core``: a store's users.

``memory-core forget-user URL USER [--dry-run]`` runs
:meth:`~memory_core.MemoryBackend.forget_user` and prints its
:class:`~memory_core.erasure.ErasureReport` as one JSON object on stdout.
``memory-core stats [URL] [--user U] [--json]`` prints what the store holds
(:meth:`~memory_core.MemoryBackend.stats`) as a table, or as JSON.

Both read an existing store: an embedded file that does not exist is a usage error and
is not created. Exit codes as for every command: 0 done, 1 failed (one line on stderr;
for ``forget-user`` also when the user's writers kept writing, after the report), 2
usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from .backend import MemoryBackend
from .errors import NotFoundError
from .open import open_backend
from .settings import default_url, redact_url
from .stats import table

USAGE = 2
STILL_WRITING = (
    "memory-core: the user's writers kept writing while the erasure ran, and what they "
    "wrote meanwhile may still be there: stop them and run forget-user again"
)


def add_commands(subs: Any) -> None:
    """Add ``forget-user`` and ``stats`` to the ``memory-core`` parser's subcommands."""
    forget = subs.add_parser(
        "forget-user",
        help="erase everything a store holds for one user (--dry-run: count it only)",
        description="Erase everything the store holds for USER and print the erasure "
        "report as JSON (see the Erasure and retention page).",
    )
    forget.add_argument("url", help="backend URL")
    forget.add_argument("user", help="the user identifier (the tenant with --multi-tenant)")
    forget.add_argument(
        "--dry-run",
        action="store_true",
        help="report the conversations, messages and entities that would be erased; delete nothing",
    )
    forget.add_argument(
        "--multi-tenant", action="store_true", help="open the backend with multi_tenant=True"
    )
    forget.add_argument(
        "--batch-size", type=int, default=500, help="messages one transaction deletes (500)"
    )
    forget.set_defaults(handler=forget_user)

    stats = subs.add_parser(
        "stats",
        help="count a store's conversations, messages and entities per user, and its size",
    )
    stats.add_argument(
        "url",
        nargs="?",
        help="backend URL (default: MEMORY_BACKEND_URL or the embedded store in your "
        "data directory)",
    )
    stats.add_argument("--user", help="only this user (the tenant with --multi-tenant)")
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    stats.add_argument(
        "--multi-tenant",
        action="store_true",
        help="open the backend with multi_tenant=True: count per tenant",
    )
    stats.set_defaults(handler=store_stats)


def forget_user(args: argparse.Namespace) -> int:
    """Run ``forget-user`` and print its report as JSON."""

    async def work(backend: MemoryBackend) -> int:
        report = await backend.forget_user(
            args.user, batch_size=args.batch_size, dry_run=args.dry_run
        )
        print(report.model_dump_json())
        if report.writes_continued:
            print(STILL_WRITING, file=sys.stderr)
            return 1
        return 0

    return on_store(args.url, args.multi_tenant, work)


def store_stats(args: argparse.Namespace) -> int:
    """Run ``stats`` and print a table, or JSON with ``--json``."""
    url = args.url or default_url()

    async def work(backend: MemoryBackend) -> int:
        found = await backend.stats(user_identifier=args.user)
        if args.json:
            print(found.model_dump_json(indent=2))
        else:
            print(table(found, redact_url(url)))
        return 0

    return on_store(url, args.multi_tenant, work)


def on_store(url: str, multi_tenant: bool, work: Callable[[MemoryBackend], Awaitable[int]]) -> int:
    """``work`` on the store at ``url``, opened without creating it: a store that does not
    exist is a usage error (one line on stderr)."""
    options: dict[str, Any] = {"multi_tenant": True} if multi_tenant else {}
    if url.strip().lower().startswith("sqlite:"):
        options["create"] = False

    async def run() -> int:
        backend = open_backend(url, **options)
        try:
            await backend.connect()
        except NotFoundError as exc:
            print(f"memory-core: error: {exc}", file=sys.stderr)
            return USAGE
        async with backend:
            return await work(backend)

    return anyio.run(run)
