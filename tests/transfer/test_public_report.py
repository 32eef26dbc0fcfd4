"""The public path's report, whole: what a target without a bulk hook (or under
``new-ids``) could not carry, per field and reason, and what it skipped. The sample
archive goes into the conformance suite's toy backend (no entities, no caller
timestamps) and into a multi-tenant store (records without a user are skipped)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from memory_core import HashingEmbedder, open_backend, register_backend
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
