"""``together``: two awaits at once, failing as a sequential pair would."""

from __future__ import annotations

import anyio
import pytest

from memory_core.concurrency import all_at_once, together

pytestmark = pytest.mark.anyio


async def test_together_awaits_both_at_once() -> None:
    met = anyio.Event()

    async def first() -> str:
        with anyio.fail_after(5):
            await met.wait()  # only the second sets it: they run at once
        return "header"

    async def second() -> int:
        met.set()
        return 2

    assert await together(first(), second()) == ("header", 2)


async def fails(error: Exception) -> None:
    raise error


async def test_the_first_error_wins_as_in_a_sequential_call() -> None:
    with pytest.raises(KeyError):
        await together(fails(KeyError("first")), fails(ValueError("second")))


async def test_the_second_error_is_raised_alone_not_in_a_group() -> None:
    async def fine() -> int:
        return 1

    with pytest.raises(ValueError, match="second"):
        await together(fine(), fails(ValueError("second")))


async def test_all_at_once_keeps_the_order_and_raises_the_first_error() -> None:
    started: list[int] = []
    gate = anyio.Event()

    async def slot(n: int) -> int:
        started.append(n)
        if len(started) == 3:
            gate.set()
        with anyio.fail_after(5):
            await gate.wait()  # every one is under way before any ends
        return n * 10

    assert await all_at_once([slot(0), slot(1), slot(2)]) == [0, 10, 20]
    assert await all_at_once([]) == []
    with pytest.raises(KeyError):
        await all_at_once([fails(KeyError("first")), fails(ValueError("second"))])
