"""Reasoning memory over the NAMS wire: the hosted service has no trace, so the NAMS
backend claims none of the reasoning flags and refuses every reasoning call with
``NotSupportedError`` and a workaround, sending nothing (over the real server, both
session modes)."""

from __future__ import annotations

from typing import Any

import pytest

from memory_core import NotSupportedError
from memory_core_dev.nams_server import NamsTestServer

pytestmark = [pytest.mark.nams, pytest.mark.anyio]

FLAGS = ("traces", "tool_stats", "similar_traces", "trace_links")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_no_reasoning_flag_is_claimed(nams_server: NamsTestServer) -> None:
    for mode in ("portable", "server"):
        caps = nams_server.backend(session_names=mode).capabilities
        assert [flag for flag in FLAGS if getattr(caps, flag)] == []


@pytest.mark.parametrize("mode", ["portable", "server"])
@pytest.mark.parametrize(
    ("call", "flag"),
    [
        (lambda m: m.start_trace("s", "plan a trip"), "traces"),
        (lambda m: m.add_step("t", thought="think"), "traces"),
        (lambda m: m.record_tool_call("st", "search", {"q": 1}), "traces"),
        (lambda m: m.complete_trace("t", outcome="done", success=True), "traces"),
        (lambda m: m.get_trace("t"), "traces"),
        (lambda m: m.list_traces("s"), "traces"),
        (lambda m: m.list_traces_page(), "traces"),
        (lambda m: m.tool_stats(), "tool_stats"),
        (lambda m: m.similar_traces("plan a trip"), "similar_traces"),
        (lambda m: m.search_steps("think"), "similar_traces"),
        (lambda m: m.link_trace("t", message_ids=["m"]), "trace_links"),
    ],
)
async def test_reasoning_calls_are_refused_with_a_workaround(
    nams_server: NamsTestServer, workspace: str, call: Any, flag: str, mode: str
) -> None:
    async with nams_server.backend(workspace, session_names=mode) as memory:
        mark = nams_server.mark()
        with pytest.raises(NotSupportedError) as info:
            await call(memory)
        assert info.value.backend == "nams"
        workaround = info.value.workaround
        assert "NAMS" in workaround and "Bolt" in workaround and "application" in workaround
        assert workaround == memory.store.workarounds[flag]
        assert nams_server.since(mark) == []
