"""forget_user on NAMS: each of the user's conversations deleted over the wire (both
session-name modes), the portable-name cache and the SQLite name index purged, what the
service keeps reported in ``not_reached``; the server really deletes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest
import respx

from memory_core import MemoryBackend, NotSupportedError
from memory_core.backends.nams.sessions import INDEX_TABLE
from memory_core_dev.nams_server import NamsTestServer

from .mocked import CID, conversation

pytestmark = pytest.mark.anyio


def _portable(server: NamsTestServer, workspace: str, index: Path) -> MemoryBackend:
    """A backend in portable mode whose name index is the file ``index``."""
    return server.backend(workspace, session_names="portable", session_index=str(index))


def _listed(server: NamsTestServer, workspace: str, user: str) -> list[dict[str, object]]:
    with server.client(workspace) as client:
        body = client.get("/conversations", params={"userId": user, "limit": 200}).json()
    return list(body["conversations"])


def _index_rows(index: Path, user: str) -> int:
    with sqlite3.connect(index) as conn:
        return int(
            conn.execute(f"SELECT count(*) FROM {INDEX_TABLE} WHERE user=?", (user,)).fetchone()[0]
        )


async def test_portable_mode_deletes_and_purges_cache_and_index(
    nams_server: NamsTestServer, workspace: str, tmp_path: Path
) -> None:
    index = tmp_path / "names.db"
    async with _portable(nams_server, workspace, index) as memory:
        for name in ("one", "two", "three"):
            await memory.add_message(name, "user", f"secret {name}", user_identifier="ada")
        await memory.add_message("other", "user", "keep", user_identifier="bob")
        assert _index_rows(index, "ada") == 3
        report = await memory.forget_user("ada")
        assert report.counts["conversations"] == 3
        assert report.counts["session_names"] == 3
        assert report.not_reached and any("entities" in n for n in report.not_reached)
        assert _listed(nams_server, workspace, "ada") == []
        assert _index_rows(index, "ada") == 0
        assert len(_listed(nams_server, workspace, "bob")) == 1
        # the cached name is gone: a new write starts a new, empty conversation
        await memory.add_message("one", "user", "fresh", user_identifier="ada")
        read = await memory.get_conversation("one", user_identifier="ada")
        assert [m.content for m in read.messages] == ["fresh"]
        await memory.forget_user("ada")
        again = await memory.forget_user("ada")
        assert again.counts["conversations"] == 0


async def test_server_mode_deletes_every_listed_conversation(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace, session_names="server") as memory:
        for _ in range(3):
            made = await memory.create_conversation(session_id="x", user_identifier="ada")
            await memory.add_message(conversation_id=made.id, role="user", content="hi")
        report = await memory.forget_user("ada")
        assert report.counts["conversations"] == 3
        assert _listed(nams_server, workspace, "ada") == []


async def test_counts_are_exact_and_stale_index_rows_go_too(
    nams_server: NamsTestServer, workspace: str, tmp_path: Path
) -> None:
    """One name per deleted named conversation; an index row whose conversation was
    deleted elsewhere is purged and counted as well."""
    index = tmp_path / "names.db"
    async with _portable(nams_server, workspace, index) as memory:
        for name in ("one", "two"):
            await memory.add_message(name, "user", "hi", user_identifier="ada")
        [first, _] = _listed(nams_server, workspace, "ada")
        with nams_server.client(workspace) as client:
            assert client.delete(f"/conversations/{first['id']}").status_code == 204
        report = await memory.forget_user("ada")
        assert report.counts == {"conversations": 1, "session_names": 2}
        assert _index_rows(index, "ada") == 0


async def test_server_mode_counts_no_names(nams_server: NamsTestServer, workspace: str) -> None:
    async with nams_server.backend(workspace, session_names="server") as memory:
        await memory.create_conversation(session_id="x", user_identifier="ada")
        report = await memory.forget_user("ada")
        assert report.counts == {"conversations": 1, "session_names": 0}


# ----------------------------------------------------------------- a mocked service


async def test_each_listed_conversation_is_deleted_once(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    """A service that still lists a deleted conversation does not make it deleted (or
    counted) twice; one already gone (404) is not counted."""
    listing = api.get("/conversations", params={"limit": "200", "userId": "ada"}).respond(
        json={"conversations": [conversation(CID), conversation("c-2")], "next_cursor": None}
    )
    deleted = api.delete(f"/conversations/{CID}").respond(204)
    gone = api.delete("/conversations/c-2").respond(404, json={"error": "no"})
    report = await memory.forget_user("ada")
    assert report.counts == {"conversations": 1, "session_names": 0}
    assert (deleted.call_count, gone.call_count, listing.call_count) == (1, 1, 2)


async def test_erasure_requests_are_retried_as_reads_and_deletes_are(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    """Listing (GET) and deleting (DELETE) are idempotent: retried after a 502."""
    page = {"conversations": [conversation()], "next_cursor": None}
    api.get("/conversations", params={"limit": "200", "userId": "ada"}).mock(
        side_effect=[
            httpx.Response(502),
            httpx.Response(200, json=page),
            httpx.Response(200, json={}),  # no conversations field: none
        ]
    )
    deleted = api.delete(f"/conversations/{CID}").mock(
        side_effect=[httpx.Response(502), httpx.Response(204)]
    )
    report = await memory.forget_user("ada")
    assert report.counts["conversations"] == 1 and deleted.call_count == 2


@pytest.mark.parametrize("refused", ["GET", "DELETE"])
async def test_an_unsupported_erasure_request_names_forget_user(
    memory: MemoryBackend, api: respx.MockRouter, refused: str
) -> None:
    page = {"conversations": [conversation()], "next_cursor": None}
    listing = api.get("/conversations", params={"limit": "200", "userId": "ada"})
    listing.respond(501) if refused == "GET" else listing.respond(json=page)
    api.delete(f"/conversations/{CID}").respond(501)
    with pytest.raises(NotSupportedError) as caught:
        await memory.forget_user("ada")
    assert caught.value.method == "forget_user"


async def test_names_count_once_whichever_process_remembers_them(
    nams_server: NamsTestServer, workspace: str, tmp_path: Path
) -> None:
    """``session_names`` counts each name once: those the deleted conversations carry
    (also when this object never saw them), and those the index still holds for a
    conversation already gone (whose row goes too)."""
    index = tmp_path / "names.db"
    async with _portable(nams_server, workspace, index) as writer:
        for name in ("one", "two"):
            await writer.add_message(name, "user", "hi", user_identifier="ada")
            await writer.add_message(name, "user", "hi", user_identifier="bob")
    [gone, _] = _listed(nams_server, workspace, "ada")
    with nams_server.client(workspace) as client:
        assert client.delete(f"/conversations/{gone['id']}").status_code == 204
    # nothing cached: one name from the listing, one row from the index
    async with _portable(nams_server, workspace, index) as fresh:
        report = await fresh.forget_user("ada")
        assert report.counts == {"conversations": 1, "session_names": 2}
        assert _index_rows(index, "ada") == 0 and _index_rows(index, "bob") == 2
    async with nams_server.backend(workspace, session_names="portable") as no_index:
        report = await no_index.forget_user("bob")  # never seen here, no index
        assert report.counts == {"conversations": 2, "session_names": 2}


async def test_only_the_users_own_names_go_even_with_an_unusable_index(
    nams_server: NamsTestServer, workspace: str, tmp_path: Path
) -> None:
    """Bob's session named "ada" is not Ada's; an index file that cannot be used adds
    nothing to the count (and fails nothing)."""
    broken = tmp_path / "names.db"
    broken.write_bytes(b"not a database at all" * 100)
    async with _portable(nams_server, workspace, broken) as memory:
        await memory.add_message("ada", "user", "bob's", user_identifier="bob")
        await memory.add_message("notes", "user", "ada's", user_identifier="ada")
        bobs = await memory.get_conversation("ada", user_identifier="bob")
        report = await memory.forget_user("ada")
        assert report.counts == {"conversations": 1, "session_names": 1}
        again = await memory.get_conversation("ada", user_identifier="bob")
        assert again.id == bobs.id and [m.content for m in again.messages] == ["bob's"]


async def test_portable_mode_counts_no_name_for_an_unnamed_conversation(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace, session_names="server") as reference:
        await reference.create_conversation(session_id="x", user_identifier="carol")
    async with nams_server.backend(workspace, session_names="portable") as memory:
        report = await memory.forget_user("carol")
        assert report.counts == {"conversations": 1, "session_names": 0}
