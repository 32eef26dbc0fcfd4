"""The ``expire`` subcommand of ``memory-core``:
``memory-core expire URL --older-than 30d [--user U] [--archive FILE] [--dry-run]
[--by last-message]``.

Prints one JSON object (the :class:`~memory_core.retention.ExpiryReport`) on stdout.
Exit codes as for every command: 0 done, 1 failed (one line on stderr), 2 usage.
"""

from __future__ import annotations

import argparse
import re
from datetime import timedelta
from typing import Any

import anyio

from .open import open_backend

_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_DURATION = re.compile(r"^([1-9][0-9]{0,8})([smhdw])$")


def parse_duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``45s`` or ``2w`` as a ``timedelta``."""
    found = _DURATION.match(text.strip())
    if found is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: a whole number and a unit (s, m, h, d, w), e.g. 30d"
        )
    try:
        return timedelta(**{_UNITS[found.group(2)]: int(found.group(1))})
    except OverflowError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is longer than a duration can be (at most 999999999 days)"
        ) from None


def add_command(subs: Any) -> None:
    """Add ``expire`` to the ``memory-core`` parser's subcommands."""
    expire = subs.add_parser(
        "expire",
        help="delete conversations with no activity for a while (optionally archiving them)",
    )
    expire.add_argument("url", help="backend URL")
    expire.add_argument(
        "--older-than",
        required=True,
        type=parse_duration,
        metavar="AGE",
        help="expire conversations last active more than AGE ago: 30d, 12h, 2w …",
    )
    expire.add_argument(
        "--user", help="only this user's conversations (required when multi-tenant)"
    )
    expire.add_argument(
        "--multi-tenant", action="store_true", help="open the backend with multi_tenant=True"
    )
    expire.add_argument(
        "--archive", metavar="FILE", help="first write what is expired to FILE (transfer format)"
    )
    expire.add_argument(
        "--dry-run", action="store_true", help="report what would be expired; delete nothing"
    )
    expire.add_argument(
        "--batch-size", type=int, default=100, help="conversations listed per page (default 100)"
    )
    expire.add_argument(
        "--by",
        choices=("updated-at", "last-message"),
        default="updated-at",
        help="last activity is the conversation's updated_at (default) or the time of its "
        "newest message (for conversations loaded with old message times)",
    )
    expire.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Run ``expire`` and print its report as JSON."""
    options: dict[str, Any] = {"multi_tenant": True} if args.multi_tenant else {}

    async def work() -> str:
        async with open_backend(args.url, **options) as backend:
            report = await backend.expire_conversations(
                args.older_than,
                user_identifier=args.user,
                batch_size=args.batch_size,
                archive=args.archive,
                dry_run=args.dry_run,
                by=args.by.replace("-", "_"),
            )
        return report.model_dump_json()

    print(anyio.run(work))
    return 0
