"""The per-user state of portable session names on NAMS (issue 26, kind 2), against the
real server: the index file is keyed per user (also shared by two processes), the name
cache keeps its documented bound (least recently used dropped first), and a creator
that listed before another one created converges on the oldest conversation.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from functools import partial
from pathlib import Path

import anyio
import httpx
import pytest

from memory_core import nams_wire as wire
from memory_core.backends.nams.sessions import portable_id
from memory_core_dev.nams_server import API_KEY, NamsTestServer

from .test_portable_ownership import contents_of, named, portable, texts

pytestmark = [pytest.mark.nams, pytest.mark.anyio]

LIST = "/v1/conversations"


def list_requests(server: NamsTestServer, workspace: str, mark: int) -> int:
    """``GET /conversations`` requests of ``workspace`` since ``mark``."""
    return sum(
        1
        for r in server.since(mark)
        if r.workspace == workspace and r.method == "GET" and r.path == LIST
    )


WRITER = textwrap.dedent(
    """
    import os, sys, anyio
    from memory_core import open_backend

    url, workspace, index, user, content = sys.argv[1:]

    async def main():
        async with open_backend(url, api_key=os.environ["NAMS_TEST_KEY"],
                                workspace_id=workspace, trust_env=False,
                                session_index=index) as memory:
            await memory.add_message("chat", "user", content, user_identifier=user)

    anyio.run(main)
    """
)


async def test_the_index_keeps_each_users_name_apart_across_processes(
    nams_server: NamsTestServer, workspace: str, tmp_path: Path
) -> None:
    index = tmp_path / "names.db"
    async with portable(nams_server, workspace, session_index=index) as first:
        await first.add_message("chat", "user", "alice 1", user_identifier="alice")
    env = {**os.environ, "NAMS_TEST_KEY": API_KEY}
    args = [nams_server.url, workspace, str(index), "bob", "bob 1"]
    done = subprocess.run([sys.executable, "-c", WRITER, *args], env=env, timeout=120)
    assert done.returncode == 0
    async with portable(nams_server, workspace, session_index=index) as third:
        mark = nams_server.mark()
        await third.add_message("chat", "user", "alice 2", user_identifier="alice")
        await third.add_message("chat", "user", "bob 2", user_identifier="bob")
        assert list_requests(nams_server, workspace, mark) == 0  # both rows from the file
        alice = await third.get_conversation("chat", user_identifier="alice")
        bob = await third.get_conversation("chat", user_identifier="bob")
    assert [m.content for m in alice.messages] == ["alice 1", "alice 2"]
    assert [m.content for m in bob.messages] == ["bob 1", "bob 2"]
    assert alice.id != bob.id
    by_user = {c["userId"]: c["id"] for c in named(nams_server, workspace, "chat")}
    assert sorted(by_user) == ["alice", "bob"]
    assert sorted(contents_of(nams_server, workspace, by_user["bob"])) == ["bob 1", "bob 2"]


async def test_the_name_cache_drops_the_least_recently_used_beyond_its_bound(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with portable(nams_server, workspace, session_cache_size=3) as memory:
        for n in range(3):
            await memory.add_message(f"n{n}", "user", f"m{n}")
        mark = nams_server.mark()
        for n in (2, 1, 0):  # used last: n0; least recently: n2
            await memory.get_conversation(f"n{n}")
        assert list_requests(nams_server, workspace, mark) == 0  # three names fit
        await memory.add_message("n3", "user", "m3")  # n2, least recently used, drops
        mark = nams_server.mark()
        for n in (0, 1, 3):
            await memory.get_conversation(f"n{n}")
        assert list_requests(nams_server, workspace, mark) == 0
        assert await texts(memory, "n2", None) == ["m2"]  # looked up again
        assert list_requests(nams_server, workspace, mark) == 1
        mark = nams_server.mark()
        await memory.get_conversation("n0")  # n2 came back in place of n0
        assert list_requests(nams_server, workspace, mark) == 1
        for n in range(4, 24):  # more names, and ids looked up by conversation_id
            await memory.add_message(f"n{n}", "user", f"m{n}")
            await memory.get_conversation(conversation_id=portable_id(f"n{n - 4}", None))
        cache = memory.store._names.cache  # type: ignore[attr-defined]
        assert len(cache.names) == 3 and len(cache.ids) == 3


class PauseAfterLookup(httpx.AsyncBaseTransport):
    """Holds the answer to the first name lookup (a ``GET /conversations`` of a full
    page) until :attr:`release` is set; :attr:`listed` is set when it arrived."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.listed = anyio.Event()
        self.release = anyio.Event()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        lookup = request.method == "GET" and request.url.path == LIST
        full_page = request.url.params.get("limit") == str(wire.MAX_PAGE)
        if lookup and full_page and not self.listed.is_set():
            self.listed.set()
            await self.release.wait()
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_creator_that_listed_first_converges_on_the_older_conversation(
    nams_server: NamsTestServer, workspace: str
) -> None:
    """A lists (finds nothing), B creates and writes, then A creates: both use B's
    conversation (the oldest), A's empty one is deleted, no message is lost."""
    pause = PauseAfterLookup()
    a = portable(nams_server, workspace, http_transport=pause)
    b = portable(nams_server, workspace)
    async with a, b:
        mark = nams_server.mark()
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(a.add_message, user_identifier="alice"), "chat", "user", "a")
            await pause.listed.wait()
            await b.add_message("chat", "user", "b", user_identifier="alice")
            pause.release.set()
        assert await texts(a, "chat", "alice") == ["b", "a"]
        assert await texts(b, "chat", "alice") == ["b", "a"]
    records = [(r.method, r.path) for r in nams_server.since(mark) if r.workspace == workspace]
    assert records.count(("POST", LIST)) == 2, "A did not create after B (proves nothing)"
    [survivor] = named(nams_server, workspace, "chat")
    assert sorted(contents_of(nams_server, workspace, survivor["id"])) == ["a", "b"]
    deleted = [path for method, path in records if method == "DELETE"]
    assert len(deleted) == 1 and not deleted[0].endswith(survivor["id"])
    with nams_server.client(workspace) as c:
        assert c.get(deleted[0].removeprefix("/v1")).status_code == 404
