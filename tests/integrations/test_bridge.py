"""How integrations reach a backend: blocking facade or async backend, from any thread."""

from __future__ import annotations

import anyio.to_thread
import pytest

from memory_core import (
    ConfigurationError,
    InvalidRequestError,
    NotSupportedError,
    open_backend,
)
from memory_core.integrations import MemoryBridge, astart_session, start_session
from memory_core.sync import SyncCallInEventLoopError
from memory_core.sync import open_backend as open_blocking

pytestmark = pytest.mark.anyio


async def test_async_backend_blocking_call_works_only_from_a_worker_thread() -> None:
    async with open_backend("memory://") as memory:
        bridge = MemoryBridge(memory)
        with pytest.raises(ConfigurationError, match=r"memory_core\.sync\.open_backend"):
            bridge.call("get_conversation", session_id="s")
        stored = await anyio.to_thread.run_sync(
            lambda: bridge.call("add_message", "s", "user", "from a worker")
        )
        assert stored.content == "from a worker"
        assert [m.content for m in await bridge.amessages(session_id="s")] == ["from a worker"]


async def test_blocking_facade_from_async_methods_and_hooks() -> None:
    memory = await anyio.to_thread.run_sync(open_blocking, "memory://")
    try:
        bridge = MemoryBridge(memory)
        await bridge.acall("add_message", "s", "user", "awaited")
        with pytest.raises(SyncCallInEventLoopError):
            bridge.call("get_conversation", session_id="s")
        # a framework's sync hook on its own loop thread may block it on purpose
        assert [m.content for m in bridge.messages(hook=True, session_id="s")] == ["awaited"]
    finally:
        await anyio.to_thread.run_sync(memory.close)


async def test_start_session_follows_who_names_sessions() -> None:
    async with open_backend("memory://") as memory:
        assert await astart_session(memory, "named") == "named"

    def blocking_side() -> str:
        with open_blocking("memory://") as blocking:
            return start_session(blocking, "named")

    assert await anyio.to_thread.run_sync(blocking_side) == "named"


async def test_bad_memory_and_missing_capability() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        MemoryBridge("memory://")  # type: ignore[arg-type]
    assert caught.value.argument == "memory"
    async with open_backend("memory://") as memory:
        bridge = MemoryBridge(memory)
        with pytest.raises(NotSupportedError, match="observations"):
            bridge.require("observations", "get_observations", "none")
