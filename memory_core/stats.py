"""What a store holds: :meth:`memory_core.MemoryBackend.stats` and the models it returns.

A store with the capability ``store_stats`` counts in the store itself (an aggregate
query), so a store of a million messages is never read into the program. Counts are per
user: on a multi-tenant backend the user is the tenant; otherwise the ``user_identifier``
a conversation was recorded with (``None`` for conversations recorded without one). A
count the store cannot make is ``None`` (NAMS does not say how many messages a
conversation holds, nor whose an entity is), as is ``size_bytes`` where the store cannot
tell its size.

Where the store keeps long-term memory (its flags ``preferences``, ``facts``,
``relationships``), each row also counts the user's preferences and facts (a
multi-tenant backend's: the tenant's), and on a multi-tenant backend the tenant's
relationships. On a single-tenant store relationships join entities the users share:
they belong to no user, and only the total counts them. Where the store keeps reasoning
traces (its flag ``traces``), each row counts the user's traces (a multi-tenant
backend's: the tenant's) and the total every trace; their steps and tool calls are not
counted. A kind the store does not keep is ``None``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

LONG_TERM_KINDS = ("preferences", "facts", "relationships")
COUNTED_KINDS = (*LONG_TERM_KINDS, "traces")
"""The counts a row has besides conversations, messages and entities, ``None`` where the
store does not keep that kind: the long-term kinds and reasoning traces."""
LongTermCounts = dict[str, dict[str | None, int]]
"""Per kind of :data:`COUNTED_KINDS` the store counts per user: {user: count}."""


class UserStats(BaseModel):
    """One user's records. ``entities``: on a multi-tenant backend the tenant's entities;
    otherwise the entities only this user's messages mention (what ``forget_user``
    would delete with them; an entity shared with another user is counted in the
    store's total only)."""

    model_config = ConfigDict(frozen=True)

    user_identifier: str | None
    conversations: int
    messages: int | None
    entities: int | None
    preferences: int | None = None
    facts: int | None = None
    relationships: int | None = None
    traces: int | None = None


class StatsTotal(BaseModel):
    """Every record of the store's scope (all users together, and what belongs to no
    user: single-tenant entities nobody mentions, conversations without a user)."""

    model_config = ConfigDict(frozen=True)

    conversations: int
    messages: int | None
    entities: int | None
    preferences: int | None = None
    facts: int | None = None
    relationships: int | None = None
    traces: int | None = None


class StoreStats(BaseModel):
    """The result of :meth:`memory_core.MemoryBackend.stats`.

    ``users``: one row per user, sorted by identifier (conversations without a user
    last); with ``user_identifier=`` only that user's row (zeros when the user has
    nothing). ``total``: the whole store, ``None`` when one user was asked for.
    ``size_bytes``: the store's size on disk where the backend can tell (the SQLite file
    with its ``-wal`` file; PostgreSQL's tables with their indexes and TOAST), else
    ``None``. ``scope`` says what a user is: ``"tenant"`` on a multi-tenant backend.
    """

    model_config = ConfigDict(frozen=True)

    backend: str
    scope: Literal["tenant", "user"]
    users: list[UserStats]
    total: StatsTotal | None
    size_bytes: int | None


def user_rows(rows: Iterable[UserStats]) -> list[UserStats]:
    """``rows`` in report order: by user identifier, the row without a user last."""
    return sorted(rows, key=lambda r: (r.user_identifier is None, r.user_identifier or ""))


def merge_counts(
    conversations: dict[str | None, tuple[int, int | None]],
    entities: dict[str | None, int] | None,
    long_term: LongTermCounts | None = None,
) -> list[UserStats]:
    """Rows from per-user (conversations, messages), per-user entity counts and the
    per-user counts of ``long_term`` kinds: a user with entities or long-term records but
    no conversation gets a row too. ``entities=None``: the store cannot say whose an
    entity is (every row's ``entities`` is ``None``); a kind missing from ``long_term``
    is ``None`` in every row."""
    kinds = long_term or {}
    users = set(conversations) | set(entities or {})
    for counts in kinds.values():
        users |= set(counts)
    return user_rows(
        UserStats(
            user_identifier=user,
            conversations=conversations.get(user, (0, 0))[0],
            messages=conversations.get(user, (0, 0))[1],
            entities=None if entities is None else entities.get(user, 0),
            **{kind: counts.get(user, 0) for kind, counts in kinds.items()},
        )
        for user in users
    )


def only_user(rows: list[UserStats], user: str, long_term: LongTermCounts) -> list[UserStats]:
    """The row of ``user`` among ``rows``, or a row of zeros when the user has nothing
    (``None`` for a kind ``long_term`` does not count)."""
    found = [r for r in rows if r.user_identifier == user]
    return found or merge_counts({user: (0, 0)}, {}, {kind: {} for kind in long_term})


def table(stats: StoreStats, where: str) -> str:
    """``stats`` as a plain-text table (what ``memory-core stats`` prints): a column of
    :data:`COUNTED_KINDS` only where the store counts that kind; ``-`` where a row has no
    count of it (relationships per user on a single-tenant store)."""
    head = "tenant" if stats.scope == "tenant" else "user"
    every = [*stats.users, *([stats.total] if stats.total is not None else [])]
    kinds = [k for k in COUNTED_KINDS if any(getattr(r, k) is not None for r in every)]
    cells = [[head, "conversations", "messages", "entities", *kinds]]
    for r in stats.users:
        name = "(no user)" if r.user_identifier is None else r.user_identifier
        cells.append([name, *_counts(r.conversations, r.messages, r.entities), *_kinds(r, kinds)])
    if stats.total is not None:
        t = stats.total
        cells.append(
            ["total", *_counts(t.conversations, t.messages, t.entities), *_kinds(t, kinds)]
        )
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    rule = "  ".join("-" * w for w in widths)
    lines = [_row(row, widths) for row in cells]
    lines.insert(1, rule)
    if stats.total is not None and stats.users:
        lines.insert(len(lines) - 1, rule)
    return "\n".join(
        [f"backend: {stats.backend}  ({where})", f"size: {_size(stats.size_bytes)}", "", *lines]
    )


def _kinds(row: UserStats | StatsTotal, kinds: list[str]) -> list[str]:
    return [f"{value:,}" if (value := getattr(row, kind)) is not None else "-" for kind in kinds]


def _row(cells: list[str], widths: list[int]) -> str:
    """The first cell left-aligned, the counts right-aligned."""
    counts = (cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True))
    return "  ".join([cells[0].ljust(widths[0]), *counts]).rstrip()


def _counts(*values: int | None) -> list[str]:
    return ["unknown" if value is None else f"{value:,}" for value in values]


def _size(size: int | None) -> str:
    """Bytes in the largest unit that keeps a whole number in front, e.g. ``12.3 MB``."""
    if size is None:
        return "unknown (the backend cannot tell)"
    amount = float(size)
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if amount < 1000 or unit == "TB":
            shown = f"{size:,} bytes" if unit == "bytes" else f"{amount:.1f} {unit}"
            return shown if unit == "bytes" else f"{shown} ({size:,} bytes)"
        amount /= 1000
    raise AssertionError("unreachable")
