"""expire_conversations and the ``memory-core expire`` command, on the embedded backend."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_core import EntityRef, InvalidRequestError, MemoryBackend, open_backend
from memory_core.cli import main
from memory_core.sync import open_backend as sync_open
from memory_core.transfer import import_memory

pytestmark = pytest.mark.anyio


async def _old_and_new(memory: MemoryBackend) -> datetime:
    """Sessions old-a, old-b (user u1, u2) written before the returned cut-off, new-a after."""
    await memory.add_message(
        "old-a",
        "user",
        "ancient words",
        user_identifier="u1",
        extraction_mode="explicit",
        explicit_mentions=[EntityRef(name="Ada", type="PERSON")],
    )
    await memory.add_message("old-b", "user", "older words", user_identifier="u2")
    cutoff = datetime.now(UTC)
    await memory.add_message("new-a", "user", "fresh words", user_identifier="u1")
    return cutoff


async def _sessions(memory: MemoryBackend) -> list[str]:
    return sorted(c.session_id for c in await memory.list_conversations())


async def test_expires_only_conversations_idle_before_the_cutoff() -> None:
    async with open_backend("memory://") as memory:
        cutoff = await _old_and_new(memory)
        report = await memory.expire_conversations(cutoff, batch_size=1)
        assert sorted(report.session_ids) == ["old-a", "old-b"]
        assert report.conversations == 2 and not report.dry_run
        assert await _sessions(memory) == ["new-a"]
        again = await memory.expire_conversations(cutoff)
        assert again.conversations == 0


async def test_dry_run_deletes_nothing_and_user_limits_the_scope() -> None:
    async with open_backend("memory://") as memory:
        cutoff = await _old_and_new(memory)
        dry = await memory.expire_conversations(cutoff, dry_run=True)
        assert dry.conversations == 2 and dry.dry_run
        assert await _sessions(memory) == ["new-a", "old-a", "old-b"]
        mine = await memory.expire_conversations(cutoff, user_identifier="u2")
        assert mine.session_ids == ["old-b"]
        assert await _sessions(memory) == ["new-a", "old-a"]


async def test_archive_first_holds_what_was_deleted_and_imports_back(tmp_path: Path) -> None:
    archive = tmp_path / "expired.jsonl"
    async with open_backend("memory://") as memory:
        cutoff = await _old_and_new(memory)
        report = await memory.expire_conversations(cutoff, archive=archive)
        assert report.messages == 2 and report.archive == str(archive)
    kinds = [json.loads(line)["record"] for line in archive.read_text().splitlines()]
    assert kinds[0] == "header" and kinds[-1] == "end"
    assert kinds.count("conversation") == 2 and kinds.count("mention") == 1
    async with open_backend("memory://") as restored:
        await import_memory(restored, archive)
        read = await restored.get_conversation("old-a")
        assert [m.content for m in read.messages] == ["ancient words"]
        assert [r.name for r in read.messages[0].mentions] == ["Ada"]


async def test_bad_input_names_the_argument_and_deletes_nothing(tmp_path: Path) -> None:
    async with open_backend("memory://") as memory:
        cutoff = await _old_and_new(memory)
        cases = [
            ({"older_than": timedelta(0)}, "older_than"),
            ({"older_than": 30}, "older_than"),
            ({"older_than": datetime(2020, 1, 1)}, "older_than"),
            ({"older_than": cutoff, "batch_size": 0}, "batch_size"),
            ({"older_than": cutoff, "archive": 5}, "archive"),
            ({"older_than": cutoff, "dry_run": "yes"}, "dry_run"),
            ({"older_than": cutoff, "user_identifier": ""}, "user_identifier"),
        ]
        for kwargs, argument in cases:
            with pytest.raises(InvalidRequestError) as caught:
                await memory.expire_conversations(**kwargs)  # type: ignore[arg-type]
            assert caught.value.argument == argument
        assert await _sessions(memory) == ["new-a", "old-a", "old-b"]
    async with open_backend("memory://", multi_tenant=True) as tenants:
        with pytest.raises(InvalidRequestError) as caught:
            await tenants.expire_conversations(timedelta(days=1))
        assert caught.value.argument == "user_identifier"


async def test_one_audit_record_without_content(caplog: pytest.LogCaptureFixture) -> None:
    async with open_backend("memory://") as memory:
        cutoff = await _old_and_new(memory)
        with caplog.at_level(logging.INFO, logger="memory_core.audit"):
            await memory.expire_conversations(cutoff)
    [record] = [r for r in caplog.records if r.name == "memory_core.audit"]
    body = json.loads(record.getMessage())
    assert body["event"] == "expire_conversations" and body["scope"] == "all"
    assert body["counts"]["conversations"] == 2
    assert "words" not in record.getMessage() and "old-a" not in record.getMessage()


def _store_with_idle_session(path: Path) -> None:
    with sync_open(f"sqlite:///{path}") as memory:
        memory.add_message("idle", "user", "hello")
        time.sleep(1.2)
        memory.add_message("busy", "user", "hello again")


def test_cli_dry_run_then_archive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "store.db"
    _store_with_idle_session(db)
    url = f"sqlite:///{db}"
    assert main(["expire", url, "--older-than", "1s", "--dry-run"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["session_ids"] == ["idle"] and dry["dry_run"] is True
    archive = tmp_path / "out.jsonl"
    assert main(["expire", url, "--older-than", "1s", "--archive", str(archive)]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["conversations"] == 1 and archive.exists()
    assert main(["expire", url, "--older-than", "1s"]) == 0
    assert json.loads(capsys.readouterr().out)["conversations"] == 0
    assert main(["expire", url, "--older-than", "thirty days"]) == 2


def test_cli_as_a_subprocess(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    _store_with_idle_session(db)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "memory_core.cli",
            "expire",
            f"sqlite:///{db}",
            "--older-than",
            "1s",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "idle" in json.loads(result.stdout)["session_ids"]


async def test_a_conversation_created_before_the_cutoff_and_written_after_it_is_kept() -> None:
    async with open_backend("memory://") as memory:
        await memory.add_message("busy", "user", "long ago")
        await memory.add_message("idle", "user", "long ago too")
        cutoff = datetime.now(UTC)
        await memory.add_message("busy", "user", "just now")  # created before, active after
        report = await memory.expire_conversations(cutoff)
        assert report.session_ids == ["idle"]
        assert await _sessions(memory) == ["busy"]


async def test_expiry_deletes_a_few_conversations_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Up to DELETING_AT_ONCE deletes run at once (a store's per-delete tidying is shared
    between them), never more; every expired conversation is deleted once."""
    import anyio

    from memory_core import retention

    async with open_backend("memory://") as memory:
        for i in range(20):
            await memory.add_message(f"old-{i:02}", "user", "words")
        cutoff = datetime.now(UTC) + timedelta(seconds=1)
        real = memory.clear_session
        flying, most, cleared = 0, 0, []

        async def watched(**target: object) -> bool:
            nonlocal flying, most
            flying += 1
            most = max(most, flying)
            await anyio.sleep(0.01)
            flying -= 1
            cleared.append(target["conversation_id"])
            return await real(**target)  # type: ignore[arg-type]

        monkeypatch.setattr(memory, "clear_session", watched)
        report = await memory.expire_conversations(cutoff)
        assert report.conversations == 20 and len(set(cleared)) == 20 == len(cleared)
        assert most == retention.DELETING_AT_ONCE
        assert await _sessions(memory) == []


async def test_a_failing_delete_reaches_the_caller_as_the_store_raised_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memory_core import TransportError

    async with open_backend("memory://") as memory:
        await memory.add_message("old", "user", "words")
        cutoff = datetime.now(UTC) + timedelta(seconds=1)

        async def broken(**_target: object) -> bool:
            raise TransportError("the store went away")

        monkeypatch.setattr(memory, "clear_session", broken)
        with pytest.raises(TransportError, match="went away"):
            await memory.expire_conversations(cutoff)


async def test_an_expired_conversation_takes_its_sessions_traces_into_the_archive(
    tmp_path: Path,
) -> None:
    """Expiry deletes with clear_session, so the expired session's traces go; the archive
    holds them (each step and tool call after its trace), an import brings them back
    whole, and a fresh session's trace stays."""
    archive = tmp_path / "expired.jsonl"
    async with open_backend("memory://") as memory:
        cutoff = await _old_and_new(memory)
        old = await memory.start_trace("old-a", "plan", user_identifier="u1")
        step = await memory.add_step(old.id, thought="tracewordzq", user_identifier="u1")
        await memory.record_tool_call(step.id, "search", status="timeout", user_identifier="u1")
        await memory.complete_trace(old.id, outcome="done", success=True, user_identifier="u1")
        kept = await memory.get_trace(old.id, user_identifier="u1")
        new = await memory.start_trace("new-a", "plan", user_identifier="u1")
        report = await memory.expire_conversations(cutoff, archive=archive)
        assert sorted(report.session_ids) == ["old-a", "old-b"]
        assert await memory.get_trace(old.id, user_identifier="u1") is None
        assert [t.id for t in await memory.list_traces(user_identifier="u1")] == [new.id]
    lines = [json.loads(line) for line in archive.read_text().splitlines()]
    kinds = [line["record"] for line in lines]
    assert kinds[-4:] == ["trace", "step", "tool_call", "end"], kinds
    assert (lines[-1]["counts"]["trace"], lines[-1]["counts"]["tool_call"]) == (1, 1)
    async with open_backend("memory://") as restored:
        await import_memory(restored, archive)
        assert await restored.get_trace(old.id, user_identifier="u1") == kept
