"""Expiry archives are never replaced (issue 48, E1): a file that exists is refused before
anything is read or deleted; a dry run, or a run that expires nothing, writes no archive;
a write that fails (no such folder, a full disk) is a StoreError and deletes nothing. And
a cut-off past the start of the calendar is a typed error (E7), in the API and the CLI."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from memory_core import InvalidRequestError, MemoryBackend, StoreError, open_backend
from memory_core.cli import main
from memory_core.retention import archive_conversations

pytestmark = pytest.mark.anyio


async def _two_old(memory: MemoryBackend) -> datetime:
    await memory.add_message("old-a", "user", "ancient words")
    await memory.add_message("old-b", "user", "older words")
    return datetime.now(UTC) + timedelta(seconds=1)


async def _sessions(memory: MemoryBackend) -> list[str]:
    return sorted(c.session_id for c in await memory.list_conversations())


async def test_an_archive_that_exists_is_refused_before_anything_is_deleted(
    tmp_path: Path,
) -> None:
    kept = tmp_path / "expired.jsonl"
    kept.write_text("the only copy of what yesterday's run deleted\n")
    async with open_backend("memory://") as memory:
        cutoff = await _two_old(memory)
        for dry_run in (False, True):
            with pytest.raises(InvalidRequestError, match="never replaced") as refused:
                await memory.expire_conversations(cutoff, archive=kept, dry_run=dry_run)
            assert refused.value.argument == "archive"
        assert await _sessions(memory) == ["old-a", "old-b"]
    assert kept.read_text() == "the only copy of what yesterday's run deleted\n"


async def test_a_dry_run_and_a_run_that_expires_nothing_write_no_archive(
    tmp_path: Path,
) -> None:
    archive = tmp_path / "expired.jsonl.gz"
    async with open_backend("memory://") as memory:
        cutoff = await _two_old(memory)
        dry = await memory.expire_conversations(cutoff, archive=archive, dry_run=True)
        assert (dry.conversations, dry.archive, dry.messages) == (2, None, None)
        assert not archive.exists()
        none = await memory.expire_conversations(timedelta(days=3650), archive=archive)
        assert (none.conversations, none.archive) == (0, None)
        assert not archive.exists()
        done = await memory.expire_conversations(cutoff, archive=archive)
        assert (done.conversations, done.archive, done.messages) == (2, str(archive), 2)
        assert archive.stat().st_size > 0
        with pytest.raises(InvalidRequestError, match="never replaced"):
            await memory.expire_conversations(cutoff, archive=archive)


async def test_an_archive_that_cannot_be_written_deletes_nothing(tmp_path: Path) -> None:
    nowhere = tmp_path / "no-such-folder" / "expired.jsonl"
    async with open_backend("memory://") as memory:
        cutoff = await _two_old(memory)
        with pytest.raises(StoreError, match=r"could not be written.*nothing was deleted"):
            await memory.expire_conversations(cutoff, archive=nowhere)
        assert await _sessions(memory) == ["old-a", "old-b"]


async def test_a_file_that_appears_while_the_archive_is_written_is_not_replaced(
    tmp_path: Path,
) -> None:
    """Between the check and the end of the write another process took the name: the
    finished archive does not replace it (a hard link, not a rename)."""
    late = tmp_path / "expired.jsonl"
    async with open_backend("memory://") as memory:
        await _two_old(memory)
        doomed = await memory.list_conversations()
        late.write_text("another run's archive\n")
        with pytest.raises(StoreError, match="it exists"):
            await archive_conversations(memory, late, doomed, None)
    assert late.read_text() == "another run's archive\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["expired.jsonl"]  # no leftover


async def test_a_cut_off_before_the_calendar_is_a_typed_error() -> None:
    async with open_backend("memory://") as memory:
        with pytest.raises(InvalidRequestError) as refused:
            await memory.expire_conversations(timedelta(days=999_999))
        assert refused.value.argument == "older_than"


def test_the_command_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    assert main(["expire", url, "--older-than", "999999d"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "older_than" in err and "Traceback" not in err
    assert main(["expire", url, "--older-than", "999999999w"]) == 2
    assert "longer than a duration can be" in capsys.readouterr().err


def test_a_second_run_with_the_same_archive_name_stops_and_deletes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    archive = tmp_path / "expired-2026-12-06.jsonl"
    archive.write_text("this morning's run\n")
    anyio.run(_write_one, url)
    assert main(["expire", url, "--older-than", "1s", "--archive", str(archive)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "never replaced" in err and "archive" in err
    assert archive.read_text() == "this morning's run\n"
    assert anyio.run(_count, url) == 1


async def _write_one(url: str) -> None:
    async with open_backend(url) as memory:
        await memory.add_message("kept", "user", "still here")


async def _count(url: str) -> int:
    async with open_backend(url) as memory:
        return len(await memory.list_conversations())
