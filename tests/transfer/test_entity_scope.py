"""Entities follow the scope of the conversations (session prefix, users) and keep their
tenant: two tenants, each with a session in scope, one out of it and an entity no
message mentions (embedded and PostgreSQL, whose hooks share the rules; Bolt)."""

from __future__ import annotations

import pytest

from memory_core import EntityRef, MemoryBackend, open_backend
from memory_core.transfer import copy_memory
from memory_core_dev.nams_server import NamsTestServer
from tests.transfer.sample import export_lines, of_kind

pytestmark = pytest.mark.anyio

USERS = ("alice", "bob")
PREFIX = "nc-xfer-"
LOST = (
    "entity.user_identifier",
    "the target is not multi-tenant: its entities are shared by every user",
)


async def _two_tenants(backend: MemoryBackend) -> None:
    """Written multi-tenant: per user a session in scope mentioning ``In-<user>``, one out
    of scope mentioning ``Out-<user>``, and ``Loose-<user>``, mentioned by nothing."""
    for user in USERS:
        for session, entity in (
            (f"{PREFIX}{user}", f"In-{user}"),
            (f"other-{user}", f"Out-{user}"),
        ):
            await backend.add_message(
                session,
                "user",
                f"{user} talks about {entity}",
                extraction_mode="explicit",
                explicit_mentions=[EntityRef(name=entity, type="PERSON")],
                user_identifier=user,
            )
        await backend.add_entity(f"Loose-{user}", "CONCEPT", user_identifier=user)


@pytest.fixture(params=["embedded", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    """A fresh store of a backend with a SQL bulk hook."""
    return "memory://" if request.param == "embedded" else request.getfixturevalue("pg_url")


def _entities(lines: list[str]) -> dict[str, str | None]:
    return {e["name"]: e["user_identifier"] for e in of_kind(lines, "entity")}


async def test_an_export_narrowed_to_sessions_carries_only_their_entities(url: str) -> None:
    async with open_backend(url, multi_tenant=True) as source:
        await _two_tenants(source)
        lines = await export_lines(source, session_prefix=PREFIX)
        assert _entities(lines) == {"In-alice": "alice", "In-bob": "bob"}
        assert {c["session_id"] for c in of_kind(lines, "conversation")} == {
            "nc-xfer-alice",
            "nc-xfer-bob",
        }
        everything = _entities(await export_lines(source, users=["bob"]))
        assert everything == {"In-bob": "bob", "Out-bob": "bob", "Loose-bob": "bob"}


async def test_a_single_tenant_target_says_it_loses_the_tenant(url: str) -> None:
    async with (
        open_backend("memory://", multi_tenant=True) as source,
        open_backend(url) as target,
    ):
        await _two_tenants(source)
        report = await copy_memory(source, target, session_prefix=PREFIX)
        assert report.copied["entity"] == 2
        assert report.not_carried[LOST] == 2
        assert [e.name for e in await target.find_entities("In-bob")] == ["In-bob"]


async def test_an_unnarrowed_single_tenant_export_with_users_carries_mentioned_entities(
    url: str,
) -> None:
    async with open_backend(url) as source:
        await source.add_message(
            "s-alice",
            "user",
            "hi",
            extraction_mode="explicit",
            explicit_mentions=[EntityRef(name="Ada", type="PERSON")],
            user_identifier="alice",
        )
        await source.add_entity("Shared", "CONCEPT")
        assert _entities(await export_lines(source, users=["alice"])) == {"Ada": None}
        assert _entities(await export_lines(source)) == {"Ada": None, "Shared": None}


@pytest.mark.neo4j
async def test_a_bolt_export_keeps_tenants_and_scope(
    bolt_url: str, nams_server: NamsTestServer
) -> None:
    async with open_backend(bolt_url, multi_tenant=True) as writer:
        await _two_tenants(writer)
    async with open_backend(bolt_url) as source:  # single-tenant: sees every tenant
        lines = await export_lines(source, session_prefix=PREFIX)
        assert _entities(lines) == {"In-alice": "alice", "In-bob": "bob"}
        alice = _entities(await export_lines(source, users=["alice"]))
        assert alice == {"In-alice": "alice", "Out-alice": "alice", "Loose-alice": "alice"}
        assert len(_entities(await export_lines(source))) == 6

        # Into a multi-tenant store: each entity lands in its own tenant.
        async with open_backend("memory://", multi_tenant=True) as target:
            report = await copy_memory(source, target, session_prefix=PREFIX)
            assert report.copied["entity"] == 2 and not report.not_carried
            for user in USERS:
                found = await target.find_entities(f"In-{user}", user_identifier=user)
                assert [e.name for e in found] == [f"In-{user}"]
                other = "bob" if user == "alice" else "alice"
                assert await target.find_entities(f"In-{user}", user_identifier=other) == []

        # Into NAMS (entities per workspace): only the scope's, and the lost tenant is said.
        async with nams_server.backend(
            NamsTestServer.workspace(), session_names="portable"
        ) as nams:
            report = await copy_memory(source, nams, session_prefix=PREFIX)
            assert report.copied["entity"] == 2
            assert report.not_carried[LOST] == 2
            # find_entities may add close matches ("In-alice") after exact ones
            assert "Out-alice" not in [e.name for e in await nams.find_entities("Out-alice")]
            found = [e.name for e in await nams.find_entities("In-alice")]
            assert found[0] == "In-alice" and found.count("In-alice") == 1, found
            conversation = await nams.get_conversation("nc-xfer-alice", user_identifier="alice")
            assert conversation.user_identifier == "alice"
            assert len(conversation.messages) == 1


@pytest.mark.neo4j
async def test_a_single_tenant_bolt_target_keeps_each_entitys_tenant(bolt_url: str) -> None:
    async with (
        open_backend("memory://", multi_tenant=True) as source,
        open_backend(bolt_url) as bolt,
    ):
        await _two_tenants(source)
        report = await copy_memory(source, bolt, session_prefix=PREFIX)
        assert report.copied["entity"] == 2 and not report.not_carried
    async with open_backend(bolt_url, multi_tenant=True) as reader:
        for user, other in (("alice", "bob"), ("bob", "alice")):
            found = await reader.find_entities(f"In-{user}", user_identifier=user)
            assert [e.name for e in found] == [f"In-{user}"]
            assert await reader.find_entities(f"In-{user}", user_identifier=other) == []
