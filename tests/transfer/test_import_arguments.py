"""Arguments of import_memory and copy_memory that reach the code doing the work:
``max_line_bytes`` for a path, ``on_progress``, ``users`` of a copy (found missing by
mutation testing of memory_core/transfer; see memory_core/conformance/README.md,
"Mutation score")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory_core import EntityRef, HashingEmbedder, InvalidRequestError, MemoryBackend, open_backend
from memory_core.limits import Limits
from memory_core.transfer import (
    ArchiveError,
    TransferReport,
    copy_memory,
    export_memory,
    import_memory,
)
from tests.transfer.sample import export_lines, populate

pytestmark = pytest.mark.anyio


def _memory(**options: Any) -> MemoryBackend:
    return open_backend("memory://", embedder=HashingEmbedder(dimensions=8), **options)


async def _archive(path: Path) -> list[str]:
    async with _memory() as source:
        await populate(source)
        await export_memory(source, path)
    return path.read_text(encoding="utf-8").splitlines()


async def test_max_line_bytes_applies_to_an_archive_read_from_a_path(tmp_path: Path) -> None:
    lines = await _archive(tmp_path / "a.jsonl")
    longest = max(len(line.encode("utf-8")) for line in lines)
    async with _memory() as target:
        with pytest.raises(ArchiveError, match=f"longer than {longest - 1} bytes"):
            await import_memory(target, tmp_path / "a.jsonl", max_line_bytes=longest - 1)
    async with _memory() as target:
        report = await import_memory(target, tmp_path / "a.jsonl", max_line_bytes=longest)
        assert report.copied["message"] > 0


async def test_max_line_bytes_of_one_is_allowed_and_zero_names_the_argument() -> None:
    async with _memory() as target:
        with pytest.raises(ArchiveError) as cut:
            await import_memory(target, ['{"record":"header"}'], max_line_bytes=1)
        assert cut.value.argument == "source" and cut.value.line == 1
        with pytest.raises(InvalidRequestError) as refused:
            await import_memory(target, [], max_line_bytes=0)
        assert refused.value.argument == "max_line_bytes"


async def test_on_progress_hears_an_import_from_a_path(tmp_path: Path) -> None:
    await _archive(tmp_path / "a.jsonl")
    heard: list[TransferReport] = []
    async with _memory() as target:
        await import_memory(target, tmp_path / "a.jsonl", on_progress=heard.append)
    assert heard


async def test_a_copy_of_chosen_users_copies_only_theirs() -> None:
    async with _memory(multi_tenant=True) as source, _memory(multi_tenant=True) as target:
        await source.add_message("s-alice", "user", "from alice", user_identifier="alice")
        await source.add_message("s-bob", "user", "from bob", user_identifier="bob")
        report = await copy_memory(source, target, users=["alice"])
        assert report.copied["message"] == 1
        alice = await target.get_conversation("s-alice", user_identifier="alice")
        assert [m.content for m in alice.messages] == ["from alice"]
        assert await target.list_conversations(user_identifier="bob") == []


@pytest.mark.parametrize("given", ["path", "stream"])
async def test_the_checkpoint_is_kept_for_a_target_without_a_bulk_hook(
    tmp_path: Path, given: str
) -> None:
    await _archive(tmp_path / "a.jsonl")
    async with _memory() as target:
        target.store.bulk_transfer = lambda: None  # type: ignore[method-assign]
        checkpoint = tmp_path / "import.ckpt"
        if given == "path":
            await import_memory(target, tmp_path / "a.jsonl", checkpoint=checkpoint)
        else:
            with open(tmp_path / "a.jsonl", "rb") as stream:
                await import_memory(target, stream, checkpoint=checkpoint)
    assert checkpoint.read_text(encoding="utf-8").count("\n") >= 2


async def test_new_ids_from_a_path_appends_a_second_copy(tmp_path: Path) -> None:
    await _archive(tmp_path / "a.jsonl")
    async with _memory() as target:
        first = await import_memory(target, tmp_path / "a.jsonl", on_conflict="new-ids")
        second = await import_memory(target, tmp_path / "a.jsonl", on_conflict="new-ids")
        held = [json.loads(line)["record"] for line in await export_lines(target)]
    assert second.copied["message"] == first.copied["message"] > 0
    assert held.count("message") > first.copied["message"]  # (idempotency keys dedupe)


async def test_records_are_checked_against_the_targets_limits(tmp_path: Path) -> None:
    """A record over the target's own (smaller) limit stops an import and a copy with an
    ArchiveError, before the backend sees it."""
    await _archive(tmp_path / "a.jsonl")
    small = Limits(max_content_chars=3)
    async with _memory(limits=small) as target:
        with pytest.raises(ArchiveError, match="line"):
            await import_memory(target, tmp_path / "a.jsonl")
    async with _memory() as source, _memory(limits=small) as target:
        await populate(source)
        with pytest.raises(ArchiveError):
            await copy_memory(source, target)


async def test_a_copy_stops_at_a_message_with_more_mentions_than_the_target_takes() -> None:
    """A copy checks each message's mentions against the target's ``max_mentions`` as an
    import does: an ArchiveError, not a silently skipped record."""
    async with _memory() as source, _memory(limits=Limits(max_mentions=1)) as target:
        await source.add_message(
            "many",
            "user",
            "Ada met Alan",
            extraction_mode="explicit",
            explicit_mentions=[
                EntityRef(name="Ada", type="PERSON"),
                EntityRef(name="Alan", type="PERSON"),
            ],
        )
        with pytest.raises(ArchiveError, match="more than 1 mentions"):
            await copy_memory(source, target)


async def test_an_archive_without_its_end_record_is_reported_as_cut(tmp_path: Path) -> None:
    lines = await _archive(tmp_path / "a.jsonl")
    assert json.loads(lines[-1])["record"] == "end"
    async with _memory() as target:
        whole = await import_memory(target, lines)
    async with _memory() as target:
        cut = await import_memory(target, lines[:-1])
    assert whole.unreadable == []
    assert len(cut.unreadable) == 1 and "no end record" in cut.unreadable[0]
    assert cut.copied == whole.copied
