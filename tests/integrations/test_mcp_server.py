"""``memory-core mcp`` through a real MCP client session over stdio (a subprocess), on the
embedded backend and on the NAMS-compatible server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import pytest

pytest.importorskip("mcp", reason="extra 'mcp' not installed")

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from memory_core import open_backend
from memory_core.integrations.mcp_server import tool_names
from memory_core_dev.nams_server import API_KEY

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def mcp_session(
    url: str,
    env: dict[str, str] | None = None,
    extra_args: list[str] | None = None,
    errlog: TextIO | None = None,
) -> AsyncIterator[ClientSession]:
    # sys.stderr looked up now, not at import: a test run that reuses imported modules
    # (mutmut's, one per mutant) has closed the one pytest captured into before
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_core.cli", "mcp", url, *(extra_args or [])],
        env={**os.environ, **(env or {})},
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)  # type: ignore[union-attr,no-any-return]


async def test_embedded_tools_round_trip(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mcp.db'}"
    async with mcp_session(url) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == set(tool_names(open_backend(url)))
        assert "start_session" not in tools and "list_sessions" in tools
        assert "Any number of messages" in (tools["recent_messages"].description or "")
        await call(session, "add_message", session_id="s1", role="user", content="tram 28 ☀️")
        await call(
            session,
            "add_message",
            session_id="s1",
            role="assistant",
            content="ok",
            metadata={"k": [1, True]},
        )
        recent = await call(session, "recent_messages", session_id="s1", limit=5)
        assert [m["content"] for m in recent["messages"]] == ["tram 28 ☀️", "ok"]
        assert recent["messages"][1]["metadata"] == {"k": [1, True]}
        hits = await call(session, "search_messages", query="tram")
        assert [h["content"] for h in hits["messages"]] == ["tram 28 ☀️"]
        context = await call(session, "get_context", session_id="s1", query="tram")
        assert "tram 28" in context["context"]
        sessions = await call(session, "list_sessions")
        assert [s["session_id"] for s in sessions["sessions"]] == ["s1"]
        bad = await session.call_tool(
            "add_message", {"session_id": "s1", "role": "robot", "content": "x"}
        )
        assert bad.is_error and "role" in bad.content[0].text  # type: ignore[union-attr]
        assert (await call(session, "clear_session", session_id="s1"))["deleted"] is True
        assert (await call(session, "recent_messages", session_id="s1"))["messages"] == []
    async with open_backend(url) as memory:  # the subprocess really wrote to the store
        assert (await memory.get_conversation("s1")).messages == []


async def test_nams_tools_follow_capabilities(nams_server: Any) -> None:
    workspace = nams_server.workspace("mcp")
    env = {"MEMORY_API_KEY": API_KEY, "MEMORY_WORKSPACE_ID": workspace}
    async with mcp_session(nams_server.url, env) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        # portable session names (the NAMS default): the caller names sessions, so no
        # start_session tool is needed; sessions cannot be listed
        assert "list_sessions" not in tools and "start_session" not in tools
        # entity_search and entity_graph, but no preferences, facts or relationship writes
        assert "search_entities" in tools and "related_entities" in tools
        assert not {"add_preference", "search_preferences", "add_fact"} & set(tools)
        assert "At most 200 messages" in (tools["recent_messages"].description or "")
        assert "session_id is required" in (tools["search_messages"].description or "")
        session_id = "chat"
        await call(session, "add_message", session_id=session_id, role="user", content="tram 28")
        refused = await session.call_tool(
            "add_message",
            {"session_id": session_id, "role": "user", "content": "x", "metadata": {"k": 1}},
        )
        assert refused.is_error and "metadata" in refused.content[0].text  # type: ignore[union-attr]
        recent = await call(session, "recent_messages", session_id=session_id)
        assert [m["content"] for m in recent["messages"]] == ["tram 28"]
        hits = await call(session, "search_messages", query="tram", session_id=session_id)
        assert [h["content"] for h in hits["messages"]] == ["tram 28"]
        assert (await call(session, "clear_session", session_id=session_id))["deleted"] is True


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
async def test_nams_http_requests_are_not_logged_unless_verbose(
    nams_server: Any, tmp_path: Path, verbose: bool
) -> None:
    """Over NAMS every tool call is HTTP requests, which httpx logs at INFO; the MCP
    server's stderr shows them only with --verbose."""
    env = {"MEMORY_API_KEY": API_KEY, "MEMORY_WORKSPACE_ID": nams_server.workspace("mcp")}
    args = ["--verbose"] if verbose else []
    with (tmp_path / "stderr.log").open("w+") as errlog:
        async with mcp_session(nams_server.url, env, args, errlog) as session:
            await call(session, "add_message", session_id="quiet", role="user", content="hi")
            await call(session, "recent_messages", session_id="quiet")
        errlog.seek(0)
        logged = errlog.read()
    assert ("HTTP Request:" in logged) is verbose, logged
    assert API_KEY not in logged


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_streamable_http_on_loopback(tmp_path: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client

    port = _free_port()
    url = f"sqlite:///{tmp_path / 'http.db'}"
    server = subprocess.Popen(
        [sys.executable, "-m", "memory_core.cli", "mcp", url, "--http", "--port", str(port)],
        cwd=str(Path(__file__).resolve().parents[2]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        with anyio.fail_after(60):
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    assert server.poll() is None, server.stderr.read()  # type: ignore[union-attr]
                    await anyio.sleep(0.2)
        async with (
            streamable_http_client(f"http://127.0.0.1:{port}/mcp") as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            await call(session, "add_message", session_id="h", role="user", content="over http")
            recent = await call(session, "recent_messages", session_id="h")
            assert [m["content"] for m in recent["messages"]] == ["over http"]
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_http_refuses_a_non_loopback_host(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a token (see tests/reliability/test_mcp_hostile.py for the rest)."""
    from memory_core.cli import main
    from memory_core.integrations import mcp_server

    def never(host: str, port: int) -> None:
        raise AssertionError(f"bound {host}:{port}")  # (and so never binds 0.0.0.0)

    monkeypatch.setattr(mcp_server, "_listen", never)
    monkeypatch.delenv("MEMORY_CORE_MCP_TOKEN", raising=False)
    code = await anyio.to_thread.run_sync(main, ["mcp", "memory://", "--http", "--host", "0.0.0.0"])
    assert code == 1


async def test_user_option_scopes_every_call(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'tenants.db'}"
    async with open_backend(url, multi_tenant=True) as memory:
        await memory.add_message("shared", "user", "bo's", user_identifier="bo")
    async with mcp_session(url, extra_args=["--user", "ana"]) as session:
        await call(session, "add_message", session_id="shared", role="user", content="ana's")
        recent = await call(session, "recent_messages", session_id="shared")
        assert [m["content"] for m in recent["messages"]] == ["ana's"]  # not bo's
    async with open_backend(url, multi_tenant=True) as memory:
        for user in ("ana", "bo"):
            conversation = await memory.get_conversation("shared", user_identifier=user)
            assert [m.content for m in conversation.messages] == [f"{user}'s"]


async def test_the_documented_client_configuration_starts_a_working_server(
    tmp_path: Path,
) -> None:
    """docs/mcp.md's ``mcpServers`` entry, run as a client runs it: the command it names
    (the console script beside this Python), its arguments with the store moved to a
    temporary file, started in another folder."""
    import re
    import shutil

    docs = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text()
    found = re.search(r"```json\n(.*?)```", docs, re.S)
    assert found is not None
    entry = json.loads(found.group(1))["mcpServers"]["memory"]
    command = shutil.which(entry["command"], path=str(Path(sys.executable).parent))
    assert command is not None, f"{entry['command']} is not installed beside {sys.executable}"
    store = tmp_path / "client.db"
    args = [re.sub(r"^sqlite:////.*", f"sqlite:///{store}", a) for a in entry["args"]]
    assert args == ["mcp", f"sqlite:///{store}"]
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ), cwd="/")
    async with (
        stdio_client(params, errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await call(session, "add_message", session_id="s", role="user", content="hello")
    async with open_backend(f"sqlite:///{store}") as memory:
        assert [m.content for m in (await memory.get_conversation("s")).messages] == ["hello"]
