"""What a public-API import hands the target: mentions through add_message, no
extraction of its own, nothing a target without the capability cannot take."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from memory_core import EntityRef, MemoryBackend, open_backend
from memory_core.backends.embedded import EmbeddedStore
from memory_core.transfer import copy_memory
from tests.transfer.sample import export_lines, of_kind, populate

pytestmark = pytest.mark.anyio


class _PublicStore(EmbeddedStore):
    def bulk_transfer(self) -> None:
        return None


def _target(**flags: Any) -> MemoryBackend:
    """A strict public-only target (an argument it cannot honour raises)."""

    class Store(_PublicStore):
        capabilities = replace(EmbeddedStore.capabilities, **flags)

    class Backend(MemoryBackend):
        store_class = Store

    return Backend("memory://", strict=True)


async def _two_mentions_of_ada(source: Any) -> None:
    ada = [EntityRef(name="Ada", type="PERSON"), EntityRef(name="Lisbon", type="LOCATION")]
    for text in ("Ada goes to Lisbon", "Ada is back from Lisbon"):
        await source.add_message(
            "s", "user", text, extraction_mode="explicit", explicit_mentions=ada
        )


async def test_mentions_without_a_key_go_through_add_message() -> None:
    async with open_backend("memory://") as source, _target() as target:
        await _two_mentions_of_ada(source)
        report = await copy_memory(source, target)
        assert report.copied["mention"] == 4
        stored = await target.get_conversation("s")
        assert [sorted(r.name or "" for r in m.mentions) for m in stored.messages] == [
            ["Ada", "Lisbon"],
            ["Ada", "Lisbon"],
        ]


async def test_an_entity_mentioned_twice_is_exported_once() -> None:
    async with open_backend("memory://") as source:
        await _two_mentions_of_ada(source)
        source.store.bulk_transfer = lambda: None  # type: ignore[method-assign]
        lines = await export_lines(source)
    assert sorted(e["name"] for e in of_kind(lines, "entity")) == ["Ada", "Lisbon"]
    assert len(of_kind(lines, "mention")) == 4


async def test_the_import_runs_no_extraction_in_the_target() -> None:
    def extractor(text: str) -> list[EntityRef]:
        return [EntityRef(name="Extracted", type="PERSON")]

    async with (
        open_backend("memory://") as source,
        open_backend("memory://", extractor=extractor) as target,
    ):
        await source.add_messages_batch("s", [{"role": "user", "content": "plain"}])
        target.store.bulk_transfer = lambda: None  # type: ignore[method-assign]
        await copy_memory(source, target)
        stored = await target.get_conversation("s")
        assert [m.mentions for m in stored.messages] == [[]]
        assert await target.find_entities("Extracted") == []


@pytest.mark.parametrize(
    ("flag", "field"),
    [
        ("message_metadata", "message.metadata"),
        ("explicit_mentions", "mention"),
        ("idempotency_keys", "message.idempotency_key"),
    ],
)
async def test_a_strict_target_is_never_handed_what_it_cannot_hold(flag: str, field: str) -> None:
    async with open_backend("memory://") as source, _target(**{flag: False}) as target:
        await populate(source)
        report = await copy_memory(source, target)
        assert field in {name for name, _ in report.not_carried}
        messages = of_kind(await export_lines(source), "message")
        assert report.copied["message"] == len(messages)
