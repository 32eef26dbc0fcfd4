"""Tenancy and resuming through the public API (embedded backends, no Neo4j)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory_core import InvalidRequestError, MemoryBackend, open_backend
from memory_core.backends.embedded import EmbeddedStore
from memory_core.transfer import TransferReport, copy_memory
from tests.transfer.sample import MESSAGES, export_lines, of_kind, populate

pytestmark = pytest.mark.anyio


class _NoBulkStore(EmbeddedStore):
    def bulk_transfer(self) -> None:
        return None


class PublicOnly(MemoryBackend):
    """An embedded store written only through the public API (as a third-party backend
    without a bulk hook would be), which can be told to die after N batches."""

    store_class = _NoBulkStore
    fail_after: int | None = None
    after_commit = True
    batches = 0

    async def add_messages_batch(self, *args: Any, **kwargs: Any) -> Any:
        if self.fail_after is not None and self.batches >= self.fail_after:
            if not self.after_commit:
                raise KeyboardInterrupt("killed before the write")
            stored = await super().add_messages_batch(*args, **kwargs)
            raise KeyboardInterrupt(f"killed after writing {len(stored)}")
        self.batches += 1
        return await super().add_messages_batch(*args, **kwargs)


async def test_a_multi_tenant_store_moves_user_by_user(tmp_path: Path) -> None:
    async with (
        open_backend("memory://", multi_tenant=True) as source,
        open_backend("memory://", multi_tenant=True) as target,
    ):
        await populate(source, "alice")
        await populate(source, "bob", tag="b-")
        report = await copy_memory(source, target)
        assert report.copied["message"] == 2 * MESSAGES
        for user in ("alice", "bob"):
            assert await export_lines(target, users=[user]) == await export_lines(
                source, users=[user]
            )
        alice = await target.list_sessions(user_identifier="alice")
        assert {s.session_id for s in alice} == {"chat-1", "chat-2"}
        bob = await target.list_sessions(user_identifier="bob")
        assert {s.session_id for s in bob} == {"b-chat-1", "b-chat-2"}
        assert all(s.user_identifier == "alice" for s in alice)
        only_bob = of_kind(await export_lines(source, users=["bob"]), "conversation")
        assert {c["user_identifier"] for c in only_bob} == {"bob"}


async def test_public_export_of_a_multi_tenant_store_needs_users() -> None:
    async with open_backend("memory://", multi_tenant=True) as source:
        await populate(source, "alice")
        source.store.bulk_transfer = lambda: None  # type: ignore[method-assign]
        with pytest.raises(InvalidRequestError, match="users"):
            await export_lines(source)
        lines = await export_lines(source, users=["alice"])
        assert {c["user_identifier"] for c in of_kind(lines, "conversation")} == {"alice"}


async def test_records_without_a_user_are_not_put_in_a_multi_tenant_target() -> None:
    async with (
        open_backend("memory://") as source,
        open_backend("memory://", multi_tenant=True) as target,
    ):
        await source.add_message("s", "user", "whose is this?")
        report = await copy_memory(source, target)
        assert report.copied["message"] == 0
        assert (
            report.skipped[("conversation", "no user_identifier and the target is multi-tenant")]
            == 1
        )


async def test_session_prefix_limits_the_export() -> None:
    async with open_backend("memory://") as source:
        await populate(source)
        await populate(source, tag="other-")
        lines = await export_lines(source, session_prefix="other-")
        sessions = {c["session_id"] for c in of_kind(lines, "conversation")}
        assert sessions == {"other-chat-1", "other-chat-2"}


@pytest.mark.parametrize("after_commit", [False, True])
@pytest.mark.parametrize("fail_after", [0, 1, 3])
async def test_an_interrupted_public_copy_resumes_with_one_copy_of_each_message(
    tmp_path: Path, fail_after: int, after_commit: bool
) -> None:
    checkpoint = tmp_path / "copy.checkpoint"
    async with open_backend("memory://") as source:
        for n in range(3):
            await source.add_messages_batch(
                f"s{n}", [{"role": "user", "content": f"{n}-{i}"} for i in range(250)]
            )
        await source.add_messages_batch(
            "repeats", [{"role": "assistant", "content": "same"} for _ in range(230)]
        )
        expected = await _contents(source)
        target = PublicOnly("memory://")
        async with target:
            target.fail_after = fail_after
            target.after_commit = after_commit
            with pytest.raises(KeyboardInterrupt):
                await copy_memory(source, target, checkpoint=checkpoint)
            target.fail_after = None
            report = await copy_memory(source, target, checkpoint=checkpoint)
            assert await _contents(target) == expected
            again = await copy_memory(source, target, checkpoint=checkpoint)
            assert again.copied["message"] == 0
            assert await _contents(target) == expected
            if after_commit:
                assert report.skipped[("message", "already in the target (found on resume)")]


async def _contents(backend: Any) -> dict[str, list[str]]:
    found = {}
    for session in await backend.list_sessions(limit=100):
        conversation = await backend.get_conversation(session.session_id, limit=10_000)
        found[session.session_id] = [m.content for m in conversation.messages]
    return found


async def test_progress_is_reported_as_messages_are_written() -> None:
    seen: list[int] = []

    def tick(report: TransferReport) -> None:
        seen.append(report.messages_done)

    async with open_backend("memory://") as source, open_backend("memory://") as target:
        await populate(source)
        from memory_core.transfer import import_memory, iter_records  # noqa: F401

        report = await copy_memory(source, target, on_progress=tick)
        assert seen and seen[-1] == report.messages_done == MESSAGES


async def test_two_users_sessions_of_one_name_are_never_merged() -> None:
    async with (
        open_backend("memory://", multi_tenant=True) as source,
        open_backend("memory://") as target,
    ):
        await source.add_message("same-name", "user", "alice's", user_identifier="alice")
        await source.add_message("same-name", "user", "bob's", user_identifier="bob")
        report = await copy_memory(source, target)
        reason = "its session belongs to another user in the target"
        assert report.skipped[("conversation", reason)] == 1
        conversation = await target.get_conversation("same-name")
        assert [m.content for m in conversation.messages] == ["alice's"]
        assert conversation.user_identifier == "alice"


@pytest.mark.parametrize("after_commit", [False, True], ids=["killed-before", "killed-after"])
async def test_a_resume_counts_a_readable_conversation_exactly_when_its_messages_repeat(
    tmp_path: Path, after_commit: bool
) -> None:
    """230 identical messages: role and content cannot tell how many the killed run wrote;
    a conversation the target can read whole is counted exactly."""
    checkpoint = tmp_path / "copy.checkpoint"
    async with open_backend("memory://") as source:
        await source.add_messages_batch(
            "repeats", [{"role": "assistant", "content": "same"} for _ in range(230)]
        )
        target = PublicOnly("memory://")
        async with target:
            target.fail_after = 1  # the first batch is noted; the second dies
            target.after_commit = after_commit
            with pytest.raises(KeyboardInterrupt):
                await copy_memory(source, target, checkpoint=checkpoint)
            held = len((await target.get_conversation("repeats", limit=1000)).messages)
            assert held == (200 if after_commit else 100)
            target.fail_after = None
            report = await copy_memory(source, target, checkpoint=checkpoint)
            found = report.skipped[("message", "already in the target (found on resume)")]
            assert found == held - 100
            read = await target.get_conversation("repeats", limit=1000)
            assert len(read.messages) == 230
