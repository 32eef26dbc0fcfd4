"""The ``export``, ``import`` and ``copy`` subcommands of ``memory-core``.

Exit codes: 0 done; 1 failed (one line on stderr); 2 usage: a bad option, or a source
that does not exist (an embedded source file is never created); 130 interrupted (Ctrl-C):
the summary of what was done so far is printed, and how to resume.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from ..archive.report import TransferReport
from ..backend import MemoryBackend
from ..errors import MemoryCoreError, NotFoundError
from ..open import open_backend
from ..settings import redact_url
from .copy import copy_memory
from .export import export_memory
from .importer import ON_CONFLICT, import_memory
from .progress import Progress

INTERRUPTED = 130
EPILOG = (
    "exit codes: 0 done, 1 failed, 2 usage (a bad option, or a source that does not "
    "exist), 130 interrupted (Ctrl-C: prints what was done and how to resume)"
)
CHECKPOINT_HELP = (
    "checkpoint file of a target written through the public API (NAMS, third-party "
    "backends, --on-conflict new-ids), read on a re-run to resume and kept afterwards; "
    "default: .memory-core-transfer-<hash>.checkpoint in the current directory, <hash> "
    "from the source and target (embedded, Bolt and PostgreSQL targets need none: they "
    "resume by id)"
)


class _Usage(Exception):
    """A usage error found once the command runs (exit code 2); the message is the line."""


@dataclass
class _Run:
    """One command's progress display, and what it can still say if interrupted: the
    report so far and how to resume."""

    progress: Progress
    quiet: bool
    report: TransferReport | None = None
    resume: str = "run the same command again to resume"

    def tick(self, report: TransferReport) -> None:
        """``on_progress``: keep the report, update the display."""
        self.report = report
        if not self.quiet:
            self.progress(report)


def add_commands(subs: Any) -> None:
    """Install the transfer subcommands on an argparse subparsers object."""
    export = subs.add_parser(
        "export", help="write a backend's memory to a JSON Lines archive", epilog=EPILOG
    )
    export.add_argument("url", help="backend URL to read")
    export.add_argument("file", help="archive to write (.jsonl, or .jsonl.gz to compress)")
    _scope_options(export)
    export.add_argument("--multi-tenant", action="store_true", help="open URL multi-tenant")
    _common(export)
    export.set_defaults(handler=_export)

    load = subs.add_parser("import", help="load a JSON Lines archive into a backend", epilog=EPILOG)
    load.add_argument("file", help="archive to read (.jsonl or .jsonl.gz)")
    load.add_argument("url", help="backend URL to write")
    _write_options(load)
    load.add_argument("--multi-tenant", action="store_true", help="open URL multi-tenant")
    load.add_argument("--skip-bad", action="store_true", help="count bad archive lines and go on")
    _common(load)
    load.set_defaults(handler=_import)

    copy = subs.add_parser("copy", help="copy memory from one backend to another", epilog=EPILOG)
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
    parser.add_argument("--checkpoint", help=CHECKPOINT_HELP)
    parser.add_argument(
        "--restart",
        action="store_true",
        help="ignore and delete the checkpoint file first (what the target already holds "
        "is still skipped under --on-conflict skip)",
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
        path = Path(args.checkpoint)
    else:
        digest = hashlib.sha256(f"{source}\x00{target}".encode()).hexdigest()[:16]
        path = Path(f".memory-core-transfer-{digest}.checkpoint")
    if args.restart:
        path.unlink(missing_ok=True)
    return path


def _source_options(url: str) -> dict[str, Any]:
    """A source is read, never created: an embedded file is opened with ``create=False``."""
    return {"create": False} if url.strip().lower().startswith("sqlite:") else {}


async def _open_source(url: str, multi_tenant: bool) -> MemoryBackend:
    """The source backend, connected; a missing embedded file is a usage error."""
    backend = open_backend(url, multi_tenant=multi_tenant, **_source_options(url))
    try:
        await backend.connect()
    except NotFoundError as exc:
        raise _Usage(f"memory-core: error: source: {exc}") from None
    return backend


async def _source_total(
    source: MemoryBackend, users: list[str] | None, session_prefix: str | None
) -> int | None:
    """The messages a transfer from ``source`` will handle, counted by the store where it
    can count (``store_stats``); ``None`` (shown as "of ?") when it cannot, or for a
    ``--session-prefix``, which no store counts by."""
    if session_prefix or not source.capabilities.store_stats:
        return None
    try:
        if not users:
            found = await source.stats()
            return found.total.messages if found.total else None
        counts = [(await source.stats(user_identifier=u)).users[0].messages for u in users]
    except MemoryCoreError:
        return None  # the count is only for the display: the transfer goes on without it
    return None if any(c is None for c in counts) else sum(c for c in counts if c)


def _resume_hint(target: MemoryBackend, args: argparse.Namespace, checkpoint: Path) -> str:
    if hooked(target, args):
        return (
            "run the same command again to resume: what the target already holds is "
            "skipped (matched by id)"
        )
    return f"run the same command again to resume from the checkpoint {checkpoint}"


def _run(args: argparse.Namespace, work: Callable[[_Run], Awaitable[TransferReport]]) -> int:
    run = _Run(Progress(sys.stderr), args.quiet)
    try:
        report: TransferReport = anyio.run(work, run)
    except _Usage as exc:
        print(exc, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _say(args, run, run.report or TransferReport(), interrupted=True)
        print(f"memory-core: interrupted: {run.resume}", file=sys.stderr)
        return INTERRUPTED
    _say(args, run, report, interrupted=False)
    return 0


def _say(args: argparse.Namespace, run: _Run, report: TransferReport, *, interrupted: bool) -> None:
    if not args.quiet:
        run.progress.done(report, "interrupted" if interrupted else "done")
    if args.json:
        body = report.as_dict()
        if interrupted:
            body.update(interrupted=True, resume=run.resume)
        print(json.dumps(body, indent=2))
    else:
        print(report.summary())


def _export(args: argparse.Namespace) -> int:
    async def work(run: _Run) -> TransferReport:
        run.resume = (
            f"the archive {args.file} was not written (a previous one is left as it was); "
            "run the same command again to write it"
        )
        async with await _open_source(args.url, args.multi_tenant) as backend:
            if not run.quiet:
                run.progress.total = await _source_total(backend, _users(args), args.session_prefix)
            return await export_memory(
                backend,
                args.file,
                users=_users(args),
                session_prefix=args.session_prefix,
                on_progress=run.tick,
            )

    return _run(args, work)


def _import(args: argparse.Namespace) -> int:
    if not Path(args.file).is_file():
        print(f"memory-core: error: archive {args.file} does not exist", file=sys.stderr)
        return 2
    checkpoint = _checkpoint(args, str(Path(args.file).resolve()), redact_url(args.url))

    async def work(run: _Run) -> TransferReport:
        async with open_backend(args.url, multi_tenant=args.multi_tenant) as backend:
            run.resume = _resume_hint(backend, args, checkpoint)
            return await import_memory(
                backend,
                args.file,
                on_conflict=args.on_conflict,
                skip_bad=args.skip_bad,
                checkpoint=None if hooked(backend, args) else checkpoint,
                on_progress=run.tick,
            )

    return _run(args, work)


def _copy(args: argparse.Namespace) -> int:
    checkpoint = _checkpoint(args, redact_url(args.src_url), redact_url(args.dst_url))

    async def work(run: _Run) -> TransferReport:
        async with (
            await _open_source(args.src_url, args.src_multi_tenant) as source,
            open_backend(args.dst_url, multi_tenant=args.dst_multi_tenant) as target,
        ):
            run.resume = _resume_hint(target, args, checkpoint)
            if not run.quiet:
                run.progress.total = await _source_total(source, _users(args), args.session_prefix)
            return await copy_memory(
                source,
                target,
                users=_users(args),
                session_prefix=args.session_prefix,
                on_conflict=args.on_conflict,
                checkpoint=None if hooked(target, args) else checkpoint,
                on_progress=run.tick,
            )

    return _run(args, work)
