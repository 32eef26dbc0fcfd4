"""Resuming a public-API copy that died between writing a batch and noting it in the
checkpoint: on a target that caps its reads (only the newest messages can be compared)
and on one that does not (the messages are counted, past those already in the session)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memory_core import MemoryBackend, open_backend
from memory_core.backends.embedded import EmbeddedStore
from memory_core.transfer import TransferReport, copy_memory

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::memory_core.CapabilityWarning"),
]

FOUND = ("message", "already in the target (found on resume)")
RESUMED = ("conversation", "already created (checkpoint)")


class _CappedStore(EmbeddedStore):
    capabilities = replace(
        EmbeddedStore.capabilities,
        max_messages_per_read=5,
        default_messages_per_read=2,
        full_history=False,
        max_bulk_messages=3,
    )

    def bulk_transfer(self) -> None:
        return None


class _SmallDefaultStore(_CappedStore):
    capabilities = replace(_CappedStore.capabilities, max_messages_per_read=None)


class Dying(MemoryBackend):
    """Written through the public API only; the batch after ``fail_after`` keeps just its
    first ``keep`` messages and the process 'dies' before the checkpoint notes them."""

    store_class: Any = _CappedStore
    fail_after: int | None = None
    keep = 0
    batches = 0

    async def add_messages_batch(self, session: str, items: Any, **kwargs: Any) -> Any:
        if self.fail_after is not None and self.batches >= self.fail_after:
            if self.keep:
                await super().add_messages_batch(session, items[: self.keep], **kwargs)
            raise KeyboardInterrupt("killed before the checkpoint line")
        self.batches += 1
        return await super().add_messages_batch(session, items, **kwargs)


class DyingUncapped(Dying):
    store_class = _SmallDefaultStore


async def _contents(path: Path, user: str | None = None) -> list[str]:
    """Every message of session "s" in the file, read without the target's cap."""
    async with open_backend(f"sqlite:///{path}", multi_tenant=user is not None) as reader:
        found = await reader.get_conversation("s", limit=10_000, user_identifier=user)
    return [m.content for m in found.messages]


async def _copy_twice(
    source: Any, target: Dying, checkpoint: Path, **options: Any
) -> TransferReport:
    with pytest.raises(KeyboardInterrupt):
        await copy_memory(source, target, checkpoint=checkpoint, **options)
    target.fail_after = None
    return await copy_memory(source, target, checkpoint=checkpoint, **options)


@pytest.mark.parametrize("keep", [1, 2, 3])
async def test_a_capped_target_finds_the_unnoted_part_of_a_batch(tmp_path: Path, keep: int) -> None:
    # 11 messages in batches of 3: two noted, the third died after `keep` of its messages
    # were written. Only the newest 5 can be read back, so they are matched against the
    # archive (all of one role: only the content tells them apart).
    words = [f"m{i}" for i in range(11)]
    async with open_backend("memory://", multi_tenant=True) as source:
        await source.add_messages_batch(
            "s", [{"role": "user", "content": w} for w in words], user_identifier="alice"
        )
        target = Dying(f"sqlite:///{tmp_path}/t.db", multi_tenant=True)
        async with target:
            target.fail_after, target.keep = 2, keep
            report = await _copy_twice(source, target, tmp_path / "cp")
            assert await _contents(tmp_path / "t.db", "alice") == words
            assert report.skipped[RESUMED] == 1
            assert report.skipped[("message", "already copied (checkpoint)")] == 6  # noted
            assert report.skipped[FOUND] == keep
            assert report.copied["message"] == len(words) - 6 - keep


@pytest.mark.parametrize("keep", [1, 2])
async def test_an_uncapped_target_counts_past_the_messages_it_had(
    tmp_path: Path, keep: int
) -> None:
    # on_conflict="new-ids" appends to a session that already holds 95 messages (more
    # than one default read of this store): the count starts after them.
    words = [f"m{i}" for i in range(5)]
    async with open_backend("memory://") as source:
        await source.add_messages_batch("s", [{"role": "user", "content": w} for w in words])
        target = DyingUncapped(f"sqlite:///{tmp_path}/t.db")
        async with target:
            old = [f"old{i}" for i in range(95)]
            await target.add_messages_batch("s", [{"role": "user", "content": w} for w in old])
            target.batches = 0
            target.fail_after, target.keep = 1, keep
            report = await _copy_twice(source, target, tmp_path / "cp", on_conflict="new-ids")
            assert await _contents(tmp_path / "t.db") == old + words
            assert report.skipped[FOUND] == keep


async def test_nothing_is_found_when_the_dead_batch_wrote_nothing(tmp_path: Path) -> None:
    async with open_backend("memory://") as source:
        await source.add_messages_batch("s", [{"role": "user", "content": "a"}] * 4)
        target = DyingUncapped(f"sqlite:///{tmp_path}/t.db")
        async with target:
            target.fail_after, target.keep = 1, 0
            report = await _copy_twice(source, target, tmp_path / "cp")
            assert await _contents(tmp_path / "t.db") == ["a"] * 4
            assert FOUND not in report.skipped
            assert report.copied["message"] == 1


async def test_a_copy_that_died_before_its_first_batch_writes_every_message(
    tmp_path: Path,
) -> None:
    """The conversation was created and noted, no message was: the re-run skips none."""
    words = ["a", "b", "c", "d"]
    async with open_backend("memory://") as source:
        await source.add_messages_batch("s", [{"role": "user", "content": w} for w in words])
        target = DyingUncapped(f"sqlite:///{tmp_path}/t.db")
        async with target:
            target.fail_after, target.keep = 0, 0
            report = await _copy_twice(source, target, tmp_path / "cp")
            assert await _contents(tmp_path / "t.db") == words
            assert report.skipped[RESUMED] == 1
            assert report.copied["message"] == len(words)
