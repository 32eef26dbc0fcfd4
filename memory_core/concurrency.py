"""Awaits at once, failing as if they had run one after the other."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

import anyio

A = TypeVar("A")
B = TypeVar("B")
T = TypeVar("T")


async def together(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both results, the two awaited concurrently (one round trip's wait for two
    independent requests); when either fails, the first one's error if it failed (else
    the second's), as a sequential ``(await first, await second)`` would raise it, never
    an ``ExceptionGroup``."""
    done = await _at_once([first, second])
    return done[0], done[1]


async def all_at_once(works: Sequence[Awaitable[T]]) -> list[T]:
    """The results of ``works`` in their order, all awaited concurrently; when some fail,
    the error of the first of those, as awaiting them one after the other would raise it."""
    return await _at_once(works)


async def _at_once(works: Sequence[Awaitable[Any]]) -> list[Any]:
    done: list[Any] = [None] * len(works)
    failed: list[BaseException | None] = [None] * len(works)

    async def run(slot: int, work: Awaitable[Any]) -> None:
        try:
            done[slot] = await work
        except Exception as error:  # raised below, in the order of a sequential call
            failed[slot] = error

    async with anyio.create_task_group() as group:
        for slot, work in enumerate(works):
            group.start_soon(run, slot, work)
    for error in failed:
        if error is not None:
            raise error
    return done
