"""The ``preferences`` and ``facts`` subcommands of ``memory-core``: read and change a
store's long-term memory (see the Long-term memory page).

    memory-core preferences list   URL [--user U] [--category C] [--limit N] [--include-superseded]
    memory-core preferences search URL QUERY [--user U] [--category C] [--limit N]
    memory-core preferences add    URL CATEGORY STATEMENT [--user U] [--context TEXT]
    memory-core preferences delete URL ID [--user U]
    memory-core facts about  URL SUBJECT [--user U] [--predicate P] [--as-of TIME] [--limit N]
    memory-core facts search URL QUERY [--user U] [--as-of TIME] [--limit N]
    memory-core facts add    URL SUBJECT PREDICATE OBJECT [--user U] [--valid-from TIME] ...
    memory-core facts delete URL ID [--user U]

``list``, ``about`` and ``search`` print a table, or with ``--json`` a JSON array of the
records; ``add`` prints the new record and ``delete`` ``{"deleted": ID}`` as one JSON
object. Like ``stats``, they work on an existing store: an embedded file that does not
exist is a usage error and is not created. Exit codes as for every command: 0 done, 1
failed (one line on stderr: bad input names the argument, a backend without the kind
says so, a delete of an id that is not there is a failure), 2 usage.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .backend import MemoryBackend
from .errors import NotFoundError
from .models import Fact, Preference
from .users_cli import on_store

Action = Callable[[MemoryBackend, argparse.Namespace], Awaitable[Any]]
_PREFERENCE_COLUMNS = ("id", "category", "preference", "context", "created_at")
_FACT_COLUMNS = ("id", "subject", "predicate", "object", "valid_from", "valid_until")


def add_commands(subs: Any) -> None:
    """Add ``preferences`` and ``facts`` to the ``memory-core`` parser's subcommands."""
    _add_preferences(subs)
    _add_facts(subs)


def _command(
    kinds: Any, name: str, help_text: str, handler: Callable[[argparse.Namespace], int]
) -> argparse.ArgumentParser:
    """One ``ACTION`` subcommand with the arguments every one takes (URL, user, tenancy)."""
    parser: argparse.ArgumentParser = kinds.add_parser(name, help=help_text)
    _common(parser)
    parser.set_defaults(handler=handler)
    return parser


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="backend URL")
    parser.add_argument(
        "--user", help="the user whose records these are (the tenant with --multi-tenant)"
    )
    parser.add_argument(
        "--multi-tenant", action="store_true", help="open the backend with multi_tenant=True"
    )


def _reading(parser: argparse.ArgumentParser, limit: int) -> None:
    parser.add_argument("--limit", type=int, default=limit, help=f"at most this many ({limit})")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _add_preferences(subs: Any) -> None:
    group = subs.add_parser("preferences", help="list, search, add or delete a user's preferences")
    kinds = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = _command(
        kinds, "list", "the newest preferences, newest first", _run(_list_preferences, "preference")
    )
    listing.add_argument("--category", help="only this category")
    listing.add_argument("--include-superseded", action="store_true", help="superseded ones too")
    _reading(listing, 100)
    search = _command(
        kinds,
        "search",
        "preferences sharing a word with QUERY, best first",
        _run(_search_preferences, "preference"),
    )
    search.add_argument("query", help="the words to look for")
    search.add_argument("--category", help="only this category")
    search.add_argument("--include-superseded", action="store_true", help="superseded ones too")
    _reading(search, 10)
    add = _command(
        kinds, "add", "store a preference; prints it as JSON", _run(_add_preference, "preference")
    )
    add.add_argument("category", help="what it is about: food, travel …")
    add.add_argument("statement", help='the preference: "likes spicy dishes"')
    add.add_argument("--context", help="when it applies")
    add.add_argument("--confidence", type=float, default=1.0, help="0 to 1 (1)")
    delete = _command(
        kinds, "delete", "delete a preference by id", _run(_delete_preference, "preference")
    )
    delete.add_argument("id", help="the preference's id")


def _add_facts(subs: Any) -> None:
    group = subs.add_parser("facts", help="show, search, add or delete a user's facts")
    kinds = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    about = _command(
        kinds, "about", "the facts about SUBJECT, newest first", _run(_facts_about, "fact")
    )
    about.add_argument("subject", help="the subject (case is ignored)")
    about.add_argument("--predicate", help="only this predicate")
    about.add_argument("--as-of", help="only the facts valid at this time (ISO 8601)")
    _reading(about, 100)
    search = _command(
        kinds, "search", "facts sharing a word with QUERY, best first", _run(_search_facts, "fact")
    )
    search.add_argument("query", help="the words to look for")
    search.add_argument("--as-of", help="only the facts valid at this time (ISO 8601)")
    _reading(search, 10)
    add = _command(kinds, "add", "store a fact; prints it as JSON", _run(_add_fact, "fact"))
    add.add_argument("subject", help='who or what it is about: "Ada"')
    add.add_argument("predicate", help="the relation: WORKS_AT")
    add.add_argument("object", help='the value: "Acme"')
    add.add_argument("--valid-from", help="true from this time (ISO 8601)")
    add.add_argument("--valid-until", help="true until this time, excluded (ISO 8601)")
    add.add_argument("--confidence", type=float, default=1.0, help="0 to 1 (1)")
    delete = _command(kinds, "delete", "delete a fact by id", _run(_delete_fact, "fact"))
    delete.add_argument("id", help="the fact's id")


def _run(action: Action, kind: str) -> Callable[[argparse.Namespace], int]:
    """The handler of one subcommand: ``action`` on the store, its result printed."""

    def handler(args: argparse.Namespace) -> int:
        async def work(backend: MemoryBackend) -> int:
            _print(await action(backend, args), kind, getattr(args, "json", True))
            return 0

        return on_store(args.url, args.multi_tenant, work)

    return handler


async def _list_preferences(backend: MemoryBackend, args: argparse.Namespace) -> Any:
    return await backend.list_preferences(
        args.category,
        limit=args.limit,
        include_superseded=args.include_superseded,
        user_identifier=args.user,
    )


async def _search_preferences(backend: MemoryBackend, args: argparse.Namespace) -> Any:
    return await backend.search_preferences(
        args.query,
        category=args.category,
        limit=args.limit,
        include_superseded=args.include_superseded,
        user_identifier=args.user,
    )


async def _add_preference(backend: MemoryBackend, args: argparse.Namespace) -> Any:
    return await backend.add_preference(
        args.category,
        args.statement,
        context=args.context,
        confidence=args.confidence,
        user_identifier=args.user,
    )


async def _delete_preference(backend: MemoryBackend, args: argparse.Namespace) -> Any:
    if not await backend.delete_preference(args.id, user_identifier=args.user):
        raise _missing(backend, "preference", args)
    return {"deleted": args.id}


async def _facts_about(backend: MemoryBackend, args: argparse.Namespace) -> Any:
    return await backend.facts_about(
        args.subject,
        predicate=args.predicate,
        as_of=args.as_of,
        limit=args.limit,
        user_identifier=args.user,
    )


async def _search_facts(backend: MemoryBackend, args: argparse.Namespace) -> Any:
    return await backend.search_facts(
        args.query, as_of=args.as_of, limit=args.limit, user_identifier=args.user
    )


async def _add_fact(backend: MemoryBackend, args: argparse.Namespace) -> Any:
    return await backend.add_fact(
        args.subject,
        args.predicate,
        args.object,
        confidence=args.confidence,
        valid_from=args.valid_from,
        valid_until=args.valid_until,
        user_identifier=args.user,
    )


async def _delete_fact(backend: MemoryBackend, args: argparse.Namespace) -> Any:
    if not await backend.delete_fact(args.id, user_identifier=args.user):
        raise _missing(backend, "fact", args)
    return {"deleted": args.id}


def _missing(backend: MemoryBackend, kind: str, args: argparse.Namespace) -> NotFoundError:
    return NotFoundError.missing(backend.name, kind, args.id, argument=f"{kind}_id")


def _print(found: Any, kind: str, as_json: bool) -> None:
    """A list of records as a table (or a JSON array); anything else as one JSON object."""
    if isinstance(found, dict):
        print(json.dumps(found))
    elif isinstance(found, Preference | Fact):
        print(found.model_dump_json())
    elif as_json:
        print(json.dumps([record.model_dump(mode="json") for record in found]))
    else:
        columns = _PREFERENCE_COLUMNS if kind == "preference" else _FACT_COLUMNS
        print(table(found, columns, kind))


def table(records: Sequence[Preference | Fact], columns: Sequence[str], kind: str) -> str:
    """``records`` as a plain-text table of ``columns`` (a ``score`` column when they
    come from a search); one line saying so when there are none."""
    if not records:
        return f"no {kind}s"
    scored = [*columns, "score"] if records[0].score is not None else list(columns)
    cells = [scored] + [[_cell(getattr(r, name)) for name in scored] for r in records]
    widths = [max(len(row[i]) for row in cells) for i in range(len(scored))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def _cell(value: Any) -> str:
    """One value on one line: times to the second, scores to three places."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    if hasattr(value, "isoformat"):
        return str(value.isoformat(timespec="seconds"))
    return " ".join(str(value).split())
