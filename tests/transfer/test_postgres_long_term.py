"""The PostgreSQL bulk hook and the long-term records (real PostgreSQL): what it exports
equals the embedded store's export of the same data, line by line, whatever the scope;
what it imports keeps every field (NUL and U+0001 in texts, metadata key order,
embeddings as given, supersede links) and is found by search at once; re-runs count
each record once; no record reaches another tenant. Also the entities it imports:
searchable at once, and by their new words only once overwritten."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest

from memory_core import HashingEmbedder, MemoryBackend, open_backend
from memory_core.backends.postgres import transfer_long_term
from memory_core.transfer import copy_memory, export_memory, import_memory
from tests.reliability.archives import STAMP, archive, conversation, entity, message
from tests.transfer.sample import BASE, LONG_TERM, export_lines, of_kind
from tests.transfer.test_long_term import FACT, KINDS, PREFERENCE, RELATIONSHIP, _fill, _header

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::memory_core.CapabilityWarning"),
]

CID = "0b7e7c1a-8f0e-4a52-9a57-3c2d6b1e0a01"
MID = "1c0de000-0000-4000-8000-000000000000"
LATER = "2026-05-21T09:30:00.000001Z"
AWKWARD: dict[str, Any] = {"z\x00": "nul\x00 and \x01one", "a": [1, 1.0, None, {"\x01": {}}]}


def _awkward_archive() -> list[str]:
    """A version-2 archive whose long-term records hold every awkward value: NUL and
    U+0001 in texts, metadata and properties (key order not sorted), embeddings of
    integers, zeros and none at all, a preference superseded by one after it, a
    validity window to the microsecond."""
    lines = archive(
        {**entity("e-1", None, "Acme Corp"), "description": "a customer", "created_at": STAMP},
        {**entity("e-2", None, "Ada\x00 Lovelace", "PERSON"), "created_at": STAMP},
        conversation(CID, "chat", None),
        message(MID, CID, "hello"),
        {**RELATIONSHIP, "properties": AWKWARD, "confidence": 0.25, "valid_from": STAMP},
        {**RELATIONSHIP, "id": "rel-0", "source_id": "e-2", "target_id": "e-2", "type": "SELF"},
        {
            **PREFERENCE,
            "id": "pref-2",
            "category": "fo\x00od\x01",
            "preference": "likes tea\x00 with \x01 milk",
            "context": "at\x00 noon",
            "linked_entities": ["e-2", "e-1"],
            "metadata": AWKWARD,
            "superseded_at": LATER,
            "superseded_by": "pref-3",
            "embedding": [1, 0, 2.5],
        },
        {**PREFERENCE, "id": "pref-3", "preference": "likes coffee", "embedding": [0.0, 0.0]},
        {**PREFERENCE, "id": "pref-4", "preference": "likes water", "embedding": []},
        {
            **FACT,
            "subject": "Ada\x00 Lovelace",
            "predicate": "WORKS\x01AT",
            "object": "Acme\x00 ✓",
            "valid_from": STAMP,
            "valid_until": LATER,
            "metadata": AWKWARD,
            "embedding": [3, -0.5],
        },
        {**FACT, "id": "fact-2", "source_message_id": None, "object": "Lisbon"},
    )
    return [_header(2), *lines[1:]]


async def test_an_awkward_archive_arrives_in_postgres_as_in_the_embedded_store(
    pg_url: str,
) -> None:
    lines = _awkward_archive()
    async with open_backend("memory://") as embedded, open_backend(pg_url) as pg:
        expected = await import_memory(embedded, lines)
        report = await import_memory(pg, lines)
        assert report.copied == expected.copied
        assert {kind: report.copied[kind] for kind in KINDS} == {
            "relationship": 2,
            "preference": 3,
            "fact": 2,
        }
        assert not report.skipped and not report.not_carried, report.summary()
        first = await export_lines(embedded)
        assert await export_lines(pg) == first
        spicy = next(p for p in of_kind(first, "preference") if p["id"] == "pref-2")
        assert list(spicy["metadata"]) == ["z\x00", "a"]  # the control: as written
        assert spicy["embedding"] == [1.0, 0.0, 2.5] and spicy["superseded_by"] == "pref-3"
        # Search finds what was imported, at once, by words of the escaped texts too.
        found = await pg.search_preferences("tea", include_superseded=True)
        assert [(p.id, p.category) for p in found] == [("pref-2", "fo\x00od\x01")]
        assert [f.id for f in await pg.search_facts("acme")] == ["fact-1"]
        assert [f.id for f in await pg.facts_about("ADA\x00 LOVELACE")] == ["fact-1"]
        assert [e.id for e in await pg.search_entities("lovelace")] == ["e-2"]
        assert [e.id for e in await pg.related_entities("e-1")] == ["e-2"]


async def test_a_single_tenant_store_exports_what_the_embedded_one_does_in_every_scope(
    pg_url: str,
) -> None:
    async with (
        open_backend("memory://", embedder=HashingEmbedder(8)) as source,
        open_backend(pg_url) as pg,
        open_backend("memory://") as back,
    ):
        await _fill(source, "alice", "bob")
        await source.add_entity("Nobody's", "CONCEPT")
        report = await copy_memory(source, pg)
        assert not report.skipped and not report.not_carried, report.summary()
        assert {kind: report.copied[kind] for kind in KINDS} == {
            "relationship": LONG_TERM["relationship"],  # one set of shared entities
            "preference": 2 * LONG_TERM["preference"],
            "fact": 2 * LONG_TERM["fact"],
        }
        for scope in ({}, {"users": ["alice"]}, {"session_prefix": "alice-chat-1"}):
            assert await export_lines(pg, **scope) == await export_lines(source, **scope)
        alice = await export_lines(pg, users=["alice"])
        assert {p["user_identifier"] for p in of_kind(alice, "preference")} == {"alice"}
        assert len(of_kind(alice, "relationship")) == LONG_TERM["relationship"]
        assert "Nobody's" not in {e["name"] for e in of_kind(alice, "entity")}
        await copy_memory(pg, back)
        assert await export_lines(back) == await export_lines(source)


async def test_an_imported_store_answers_search_and_traversal(pg_url: str) -> None:
    async with (
        open_backend("memory://", embedder=HashingEmbedder(8)) as source,
        open_backend(pg_url) as target,
    ):
        await _fill(source)
        await copy_memory(source, target)
        assert [p.preference for p in await target.search_preferences("mild")] == [
            "likes mild food"
        ]
        assert await target.search_preferences("spicy") == []  # superseded
        assert len(await target.search_preferences("spicy", include_superseded=True)) == 1
        assert [f.object for f in await target.search_facts("portugal")] == ["Portugal"]
        assert [e.name for e in await target.search_entities("acme")] == ["Acme Corp"]
        ada = (await target.find_entities("Ada"))[0]
        assert {e.name for e in await target.related_entities(ada.id, depth=2)} == {
            "Acme Corp",
            "Lisbon",
        }
        during = await target.facts_about("ada", as_of=BASE + timedelta(days=1))
        assert [f.predicate for f in during] == ["WORKS_AT"]
        assert await target.facts_about("ada", as_of=BASE + timedelta(days=31)) == []
        current = {p.preference for p in await target.list_preferences()}
        assert current == {"likes mild food", "trains over planes"}


async def test_tenants_holding_only_long_term_records_are_exported(pg_url: str) -> None:
    async with (
        open_backend("memory://", multi_tenant=True, embedder=HashingEmbedder(8)) as source,
        open_backend(pg_url, multi_tenant=True) as pg,
        open_backend("memory://", multi_tenant=True) as back,
    ):
        await _fill(source, "alice")
        await source.add_preference("travel", "aisle seat", user_identifier="carol")
        await source.add_fact("Dave", "LIVES_IN", "Porto", user_identifier="dave")
        first = await export_lines(source)
        assert {r["user_identifier"] for r in of_kind(first, "preference")} >= {"carol"}
        report = await copy_memory(source, pg)
        assert not report.skipped and not report.not_carried, report.summary()
        assert await export_lines(pg) == first
        for user in ("carol", "dave"):
            assert await export_lines(pg, users=[user]) == await export_lines(source, users=[user])
        await copy_memory(pg, back)
        assert await export_lines(back) == first


async def test_long_term_records_are_read_in_pages_in_byte_order(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of two records: ids that sort differently under a language collation
    (upper and lower case, accents) come out in the embedded store's byte order."""
    monkeypatch.setattr(transfer_long_term, "PAGE", 2)
    ids = ["b", "B", "a", "É", "e", "_z", "Z"]
    lines = archive(*({**PREFERENCE, "id": i, "linked_entities": []} for i in ids))
    async with open_backend("memory://") as embedded, open_backend(pg_url) as pg:
        for target in (embedded, pg):
            await import_memory(target, [_header(2), *lines[1:]])
        exported = await export_lines(pg)
        assert [p["id"] for p in of_kind(exported, "preference")] == sorted(ids)
        assert exported == await export_lines(embedded)


async def test_a_re_import_skips_each_record_once_and_overwrite_restores(pg_url: str) -> None:
    async with (
        open_backend("memory://", embedder=HashingEmbedder(8)) as source,
        open_backend(pg_url) as target,
    ):
        await _fill(source)
        out = io.StringIO()
        await export_memory(source, out)
        text = out.getvalue()
        first = await export_lines(source)
        await import_memory(target, io.StringIO(text))
        again = await import_memory(target, io.StringIO(text))
        for kind, count in LONG_TERM.items():
            assert again.copied[kind] == 0
            assert again.skipped[(kind, "already in the target")] == count
        fact = of_kind(first, "fact")[0]
        assert await target.delete_fact(fact["id"])
        ada = (await target.find_entities("Ada"))[0]
        link = (await target.list_relationships(ada.id, direction="out"))[0]
        assert await target.delete_relationship(link.id)
        await target.add_relationship(link.source_id, link.target_id, link.type)  # another id
        skipped = await import_memory(target, io.StringIO(text))
        same = "a relationship with this source, type and target is already in the target"
        assert skipped.skipped[("relationship", same)] == 1
        assert skipped.copied["fact"] == 1 and skipped.copied["relationship"] == 0
        restored = await import_memory(target, io.StringIO(text), on_conflict="overwrite")
        assert {kind: restored.copied[kind] for kind in KINDS} == LONG_TERM
        assert await export_lines(target) == first


async def test_a_record_never_takes_or_links_another_tenants_long_term_memory(
    pg_url: str,
) -> None:
    """As the embedded test of that name: Mallory's archive reuses the ids of Alice's
    records and links Alice's entity."""
    alice = [
        entity("e-1", "alice", "Acme Corp"),
        entity("e-2", "alice", "Ada", "PERSON"),
        {**RELATIONSHIP, "user_identifier": "alice"},
        PREFERENCE,
        FACT,
    ]
    mallory = [
        entity("e-1", "alice", "Acme Corp"),
        entity("e-m", "mallory", "Mallory Corp"),
        {**RELATIONSHIP, "user_identifier": "mallory", "source_id": "e-m", "target_id": "e-1"},
        {**PREFERENCE, "user_identifier": "mallory", "linked_entities": ["e-m", "e-1"]},
        {
            **PREFERENCE,
            "id": "pref-0",
            "user_identifier": "mallory",
            "linked_entities": [],
            "superseded_at": STAMP,
            "superseded_by": "pref-1",
        },
        {**FACT, "user_identifier": "mallory", "object": "Mallory Corp"},
    ]
    async with open_backend(pg_url, multi_tenant=True) as target:
        await import_memory(target, [_header(2), *archive(*alice)[1:]])
        before = await export_lines(target, users=["alice"])
        assert len(of_kind(before, "preference")) == 1
        report = await import_memory(target, [_header(2), *archive(*mallory)[1:]])
        assert await export_lines(target, users=["alice"]) == before
        renamed = "its id belongs to another tenant in the target: it got an id of its own tenant"
        assert report.not_carried[("preference.id", renamed)] == 1
        assert report.not_carried[("fact.id", renamed)] == 1
        foreign = "its entity belongs to another tenant"
        assert report.not_carried[("preference.linked_entities", foreign)] == 1
        assert report.skipped[("relationship", foreign)] == 1
        held = {
            p.id: p
            for p in await target.list_preferences(
                include_superseded=True, user_identifier="mallory"
            )
        }
        assert "pref-1" not in held and len(held) == 2
        mine = next(p for p in held.values() if p.id != "pref-0")
        assert held["pref-0"].superseded_by == mine.id
        assert mine.linked_entities == ["e-m"]
        facts = await target.facts_about("Ada", user_identifier="mallory")
        assert [f.object for f in facts] == ["Mallory Corp"] and facts[0].id != "fact-1"
        # A re-run finds Mallory's records under the ids they got.
        again = await import_memory(target, [_header(2), *archive(*mallory)[1:]])
        assert again.copied["preference"] == 0 and again.copied["fact"] == 0


# ---------------------------------------------------------------------------- entities


def _described(description: str) -> list[str]:
    return archive({**entity("e-1", None, "Acme Corp"), "description": description})


async def _names(backend: MemoryBackend, query: str) -> list[str]:
    return [e.id for e in await backend.search_entities(query)]


async def test_an_imported_entity_is_searchable_at_once_by_its_current_words(
    pg_url: str,
) -> None:
    """No reconnect between import and search: the words are the import's own."""
    async with open_backend(pg_url) as pg:
        await import_memory(pg, _described("a loyal customer"))
        assert await _names(pg, "acme") == ["e-1"]
        assert await _names(pg, "customer") == ["e-1"]
        report = await import_memory(pg, _described("a new supplier"), on_conflict="overwrite")
        assert report.copied["entity"] == 1
        assert await _names(pg, "supplier") == ["e-1"]
        assert await _names(pg, "customer") == []
        assert (await pg.find_entities("e-1"))[0].description == "a new supplier"
