"""Relationships, preferences and facts through the Bolt bulk transfer (real Neo4j): an
import is searchable and walkable, re-imports skip and overwrites restore, a narrowed
export holds what the embedded one holds, no record crosses tenants, and a successor
that comes later in the archive (or in a resumed import) is linked."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from neo4j import GraphDatabase

from memory_core import HashingEmbedder, open_backend
from memory_core.backends.bolt import transfer as bolt_transfer
from memory_core.transfer import copy_memory, export_memory, import_memory, importer
from memory_core_dev.neo4j_fixtures import Neo4jHandle
from tests.reliability.archives import STAMP, archive, entity
from tests.transfer.sample import BASE, LONG_TERM, export_lines, of_kind
from tests.transfer.test_long_term import (
    FACT,
    KINDS,
    PREFERENCE,
    RELATIONSHIP,
    _fill,
    _header,
    _v2,
    records_of,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::memory_core.CapabilityWarning"),
]


def _graph(server: Neo4jHandle, query: str) -> list[dict[str, Any]]:
    with GraphDatabase.driver(server.uri, auth=server.auth) as driver:
        records, _, _ = driver.execute_query(query)
    return [record.data() for record in records]


async def test_search_and_traversal_work_on_bolt_after_an_import(bolt_url: str) -> None:
    async with (
        open_backend("memory://", embedder=HashingEmbedder(dimensions=8)) as source,
        open_backend(bolt_url, embedder=HashingEmbedder()) as bolt,
    ):
        await _fill(source)
        report = await copy_memory(source, bolt)
        assert {kind: report.copied[kind] for kind in KINDS} == LONG_TERM
        assert not report.not_carried and not report.skipped, report.summary()
        assert [p.preference for p in await bolt.search_preferences("mild")] == ["likes mild food"]
        assert await bolt.search_preferences("spicy") == []  # superseded
        assert len(await bolt.search_preferences("spicy", include_superseded=True)) == 1
        assert [f.object for f in await bolt.search_facts("portugal")] == ["Portugal"]
        assert [e.name for e in await bolt.search_entities("acme")] == ["Acme Corp"]
        ada = (await bolt.find_entities("Ada"))[0]
        assert {e.name for e in await bolt.related_entities(ada.id, depth=2)} == {
            "Acme Corp",
            "Lisbon",
        }
        during = await bolt.facts_about("ada", as_of=BASE + timedelta(days=1))
        assert [f.predicate for f in during] == ["WORKS_AT"]
        assert await bolt.facts_about("ada", as_of=BASE + timedelta(days=31)) == []
        current = {p.preference for p in await bolt.list_preferences()}
        assert current == {"likes mild food", "trains over planes"}
        # What the store itself writes next sits beside the imported records.
        mild = (await bolt.search_preferences("mild"))[0]
        newer = await bolt.add_preference("food", "likes no food at all")
        await bolt.supersede_preference(mild.id, newer.id)
        assert {p.preference for p in await bolt.list_preferences()} == {
            "likes no food at all",
            "trains over planes",
        }


async def test_re_import_into_bolt_skips_and_overwrite_restores(
    bolt_url: str, neo4j_server: Neo4jHandle
) -> None:
    async with (
        open_backend("memory://", embedder=HashingEmbedder(8)) as source,
        open_backend(bolt_url) as bolt,
    ):
        await _fill(source, "alice")
        out = io.StringIO()
        await export_memory(source, out)
        text = out.getvalue()
        first = await export_lines(source)
        await import_memory(bolt, io.StringIO(text))
        assert await export_lines(bolt) == first
        again = await import_memory(bolt, io.StringIO(text))
        for kind, count in LONG_TERM.items():
            assert again.copied[kind] == 0
            assert again.skipped[(kind, "already in the target")] == count
        fact = of_kind(first, "fact")[0]
        assert await bolt.delete_fact(fact["id"])
        ada = (await bolt.find_entities("Ada"))[0]
        link = (await bolt.list_relationships(ada.id, direction="out"))[0]
        assert await bolt.delete_relationship(link.id)
        await bolt.add_relationship(link.source_id, link.target_id, link.type)  # another id
        mild = (await bolt.search_preferences("mild"))[0]
        assert await bolt.delete_preference(mild.id)  # the spicy one's successor
        restored = await import_memory(bolt, io.StringIO(text), on_conflict="overwrite")
        assert {kind: restored.copied[kind] for kind in KINDS} == LONG_TERM
        assert await export_lines(bolt) == first
        # Every preference links its user once; nothing waits for a successor.
        users = "MATCH (p:Preference) RETURN COUNT { (:User)-[:HAS_PREFERENCE]->(p) } AS n"
        assert [row["n"] for row in _graph(neo4j_server, users)] == [1] * 4
        waiting = "MATCH (n:MemoryCoreAwaitingSuccessor) RETURN n.id AS id"
        assert _graph(neo4j_server, waiting) == []


async def test_a_narrowed_bolt_export_holds_what_the_embedded_one_holds(
    bolt_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        open_backend("memory://") as source,
        open_backend(bolt_url) as bolt,
    ):
        await _fill(source, "alice", "bob")
        await source.add_entity("Nobody's", "CONCEPT")
        await copy_memory(source, bolt)
        assert await export_lines(bolt) == await export_lines(source)
        for users in (["alice"], ["bob"], ["alice", "bob"], ["nobody"]):
            expected = await export_lines(source, users=users)
            assert await export_lines(bolt, users=users) == expected, users
        alice = await export_lines(bolt, users=["alice"])
        assert {r["user_identifier"] for r in of_kind(alice, "preference")} == {"alice"}
        assert len(of_kind(alice, "relationship")) == LONG_TERM["relationship"]
        narrowed = await export_lines(bolt, session_prefix="alice-chat-1")
        assert not records_of(narrowed)
        monkeypatch.setattr(bolt_transfer, "PAGE", 1)  # every kind read one by one
        assert await export_lines(bolt) == await export_lines(source)


async def test_a_multi_tenant_bolt_export_lists_tenants_with_only_long_term_records(
    bolt_url: str,
) -> None:
    lines = archive(
        entity("e-1", "carol", "Acme Corp"),
        {**PREFERENCE, "user_identifier": "dave", "linked_entities": []},
        {**FACT, "user_identifier": "erin"},
    )
    async with (
        open_backend(bolt_url, multi_tenant=True) as bolt,
        open_backend("memory://", multi_tenant=True) as back,
    ):
        report = await import_memory(bolt, [_header(2), *lines[1:]])
        assert report.copied["preference"] == report.copied["fact"] == 1
        exported = await export_lines(bolt)
        assert [(r["record"], r["user_identifier"]) for r in records_of(exported)] == [
            ("preference", "dave"),
            ("fact", "erin"),
        ]
        await copy_memory(bolt, back)
        assert records_of(await export_lines(back)) == records_of(exported)


async def test_a_record_never_takes_or_links_another_tenants_long_term_memory_on_bolt(
    bolt_url: str,
) -> None:
    """As on the embedded store: Mallory's archive reuses the ids of Alice's records and
    links Alice's entity; Alice's records stay as they were."""
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
    async with open_backend(bolt_url, multi_tenant=True) as target:
        await import_memory(target, [_header(2), *archive(*alice)[1:]])
        # (The hand-made entities have no created_at: compare the long-term records.)
        before = records_of(await export_lines(target, users=["alice"]))
        assert [r["record"] for r in before] == list(KINDS)
        report = await import_memory(target, [_header(2), *archive(*mallory)[1:]])
        assert records_of(await export_lines(target, users=["alice"])) == before
        renamed = "its id belongs to another tenant in the target: it got an id of its own tenant"
        assert report.not_carried[("preference.id", renamed)] == 1
        assert report.not_carried[("fact.id", renamed)] == 1
        assert (
            report.not_carried[
                ("preference.linked_entities", "its entity belongs to another tenant")
            ]
            == 1
        )
        assert report.skipped[("relationship", "its entity belongs to another tenant")] == 1
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
        again = await import_memory(target, [_header(2), *archive(*mallory)[1:]])
        for kind in ("preference", "fact"):
            assert again.copied[kind] == 0, again.summary()


async def test_a_successor_later_in_the_archive_is_linked_also_when_resumed(
    bolt_url: str, neo4j_server: Neo4jHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One record per batch: the superseded preference is written before its successor
    exists. An import cut off between the two, then run again whole, links them."""
    monkeypatch.setattr(importer, "HOOK_BATCH", 1)
    old = {
        **PREFERENCE,
        "id": "pref-a",
        "superseded_at": STAMP,
        "superseded_by": "pref-b",
    }
    new = {**PREFERENCE, "id": "pref-b", "preference": "likes coffee"}
    lines = _v2(old, new)
    async with open_backend(bolt_url) as bolt, open_backend("memory://") as back:
        cut = await import_memory(bolt, lines[:-2])  # up to the old one; no end record
        assert cut.copied["preference"] == 1
        [alone] = await bolt.list_preferences(include_superseded=True, user_identifier="alice")
        assert (alone.id, alone.superseded_by) == ("pref-a", None)
        assert alone.superseded_at is not None
        again = await import_memory(bolt, lines)
        assert again.copied["preference"] == 1
        assert again.skipped[("preference", "already in the target")] == 1
        held = {
            p.id: p
            for p in await bolt.list_preferences(include_superseded=True, user_identifier="alice")
        }
        assert held["pref-a"].superseded_by == "pref-b"
        assert held["pref-a"].linked_entities == held["pref-b"].linked_entities == ["e-1"]
        waiting = "MATCH (n:MemoryCoreAwaitingSuccessor) RETURN n.id AS id"
        assert _graph(neo4j_server, waiting) == []
        await import_memory(back, lines)
        assert records_of(await export_lines(bolt)) == records_of(await export_lines(back))


async def test_a_successor_that_never_arrives_leaves_the_preference_superseded(
    bolt_url: str,
) -> None:
    """It reads as superseded, with no successor (the graph has no edge to make); an
    export names the successor as the archive did, as the embedded store's does."""
    old = {**PREFERENCE, "superseded_at": STAMP, "superseded_by": "pref-gone"}
    async with open_backend(bolt_url) as bolt, open_backend("memory://") as embedded:
        report = await import_memory(bolt, _v2(old))
        assert report.copied["preference"] == 1
        [held] = await bolt.list_preferences(include_superseded=True, user_identifier="alice")
        assert held.superseded_at is not None and held.superseded_by is None
        assert await bolt.list_preferences(user_identifier="alice") == []
        await import_memory(embedded, _v2(old))
        exported = records_of(await export_lines(bolt))
        assert [r["superseded_by"] for r in exported] == ["pref-gone"]
        assert exported == records_of(await export_lines(embedded))


def _tricky_archive() -> list[str]:
    """Records that exercise every decision of the long-term import within one batch: the
    same relationship under two ids, an end or a link that was not carried, a record
    without a user (multi-tenant), a preference and a fact given twice."""
    rel = {**RELATIONSHIP, "user_identifier": "alice", "source_id": "e-2", "target_id": "e-1"}
    old = {
        **PREFERENCE,
        "linked_entities": ["e-1", "e-x", "e-2"],
        "superseded_at": STAMP,
        "superseded_by": "pref-2",
    }
    lines = archive(
        entity("e-1", "alice", "Acme Corp"),
        entity("e-2", "alice", "Ada", "PERSON"),
        entity("e-x", None, "Ghost"),
        rel,
        {**rel, "id": "rel-2", "type": "works_at", "confidence": 0.5},
        {**rel, "id": "rel-3", "target_id": "e-x"},
        {**rel, "id": "rel-4", "user_identifier": None},
        {**rel, "id": "rel-5", "type": "KNOWS", "source_id": "e-1", "target_id": "e-2"},
        old,
        {**PREFERENCE, "id": "pref-2", "preference": "likes coffee", "linked_entities": []},
        {**old, "preference": "likes green tea", "linked_entities": ["e-2"]},
        FACT,
        {**FACT, "object": "Acme Corp", "confidence": 0.25},
    )
    return [_header(2), *lines[1:]]


def _long_term_report(report: Any) -> tuple[dict[Any, int], ...]:
    def ours(name: str) -> bool:
        return name.split(".")[0] in KINDS

    return (
        {k: n for k, n in report.copied.items() if ours(k)},
        {k: n for k, n in report.skipped.items() if ours(k[0])},
        {k: n for k, n in report.not_carried.items() if ours(k[0])},
    )


@pytest.mark.parametrize("batch", [1, 1000])
@pytest.mark.parametrize("on_conflict", ["skip", "overwrite"])
async def test_bolt_decides_and_counts_every_record_as_the_embedded_store(
    bolt_url: str, monkeypatch: pytest.MonkeyPatch, on_conflict: Any, batch: int
) -> None:
    """The same archive imported twice into a multi-tenant embedded store and into Bolt,
    one record per batch or all in one: the same reports and the same records."""
    monkeypatch.setattr(importer, "HOOK_BATCH", batch)
    lines = _tricky_archive()
    async with (
        open_backend("memory://", multi_tenant=True) as embedded,
        open_backend(bolt_url, multi_tenant=True) as bolt,
    ):
        for attempt in ("first", "again"):
            expected = await import_memory(embedded, lines, on_conflict=on_conflict)
            got = await import_memory(bolt, lines, on_conflict=on_conflict)
            assert _long_term_report(got) == _long_term_report(expected), attempt
            held = records_of(await export_lines(bolt))
            assert held == records_of(await export_lines(embedded)), attempt
        # The first of each under skip; under overwrite the last (rel-2 replaced rel-1).
        overwrite = on_conflict == "overwrite"
        works = "rel-2" if overwrite else "rel-1"
        assert [r["id"] for r in held] == [works, "rel-5", "pref-1", "pref-2", "fact-1"]
        tea = next(r for r in held if r["id"] == "pref-1")
        kept = "likes green tea" if overwrite else "likes tea"
        assert (tea["preference"], tea["superseded_by"]) == (kept, "pref-2")
        assert tea["linked_entities"] == (["e-2"] if overwrite else ["e-1", "e-2"])
