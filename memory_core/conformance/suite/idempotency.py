"""Idempotency keys: a replay writes nothing."""

from __future__ import annotations

import anyio

from memory_core import Message, MessageRole

from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


class IdempotencySuite(SuiteBase):
    """Scenarios of area ``idempotency``."""

    @scenario(
        "idempotency.replay_writes_nothing",
        "a replayed idempotency key returns the stored message and writes nothing",
        requires="idempotency_keys",
    )
    async def test_idempotency_replay_writes_nothing(self, harness: Harness) -> None:
        handle = await harness.new_session()
        key = harness.unique("key")
        first = await harness.backend.add_message(handle, "user", "once", idempotency_key=key)
        again = await harness.backend.add_message(handle, "user", "once", idempotency_key=key)
        assert again.id == first.id
        assert await harness.contents(handle) == ["once"]

    @scenario(
        "idempotency.replay_keeps_original",
        "a replay with different content returns the original message unchanged",
        requires="idempotency_keys",
    )
    async def test_idempotency_replay_keeps_original(self, harness: Harness) -> None:
        handle = await harness.new_session()
        key = harness.unique("key")
        first = await harness.backend.add_message(handle, "user", "original", idempotency_key=key)
        await harness.backend.add_message(handle, "user", "after")
        again = await harness.backend.add_message(
            handle, "assistant", "changed", idempotency_key=key
        )
        assert (again.id, again.content) == (first.id, "original")
        assert await harness.contents(handle) == ["original", "after"]

    @scenario(
        "idempotency.concurrent_replays",
        "ten concurrent writes with one key store one message",
        requires="idempotency_keys",
    )
    async def test_idempotency_concurrent_replays(self, harness: Harness) -> None:
        handle = await harness.new_session()
        key = harness.unique("key")
        results: list[Message] = []

        async def write() -> None:
            results.append(
                await harness.backend.add_message(handle, "user", "racing", idempotency_key=key)
            )

        async with anyio.create_task_group() as group:
            for _ in range(10):
                group.start_soon(write)
        assert len({m.id for m in results}) == 1, "replays returned different messages"
        assert await harness.contents(handle) == ["racing"]

    @scenario(
        "idempotency.scoped_to_conversation",
        "the same key in another session stores a new message there",
        requires="idempotency_keys",
    )
    async def test_idempotency_scoped_to_conversation(self, harness: Harness) -> None:
        first, second = await harness.new_session(), await harness.new_session()
        key = harness.unique("key")
        a = await harness.backend.add_message(first, "user", "in first", idempotency_key=key)
        b = await harness.backend.add_message(second, "user", "in second", idempotency_key=key)
        assert a.id != b.id
        assert await harness.contents(first) == ["in first"]
        assert await harness.contents(second) == ["in second"]

    @scenario(
        "idempotency.write_tells_replay",
        "a keyed write says whether its key was stored before, where the store tells",
        requires="idempotency_keys",
    )
    async def test_idempotency_write_tells_replay(self, harness: Harness) -> None:
        first, second = await harness.new_session(), await harness.new_session()
        key = harness.unique("key")
        written, fresh = await _keyed(harness, first, "once", key)
        again, replayed = await _keyed(harness, first, "changed", key)
        elsewhere, other = await _keyed(harness, second, "there", key)
        assert (again.id, again.content) == (written.id, "once")
        assert await harness.contents(first) == ["once"]
        assert await harness.contents(second) == ["there"] and elsewhere.id != written.id
        told = (fresh, replayed, other)
        if harness.backend.store.tells_replays:
            assert told == (False, True, False), f"new, replay, other session: {told}"
        else:
            assert told == (None, None, None), f"a store that cannot tell answers None: {told}"


async def _keyed(
    harness: Harness, session: str, text: str, key: str
) -> tuple[Message, bool | None]:
    """The turn protocol's keyed write (what ``Store.add_keyed_message`` answers)."""
    backend = harness.backend
    _, stored, replayed = await backend._add_keyed(
        session, MessageRole.USER, text, {}, key, [], None
    )
    return stored, replayed
