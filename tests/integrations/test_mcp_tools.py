"""The MCP server's tools in-process (the ``mcp`` package's in-memory client): what each
returns, field by field, and how each tool's description follows the backend's
capabilities (the model reads them to know what it may do)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="extra 'mcp' not installed")

from mcp.client import Client

from memory_core import MemoryBackend, TransportError, open_backend
from memory_core.integrations import mcp_server
from memory_core_dev.nams_server import API_KEY
from tests.conformance.catalogue import register

pytestmark = pytest.mark.anyio


async def _call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)  # type: ignore[union-attr,no-any-return]


async def _descriptions(backend: MemoryBackend) -> dict[str, str]:
    async with Client(mcp_server.build_server(backend)) as client:
        return {t.name: t.description or "" for t in (await client.list_tools()).tools}


async def test_each_tool_returns_its_fields() -> None:
    backend = open_backend("memory://")
    async with Client(mcp_server.build_server(backend, name="mine")) as client:
        assert client.server_info.name == "mine"
        assert "on the embedded backend" in (client.instructions or "")
        meta = {"k": [1, 2]}
        added = await _call(
            client, "add_message", session_id="s", role="user", content="tram 28", metadata=meta
        )
        stored = (await backend.get_conversation("s")).messages[0]
        assert added == {
            "id": str(stored.id),
            "role": "user",
            "content": "tram 28",
            "created_at": stored.created_at.isoformat(),
            "metadata": meta,
        }
        plain = await _call(client, "add_message", session_id="s", role="assistant", content="ok")
        assert set(plain) == {"id", "role", "content", "created_at"}  # no metadata: no key
        recent = await _call(client, "recent_messages", session_id="s", limit=1)
        assert recent == {"session_id": "s", "messages": [plain]}
        [hit] = (await _call(client, "search_messages", query="tram"))["messages"]
        score = hit.pop("score")
        assert isinstance(score, float) and 0 < score <= 1
        assert hit == added
        context = await _call(client, "get_context", session_id="s", query="tram")
        assert "tram 28" in context["context"] and "ok" in context["context"]
        [row] = (await _call(client, "list_sessions", prefix="s"))["sessions"]
        assert (row["session_id"], row["message_count"]) == ("s", 2)
        assert (await _call(client, "list_sessions", prefix="x"))["sessions"] == []
        assert await _call(client, "clear_session", session_id="s") == {"deleted": True}
        assert (await _call(client, "recent_messages", session_id="s"))["messages"] == []
    with pytest.raises(TransportError, match="closed"):  # the server's lifespan closed it
        await backend.get_conversation("s")


async def test_a_memory_core_error_reaches_the_client_as_a_tool_error() -> None:
    async with Client(mcp_server.build_server(open_backend("memory://"))) as client:
        result = await client.call_tool(
            "add_message", {"session_id": "s", "role": "robot", "content": "x"}
        )
        assert result.is_error
        assert "InvalidRequestError: role: " in result.content[0].text  # type: ignore[union-attr]


async def test_descriptions_where_sessions_are_named_and_metadata_kept() -> None:
    said = await _descriptions(open_backend("memory://"))
    assert list(said) == mcp_server.tool_names(open_backend("memory://"))
    assert said["add_message"] == (
        "Store one message (role: user, assistant, system or tool) at the end of a session. "
        "Writing to a new session_id creates the session. metadata (a JSON object) is "
        "stored with the message."
    )
    assert said["recent_messages"].endswith("Any number of messages can be read.")
    assert said["search_messages"].endswith("Without session_id it searches every session.")
    assert said["clear_session"].endswith("The session accepts new messages afterwards.")


async def test_descriptions_and_tools_follow_the_nams_capabilities(
    nams_server: Any, tmp_path: Path
) -> None:
    options = {"api_key": API_KEY, "workspace_id": nams_server.workspace("mcp-tools")}

    def backend() -> MemoryBackend:
        return open_backend(nams_server.url, session_names="server", trust_env=False, **options)

    said = await _descriptions(backend())
    assert list(said) == [
        "add_message",
        "recent_messages",
        "search_messages",
        "get_context",
        "clear_session",
        "start_session",
        "search_entities",
        "related_entities",
        "get_entity_by_name",
        "merge_entities",
    ]
    assert said["add_message"].endswith(
        "The session must exist: create it with start_session and use the id it returns. "
        "This backend stores no metadata: passing it is refused."
    )
    assert said["recent_messages"].endswith(
        "At most 200 messages can be read; older ones are unreachable on this backend."
    )
    assert said["search_messages"].endswith(
        "session_id is required on this backend (no search across sessions)."
    )
    assert said["clear_session"].endswith(
        "The session itself is deleted; start a new one to write again."
    )
    async with Client(mcp_server.build_server(backend())) as client:
        started = await _call(client, "start_session", name="trip")
        assert started["session_id"] != "trip"
        refused = await client.call_tool(
            "add_message",
            {
                "session_id": started["session_id"],
                "role": "user",
                "content": "x",
                "metadata": {"a": 1},
            },
        )
        assert refused.is_error
        assert "NotSupportedError: nams.add_message: metadata cannot be stored" in (
            refused.content[0].text  # type: ignore[union-attr]
        )
        await _call(
            client, "add_message", session_id=started["session_id"], role="user", content="x"
        )


async def test_the_tools_defaults() -> None:
    backend = open_backend("memory://")
    assert mcp_server.build_server(backend).name == "memory-core"
    await backend.add_message("s", "user", "the ferry to Cacilhas")
    for i in range(25):
        await backend.add_message("s", "user", f"tram {i}")
    for i in range(55):
        await backend.add_message(f"other-{i:02d}", "user", "x")
    async with Client(mcp_server.build_server(backend)) as client:
        recent = (await _call(client, "recent_messages", session_id="s"))["messages"]
        assert [m["content"] for m in recent] == [f"tram {i}" for i in range(5, 25)]
        assert len((await _call(client, "search_messages", query="tram"))["messages"]) == 10
        three = await _call(client, "search_messages", query="tram", limit=3)
        assert len(three["messages"]) == 3
        context = (await _call(client, "get_context", session_id="s"))["context"]
        assert "tram 24" in context and "tram 14" not in context  # the newest 10
        assert "Cacilhas" not in context
        relevant = await _call(client, "get_context", session_id="s", query="ferry")
        assert "Cacilhas" in relevant["context"]  # the query finds the old message too
        wider = await _call(client, "get_context", session_id="s", max_messages=20)
        assert "tram 14" in wider["context"]
        assert len((await _call(client, "list_sessions"))["sessions"]) == 50
        assert len((await _call(client, "list_sessions", limit=60))["sessions"]) == 56


async def test_start_session_keeps_the_name_where_the_caller_names_sessions() -> None:
    from tests.integrations.test_mcp_user_scope import IssuedIdsStore

    backend = MemoryBackend.over(IssuedIdsStore, "memory://")  # names kept, no auto-create
    async with Client(mcp_server.build_server(backend)) as client:
        assert (await _call(client, "start_session", name="trip"))["session_id"] == "trip"
        added = await _call(client, "add_message", session_id="trip", role="user", content="x")
        assert added["content"] == "x"


async def test_the_long_term_tools_keep_and_recall_for_the_servers_user(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'lt.db'}"
    alice = open_backend(url, multi_tenant=True)
    async with Client(mcp_server.build_server(alice, user_identifier="alice")) as client:
        made = await _call(
            client, "add_preference", category="food", preference="likes figs", context="lunch"
        )
        assert (made["category"], made["preference"], made["context"]) == (
            "food",
            "likes figs",
            "lunch",
        )
        assert made["user_identifier"] == "alice" and "score" not in made
        [hit] = (await _call(client, "search_preferences", query="figs"))["preferences"]
        assert hit["id"] == made["id"] and 0 < hit["score"] <= 1
        fact = await _call(client, "add_fact", subject="Ada", predicate="WORKS_AT", object="Acme")
        [about] = (await _call(client, "facts_about", subject="ada"))["facts"]
        assert about == fact
        ada = await alice.add_entity("Ada", "PERSON", user_identifier="alice")
        acme = await alice.add_entity(
            "Acme", "ORGANIZATION", description="anvils", user_identifier="alice"
        )
        await alice.add_relationship(ada.id, acme.id, "WORKS_AT", user_identifier="alice")
        [found] = (await _call(client, "search_entities", query="anvils"))["entities"]
        assert found["id"] == acme.id
        [near] = (await _call(client, "related_entities", entity_id=ada.id))["entities"]
        assert near["id"] == acme.id
    bob = open_backend(url, multi_tenant=True)
    async with Client(mcp_server.build_server(bob, user_identifier="bob")) as client:
        assert (await _call(client, "search_preferences", query="figs"))["preferences"] == []
        assert (await _call(client, "facts_about", subject="Ada"))["facts"] == []
        refused = await client.call_tool("related_entities", {"entity_id": ada.id})
        assert refused.is_error and "NotFoundError" in refused.content[0].text  # type: ignore[union-attr]


async def test_the_entity_tools_find_by_alias_and_merge_for_the_servers_user(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'entities.db'}"
    alice = open_backend(url, multi_tenant=True)
    async with Client(mcp_server.build_server(alice, user_identifier="alice")) as client:
        robert = await alice.add_entity("Robert", "PERSON", user_identifier="alice")
        bob = await alice.add_entity("Bob", "PERSON", user_identifier="alice")
        await alice.update_entity(bob.id, aliases=["Bobby"], user_identifier="alice")
        found = (await _call(client, "get_entity_by_name", name="BOBBY"))["entity"]
        assert found["id"] == bob.id and found["aliases"] == ["Bobby"]
        merged = await _call(client, "merge_entities", source_id=bob.id, target_id=robert.id)
        assert merged["entity"]["aliases"] == ["Bob", "Bobby"]
        again = (await _call(client, "get_entity_by_name", name="bobby"))["entity"]
        assert again["id"] == robert.id
        assert (await _call(client, "get_entity_by_name", name="Nobody"))["entity"] is None
    bob_server = open_backend(url, multi_tenant=True)
    async with Client(mcp_server.build_server(bob_server, user_identifier="bob")) as client:
        assert (await _call(client, "get_entity_by_name", name="Robert"))["entity"] is None
        refused = await client.call_tool(
            "merge_entities", {"source_id": robert.id, "target_id": robert.id}
        )
        assert refused.is_error and "target_id" in refused.content[0].text  # type: ignore[union-attr]


def test_the_entity_tools_are_offered_only_with_their_flags() -> None:
    assert {"get_entity_by_name", "merge_entities"} <= set(
        mcp_server.tool_names(open_backend("memory://"))
    )
    register()
    toy = open_backend("toy://")  # the example backend keeps no entity updates
    assert not {"get_entity_by_name", "merge_entities"} & set(mcp_server.tool_names(toy))


def test_the_reasoning_tools_are_offered_only_with_their_flags() -> None:
    tools = {"start_trace", "add_step", "record_tool_call", "complete_trace", "similar_traces"}
    assert tools <= set(mcp_server.tool_names(open_backend("memory://")))
    register()
    toy = open_backend("toy://")  # the example backend keeps no reasoning memory
    assert not tools & set(mcp_server.tool_names(toy))
