"""The bridge's less-used paths: ids the store issues, options passed on, whole-session
reads, the truncation warning, an async backend reached from hooks and worker threads,
and the session id check every integration shares."""

from __future__ import annotations

import uuid
import warnings
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest

from memory_core import CapabilityWarning, InvalidRequestError, NotSupportedError, open_backend
from memory_core.integrations import MemoryBridge, astart_session, start_session
from memory_core.integrations._bridge import read_all_limit, warn_if_truncated
from memory_core.sync import SyncCallInEventLoopError
from memory_core.sync import open_backend as open_blocking
from memory_core_dev.sync_stores import store_location

pytestmark = pytest.mark.anyio


async def test_where_the_store_issues_ids_start_session_returns_the_issued_one(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    store = store_location("nams", request, tmp_path)
    blocking = await anyio.to_thread.run_sync(lambda: store.open(session_names="server"))
    try:
        issued = await anyio.to_thread.run_sync(start_session, blocking, "named")
        assert issued != "named" and uuid.UUID(issued)
        awaited = await astart_session(blocking, "named")
        assert awaited not in ("named", issued) and uuid.UUID(awaited)
        for session in (issued, awaited):
            await MemoryBridge(blocking).acall("add_message", session, "user", "hi")
            assert [
                m.content for m in await MemoryBridge(blocking).amessages(session_id=session)
            ] == ["hi"]
    finally:
        await anyio.to_thread.run_sync(store.close)


async def test_start_session_passes_its_options_on() -> None:
    async with open_backend("memory://", multi_tenant=True) as memory:
        assert await astart_session(memory, "a", user_identifier="alice") == "a"
        listed = await memory.list_sessions(user_identifier="alice")
        assert [s.session_id for s in listed] == ["a"]

    def blocking_side() -> list[str]:
        with open_blocking("memory://", multi_tenant=True) as blocking:
            start_session(blocking, "b", user_identifier="bob")
            return [s.session_id for s in blocking.list_sessions(user_identifier="bob")]

    assert await anyio.to_thread.run_sync(blocking_side) == ["b"]


async def test_a_whole_session_read_is_not_cut_short() -> None:
    async with open_backend("memory://") as memory:
        bridge = MemoryBridge(memory)
        assert read_all_limit(bridge) == 2**31  # above any real conversation's length
        many = [{"role": "user", "content": f"m{i}"} for i in range(70)]
        await memory.add_messages_batch("s", many)
        read = await bridge.amessages(session_id="s", limit=read_all_limit(bridge))
        assert len(read) == 70


class _Capped:
    """A bridge's view of a backend whose reads are capped (as NAMS's at 200)."""

    def __init__(self, *, full_history: bool, strict: bool = False) -> None:
        from memory_core.capabilities import Capabilities

        self.capabilities = Capabilities(max_messages_per_read=3, full_history=full_history)
        self.name = "capped"
        self.strict = strict
        self._warned: set[str] = set()


def test_a_read_below_the_cap_or_with_full_history_is_not_warned_about() -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warn_if_truncated(_Capped(full_history=False), "load", 2)  # type: ignore[arg-type]
        warn_if_truncated(_Capped(full_history=True), "load", 3)  # type: ignore[arg-type]
    assert seen == []
    assert read_all_limit(_Capped(full_history=False)) is None  # type: ignore[arg-type]


def test_a_read_at_the_cap_warns_once_and_strict_raises() -> None:
    capped = _Capped(full_history=False)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warn_if_truncated(capped, "load", 3)  # type: ignore[arg-type]
        warn_if_truncated(capped, "get_items", 4)  # type: ignore[arg-type]
    assert [(w.category, str(w.message)) for w in seen] == [
        (
            CapabilityWarning,
            "capped.load: only the newest 3 messages can be read from this backend; "
            "older ones are unreachable",
        )
    ]
    with pytest.raises(NotSupportedError) as refused:
        warn_if_truncated(_Capped(full_history=False, strict=True), "load", 3)  # type: ignore[arg-type]
    assert (refused.value.backend, refused.value.method) == ("capped", "load")
    assert refused.value.message == (
        "only the newest 3 messages can be read; older ones are unreachable"
    )


async def test_an_async_backend_from_a_frameworks_hook_thread() -> None:
    async with open_backend("memory://") as memory:
        bridge = MemoryBridge(memory)

        def hook() -> list[str]:
            bridge.call_in_hook("add_message", "s", "user", "from a hook")
            return [m.content for m in bridge.messages(hook=True, session_id="s")]

        assert await anyio.to_thread.run_sync(hook) == ["from a hook"]
        stored = await bridge.amessages(session_id="s")
        await bridge.acall("delete_message", stored[0].id)  # positional arguments reach it
        assert await bridge.amessages(session_id="s") == []


async def test_a_blocking_read_from_the_loop_thread_is_refused_outside_hooks() -> None:
    memory = await anyio.to_thread.run_sync(open_blocking, "memory://")
    try:
        with pytest.raises(SyncCallInEventLoopError):
            MemoryBridge(memory).messages(session_id="s")
    finally:
        await anyio.to_thread.run_sync(memory.close)


async def test_warnings_of_an_async_backend_reach_the_blocking_caller() -> None:
    async with open_backend("memory://") as memory:
        bridge = MemoryBridge(memory)

        def lossy() -> list[warnings.WarningMessage]:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                bridge.call("degrade_for_test")
            return seen

        memory.degrade_for_test = _warns  # type: ignore[attr-defined]
        seen = await anyio.to_thread.run_sync(lossy)
        assert [str(w.message) for w in seen] == ["lost on the loop"]


async def _warns() -> None:
    from memory_core.warning_channel import warn_capability

    warn_capability("lost on the loop")


@pytest.mark.parametrize("session_id", ["", 7, None, b"s"])
def test_every_integration_refuses_a_bad_session_id(session_id: Any) -> None:
    pytest.importorskip("langchain_core")
    from memory_core.integrations.langchain import MemoryChatMessageHistory

    with open_blocking("memory://") as memory, pytest.raises(InvalidRequestError) as caught:
        MemoryChatMessageHistory(memory, session_id)
    assert caught.value.argument == "session_id"
