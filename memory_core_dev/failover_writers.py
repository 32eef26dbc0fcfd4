"""Writers for failover tests and ``python -m bench.failover``: agents doing turns, keyed
single adds and batches, each retrying a retryable error as an application would, what
they saw, and the check of what the store holds against it.

Each writer has a session of its own. Keyed adds and turns retry a retryable error with
the same key or turn id until it succeeds (a turn whose reply failed raises
``TurnIncompleteError``, not retryable itself: ``close_turn`` is called again, as its
message says). Batches have no key: one that may have been
applied is not sent again, one that was not is followed by a new one, so each batch's fate
can be checked afterwards.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import anyio

from memory_core import MemoryBackend, MemoryCoreError, TurnIncompleteError, TurnMemory

T = TypeVar("T")
KINDS = ("keyed", "batch", "turn")
BATCH = 20
RETRY_FOR = 120.0  # seconds a writer retries one write before it gives up


@dataclass
class Tally:
    """What the writers saw: acknowledged contents per session, each batch's fate, errors
    and when each acknowledgement came."""

    acknowledged: dict[str, list[str]] = field(default_factory=dict)
    batches: list[tuple[list[str], MemoryCoreError | None]] = field(default_factory=list)
    errors: list[MemoryCoreError] = field(default_factory=list)
    acked_at: list[float] = field(default_factory=list)
    when: dict[str, float] = field(default_factory=dict)
    gave_up: int = 0

    def ack(self, session: str, *contents: str) -> None:
        """Record an acknowledged write of ``contents`` to ``session``."""
        now = time.monotonic()
        self.acknowledged.setdefault(session, []).extend(contents)
        self.acked_at.append(now)
        self.when.update(dict.fromkeys(contents, now))

    def count(self, session: str) -> int:
        """How many contents ``session`` has had acknowledged."""
        return len(self.acknowledged.get(session, ()))

    def errors_by_type(self) -> dict[str, int]:
        """Errors seen, by ``Type`` and ``Type(maybe_applied)``."""
        names = Counter(
            type(e).__name__ + ("(maybe_applied)" if e.maybe_applied else "") for e in self.errors
        )
        return dict(sorted(names.items()))


async def retrying(call: Callable[[], Awaitable[T]], tally: Tally) -> T:
    """``call`` until it succeeds, retrying a retryable memory-core error, and a
    :class:`TurnIncompleteError` (its documented remedy: close the turn again; its cause
    is the error recorded)."""
    deadline = time.monotonic() + RETRY_FOR
    while True:
        try:
            return await call()
        except TurnIncompleteError as exc:  # the error behind it is what the caller met
            cause = exc.__cause__
            tally.errors.append(cause if isinstance(cause, MemoryCoreError) else exc)
            if time.monotonic() > deadline:
                tally.gave_up += 1
                raise
        except MemoryCoreError as exc:
            tally.errors.append(exc)
            if not exc.retryable or time.monotonic() > deadline:
                tally.gave_up += 1
                raise
        await anyio.sleep(0.05)


async def keyed(store: MemoryBackend, session: str, tally: Tally, stop: anyio.Event) -> None:
    """Single adds, each with an idempotency key."""
    k = 0
    while not stop.is_set():
        text = f"{session}/{k}"
        write = lambda: store.add_message(session, "user", text, idempotency_key=text)  # noqa: B023,E731
        await retrying(write, tally)
        tally.ack(session, text)
        k += 1


async def batches(store: MemoryBackend, session: str, tally: Tally, stop: anyio.Event) -> None:
    """Batches of :data:`BATCH` messages, never resent."""
    k = 0
    while not stop.is_set():
        contents = [f"{session}/{k}/{i}" for i in range(BATCH)]
        items = [{"role": "user", "content": c} for c in contents]
        try:
            await store.add_messages_batch(session, items)
        except MemoryCoreError as exc:
            tally.errors.append(exc)
            tally.batches.append((contents, exc))
            await anyio.sleep(0.05)
        else:
            tally.batches.append((contents, None))
            tally.ack(session, *contents)
        k += 1


async def turns(store: MemoryBackend, session: str, tally: Tally, stop: anyio.Event) -> None:
    """An agent's turns through :class:`TurnMemory`: the question, then the answer."""
    memory = TurnMemory(store, session, "failover-bench")
    k = 0
    while not stop.is_set():
        turn, question, answer = f"turn-{k}", f"{session}/q{k}", f"{session}/a{k}"
        await retrying(lambda: memory.open_turn(turn, question), tally)  # noqa: B023
        await retrying(lambda: memory.close_turn(turn, answer), tally)  # noqa: B023
        tally.ack(session, question, answer)
        k += 1


WRITERS = {"keyed": keyed, "batch": batches, "turn": turns}


@dataclass
class Findings:
    """What the store holds against what was acknowledged."""

    lost: int = 0
    duplicates: int = 0
    half_batches: int = 0
    unexpected: int = 0
    batch_duplicates: int = 0


async def check(store: MemoryBackend, tally: Tally, sessions: list[str]) -> Findings:
    """Read every writer's session back and compare it with the tally."""
    found = Findings()
    for session in sessions:
        acknowledged = tally.acknowledged.get(session, [])
        read = await store.get_conversation(session, limit=1_000_000)
        stored = [m.content for m in read.messages]
        extra = len(stored) - len(set(stored))
        found.lost += len(set(acknowledged) - set(stored))
        if session.startswith("batch"):
            found.batch_duplicates += extra
            _check_batches(tally, session, set(stored), found)
        else:
            found.duplicates += extra
            found.unexpected += len(set(stored) - set(acknowledged))
    return found


def _check_batches(tally: Tally, session: str, stored: set[str], found: Findings) -> None:
    for contents, error in tally.batches:
        if not contents[0].startswith(f"{session}/"):
            continue
        present = [c for c in contents if c in stored]
        if present not in ([], contents):
            found.half_batches += 1
        elif present and error is not None and not error.maybe_applied:
            found.unexpected += len(present)
