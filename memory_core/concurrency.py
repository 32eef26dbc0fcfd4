"""Two awaits at once, failing as if they had run one after the other."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

import anyio

A = TypeVar("A")
B = TypeVar("B")


async def together(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both results, the two awaited concurrently (one round trip's wait for two
    independent requests); when either fails, the first one's error if it failed (else
    the second's), as a sequential ``(await first, await second)`` would raise it, never
    an ``ExceptionGroup``."""
    done: list[Any] = [None, None]
    failed: list[BaseException | None] = [None, None]

    async def run(slot: int, work: Awaitable[Any]) -> None:
        try:
            done[slot] = await work
        except Exception as error:  # raised below, in the order of a sequential call
            failed[slot] = error

    async with anyio.create_task_group() as group:
        group.start_soon(run, 0, first)
        group.start_soon(run, 1, second)
    for error in failed:
        if error is not None:
            raise error
    return done[0], done[1]
