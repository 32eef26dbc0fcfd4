"""forget_user while the user's own writers keep writing: it returns, having erased
what the user had when it started, and the report says whether writes left records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_core import MemoryBackend, NotFoundError, open_backend
from memory_core.backends.embedded import erasure as embedded_erasure

pytestmark = pytest.mark.anyio

RETURNS_WITHIN = 60.0  # a liveness bound: it never returned while the writers wrote


async def _contents(memory: MemoryBackend, session: str) -> list[str]:
    try:
        return [m.content for m in (await memory.get_conversation(session)).messages]
    except NotFoundError:
        return []


@pytest.mark.parametrize("sessions", [1, 2, 3])
async def test_forget_user_returns_while_writers_write_back_to_back(
    tmp_path: Path, sessions: int
) -> None:
    async with open_backend(f"sqlite:///{tmp_path / 'store.db'}") as memory:
        for index in range(10):
            await memory.add_message(f"old{index}", "user", f"oldword{index}", user_identifier="uz")
        stop = anyio.Event()
        before: list[str] = []
        started = False

        async def writer(session: str) -> None:
            count = 0
            while not stop.is_set():
                text = f"{session}-{count}"
                count += 1
                await memory.add_message(session, "user", text, user_identifier="uz")
                if not started:
                    before.append(text)

        async with anyio.create_task_group() as group:
            for index in range(sessions):
                group.start_soon(writer, f"live{index}")
            with anyio.fail_after(RETURNS_WITHIN):
                while len(before) < 2 * sessions:
                    await anyio.sleep(0.001)
                started = True
                report = await memory.forget_user("uz")
            stop.set()
        assert report.counts["conversations"] >= 10
        for index in range(10):
            assert await _contents(memory, f"old{index}") == []
        live = [text for i in range(sessions) for text in await _contents(memory, f"live{i}")]
        assert not set(before) & set(live)
        again = await memory.forget_user("uz")
        assert again.writes_continued is False
        assert await memory.list_conversations(user_identifier="uz") == []


async def test_the_report_says_writes_continued_when_every_pass_met_a_new_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A writer that always writes between two steps of the erasure (deterministically:
    right after each conversation is erased) leaves a record after every pass."""
    from memory_core.erasure import PASSES

    async with open_backend("memory://") as memory:
        await memory.add_message("old", "user", "oldword", user_identifier="u")
        real = embedded_erasure._conversation
        written: list[str] = []

        async def erase_then_write(*args: Any) -> None:
            await real(*args)
            written.append(f"new{len(written)}")
            await memory.add_message("live", "user", written[-1], user_identifier="u")

        monkeypatch.setattr(embedded_erasure, "_conversation", erase_then_write)
        report = await memory.forget_user("u")
        assert report.writes_continued is True
        assert len(written) == 1 + (PASSES - 1)  # "old", then "live" in each later pass
        assert await _contents(memory, "old") == []
        assert await _contents(memory, "live") == written[-1:]
        monkeypatch.setattr(embedded_erasure, "_conversation", real)
        again = await memory.forget_user("u")
        assert again.writes_continued is False and again.counts["messages"] == 1


async def test_a_tenants_erasure_returns_while_its_entities_keep_coming(tmp_path: Path) -> None:
    """Multi-tenant: the tenant's entities go last, in batches; a writer adding entities
    back to back kept that loop going."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    async with open_backend(url, multi_tenant=True) as memory:
        for index in range(7):
            await memory.add_entity(f"Old{index}", "PERSON", user_identifier="t1")
        await memory.add_entity("Kept", "PERSON", user_identifier="t2")
        stop = anyio.Event()

        async def writer() -> None:
            count = 0
            while not stop.is_set():
                count += 1
                await memory.add_entity(f"New{count}", "PERSON", user_identifier="t1")

        async with anyio.create_task_group() as group:
            group.start_soon(writer)
            with anyio.fail_after(RETURNS_WITHIN):
                await anyio.sleep(0.01)
                report = await memory.forget_user("t1", batch_size=2)
            stop.set()
        assert report.counts["entities"] >= 7
        for index in range(7):
            assert await memory.find_entities(f"Old{index}", user_identifier="t1") == []
        assert [e.name for e in await memory.find_entities("Kept", user_identifier="t2")] == [
            "Kept"
        ]
        again = await memory.forget_user("t1")
        assert again.writes_continued is False
