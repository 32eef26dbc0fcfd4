"""Exporting through the public contract (stores without a bulk hook): paging through
list_sessions, the list_conversations fallback, prefixes, users and truncated reads."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from memory_core import EntityRef, InvalidRequestError, MemoryBackend
from memory_core.backends.embedded import EmbeddedStore
from memory_core.transfer import TransferReport, iter_records
from memory_core.transfer import export as export_module

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::memory_core.CapabilityWarning"),
]


class _PublicStore(EmbeddedStore):
    def bulk_transfer(self) -> None:
        return None


class _NoListingStore(_PublicStore):
    capabilities = replace(EmbeddedStore.capabilities, list_sessions=False)


class _CappedStore(_PublicStore):
    capabilities = replace(
        EmbeddedStore.capabilities,
        max_messages_per_read=5,
        default_messages_per_read=2,
        full_history=False,
    )


class _SmallDefaultStore(_PublicStore):
    capabilities = replace(EmbeddedStore.capabilities, default_messages_per_read=2)


def _backend(store: type[EmbeddedStore], **options: Any) -> MemoryBackend:
    class Backend(MemoryBackend):
        store_class = store

    return Backend("memory://", **options)


async def _records(backend: Any, **options: Any) -> list[dict[str, Any]]:
    """The exported records; stops (failing) on a paging loop that never ends."""
    found = []
    async for record in iter_records(backend, **options):
        found.append(record)
        assert len(found) < 1000, "the export does not end"
    return found


def _sessions(records: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [
        (r["session_id"], r["user_identifier"]) for r in records if r["record"] == "conversation"
    ]


@pytest.mark.parametrize("store", [_PublicStore, _NoListingStore])
async def test_pages_of_sessions_are_read_in_name_order_within_the_prefix(
    store: type[EmbeddedStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_module, "LIST_PAGE", 2)
    async with _backend(store, multi_tenant=True) as source:
        for name in ("p-c", "p-a", "q-x", "p-e", "p-b", "p-d"):
            await source.add_message(name, "user", name, user_identifier="alice")
        await source.add_message("p-z", "user", "bob's", user_identifier="bob")
        records = await _records(source, users=["alice"], session_prefix="p-")
    names = [f"p-{c}" for c in "abcde"]
    assert _sessions(records) == [(n, "alice") for n in names]
    assert [r["content"] for r in records if r["record"] == "message"] == names


@pytest.mark.parametrize("store", [_PublicStore, _NoListingStore])
async def test_more_sessions_than_one_default_listing_are_all_exported(
    store: type[EmbeddedStore],
) -> None:
    async with _backend(store) as source:
        for n in range(101):
            await source.add_message(f"s{n:03}", "user", "hi")
        records = await _records(source)
    assert [s for s, _ in _sessions(records)] == [f"s{n:03}" for n in range(101)]


async def test_one_session_name_of_two_users_is_read_per_user() -> None:
    async with _backend(_PublicStore, multi_tenant=True) as source:
        await source.add_message("chat", "user", "alice's", user_identifier="alice")
        await source.add_message("chat", "user", "bob's", user_identifier="bob")
        records = await _records(source, users=["alice", "bob"])
    assert _sessions(records) == [("chat", "alice"), ("chat", "bob")]
    assert [r["content"] for r in records if r["record"] == "message"] == ["alice's", "bob's"]


async def test_a_multi_tenant_store_without_users_is_refused_naming_users() -> None:
    async with _backend(_PublicStore, multi_tenant=True) as source:
        with pytest.raises(InvalidRequestError) as caught:
            await _records(source)
    assert caught.value.argument == "users"


async def test_a_capped_read_exports_the_newest_messages_as_truncated() -> None:
    report = TransferReport()
    async with _backend(_CappedStore) as source:
        await source.add_messages_batch(
            "s", [{"role": "user", "content": f"m{i}"} for i in range(7)]
        )
        conversation = await source.get_conversation("s", limit=1)
        records = await _records(source, report=report)
    header = next(r for r in records if r["record"] == "conversation")
    assert (header["message_count"], header["truncated"]) == (5, True)
    assert [r["content"] for r in records if r["record"] == "message"] == [
        f"m{i}" for i in range(2, 7)
    ]
    assert report.truncated == [
        {"session_id": "s", "conversation_id": str(conversation.id), "exported": 5}
    ]


async def test_an_uncapped_read_exports_every_message() -> None:
    async with _backend(_SmallDefaultStore) as source:
        await source.add_messages_batch(
            "s", [{"role": "user", "content": f"m{i}"} for i in range(4)]
        )
        records = await _records(source)
    assert sum(r["record"] == "message" for r in records) == 4
    assert next(r for r in records if r["record"] == "conversation")["truncated"] is False


async def _mention_ada(source: Any, user: str | None) -> None:
    await source.add_message(
        "s",
        "user",
        "Ada",
        extraction_mode="explicit",
        explicit_mentions=[EntityRef(name="Ada", type="PERSON")],
        user_identifier=user,
    )


async def test_a_users_records_carry_the_user_where_reads_do_not_say() -> None:
    source = _backend(_PublicStore, multi_tenant=True)
    async with source:
        await _mention_ada(source, "alice")
        read = source.get_conversation

        async def anonymous(*args: Any, **kwargs: Any) -> Any:
            found = await read(*args, **kwargs)
            return found.model_copy(update={"user_identifier": None})

        source.get_conversation = anonymous  # type: ignore[method-assign]
        records = await _records(source, users=["alice"])
    assert _sessions(records) == [("s", "alice")]
    entity = next(r for r in records if r["record"] == "entity")
    mention = next(r for r in records if r["record"] == "mention")
    assert (entity["id"], entity["name"]) == (mention["entity_id"], "Ada")
    assert entity["user_identifier"] == "alice"
    assert entity["created_at"] is not None  # read back from the store, not rebuilt


async def test_an_entity_that_cannot_be_read_is_rebuilt_from_its_mention() -> None:
    source = _backend(_PublicStore)
    async with source:
        await _mention_ada(source, None)

        async def nothing(*args: Any, **kwargs: Any) -> list[Any]:
            return []

        source.find_entities = nothing  # type: ignore[method-assign]
        records = await _records(source)
    entity = next(r for r in records if r["record"] == "entity")
    mention = next(r for r in records if r["record"] == "mention")
    assert (entity["id"], entity["name"], entity["type"]) == (mention["entity_id"], "Ada", "PERSON")
    assert entity["created_at"] is None


def _mentioning(source: Any, name: str | None, kind: str | None) -> None:
    """Reads of ``source`` whose mentions say ``name`` and ``kind`` (what a store that
    keeps only the reference, such as a hosted one, hands back)."""
    read = source.get_conversation

    async def rewritten(*args: Any, **kwargs: Any) -> Any:
        found = await read(*args, **kwargs)
        messages = [
            m.model_copy(
                update={
                    "mentions": [
                        r.model_copy(update={"name": name, "type": kind}) for r in m.mentions
                    ]
                }
            )
            for m in found.messages
        ]
        return found.model_copy(update={"messages": messages})

    source.get_conversation = rewritten


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("Ada", "person", ("Ada", "PERSON")),  # a known type, in any case
        ("Ada", "starship", ("Ada", "CUSTOM")),  # not one of EntityType: CUSTOM
        (None, None, (None, "CUSTOM")),  # nothing said: the id names it
    ],
)
async def test_a_rebuilt_entity_record_has_every_field_of_a_read_one(
    name: str | None, kind: str | None, expected: tuple[str | None, str]
) -> None:
    """An entity the store cannot read back (find_entities finds nothing, or fails) is
    rebuilt from its mention: a whole, valid record, shaped as an exported one."""
    async with _backend(_PublicStore) as source:
        await _mention_ada(source, None)
        read_back = next(r for r in await _records(source) if r["record"] == "entity")

        async def failing(*args: Any, **kwargs: Any) -> list[Any]:
            raise InvalidRequestError("no entity search here", argument="query")

        source.find_entities = failing  # type: ignore[method-assign]
        _mentioning(source, name, kind)
        records = await _records(source)
    entity = next(r for r in records if r["record"] == "entity")
    mention = next(r for r in records if r["record"] == "mention")
    assert entity.keys() == read_back.keys()
    assert entity["id"] == mention["entity_id"] == read_back["id"]
    assert (entity["name"], entity["type"]) == (expected[0] or entity["id"], expected[1])
    assert (entity["description"], entity["created_at"], entity["updated_at"]) == (None,) * 3
    assert entity["user_identifier"] is None


async def test_a_rebuilt_entity_record_keeps_its_user_in_a_multi_tenant_store() -> None:
    async with _backend(_PublicStore, multi_tenant=True) as source:
        await _mention_ada(source, "alice")

        async def nothing(*args: Any, **kwargs: Any) -> list[Any]:
            return []

        source.find_entities = nothing  # type: ignore[method-assign]
        records = await _records(source, users=["alice"])
    entity = next(r for r in records if r["record"] == "entity")
    assert (entity["name"], entity["user_identifier"]) == ("Ada", "alice")
