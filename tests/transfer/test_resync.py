"""A checkpoint never overrides what the target holds: a session cleared on the target
since the last copy is copied again by the same command."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_core import MemoryBackend, open_backend
from memory_core.transfer import copy_memory
from memory_core_dev.nams_server import NamsTestServer
from tests.transfer.test_tenancy_and_resume import PublicOnly

pytestmark = pytest.mark.anyio

SESSIONS = {f"cp-{n}": [f"{n}-{i}" for i in range(4)] for n in range(3)}


def _target(kind: str, request: pytest.FixtureRequest) -> MemoryBackend:
    if kind == "public":
        return PublicOnly("memory://")
    server: NamsTestServer = request.getfixturevalue("nams_server")
    return server.backend(NamsTestServer.workspace(), session_names=kind)


async def _read(backend: MemoryBackend, handle: str) -> list[str]:
    return [m.content for m in (await backend.get_conversation(handle, limit=100)).messages]


@pytest.mark.parametrize("kind", ["public", "portable", "server"])
async def test_a_cleared_session_is_copied_again_despite_the_checkpoint(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    checkpoint = tmp_path / "copy.checkpoint"
    async with open_backend("memory://") as source, _target(kind, request) as target:
        for session, contents in SESSIONS.items():
            await source.add_messages_batch(
                session, [{"role": "user", "content": text} for text in contents]
            )
        first = await copy_memory(source, target, checkpoint=checkpoint)
        assert first.copied["message"] == 12
        # The handle of cp-1 in the target: its name, or the id the service issued.
        handle = "cp-1"
        if kind == "server":
            found = [c for c in await target.list_conversations() if c.metadata]
            handle = next(
                c.session_id
                for c in found
                if c.metadata["memory_core_transfer"]["session_id"] == "cp-1"
            )
        await target.clear_session(handle)
        again = await copy_memory(source, target, checkpoint=checkpoint)
        assert again.copied["message"] == 4, again.summary()
        assert again.skipped[("conversation", "already created (checkpoint)")] == 2
        if kind != "server":
            for session, contents in SESSIONS.items():
                assert await _read(target, session) == contents
        third = await copy_memory(source, target, checkpoint=checkpoint)
        assert third.copied["message"] == 0
