"""The public path's report, whole: what a target without a bulk hook (or under
``new-ids``) could not carry, per field and reason, and what it skipped. The sample
archive goes into the conformance suite's toy backend (no entities, no caller
timestamps) and into a multi-tenant store (records without a user are skipped)."""

from __future__ import annotations

import io
import json
import warnings
from typing import Any

import pytest

from memory_core import (
    CapabilityWarning,
    HashingEmbedder,
    InvalidRequestError,
    open_backend,
    register_backend,
)
from memory_core.archive.hooks import TENANT_LOST
from memory_core.transfer import export_memory, import_memory
from tests.transfer.sample import MENTIONS, MESSAGES, populate

pytestmark = pytest.mark.anyio

NEW_IDS = "the target issues ids (no bulk hook, or on_conflict='new-ids')"
SET_BY_API = "the public API sets it"


@pytest.fixture
async def archive() -> str:
    async with open_backend("memory://", embedder=HashingEmbedder(dimensions=8)) as source:
        await populate(source)
        out = io.StringIO()
        await export_memory(source, out)
    return out.getvalue()


def _pairs(items: list[dict[str, Any]], key: str) -> dict[tuple[str, str], int]:
    return {(item[key], item["reason"]): item["count"] for item in items}


async def test_a_target_without_entities_reports_every_field_it_drops(archive: str) -> None:
    register_backend("toy", "memory_core.conformance.example_backend:ToyStore")
    async with open_backend("toy://") as target:
        report = (await import_memory(target, io.StringIO(archive))).as_dict()
    assert {k: n for k, n in report["copied"].items() if n} == {
        "conversation": 2,
        "message": MESSAGES,
    }
    assert report["skipped"] == []
    assert _pairs(report["not_carried"], "field") == {
        ("entity", "toy stores no entities"): 4,
        ("mention", "its entity was not carried"): MENTIONS,
        ("conversation.id", "the target chose its own id for the session"): 2,
        ("conversation.created_at", SET_BY_API): 2,
        ("conversation.updated_at", SET_BY_API): 2,
        ("message.id", NEW_IDS): MESSAGES,
        ("message.created_at", "toy sets message timestamps here"): MESSAGES,
        ("message.embedding", "the public API takes no embeddings"): MESSAGES,
    }


async def test_new_ids_on_a_full_target_loses_only_ids_stamps_and_embeddings(
    archive: str,
) -> None:
    async with open_backend("memory://") as target:
        report = (
            await import_memory(target, io.StringIO(archive), on_conflict="new-ids")
        ).as_dict()
    assert report["copied"] == {"entity": 4, "conversation": 2, "message": MESSAGES, "mention": 3}
    lost = _pairs(report["not_carried"], "field")
    assert {field for field, _ in lost} == {
        "entity.id",
        "entity.created_at",
        "entity.updated_at",
        "conversation.created_at",
        "conversation.updated_at",
        "message.id",
        "message.embedding",
        "message.created_at",
    }
    assert lost[("entity.id", NEW_IDS)] == 4
    assert lost[("entity.created_at", SET_BY_API)] == 4
    assert lost[("message.id", NEW_IDS)] == MESSAGES
    assert lost[("message.embedding", "the public API takes no embeddings")] == MESSAGES


async def test_records_without_a_user_are_skipped_by_a_multi_tenant_target(archive: str) -> None:
    async with open_backend("memory://", multi_tenant=True) as target:
        report = (
            await import_memory(target, io.StringIO(archive), on_conflict="new-ids")
        ).as_dict()
    assert report["copied"] == {}
    no_user = "no user_identifier and the target is multi-tenant"
    assert _pairs(report["skipped"], "kind") == {
        ("entity", no_user): 4,
        ("conversation", no_user): 2,
        ("message", "its conversation was not carried"): MESSAGES,
        ("mention", "its message was not written in this run"): MENTIONS,
    }


def _lines(archive: str, **changes: dict[str, Any]) -> str:
    """The archive with the fields of ``changes[kind]`` set on every record of that kind."""
    records = [json.loads(line) for line in archive.splitlines()]
    for record in records:
        record.update(changes.get(record["record"], {}))
    return "\n".join(json.dumps(record) for record in records) + "\n"


async def test_an_entity_the_target_refuses_is_reported_with_its_mentions(archive: str) -> None:
    async with open_backend("memory://") as target:

        async def refuse(*args: Any, **kwargs: Any) -> Any:
            raise InvalidRequestError("no entities of this kind", argument="type")

        target.add_entity = refuse  # type: ignore[method-assign]
        report = await import_memory(target, io.StringIO(archive), on_conflict="new-ids")
        kept = await target.get_conversation("chat-1")
    lost = _pairs(report.as_dict()["not_carried"], "field")
    refused = "refused by the target: type: no entities of this kind"
    assert lost[("entity", refused)] == 4
    assert lost[("mention", "its entity was not carried")] == MENTIONS
    assert report.copied["message"] == MESSAGES and report.copied["mention"] == 0
    assert all(m.mentions == [] for m in kept.messages)


async def test_entities_without_a_user_leave_their_mentions_out_of_a_tenants_messages(
    archive: str,
) -> None:
    """A multi-tenant target skips the entities (no user) but writes the user's messages;
    their mentions of those entities are reported, not written."""
    owned = _lines(archive, conversation={"user_identifier": "alice"})
    async with open_backend("memory://", multi_tenant=True) as target:
        report = await import_memory(target, io.StringIO(owned), on_conflict="new-ids")
        kept = await target.get_conversation("chat-1", user_identifier="alice")
    no_user = "no user_identifier and the target is multi-tenant"
    assert _pairs(report.as_dict()["skipped"], "kind") == {("entity", no_user): 4}
    lost = _pairs(report.as_dict()["not_carried"], "field")
    assert lost[("mention", "its entity was not carried")] == MENTIONS
    assert report.copied["message"] == MESSAGES
    assert all(m.mentions == [] for m in kept.messages)


async def test_a_single_tenant_target_reports_the_tenant_of_each_entity(archive: str) -> None:
    """... and never hands the tenant to it (which would only warn that it was dropped)."""
    alice = {"user_identifier": "alice"}
    owned = _lines(archive, entity=alice, conversation=alice)
    async with open_backend("memory://") as target:
        with warnings.catch_warnings():
            warnings.simplefilter("error", CapabilityWarning)
            report = await import_memory(target, io.StringIO(owned), on_conflict="new-ids")
    lost = _pairs(report.as_dict()["not_carried"], "field")
    assert lost[("entity.user_identifier", TENANT_LOST)] == 4


async def test_entity_stamps_are_lost_only_where_they_differ(archive: str) -> None:
    """Back into the store it came from, each entity is found again with its own stamps:
    nothing of an entity is reported lost. A record without stamps loses none either."""
    async with open_backend("memory://") as source:
        await populate(source)
        out = io.StringIO()
        await export_memory(source, out)
        again = await import_memory(source, io.StringIO(out.getvalue()), on_conflict="new-ids")
    assert not [f for f in again.as_dict()["not_carried"] if f["field"].startswith("entity")]
    unstamped = _lines(archive, entity={"created_at": None, "updated_at": None})
    async with open_backend("memory://") as target:
        report = await import_memory(target, io.StringIO(unstamped), on_conflict="new-ids")
    fields = {f["field"] for f in report.as_dict()["not_carried"]}
    assert "entity.created_at" not in fields and "entity.updated_at" not in fields
    assert report.copied["entity"] == 4


async def test_an_export_to_a_stream_reports_what_it_wrote() -> None:
    seen: list[int] = []
    async with open_backend("memory://") as source:
        await populate(source)
        report = await export_memory(
            source, io.StringIO(), on_progress=lambda r: seen.append(r.messages_done)
        )
    assert dict(report.copied) == {
        "entity": 4,
        "conversation": 2,
        "message": MESSAGES,
        "mention": 3,
    }
    assert seen and seen[-1] == MESSAGES


@pytest.mark.parametrize("users", [{"alice"}, "alice", 7])
async def test_users_must_be_a_list_of_names(users: Any) -> None:
    async with open_backend("memory://") as source:
        with pytest.raises(InvalidRequestError) as refused:
            await export_memory(source, io.StringIO(), users=users)
    assert refused.value.argument == "users"


async def test_the_header_says_where_the_archive_came_from_and_its_scope() -> None:
    """docs/transfer.md: ``source: {backend, location, multi_tenant, capabilities}`` and
    ``scope: {users, session_prefix}``."""
    async with open_backend("memory://", multi_tenant=True) as source:
        await populate(source, "alice")
        out = io.StringIO()
        await export_memory(source, out, users=["alice"], session_prefix="chat-")
    header = json.loads(out.getvalue().splitlines()[0])
    assert header["source"].keys() == {"backend", "location", "multi_tenant", "capabilities"}
    assert header["source"]["multi_tenant"] is True
    assert header["source"]["location"] == "memory://"
    assert header["scope"] == {"users": ["alice"], "session_prefix": "chat-"}
