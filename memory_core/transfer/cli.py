"""The ``export``, ``import`` and ``copy`` subcommands of ``memory-core``."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from ..backend import MemoryBackend
from ..open import open_backend
from ..settings import redact_url
from .copy import copy_memory
from .export import export_memory
from .importer import ON_CONFLICT, import_memory
from .progress import Progress
from .report import TransferReport


def add_commands(subs: Any) -> None:
    """Install the transfer subcommands on an argparse subparsers object."""
    export = subs.add_parser("export", help="write a backend's memory to a JSON Lines archive")
    export.add_argument("url", help="backend URL to read")
    export.add_argument("file", help="archive to write (.jsonl, or .jsonl.gz to compress)")
    _scope_options(export)
    export.add_argument("--multi-tenant", action="store_true", help="open URL multi-tenant")
    _common(export)
    export.set_defaults(handler=_export)

    load = subs.add_parser("import", help="load a JSON Lines archive into a backend")
    load.add_argument("file", help="archive to read (.jsonl or .jsonl.gz)")
    load.add_argument("url", help="backend URL to write")
    _write_options(load)
    load.add_argument("--multi-tenant", action="store_true", help="open URL multi-tenant")
    load.add_argument("--skip-bad", action="store_true", help="count bad archive lines and go on")
    _common(load)
    load.set_defaults(handler=_import)

    copy = subs.add_parser("copy", help="copy memory from one backend to another")
    copy.add_argument("src_url", help="backend URL to read")
    copy.add_argument("dst_url", help="backend URL to write")
    _scope_options(copy)
    _write_options(copy)
    copy.add_argument("--src-multi-tenant", action="store_true", help="open SRC multi-tenant")
    copy.add_argument("--dst-multi-tenant", action="store_true", help="open DST multi-tenant")
    _common(copy)
    copy.set_defaults(handler=_copy)


def _scope_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--users", help="comma-separated user identifiers to move (tenants)")
    parser.add_argument("--session-prefix", help="only sessions whose name starts with this")


def _write_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--on-conflict",
        choices=ON_CONFLICT,
        default="skip",
        help="what to do with records the target already has (default: skip)",
    )
    parser.add_argument(
        "--checkpoint",
        help="checkpoint file for targets without a bulk hook (default: a file named after "
        "the source and target in the current directory)",
    )


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress display")


def _users(args: argparse.Namespace) -> list[str] | None:
    if not args.users:
        return None
    return [u.strip() for u in args.users.split(",") if u.strip()]


def hooked(target: MemoryBackend, args: argparse.Namespace) -> bool:
    """True when the import goes through the target's bulk hook (no checkpoint needed)."""
    return target.store.bulk_transfer() is not None and args.on_conflict != "new-ids"


def _checkpoint(args: argparse.Namespace, source: str, target: str) -> Path:
    if args.checkpoint:
        return Path(args.checkpoint)
    digest = hashlib.sha256(f"{source}\x00{target}".encode()).hexdigest()[:16]
    return Path(f".memory-core-transfer-{digest}.checkpoint")


def _run(
    args: argparse.Namespace, work: Callable[[Callable[[TransferReport], None]], Awaitable[Any]]
) -> int:
    progress = Progress(sys.stderr)

    def tick(report: TransferReport) -> None:
        if not args.quiet:
            progress(report)

    report: TransferReport = anyio.run(work, tick)
    if not args.quiet:
        progress.done(report)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
    else:
        print(report.summary())
    return 0


def _export(args: argparse.Namespace) -> int:
    async def work(tick: Callable[[TransferReport], None]) -> TransferReport:
        async with open_backend(args.url, multi_tenant=args.multi_tenant) as backend:
            return await export_memory(
                backend,
                args.file,
                users=_users(args),
                session_prefix=args.session_prefix,
                on_progress=tick,
            )

    return _run(args, work)


def _import(args: argparse.Namespace) -> int:
    checkpoint = _checkpoint(args, str(Path(args.file).resolve()), redact_url(args.url))

    async def work(tick: Callable[[TransferReport], None]) -> TransferReport:
        async with open_backend(args.url, multi_tenant=args.multi_tenant) as backend:
            return await import_memory(
                backend,
                args.file,
                on_conflict=args.on_conflict,
                skip_bad=args.skip_bad,
                checkpoint=None if hooked(backend, args) else checkpoint,
                on_progress=tick,
            )

    return _run(args, work)


def _copy(args: argparse.Namespace) -> int:
    checkpoint = _checkpoint(args, redact_url(args.src_url), redact_url(args.dst_url))

    async def work(tick: Callable[[TransferReport], None]) -> TransferReport:
        async with (
            open_backend(args.src_url, multi_tenant=args.src_multi_tenant) as source,
            open_backend(args.dst_url, multi_tenant=args.dst_multi_tenant) as target,
        ):
            return await copy_memory(
                source,
                target,
                users=_users(args),
                session_prefix=args.session_prefix,
                on_conflict=args.on_conflict,
                checkpoint=None if hooked(target, args) else checkpoint,
                on_progress=tick,
            )

    return _run(args, work)
