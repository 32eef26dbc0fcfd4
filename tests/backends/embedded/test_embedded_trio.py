"""The embedded backend runs the same scenario under asyncio and trio."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_core import HashingEmbedder, open_backend
from memory_core.backends.embedded import EmbeddedStore


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_scenario_under_each_event_loop(anyio_backend: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / f'{anyio_backend}.db'}"
    async with open_backend(url, embedder=HashingEmbedder(64), multi_tenant=True) as backend:
        assert isinstance(backend.store, EmbeddedStore)
        user: dict[str, Any] = {"user_identifier": "u"}

        async def note(i: int) -> None:
            await backend.add_message("s", "user", f"note {i}", **user)

        async with anyio.create_task_group() as group:
            for i in range(20):
                group.start_soon(note, i)
        await backend.add_messages_batch(
            "s", [{"role": "assistant", "content": "batch reply"}], **user
        )
        replay = await backend.add_message("s", "user", "k", idempotency_key="k", **user)
        assert await backend.add_message("s", "user", "k", idempotency_key="k", **user) == replay
        conversation = await backend.get_conversation("s", limit=5, **user)
        assert len(conversation.messages) == 5
        assert conversation.messages[-1].id == replay.id
        hits = await backend.search_messages("batch reply", **user)
        assert hits[0].content == "batch reply"
        assert (await backend.list_sessions(**user))[0].message_count == 22
        assert await backend.delete_message(replay.id, **user) is True
        entity = await backend.add_entity("Trio", "tool", **user)
        assert await backend.find_entities("trio", **user) == [entity]
        assert "## Recent messages" in await backend.get_context("note", session_id="s", **user)
        assert (await backend.get_conversation_summary("s", **user)).message_count == 21
        assert await backend.clear_session("s", **user) is True
    async with open_backend(url, multi_tenant=True) as reopened:
        assert await reopened.list_sessions(user_identifier="u") == []
