"""``since`` filters (server-side or on the fetched page: it must work either way)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import anyio

from memory_core import Message

from ..checks import contents
from ..harness import Harness
from ..scenarios import scenario
from .base import SuiteBase


async def _two_groups(harness: Harness, handle: str) -> tuple[list[Message], list[Message]]:
    """Three messages, a pause so timestamps differ, then three more."""
    early = [await harness.backend.add_message(handle, "user", f"early {i}") for i in range(3)]
    await anyio.sleep(0.05)
    late = [await harness.backend.add_message(handle, "user", f"late {i}") for i in range(3)]
    return early, late


class SinceSuite(SuiteBase):
    """Scenarios of area ``since``."""

    @scenario("since.strictly_after", "since keeps only messages created strictly after it")
    async def test_since_strictly_after(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await _two_groups(harness, handle)
        stored = await harness.messages(handle)
        cutoff = stored[2].created_at
        conversation = await harness.backend.get_conversation(handle, since=cutoff)
        expected = [m.content for m in stored if m.created_at > cutoff]
        assert contents(conversation.messages) == expected
        assert expected == ["late 0", "late 1", "late 2"], "timestamps 50 ms apart are equal"

    @scenario("since.before_everything", "since before the first message returns them all")
    async def test_since_before_everything(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await _two_groups(harness, handle)
        first = (await harness.messages(handle))[0].created_at
        conversation = await harness.backend.get_conversation(
            handle, since=first - timedelta(seconds=1)
        )
        assert len(conversation.messages) == 6

    @scenario("since.future_is_empty", "since after the last message returns no messages")
    async def test_since_future_is_empty(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await _two_groups(harness, handle)
        last = (await harness.messages(handle))[-1].created_at
        conversation = await harness.backend.get_conversation(
            handle, since=last + timedelta(days=1)
        )
        assert conversation.messages == []

    @scenario("since.iso_string", "since accepts an ISO-8601 string")
    async def test_since_iso_string(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await _two_groups(harness, handle)
        cutoff = (await harness.messages(handle))[2].created_at
        conversation = await harness.backend.get_conversation(
            handle,
            since=cutoff.isoformat(),  # type: ignore[arg-type]
        )
        assert contents(conversation.messages) == ["late 0", "late 1", "late 2"]

    @scenario("since.with_limit", "since combined with limit never returns older messages")
    async def test_since_with_limit(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await _two_groups(harness, handle)
        cutoff = (await harness.messages(handle))[2].created_at
        conversation = await harness.backend.get_conversation(handle, since=cutoff, limit=2)
        assert contents(conversation.messages) == ["late 1", "late 2"]

    @scenario(
        "since.server_side",
        "since filters in the store, also with a limit (without server_side_since the "
        "fetched page is filtered instead)",
        requires="server_side_since",
    )
    async def test_since_server_side(self, harness: Harness) -> None:
        handle = await harness.new_session()
        await _two_groups(harness, handle)
        cutoff = (await harness.messages(handle))[2].created_at
        conversation = await harness.backend.get_conversation(handle, since=cutoff, limit=5)
        assert contents(conversation.messages) == ["late 0", "late 1", "late 2"]

    @scenario(
        "since.before_limit",
        "since is applied before limit, also when caller timestamps are out of order",
        requires=("server_side_since", "caller_timestamps"),
    )
    async def test_since_before_limit(self, harness: Harness) -> None:
        handle = await harness.new_session()
        base = datetime(2021, 3, 4, 5, 6, 7, tzinfo=UTC)
        offsets = {"a": 10, "b": 11, "c": 12, "d": 1, "e": 2}  # d and e written last, older
        batch = [
            {"role": "user", "content": name, "timestamp": base + timedelta(seconds=s)}
            for name, s in offsets.items()
        ]
        await harness.backend.add_messages_batch(handle, batch)
        cutoff = base + timedelta(seconds=5)
        read = await harness.backend.get_conversation(handle, since=cutoff, limit=3)
        assert contents(read.messages) == ["a", "b", "c"], "limit was applied before since"
        read = await harness.backend.get_conversation(handle, since=cutoff, limit=2)
        assert contents(read.messages) == ["b", "c"]

    @scenario(
        "since.microseconds",
        "since is compared at microsecond resolution",
        requires="caller_timestamps",
    )
    async def test_since_microseconds(self, harness: Harness) -> None:
        handle = await harness.new_session()
        base = datetime(2022, 1, 2, 3, 4, 5, tzinfo=UTC)
        stamps = [base + timedelta(microseconds=i) for i in range(5)]
        await harness.backend.add_messages_batch(
            handle,
            [{"role": "user", "content": f"u{i}", "timestamp": t} for i, t in enumerate(stamps)],
        )
        for since in (stamps[2], stamps[2].isoformat()):
            read = await harness.backend.get_conversation(handle, since=since)  # type: ignore[arg-type]
            assert contents(read.messages) == ["u3", "u4"], f"since={since!r}"
