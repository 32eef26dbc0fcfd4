"""What a store holds: :meth:`memory_core.MemoryBackend.stats` and the models it returns.

A store with the capability ``store_stats`` counts in the store itself (an aggregate
query), so a store of a million messages is never read into the program. Counts are per
user: on a multi-tenant backend the user is the tenant; otherwise the ``user_identifier``
a conversation was recorded with (``None`` for conversations recorded without one). A
count the store cannot make is ``None`` (NAMS does not say how many messages a
conversation holds, nor whose an entity is), as is ``size_bytes`` where the store cannot
tell its size.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict


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


class StatsTotal(BaseModel):
    """Every record of the store's scope (all users together, and what belongs to no
    user: single-tenant entities nobody mentions, conversations without a user)."""

    model_config = ConfigDict(frozen=True)

    conversations: int
    messages: int | None
    entities: int | None


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
) -> list[UserStats]:
    """Rows from per-user (conversations, messages) and per-user entity counts: a user
    with entities but no conversation gets a row too. ``entities=None``: the store cannot
    say whose an entity is (every row's ``entities`` is ``None``)."""
    users = set(conversations) | set(entities or {})
    return user_rows(
        UserStats(
            user_identifier=user,
            conversations=conversations.get(user, (0, 0))[0],
            messages=conversations.get(user, (0, 0))[1],
            entities=None if entities is None else entities.get(user, 0),
        )
        for user in users
    )


def table(stats: StoreStats, where: str) -> str:
    """``stats`` as a plain-text table (what ``memory-core stats`` prints)."""
    head = "tenant" if stats.scope == "tenant" else "user"
    cells = [[head, "conversations", "messages", "entities"]]
    for r in stats.users:
        name = "(no user)" if r.user_identifier is None else r.user_identifier
        cells.append([name, *_counts(r.conversations, r.messages, r.entities)])
    if stats.total is not None:
        t = stats.total
        cells.append(["total", *_counts(t.conversations, t.messages, t.entities)])
    widths = [max(len(row[i]) for row in cells) for i in range(4)]
    rule = "  ".join("-" * w for w in widths)
    lines = [_row(row, widths) for row in cells]
    lines.insert(1, rule)
    if stats.total is not None and stats.users:
        lines.insert(len(lines) - 1, rule)
    return "\n".join(
        [f"backend: {stats.backend}  ({where})", f"size: {_size(stats.size_bytes)}", "", *lines]
    )


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
