"""Portable session names on NAMS against the real server (uvicorn on 127.0.0.1): the
caller's name maps to one server conversation through the hosted contract only; what a
lookup costs (read from the server's request record); convergence of concurrent
creators (several backend objects, and several processes); aliasing of server ids; the
persistent index; stale caches."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any
from uuid import UUID

import anyio
import pytest

from memory_core import InvalidRequestError, MemoryBackend, NotFoundError
from memory_core.backends.nams.sessions import SESSION_KEY, portable_id
from memory_core_dev.nams_server import API_KEY, NamsTestServer

pytestmark = [pytest.mark.nams, pytest.mark.anyio]

LIST = "/v1/conversations"


def portable(server: NamsTestServer, workspace: str, **options: Any) -> MemoryBackend:
    return server.backend(workspace, session_names="portable", **options)


def list_requests(server: NamsTestServer, workspace: str, mark: int) -> int:
    """``GET /conversations`` requests of ``workspace`` since ``mark``."""
    return sum(
        1
        for r in server.since(mark)
        if r.workspace == workspace and r.method == "GET" and r.path == LIST
    )


def requests_of(server: NamsTestServer, workspace: str, mark: int) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in server.since(mark) if r.workspace == workspace]


def conversations_named(server: NamsTestServer, workspace: str, name: str) -> list[dict[str, Any]]:
    """Every conversation of the workspace carrying ``name`` (raw HTTP, all pages)."""
    found: list[dict[str, Any]] = []
    cursor = None
    with server.client(workspace) as c:
        while True:
            params: dict[str, Any] = {"limit": 200}
            if cursor:
                params["cursor"] = cursor
            page = c.get("/conversations", params=params).json()
            found += [x for x in page["conversations"] if x["metadata"].get(SESSION_KEY) == name]
            cursor = page.get("next_cursor")
            if not page["conversations"] or not cursor:
                return found


async def test_readme_flow_with_caller_names(nams_server: NamsTestServer, workspace: str) -> None:
    async with portable(nams_server, workspace) as memory:
        assert memory.capabilities.client_chosen_ids
        assert memory.capabilities.auto_create_conversation
        empty = await memory.get_conversation("s1")
        assert empty.messages == [] and empty.session_id == "s1"
        assert conversations_named(nams_server, workspace, "s1") == []  # reads create nothing
        stored = await memory.add_message("s1", "user", "Order ORD-1234 is late")
        await memory.add_messages_batch("s1", [{"role": "assistant", "content": "Sorry!"}])
        read = await memory.get_conversation("s1", limit=20)
        assert [m.content for m in read.messages] == ["Order ORD-1234 is late", "Sorry!"]
        assert read.id == empty.id == stored.conversation_id == portable_id("s1", None)
        assert all(m.session_id == "s1" and m.conversation_id == read.id for m in read.messages)
        hits = await memory.search_messages("late order", session_id="s1")
        assert hits and hits[0].content == "Order ORD-1234 is late"
        assert "Order ORD-1234" in await memory.get_context("late order", session_id="s1")
        [listed] = await memory.list_conversations()
        assert listed.session_id == "s1" and listed.id == read.id and listed.metadata == {}
        # The name is stored in metadata under one documented key, and nowhere else.
        [raw] = conversations_named(nams_server, workspace, "s1")
        assert raw["metadata"] == {SESSION_KEY: "s1"}
        assert await memory.clear_session("s1") is True
        assert await memory.clear_session("s1") is False
        assert (await memory.get_conversation("s1")).messages == []
        await memory.add_message("s1", "user", "again")
        assert [m.content for m in (await memory.get_conversation("s1")).messages] == ["again"]


async def test_create_conversation_is_idempotent_and_keeps_metadata(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with portable(nams_server, workspace) as memory:
        first = await memory.create_conversation("c1", metadata={"team": "x"})
        second = await memory.create_conversation("c1", metadata={"other": 1})
        assert first.id == second.id and first.session_id == "c1"
        assert second.metadata == {"team": "x"}  # the service cannot update metadata
        assert len(conversations_named(nams_server, workspace, "c1")) == 1
        with pytest.raises(InvalidRequestError) as reserved:
            await memory.create_conversation("c2", metadata={SESSION_KEY: "other"})
        assert reserved.value.argument == "metadata"
        assert conversations_named(nams_server, workspace, "other") == []
        assert (await memory.list_conversations()) == [first.model_copy(update={"messages": []})]


async def test_cold_lookup_costs_one_list_request_per_200_conversations(
    nams_server: NamsTestServer, workspace: str
) -> None:
    total = 450
    with nams_server.client(workspace) as c:
        for _ in range(total - 1):
            assert c.post("/conversations", json={}).status_code == 201
    async with portable(nams_server, workspace) as writer:
        await writer.add_message("needle", "user", "here")
    async with portable(nams_server, workspace) as reader:  # a fresh object: cold cache
        mark = nams_server.mark()
        read = await reader.get_conversation("needle")
        assert [m.content for m in read.messages] == ["here"]
        cold = list_requests(nams_server, workspace, mark)
        assert cold == math.ceil(total / 200) == 3
        mark = nams_server.mark()
        await reader.get_conversation("needle")
        await reader.add_message("needle", "assistant", "warm")
        await reader.search_messages("warm", session_id="needle")
        assert list_requests(nams_server, workspace, mark) == 0
        # A UUID-shaped name is first tried as a server id: one GET more, no more lists.
        name = "7b6f1c0e-0000-4000-8000-000000000001"
        mark = nams_server.mark()
        assert (await reader.get_conversation(name)).messages == []
        assert list_requests(nams_server, workspace, mark) == 3
        assert requests_of(nams_server, workspace, mark)[0] == ("GET", f"{LIST}/{name}")


async def test_user_scopes_names(nams_server: NamsTestServer, workspace: str) -> None:
    async with portable(nams_server, workspace) as memory:
        await memory.add_message("shared", "user", "from u1", user_identifier="u1")
        await memory.add_message("shared", "user", "from u2", user_identifier="u2")
        u1 = await memory.get_conversation("shared", user_identifier="u1")
        u2 = await memory.get_conversation("shared", user_identifier="u2")
        assert [m.content for m in u1.messages] == ["from u1"]
        assert [m.content for m in u2.messages] == ["from u2"]
        assert u1.id != u2.id and u1.user_identifier == "u1"
        listed = await memory.list_conversations(user_identifier="u2")
        assert [c.id for c in listed] == [u2.id]


async def test_concurrent_creators_converge_on_one_conversation(
    nams_server: NamsTestServer, workspace: str
) -> None:
    creators = [portable(nams_server, workspace) for _ in range(6)]
    for creator in creators:
        await creator.connect()
    mark = nams_server.mark()
    # every response waits: all six lookups are under way before any creator hears that
    # the name is free (on a busy machine one creator could otherwise finish first)
    nams_server.faults.set(latency=0.1)
    try:
        async with anyio.create_task_group() as tg:
            for n, creator in enumerate(creators):
                tg.start_soon(creator.add_message, "race", "user", f"writer {n}")
    finally:
        nams_server.faults.reset()
        for creator in creators:
            await creator.close()
    made = [r for r in requests_of(nams_server, workspace, mark) if r == ("POST", LIST)]
    assert len(made) >= 2, "the creators did not race (the test would prove nothing)"
    [survivor] = conversations_named(nams_server, workspace, "race")
    async with portable(nams_server, workspace) as reader:
        read = await reader.get_conversation("race")
    assert str(read.id) == str(portable_id("race", None))
    assert sorted(m.content for m in read.messages) == [f"writer {n}" for n in range(6)]
    with nams_server.client(workspace) as c:
        page = c.get(f"/conversations/{survivor['id']}/messages", params={"limit": 200})
        assert len(page.json()["messages"]) == 6


WRITER = textwrap.dedent(
    """
    import os, sys, time, anyio
    from memory_core import open_backend

    url, workspace, name, tag, go = sys.argv[1:]

    async def main():
        async with open_backend(url, api_key=os.environ["NAMS_TEST_KEY"],
                                workspace_id=workspace, trust_env=False) as memory:
            while not os.path.exists(go):
                time.sleep(0.005)
            await memory.add_message(name, "user", tag)

    anyio.run(main)
    """
)


def test_concurrent_processes_converge(
    nams_server: NamsTestServer, workspace: str, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    env = {**os.environ, "NAMS_TEST_KEY": API_KEY}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, nams_server.url, workspace, "p-race", f"p{n}", str(go)],
            env=env,
        )
        for n in range(4)
    ]
    while len({r.client for r in nams_server.records(workspace)}) < 4:  # all connected
        anyio.run(anyio.sleep, 0.05)
    go.touch()
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    [survivor] = conversations_named(nams_server, workspace, "p-race")
    with nams_server.client(workspace) as c:
        page = c.get(f"/conversations/{survivor['id']}/messages", params={"limit": 200}).json()
    assert sorted(m["content"] for m in page["messages"]) == ["p0", "p1", "p2", "p3"]


async def test_server_ids_still_name_their_conversation(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace) as reference:  # session_names="server"
        made = await reference.create_conversation("ignored")
        await reference.add_message(str(made.id), "user", "by server id")
    async with portable(nams_server, workspace) as memory:
        for handle in (str(made.id), made.id):
            read = await memory.get_conversation(handle)
            assert [m.content for m in read.messages] == ["by server id"]
        await memory.add_message(made.id, "assistant", "by UUID")
        await memory.add_message(conversation_id=made.id, role="user", content="by alias")
        contents = [m.content for m in (await memory.get_conversation(str(made.id))).messages]
        assert contents == ["by server id", "by UUID", "by alias"]
        # Portable ids work as conversation_id too, in a fresh object (cold: listed).
        await memory.add_message("named", "user", "x")
        named = await memory.get_conversation("named")
    async with portable(nams_server, workspace) as fresh:
        read = await fresh.get_conversation(conversation_id=named.id)
        assert [m.content for m in read.messages] == ["x"] and read.session_id == "named"
        with pytest.raises(NotFoundError):
            await fresh.get_conversation(conversation_id=UUID(int=7))


async def test_persistent_index_makes_lookups_free_across_objects(
    nams_server: NamsTestServer, workspace: str, tmp_path: Path
) -> None:
    index = tmp_path / "names.db"
    async with portable(nams_server, workspace, session_index=str(index)) as first:
        await first.add_message("kept", "user", "one")
    mark = nams_server.mark()
    async with portable(nams_server, workspace, session_index=index) as second:
        after_connect = nams_server.mark()
        await second.add_message("kept", "user", "two")
        assert list_requests(nams_server, workspace, after_connect) == 0
        assert [m.content for m in (await second.get_conversation("kept")).messages] == [
            "one",
            "two",
        ]
    assert list_requests(nams_server, workspace, mark) == 1  # the connect probe only
    # A stale entry (deleted elsewhere) is noticed on 404 and the name is looked up again.
    [raw] = conversations_named(nams_server, workspace, "kept")
    with nams_server.client(workspace) as c:
        assert c.delete(f"/conversations/{raw['id']}").status_code == 204
    async with portable(nams_server, workspace, session_index=index) as third:
        await third.add_message("kept", "user", "three")
        assert [m.content for m in (await third.get_conversation("kept")).messages] == ["three"]


async def test_workspaces_sharing_an_index_file_keep_their_own_names(
    nams_server: NamsTestServer, tmp_path: Path
) -> None:
    """One index file serves several workspaces of a service: each keeps its own rows, so
    a name read back in a new process costs no lookup in either."""
    index = tmp_path / "names.db"
    workspaces = [NamsTestServer.workspace(), NamsTestServer.workspace()]
    for workspace in workspaces:
        async with portable(nams_server, workspace, session_index=index) as writer:
            await writer.add_message("shared", "user", f"in {workspace}")
    for workspace in workspaces:
        mark = nams_server.mark()
        async with portable(nams_server, workspace, session_index=index) as reader:
            read = await reader.get_conversation("shared")
        assert [m.content for m in read.messages] == [f"in {workspace}"]
        assert list_requests(nams_server, workspace, mark) == 1  # the connect probe only


async def test_stale_cache_after_another_object_clears(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with portable(nams_server, workspace) as a, portable(nams_server, workspace) as b:
        await a.add_message("s", "user", "first")
        assert [m.content for m in (await b.get_conversation("s")).messages] == ["first"]
        assert await a.clear_session("s") is True
        await b.add_message("s", "user", "after clear")  # b's cache is stale: 404, re-resolve
        assert [m.content for m in (await a.get_conversation("s")).messages] == ["after clear"]
        assert len(conversations_named(nams_server, workspace, "s")) == 1


async def test_server_mode_404_on_write_suggests_the_way_out(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace) as memory:
        with pytest.raises(NotFoundError) as info:
            await memory.add_message("s1", "user", "x")
    assert "create_conversation" in str(info.value)
    assert "session_names='portable'" in str(info.value)


async def test_a_named_conversation_has_one_id_and_name_whatever_found_it(
    nams_server: NamsTestServer, workspace: str
) -> None:
    """By its name, its portable id or its server id, cold (a fresh object) or warm:
    the conversation, its messages and a new message report the portable id and the
    name (a read is never half one id, half another)."""
    async with portable(nams_server, workspace) as memory:
        await memory.add_message("named", "user", "x")
        pid = (await memory.get_conversation("named")).id
    with nams_server.client(workspace) as client:
        [listed] = client.get("/conversations", params={"limit": 10}).json()["conversations"]
    server_id = UUID(listed["id"])
    assert server_id != pid
    for handle in (pid, server_id):
        async with portable(nams_server, workspace) as fresh:
            for _ in ("cold", "warm"):
                read = await fresh.get_conversation(conversation_id=handle)
                assert (read.id, read.session_id) == (pid, "named")
                assert {m.conversation_id for m in read.messages} == {pid}
                added = await fresh.add_message(conversation_id=handle, role="user", content="y")
                assert (added.conversation_id, added.session_id) == (pid, "named")
    async with portable(nams_server, workspace) as fresh:
        by_text = await fresh.get_conversation(str(server_id))  # a server id as the name
        assert (by_text.id, by_text.session_id) == (pid, "named")


async def test_an_unnamed_conversation_read_first_by_its_server_id(
    nams_server: NamsTestServer, workspace: str
) -> None:
    """A conversation the service issued (no name) keeps its server id, also when a
    fresh object's first use of it is ``conversation_id=`` (then from the cache)."""
    async with nams_server.backend(workspace) as reference:  # session_names="server"
        made = await reference.create_conversation("ignored")
        await reference.add_message(str(made.id), "user", "by server id")
    async with portable(nams_server, workspace) as memory:
        for _ in ("cold", "warm"):
            read = await memory.get_conversation(conversation_id=made.id)
            assert read.id == made.id and read.session_id == str(made.id)
            assert [m.conversation_id for m in read.messages][:1] == [made.id]
            added = await memory.add_message(conversation_id=made.id, role="user", content="z")
            assert (added.conversation_id, added.session_id) == (made.id, str(made.id))
        mark = nams_server.mark()
        await memory.get_conversation(conversation_id=made.id)
        assert list_requests(nams_server, workspace, mark) == 0
