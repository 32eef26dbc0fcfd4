"""``memory-core mcp --user alice``: every tool acts for alice only.

The server is built by the command itself (``mcp_server.main`` with ``--user alice``, its
stdio loop replaced by a hook that hands the server over) and driven in-process by the
``mcp`` package's client. Bob's data sits in the same store under the same session id;
after each tool's calls it must be exactly as it was, and alice's must show her writes.
A tool call that lost the user would be refused by the multi-tenant store, so each test
also asserts that alice's calls succeed and return her data.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp", reason="extra 'mcp' not installed")

from mcp.client import Client
from mcp.server.mcpserver import MCPServer

from memory_core import MemoryBackend, open_backend
from memory_core.backends.embedded import EmbeddedStore
from memory_core.integrations import mcp_server

pytestmark = pytest.mark.anyio

BOB_SEEDED = {"shared": ["bob tram secret"], "bob-only": ["bob tram diary"]}
ALICE_SEEDED = {"shared": ["alice tram note"]}


class IssuedIdsStore(EmbeddedStore):
    """The embedded store without sessions created on first write, as a backend whose
    store issues sessions: the server offers ``start_session`` over it."""

    capabilities = replace(EmbeddedStore.capabilities, auto_create_conversation=False)


@dataclass
class Alice:
    """A client of the server started with ``--user alice``, and the store's URL."""

    client: Client
    url: str

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """The tool's JSON result; a tool error fails the test."""
        result = await self.client.call_tool(tool, arguments)
        assert not result.is_error, result.content
        return json.loads(result.content[0].text)  # type: ignore[union-attr,no-any-return]


async def _seed(url: str) -> None:
    async with open_backend(url, multi_tenant=True) as memory:
        for user, sessions in (("bob", BOB_SEEDED), ("alice", ALICE_SEEDED)):
            for session_id, contents in sessions.items():
                for content in contents:
                    await memory.add_message(session_id, "user", content, user_identifier=user)


async def _stored(url: str, user: str) -> dict[str, list[str]]:
    """Every session of ``user`` in the store, with its messages' contents."""
    async with open_backend(url, multi_tenant=True) as memory:
        rows = await memory.list_sessions(user_identifier=user)
        return {
            row.session_id: [
                m.content
                for m in (
                    await memory.get_conversation(row.session_id, user_identifier=user)
                ).messages
            ]
            for row in rows
        }


async def _server_for_alice(
    url: str, monkeypatch: pytest.MonkeyPatch, *, issued_ids: bool
) -> MCPServer:
    """The server ``memory-core mcp URL --user alice`` builds (over an issued-ids store
    when ``issued_ids``, with the options the command opens it with)."""
    built: list[MCPServer] = []

    async def keep(server: MCPServer) -> None:
        built.append(server)

    if issued_ids:
        monkeypatch.setattr(
            mcp_server,
            "open_backend",
            lambda target, **options: MemoryBackend.over(IssuedIdsStore, target, **options),
        )
    monkeypatch.setattr(mcp_server, "serve_stdio", keep)
    monkeypatch.setattr(mcp_server, "_quiet_http_client_logs", lambda verbose: None)
    # the command runs its own event loop: in a worker thread
    assert await anyio.to_thread.run_sync(mcp_server.main, [url, "--user", "alice"]) == 0
    return built[0]


async def _check_add_message(alice: Alice) -> None:
    stored = await alice.call("add_message", session_id="shared", role="user", content="added")
    assert stored["content"] == "added"
    await alice.call("add_message", session_id="bob-only", role="user", content="hers now")
    assert await _stored(alice.url, "alice") == {
        "shared": ["alice tram note", "added"],
        "bob-only": ["hers now"],
    }


async def _check_recent_messages(alice: Alice) -> None:
    shared = await alice.call("recent_messages", session_id="shared", limit=10)
    assert [m["content"] for m in shared["messages"]] == ["alice tram note"]
    bobs = await alice.call("recent_messages", session_id="bob-only", limit=10)
    assert bobs["messages"] == []


async def _check_search_messages(alice: Alice) -> None:
    everywhere = await alice.call("search_messages", query="tram")
    assert [m["content"] for m in everywhere["messages"]] == ["alice tram note"]
    shared = await alice.call("search_messages", query="tram", session_id="shared")
    assert [m["content"] for m in shared["messages"]] == ["alice tram note"]
    bobs = await alice.call("search_messages", query="tram", session_id="bob-only")
    assert bobs["messages"] == []


async def _check_get_context(alice: Alice) -> None:
    shared = await alice.call("get_context", session_id="shared", query="tram")
    assert "alice tram note" in shared["context"]
    assert "bob" not in shared["context"]
    bobs = await alice.call("get_context", session_id="bob-only", query="tram")
    assert "bob" not in bobs["context"]


async def _check_list_sessions(alice: Alice) -> None:
    listed = await alice.call("list_sessions")
    assert [(s["session_id"], s["message_count"]) for s in listed["sessions"]] == [("shared", 1)]
    assert {s["user_identifier"] for s in listed["sessions"]} <= {"alice", None}
    assert (await alice.call("list_sessions", prefix="bob"))["sessions"] == []


async def _check_clear_session(alice: Alice) -> None:
    assert (await alice.call("clear_session", session_id="bob-only"))["deleted"] is False
    assert (await alice.call("clear_session", session_id="shared"))["deleted"] is True
    assert (await _stored(alice.url, "alice")).get("shared", []) == []


async def _check_start_session(alice: Alice) -> None:
    named = await alice.call("start_session", name="bob-only")
    unnamed = await alice.call("start_session")
    assert await _stored(alice.url, "alice") == {
        "shared": ["alice tram note"],
        named["session_id"]: [],
        unnamed["session_id"]: [],
    }


async def _bobs_long_term(url: str) -> dict[str, str]:
    """Bob's preference, fact and two linked entities (their ids by kind)."""
    async with open_backend(url, multi_tenant=True) as memory:
        pref = await memory.add_preference("food", "bob likes tram food", user_identifier="bob")
        fact = await memory.add_fact("Tram", "RUNS_IN", "bob town", user_identifier="bob")
        tram = await memory.add_entity("Tram", "OBJECT", description="bob's", user_identifier="bob")
        town = await memory.add_entity("Town", "LOCATION", user_identifier="bob")
        await memory.add_relationship(tram.id, town.id, "RUNS_IN", user_identifier="bob")
        return {"preference": pref.id, "fact": fact.id, "entity": tram.id}


async def _bob_unchanged(url: str, ids: dict[str, str]) -> None:
    async with open_backend(url, multi_tenant=True) as memory:
        assert [p.id for p in await memory.list_preferences(user_identifier="bob")] == [
            ids["preference"]
        ]
        assert [f.id for f in await memory.facts_about("tram", user_identifier="bob")] == [
            ids["fact"]
        ]
        assert len(await memory.related_entities(ids["entity"], user_identifier="bob")) == 1


async def _check_add_preference(alice: Alice) -> None:
    ids = await _bobs_long_term(alice.url)
    made = await alice.call("add_preference", category="food", preference="likes tram food")
    assert made["user_identifier"] == "alice"
    await _bob_unchanged(alice.url, ids)


async def _check_search_preferences(alice: Alice) -> None:
    ids = await _bobs_long_term(alice.url)
    assert (await alice.call("search_preferences", query="tram"))["preferences"] == []
    await alice.call("add_preference", category="food", preference="alice tram pick")
    [hit] = (await alice.call("search_preferences", query="tram"))["preferences"]
    assert hit["preference"] == "alice tram pick"
    await _bob_unchanged(alice.url, ids)


async def _check_add_fact(alice: Alice) -> None:
    ids = await _bobs_long_term(alice.url)
    made = await alice.call("add_fact", subject="Tram", predicate="IS", object="alice's")
    assert made["user_identifier"] == "alice"
    await _bob_unchanged(alice.url, ids)


async def _check_facts_about(alice: Alice) -> None:
    ids = await _bobs_long_term(alice.url)
    assert (await alice.call("facts_about", subject="Tram"))["facts"] == []
    await _bob_unchanged(alice.url, ids)


async def _check_search_entities(alice: Alice) -> None:
    ids = await _bobs_long_term(alice.url)
    assert (await alice.call("search_entities", query="tram"))["entities"] == []
    await _bob_unchanged(alice.url, ids)


async def _check_related_entities(alice: Alice) -> None:
    ids = await _bobs_long_term(alice.url)
    refused = await alice.client.call_tool("related_entities", {"entity_id": ids["entity"]})
    assert refused.is_error and "NotFoundError" in refused.content[0].text  # type: ignore[union-attr]
    await _bob_unchanged(alice.url, ids)


async def _check_get_entity_by_name(alice: Alice) -> None:
    ids = await _bobs_long_term(alice.url)
    assert (await alice.call("get_entity_by_name", name="Tram"))["entity"] is None
    await _bob_unchanged(alice.url, ids)


async def _check_merge_entities(alice: Alice) -> None:
    ids = await _bobs_long_term(alice.url)
    async with open_backend(alice.url, multi_tenant=True) as memory:
        mine = await memory.add_entity("Bus", "OBJECT", user_identifier="alice")
    refused = await alice.client.call_tool(
        "merge_entities", {"source_id": ids["entity"], "target_id": mine.id}
    )
    assert refused.is_error and "NotFoundError" in refused.content[0].text  # type: ignore[union-attr]
    await _bob_unchanged(alice.url, ids)


async def _bobs_trace(url: str) -> dict[str, str]:
    """Bob's completed trace with a step and a tool call (their ids by kind)."""
    async with open_backend(url, multi_tenant=True) as memory:
        trace = await memory.start_trace("shared", "bob tram route", user_identifier="bob")
        step = await memory.add_step(trace.id, thought="bob tram plan", user_identifier="bob")
        await memory.record_tool_call(step.id, "tram_api", user_identifier="bob")
        await memory.complete_trace(trace.id, outcome="bob's", success=True, user_identifier="bob")
        return {"trace": trace.id, "step": step.id}


async def _bob_trace_unchanged(url: str, ids: dict[str, str]) -> None:
    async with open_backend(url, multi_tenant=True) as memory:
        trace = await memory.get_trace(ids["trace"], user_identifier="bob")
        assert trace is not None and (trace.outcome, trace.success) == ("bob's", True)
        assert [(s.id, len(s.tool_calls)) for s in trace.steps] == [(ids["step"], 1)]
        [stats] = await memory.tool_stats(user_identifier="bob")
        assert (stats.name, stats.total_calls) == ("tram_api", 1)


async def _refused_not_found(alice: Alice, tool: str, **arguments: Any) -> None:
    refused = await alice.client.call_tool(tool, arguments)
    assert refused.is_error and "NotFoundError" in refused.content[0].text  # type: ignore[union-attr]


async def _check_start_trace(alice: Alice) -> None:
    ids = await _bobs_trace(alice.url)
    made = await alice.call("start_trace", session_id="shared", task="alice tram route")
    assert made["user_identifier"] == "alice"
    async with open_backend(alice.url, multi_tenant=True) as memory:
        assert [t.id for t in await memory.list_traces(user_identifier="alice")] == [made["id"]]
    await _bob_trace_unchanged(alice.url, ids)


async def _check_add_step(alice: Alice) -> None:
    ids = await _bobs_trace(alice.url)
    await _refused_not_found(alice, "add_step", trace_id=ids["trace"], thought="hers")
    mine = await alice.call("start_trace", session_id="shared", task="alice task")
    step = await alice.call("add_step", trace_id=mine["id"], thought="hers")
    assert step["step_number"] == 1
    await _bob_trace_unchanged(alice.url, ids)


async def _check_record_tool_call(alice: Alice) -> None:
    ids = await _bobs_trace(alice.url)
    await _refused_not_found(alice, "record_tool_call", step_id=ids["step"], tool_name="tram_api")
    mine = await alice.call("start_trace", session_id="shared", task="alice task")
    step = await alice.call("add_step", trace_id=mine["id"], action="call")
    call = await alice.call(
        "record_tool_call", step_id=step["id"], tool_name="tram_api", status="timeout"
    )
    assert call["status"] == "timeout"
    await _bob_trace_unchanged(alice.url, ids)


async def _check_complete_trace(alice: Alice) -> None:
    ids = await _bobs_trace(alice.url)
    await _refused_not_found(alice, "complete_trace", trace_id=ids["trace"], success=False)
    await _bob_trace_unchanged(alice.url, ids)


async def _check_similar_traces(alice: Alice) -> None:
    ids = await _bobs_trace(alice.url)
    assert (await alice.call("similar_traces", task="tram route"))["traces"] == []
    mine = await alice.call("start_trace", session_id="shared", task="alice tram route")
    await alice.call("complete_trace", trace_id=mine["id"], success=True)
    [hit] = (await alice.call("similar_traces", task="tram route"))["traces"]
    assert hit["id"] == mine["id"] and hit["user_identifier"] == "alice"
    await _bob_trace_unchanged(alice.url, ids)


CHECKS: dict[str, Callable[[Alice], Awaitable[None]]] = {
    "add_message": _check_add_message,
    "recent_messages": _check_recent_messages,
    "search_messages": _check_search_messages,
    "get_context": _check_get_context,
    "list_sessions": _check_list_sessions,
    "clear_session": _check_clear_session,
    "start_session": _check_start_session,
    "add_preference": _check_add_preference,
    "search_preferences": _check_search_preferences,
    "add_fact": _check_add_fact,
    "facts_about": _check_facts_about,
    "search_entities": _check_search_entities,
    "related_entities": _check_related_entities,
    "get_entity_by_name": _check_get_entity_by_name,
    "merge_entities": _check_merge_entities,
    "start_trace": _check_start_trace,
    "add_step": _check_add_step,
    "record_tool_call": _check_record_tool_call,
    "complete_trace": _check_complete_trace,
    "similar_traces": _check_similar_traces,
}
"""Each tool's check: what alice sees and writes through it."""
NEEDS_ISSUED_IDS = {"start_session"}


async def _listed_tools(url: str, monkeypatch: pytest.MonkeyPatch, issued_ids: bool) -> set[str]:
    server = await _server_for_alice(url, monkeypatch, issued_ids=issued_ids)
    async with Client(server) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_every_tool_has_a_scoping_check(
    anyio_backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool added to the server without a check here fails this test."""
    url = f"sqlite:///{tmp_path / 'tools.db'}"
    listed = await _listed_tools(url, monkeypatch, issued_ids=False)
    listed |= await _listed_tools(url, monkeypatch, issued_ids=True)
    defined = {tool.__name__ for tool in mcp_server._tools(open_backend("memory://"), "alice")}
    assert listed | defined == set(CHECKS)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("tool", sorted(CHECKS))
async def test_the_tool_acts_for_the_servers_user_only(
    anyio_backend: str, tool: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'tenants.db'}"
    await _seed(url)
    server = await _server_for_alice(url, monkeypatch, issued_ids=tool in NEEDS_ISSUED_IDS)
    with anyio.fail_after(30):
        async with Client(server) as client:
            assert tool in {t.name for t in (await client.list_tools()).tools}
            await CHECKS[tool](Alice(client, url))
    assert await _stored(url, "bob") == BOB_SEEDED
