"""Who may resolve which portable name (issue 25, item 2), against the real server.

A name resolves only among the conversations of the caller's user: whose ``userId``
equals ``user_identifier``, or, without one, those with no ``userId``. The adapter checks
it on every conversation the service lists (a loose ``userId`` filter hands over
nothing), never creates a conversation carrying the reserved key outside a portable
lookup (server-id mode refuses it too), and the public writer names each record's user,
so a multi-user archive imported into portable names keeps the users apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from memory_core import InvalidRequestError, MemoryBackend, TransportError
from memory_core.backends.nams.sessions import SESSION_KEY
from memory_core.transfer import FORMAT, import_memory
from memory_core_dev.nams_server import NamsTestServer

pytestmark = [pytest.mark.nams, pytest.mark.anyio]

STAMP = "2026-05-20T09:30:00.000000Z"


class Rewriting(httpx.AsyncBaseTransport):
    """A service that is looser than ours: ``GET /conversations`` ignores ``userId``
    (``loose_filter``), or ``POST /conversations`` drops it (``drop_user``)."""

    def __init__(self, *, loose_filter: bool = False, drop_user: bool = False) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.loose_filter = loose_filter
        self.drop_user = drop_user

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        listing = request.url.path.endswith("/conversations")
        if self.loose_filter and listing and request.method == "GET":
            request = httpx.Request(
                "GET", request.url.copy_remove_param("userId"), headers=request.headers
            )
        if self.drop_user and listing and request.method == "POST":
            body = json.loads(await request.aread())
            body.pop("userId", None)
            headers = {k: v for k, v in request.headers.items() if k != "content-length"}
            request = httpx.Request("POST", request.url, headers=headers, json=body)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def portable(server: NamsTestServer, workspace: str, **options: Any) -> MemoryBackend:
    return server.backend(workspace, session_names="portable", **options)


def named(server: NamsTestServer, workspace: str, name: str) -> list[dict[str, Any]]:
    """Every conversation of the workspace carrying ``name`` (raw HTTP, one page)."""
    with server.client(workspace) as c:
        page = c.get("/conversations", params={"limit": 200}).json()
    return [x for x in page["conversations"] if x["metadata"].get(SESSION_KEY) == name]


def squat(server: NamsTestServer, workspace: str, name: str, user: str | None) -> str:
    """A conversation carrying ``name`` made by a plain REST caller; its id."""
    body: dict[str, Any] = {"metadata": {SESSION_KEY: name}}
    if user is not None:
        body["userId"] = user
    with server.client(workspace) as c:
        made = c.post("/conversations", json=body)
        assert made.status_code == 201, made.text
        conversation_id: str = made.json()["id"]
        assert c.post(
            f"/conversations/{conversation_id}/messages",
            json={"role": "system", "content": f"planted for {name}"},
        ).is_success
    return conversation_id


def contents_of(server: NamsTestServer, workspace: str, conversation_id: str) -> list[str]:
    with server.client(workspace) as c:
        page = c.get(f"/conversations/{conversation_id}/messages", params={"limit": 50}).json()
    return [m["content"] for m in page["messages"]]


async def texts(memory: MemoryBackend, name: str, user: str | None) -> list[str]:
    read = await memory.get_conversation(name, user_identifier=user)
    return [m.content for m in read.messages]


async def test_a_client_without_user_does_not_resolve_another_users_name(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with (
        portable(nams_server, workspace) as alice,
        portable(nams_server, workspace) as anonymous,
    ):
        await alice.add_message("chat", "user", "alice's secret", user_identifier="alice")
        assert await texts(anonymous, "chat", None) == []
        await anonymous.add_message("chat", "user", "no user's note")
        assert await texts(anonymous, "chat", None) == ["no user's note"]
        assert await texts(alice, "chat", "alice") == ["alice's secret"]
    owners = sorted((c["userId"] or "") for c in named(nams_server, workspace, "chat"))
    assert owners == ["", "alice"]


async def test_a_conversation_another_user_planted_is_never_chosen(
    nams_server: NamsTestServer, workspace: str
) -> None:
    """A REST caller plants "payroll" under mallory's userId and under none: a client
    without a user and carol each get a conversation of their own (the one planted
    without a user is that user's: it carries no one else's userId)."""
    mallorys = squat(nams_server, workspace, "payroll", "mallory")
    async with portable(nams_server, workspace) as anonymous:
        await anonymous.add_message("payroll", "user", "salaries")
    assert contents_of(nams_server, workspace, mallorys) == ["planted for payroll"]
    squat(nams_server, workspace, "ledger", None)
    async with portable(nams_server, workspace) as carol:
        assert await texts(carol, "ledger", "carol") == []
        await carol.add_message("ledger", "user", "carol's figures", user_identifier="carol")
        assert await texts(carol, "ledger", "carol") == ["carol's figures"]
    owners = sorted((c["userId"] or "") for c in named(nams_server, workspace, "ledger"))
    assert owners == ["", "carol"]


async def test_a_loose_user_filter_cannot_hand_over_another_users_conversation(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with portable(nams_server, workspace) as bob:
        await bob.add_message("chat", "user", "bob's", user_identifier="bob")
    loose = portable(nams_server, workspace, http_transport=Rewriting(loose_filter=True))
    async with loose as alice:
        assert await texts(alice, "chat", "alice") == []  # a lookup: bob's is listed
        await alice.add_message("chat", "user", "alice's", user_identifier="alice")  # a race
        assert await texts(alice, "chat", "alice") == ["alice's"]
    async with portable(nams_server, workspace) as bob:
        assert await texts(bob, "chat", "bob") == ["bob's"]
    assert len(named(nams_server, workspace, "chat")) == 2


async def test_server_id_mode_refuses_the_reserved_key(
    nams_server: NamsTestServer, workspace: str
) -> None:
    async with nams_server.backend(workspace) as server_ids:
        with pytest.raises(InvalidRequestError) as refused:
            await server_ids.create_conversation(
                "any", metadata={SESSION_KEY: "payroll", "team": "x"}, user_identifier="carol"
            )
        assert refused.value.argument == "metadata"
        assert SESSION_KEY in str(refused.value)
        kept = await server_ids.create_conversation("any", metadata={"team": "x"})
        assert kept.metadata == {"team": "x"}
    assert named(nams_server, workspace, "payroll") == []


async def test_a_service_that_drops_user_id_is_an_error_not_a_stray_conversation(
    nams_server: NamsTestServer, workspace: str
) -> None:
    dropping = portable(nams_server, workspace, http_transport=Rewriting(drop_user=True))
    async with dropping as alice:
        with pytest.raises(TransportError, match="userId"):
            await alice.add_message("chat", "user", "x", user_identifier="alice")
    assert named(nams_server, workspace, "chat") == []


def _archive(*sessions: tuple[str, str, str | None, str]) -> list[str]:
    """An archive of conversations ``(id, session, user, one message's content)``."""
    records: list[dict[str, Any]] = [
        {
            "record": "header",
            "format": FORMAT,
            "version": 1,
            "created_at": STAMP,
            "source": {"backend": "test", "capabilities": {"flags": {}, "limits": {}}},
        }
    ]
    for n, (cid, session, user, content) in enumerate(sessions):
        records.append(
            {
                "record": "conversation",
                "id": cid,
                "session_id": session,
                "user_identifier": user,
                "metadata": {},
                "created_at": STAMP,
            }
        )
        records.append(
            {
                "record": "message",
                "id": f"00000000-0000-4000-8000-{n:012d}",
                "conversation_id": cid,
                "seq": 0,
                "role": "user",
                "content": content,
                "metadata": {},
                "created_at": STAMP,
            }
        )
    records.append({"record": "end", "counts": {}})
    return [json.dumps(r) + "\n" for r in records]


@pytest.mark.parametrize("mode", ["skip", "new-ids"])
async def test_importing_several_users_keeps_their_portable_names_apart(
    nams_server: NamsTestServer, tmp_path: Path, mode: str
) -> None:
    workspace = NamsTestServer.workspace()
    lines = _archive(
        ("10000000-0000-4000-8000-000000000001", "chat", "alice", "alice's line"),
        ("10000000-0000-4000-8000-000000000002", "chat", "bob", "bob's line"),
        ("10000000-0000-4000-8000-000000000003", "chat", None, "no user's line"),
    )
    async with portable(nams_server, workspace) as target:
        report = await import_memory(
            target, lines, on_conflict=mode, checkpoint=tmp_path / "run.checkpoint"
        )
        assert report.copied["conversation"] == 3 and report.copied["message"] == 3
        assert await texts(target, "chat", "alice") == ["alice's line"]
        assert await texts(target, "chat", "bob") == ["bob's line"]
        assert await texts(target, "chat", None) == ["no user's line"]
    owners = sorted((c["userId"] or "") for c in named(nams_server, workspace, "chat"))
    assert owners == ["", "alice", "bob"]
