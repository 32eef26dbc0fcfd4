"""forget_user on NAMS: each of the user's conversations deleted over the wire (both
session-name modes), the portable-name cache and the SQLite name index purged, what the
service keeps reported in ``not_reached``; the server really deletes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory_core.backends.nams.sessions import INDEX_TABLE
from memory_core_dev.nams_server import NamsTestServer

pytestmark = pytest.mark.anyio


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
    async with nams_server.backend(
        workspace, session_names="portable", session_index=str(index)
    ) as memory:
        for name in ("one", "two", "three"):
            await memory.add_message(name, "user", f"secret {name}", user_identifier="ada")
        await memory.add_message("other", "user", "keep", user_identifier="bob")
        assert _index_rows(index, "ada") == 3
        report = await memory.forget_user("ada")
        assert report.counts["conversations"] == 3
        assert report.counts["session_names"] >= 3
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
