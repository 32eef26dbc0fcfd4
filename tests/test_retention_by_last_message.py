"""``expire_conversations(by="last_message")`` and ``memory-core expire --by
last-message``: conversations loaded with the times of old messages (a batch with
timestamps, an import) expire by those times, on the embedded store and on PostgreSQL;
by ``updated_at`` (the default) they do not, since their ``updated_at`` is the load."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_core import (
    InvalidArgumentTypeError,
    InvalidRequestError,
    MemoryBackend,
    open_backend,
)
from memory_core.cli import main
from memory_core.sync import open_backend as open_sync
from memory_core_dev.postgres_schemas import new_schema, with_schema
from memory_core_dev.postgres_server import PostgresHandle

OLD = datetime(2020, 5, 1, 9, 30, tzinfo=UTC)


async def _load(memory: MemoryBackend) -> None:
    """``loaded``: messages of 2020 written today; ``recent``: a message of today on an
    old one; ``empty``: no message at all."""
    old = [
        {"role": "user", "content": "back then", "timestamp": OLD},
        {"role": "assistant", "content": "indeed", "timestamp": OLD + timedelta(minutes=1)},
    ]
    await memory.add_messages_batch("loaded", old, user_identifier="ada")
    await memory.add_messages_batch("recent", old[:1], user_identifier="ada")
    await memory.add_message("recent", "user", "today", user_identifier="ada")
    await memory.create_conversation(session_id="empty", user_identifier="ada")


async def _check(memory: MemoryBackend) -> None:
    await _load(memory)
    by_update = await memory.expire_conversations(timedelta(days=30), dry_run=True)
    assert by_update.conversations == 0 and by_update.by == "updated_at"
    report = await memory.expire_conversations(timedelta(days=30), by="last_message")
    assert report.session_ids == ["loaded"] and report.by == "last_message"
    left = sorted(c.session_id for c in await memory.list_conversations())
    assert left == ["empty", "recent"]


@pytest.mark.anyio
async def test_loaded_conversations_expire_by_their_last_message_on_embedded() -> None:
    async with open_backend("memory://") as memory:
        await _check(memory)


@pytest.mark.anyio
async def test_loaded_conversations_expire_by_their_last_message_on_postgres(
    postgres_server: PostgresHandle,
) -> None:
    async with open_backend(with_schema(postgres_server.url, new_schema("by"))) as memory:
        await _check(memory)


@pytest.mark.anyio
async def test_a_bad_by_names_the_argument_and_deletes_nothing() -> None:
    async with open_backend("memory://") as memory:
        await _load(memory)
        with pytest.raises(InvalidRequestError) as caught:
            await memory.expire_conversations(timedelta(days=30), by="last-message")
        assert caught.value.argument == "by"
        with pytest.raises(InvalidArgumentTypeError) as typed:
            await memory.expire_conversations(timedelta(days=30), by=None)  # type: ignore[arg-type]
        assert typed.value.argument == "by"
        assert len(await memory.list_conversations()) == 3


def test_the_command_takes_by_last_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'memory.db'}"
    with open_sync(url) as memory:
        memory.add_messages_batch(
            "loaded", [{"role": "user", "content": "old", "timestamp": OLD}], user_identifier="u"
        )
    assert main(["expire", url, "--older-than", "30d"]) == 0
    assert json.loads(capsys.readouterr().out)["conversations"] == 0
    assert main(["expire", url, "--older-than", "30d", "--by", "last-message"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["session_ids"] == ["loaded"] and report["by"] == "last_message"
    assert main(["expire", url, "--older-than", "30d", "--by", "newest"]) == 2
    assert "--by" in capsys.readouterr().err


@pytest.mark.anyio
async def test_the_newest_messages_are_read_a_few_at_a_time_one_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One read of one message per conversation, up to DELETING_AT_ONCE at once."""
    import anyio

    from memory_core import retention

    async with open_backend("memory://") as memory:
        for i in range(20):
            old = [{"role": "user", "content": "then", "timestamp": OLD}]
            await memory.add_messages_batch(f"old-{i:02}", old)
        real = memory.get_conversation
        flying, most, limits = 0, 0, []

        async def watched(*args: object, **kwargs: object) -> object:
            nonlocal flying, most
            flying += 1
            most = max(most, flying)
            await anyio.sleep(0.01)
            flying -= 1
            limits.append(kwargs["limit"])
            return await real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(memory, "get_conversation", watched)
        report = await memory.expire_conversations(
            timedelta(days=30), by="last_message", dry_run=True
        )
        assert report.conversations == 20 and limits == [1] * 20
        assert most == retention.DELETING_AT_ONCE
