"""Relationships, preferences and facts in transfers (archive format version 2): the bulk
hook carries every record exactly and search finds them after an import; the archive's
checks name the line and the field of a bad record; a version-1 archive still imports;
a target without the flags says what it skipped."""

from __future__ import annotations

import io
import json
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from memory_core import HashingEmbedder, MemoryBackend, open_backend
from memory_core.archive import records
from memory_core.backends.embedded import EmbeddedStore
from memory_core.cli import main
from memory_core.transfer import (
    ArchiveError,
    TransferReport,
    copy_memory,
    export_memory,
    import_memory,
    iter_records,
    schema,
)
from memory_core_dev.nams_server import NamsTestServer
from tests.reliability.archives import STAMP, archive, conversation, entity, mention, message
from tests.transfer.sample import (
    BASE,
    LONG_TERM,
    MESSAGES,
    PROPERTIES,
    PublicStore,
    backend_of,
    export_lines,
    of_kind,
    populate,
    populate_long_term,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::memory_core.CapabilityWarning"),
]

KINDS = tuple(LONG_TERM)


async def _fill(backend: MemoryBackend, *users: str | None) -> None:
    for user in users or (None,):
        tag = "" if user is None or backend.multi_tenant else f"{user}-"
        await populate(backend, user, tag)
        await populate_long_term(backend, user, tag)


def _counts(lines: list[str]) -> dict[str, int]:
    return {kind: len(of_kind(lines, kind)) for kind in KINDS}


def records_of(lines: list[str]) -> list[dict[str, Any]]:
    return [r for kind in KINDS for r in of_kind(lines, kind)]


# ---------------------------------------------------------------------------- the hook


def test_cli_copy_between_embedded_files_reproduces_every_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"

    async def fill() -> None:
        async with open_backend(source, embedder=HashingEmbedder(dimensions=8)) as backend:
            await _fill(backend)

    async def exported(url: str) -> list[str]:
        async with open_backend(url) as backend:
            return await export_lines(backend)

    anyio.run(fill)
    assert main(["copy", source, target, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "3 relationships, 4 preferences, 2 facts" in out, out
    first = anyio.run(exported, source)
    assert _counts(first) == LONG_TERM
    assert anyio.run(exported, target) == first
    # Every field the models have, as written (the control for the comparison above).
    works = of_kind(first, "relationship")
    assert {r["type"] for r in works} == {"WORKS_AT", "LOCATED_IN", "HOME_OF"}
    assert [json.dumps(r["properties"]) for r in works if r["type"] == "WORKS_AT"] == [
        json.dumps(PROPERTIES)
    ]
    prefs = {p["preference"]: p for p in of_kind(first, "preference")}
    spicy = prefs['likes spicy 🌶 food, tab\t quote" nul\x00 end']
    assert spicy["superseded_by"] == prefs["likes mild food"]["id"]
    assert spicy["superseded_at"] is not None and len(spicy["linked_entities"]) == 2
    assert prefs["window seat"]["superseded_at"] and prefs["window seat"]["superseded_by"] is None
    assert all(p["embedding"] for p in prefs.values())
    assert all(f["embedding"] for f in of_kind(first, "fact"))
    assert {f["source_message_id"] for f in of_kind(first, "fact")} - {None}


async def test_search_and_traversal_work_on_an_imported_store(tmp_path: Path) -> None:
    async with (
        open_backend("memory://", embedder=HashingEmbedder(dimensions=8)) as source,
        open_backend("memory://") as target,
    ):
        await _fill(source)
        await export_memory(source, tmp_path / "memory.jsonl.gz")
        report = await import_memory(target, tmp_path / "memory.jsonl.gz")
        assert {kind: report.copied[kind] for kind in KINDS} == LONG_TERM
        assert not report.not_carried and not report.skipped, report.summary()
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


async def test_multi_tenant_copy_keeps_each_users_long_term_memory_apart() -> None:
    async with (
        open_backend("memory://", multi_tenant=True, embedder=HashingEmbedder(8)) as source,
        open_backend("memory://", multi_tenant=True) as target,
    ):
        await _fill(source, "alice", "bob")
        first = await export_lines(source)
        assert _counts(first) == {kind: 2 * n for kind, n in LONG_TERM.items()}
        report = await copy_memory(source, target)
        assert not report.not_carried and not report.skipped, report.summary()
        assert await export_lines(target) == first
        bob = await export_lines(target, users=["bob"])
        assert bob == await export_lines(source, users=["bob"])
        assert {r["user_identifier"] for r in records_of(bob)} == {"bob"}
        assert len(await target.list_preferences(user_identifier="alice")) == 2


async def test_re_import_skips_and_overwrite_restores() -> None:
    async with (
        open_backend("memory://", embedder=HashingEmbedder(8)) as source,
        open_backend("memory://") as target,
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
        restored = await import_memory(target, io.StringIO(text), on_conflict="overwrite")
        assert restored.copied["fact"] == LONG_TERM["fact"]
        assert await export_lines(target) == first


async def test_an_export_narrowed_to_users_holds_what_its_records_name() -> None:
    async with (
        open_backend("memory://") as source,
        open_backend("memory://") as target,
    ):
        await _fill(source, "alice", "bob")
        await source.add_entity("Nobody's", "CONCEPT")
        lines = await export_lines(source, users=["alice"])
        assert {r["user_identifier"] for r in of_kind(lines, "preference")} == {"alice"}
        assert {r["user_identifier"] for r in of_kind(lines, "fact")} == {"alice"}
        assert len(of_kind(lines, "relationship")) == LONG_TERM["relationship"]
        assert "Nobody's" not in {e["name"] for e in of_kind(lines, "entity")}
        report = await import_memory(target, [_header(2), *lines])
        assert report.copied["preference"] == LONG_TERM["preference"]
        # Long-term records belong to no session: a prefix selects none of them.
        narrowed = await export_lines(source, session_prefix="alice-chat-1")
        assert _counts(narrowed) == dict.fromkeys(KINDS, 0)


def _header(version: int) -> str:
    header = records.header("test", "memory://", EmbeddedStore.capabilities, False, None, None)
    return json.dumps({**header, "version": version}) + "\n"


async def test_every_long_term_record_matches_the_shipped_schema() -> None:
    async with open_backend("memory://", embedder=HashingEmbedder(8)) as source:
        await _fill(source)
        validator = jsonschema.Draft202012Validator(schema())
        found = [record async for record in iter_records(source)]
    for record in found:
        validator.validate(record)
    assert {r["record"] for r in found} >= set(KINDS)
    assert found[0]["version"] == records.FORMAT_VERSION


# ---------------------------------------------------------------------------- versions

CID = "0b7e7c1a-8f0e-4a52-9a57-3c2d6b1e0a01"
MID = "1c0de000-0000-4000-8000-000000000000"
PREFERENCE: dict[str, Any] = {
    "record": "preference",
    "id": "pref-1",
    "user_identifier": "alice",
    "category": "food",
    "preference": "likes tea",
    "context": None,
    "confidence": 1.0,
    "linked_entities": ["e-1"],
    "metadata": {},
    "created_at": STAMP,
    "superseded_at": None,
    "superseded_by": None,
    "embedding": None,
}
FACT: dict[str, Any] = {
    "record": "fact",
    "id": "fact-1",
    "user_identifier": "alice",
    "subject": "Ada",
    "predicate": "WORKS_AT",
    "object": "Acme",
    "confidence": 1.0,
    "valid_from": None,
    "valid_until": None,
    "source_message_id": MID,
    "metadata": {},
    "created_at": STAMP,
    "embedding": None,
}
RELATIONSHIP: dict[str, Any] = {
    "record": "relationship",
    "id": "rel-1",
    "user_identifier": None,
    "source_id": "e-1",
    "target_id": "e-2",
    "type": "WORKS_AT",
    "properties": {},
    "confidence": 1.0,
    "valid_from": None,
    "valid_until": None,
    "created_at": STAMP,
}


def _v2(*more: dict[str, Any]) -> list[str]:
    """A version-2 archive: two entities, a conversation with a message and a mention,
    then ``more``."""
    lines = archive(
        entity("e-1", None, "Acme Corp"),
        entity("e-2", None, "Ada", "PERSON"),
        conversation(CID, "chat", None),
        message(MID, CID, "hello"),
        mention(MID, "e-1"),
        *more,
    )
    return [_header(2), *lines[1:]]


async def test_a_version_1_archive_still_imports() -> None:
    lines = archive(
        entity("e-1", None, "Acme Corp"),
        conversation(CID, "chat", None),
        message(MID, CID, "hello"),
        mention(MID, "e-1"),
    )
    assert json.loads(lines[0])["version"] == 1
    async with open_backend("memory://") as target:
        report = await import_memory(target, lines)
        assert report.copied["message"] == 1 and report.copied["mention"] == 1
        assert [m.content for m in (await target.get_conversation("chat")).messages] == ["hello"]


async def test_a_long_term_record_in_a_version_1_archive_is_a_bad_line() -> None:
    lines = archive(entity("e-1", None, "Acme Corp"), PREFERENCE)
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError, match="not part of format version 1") as refused:
            await import_memory(target, lines)
        assert refused.value.line == 3
        assert await target.list_preferences() == []
        assert (await target.find_entities("Acme Corp"))[0].id == "e-1"  # what came before


async def test_a_newer_version_than_2_says_upgrade() -> None:
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError, match="upgrade memory-core") as refused:
            # one newer than this reads (a version-2 reader refused 3 the same way)
            await import_memory(target, [_header(records.FORMAT_VERSION + 1), *_v2(FACT)[1:]])
        assert refused.value.line == 1


async def test_a_version_2_archive_of_every_kind_imports() -> None:
    async with open_backend("memory://") as target:
        report = await import_memory(target, _v2(RELATIONSHIP, PREFERENCE, FACT))
        assert {kind: report.copied[kind] for kind in KINDS} == dict.fromkeys(KINDS, 1)
        fact = (await target.facts_about("Ada"))[0]
        assert fact.id == "fact-1" and fact.source_message_id == MID


# ---------------------------------------------------------------------------- bad records


@pytest.mark.parametrize(
    ("record", "change", "named"),
    [
        (PREFERENCE, {"confidence": 1.5}, "preference.confidence: "),
        (PREFERENCE, {"confidence": True}, "preference.confidence has the wrong type"),
        (PREFERENCE, {"preference": ""}, "preference.preference: "),
        (PREFERENCE, {"category": 7}, "preference.category has the wrong type"),
        (PREFERENCE, {"linked_entities": ["e-1", "e-1"]}, "preference.linked_entities: "),
        (PREFERENCE, {"linked_entities": ["e-1"] * 101}, "preference.linked_entities: "),
        (PREFERENCE, {"superseded_by": "pref-2"}, "preference.superseded_by: "),
        (
            PREFERENCE,
            {"superseded_by": "pref-1", "superseded_at": STAMP},
            "preference.superseded_by: ",
        ),
        (PREFERENCE, {"superseded_at": "yesterday"}, "preference.superseded_at is not an ISO"),
        (PREFERENCE, {"embedding": [1, "x"]}, "preference.embedding: "),
        (PREFERENCE, {"user_identifier": "al\nice"}, "preference.user_identifier: "),
        (FACT, {"valid_from": STAMP, "valid_until": STAMP}, "fact.valid_until: "),
        (FACT, {"object": "x" * 1_000_001}, "fact.object: "),
        (FACT, {"subject": ""}, "fact.subject: "),
        (FACT, {"metadata": []}, "fact.metadata has the wrong type"),
        (FACT, {"confidence": -0.1}, "fact.confidence: "),
        (FACT, {"source_message_id": "a\x00b"}, "fact.source_message_id: "),
        (RELATIONSHIP, {"type": "1st"}, "relationship.type: "),
        (RELATIONSHIP, {"type": "x" * 101}, "relationship.type: "),
        (RELATIONSHIP, {"properties": []}, "relationship.properties has the wrong type"),
        (RELATIONSHIP, {"properties": {"k": "x" * 300_000}}, "relationship.properties: "),
        (RELATIONSHIP, {"source_id": ""}, "relationship.source_id: "),
        (RELATIONSHIP, {"valid_from": "2026-13-01T00:00:00Z"}, "relationship.valid_from"),
    ],
)
async def test_a_bad_long_term_record_names_its_line_and_field(
    record: dict[str, Any], change: dict[str, Any], named: str
) -> None:
    lines = _v2({**record, **change})
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError) as refused:
            await import_memory(target, lines)
        assert refused.value.line == 7
        assert refused.value.message.startswith(f"line 7: {named}"), refused.value.message
        # What came before it is written, nothing of it.
        assert len((await target.get_conversation("chat")).messages) == 1
        assert await target.list_preferences() == []
        assert await target.facts_about("Ada") == []
        assert await target.list_relationships("e-1") == []


@pytest.mark.parametrize(
    ("record", "missing"),
    [
        ({**PREFERENCE, "linked_entities": ["e-9"]}, "e-9"),
        ({**RELATIONSHIP, "target_id": "e-9"}, "e-9"),
    ],
)
async def test_a_record_naming_an_entity_the_archive_has_not_given_is_a_bad_line(
    record: dict[str, Any], missing: str
) -> None:
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError, match=f"names entity {missing} before the entity") as e:
            await import_memory(target, _v2(record))
        assert e.value.line == 7
        skipped = await import_memory(target, _v2(record), skip_bad=True)
        assert skipped.bad_lines == 1 and skipped.copied[record["record"]] == 0


# ---------------------------------------------------------------------------- flags


class _NoLongTermStore(EmbeddedStore):
    capabilities = replace(
        EmbeddedStore.capabilities, preferences=False, facts=False, relationships=False
    )


class _NoLongTermPublicStore(_NoLongTermStore):
    def bulk_transfer(self) -> None:
        return None


@pytest.mark.parametrize(
    "store", [_NoLongTermStore, _NoLongTermPublicStore], ids=["hook", "public"]
)
async def test_a_target_without_the_flags_names_what_it_skipped(
    store: type[EmbeddedStore],
) -> None:
    async with open_backend("memory://") as source, backend_of(store) as target:
        await _fill(source)
        report = await copy_memory(source, target)
        assert report.copied["message"] == MESSAGES
        flags = {"relationship": "relationships", "preference": "preferences", "fact": "facts"}
        summary = report.summary()
        for kind, count in LONG_TERM.items():
            assert report.copied[kind] == 0
            reason = f"embedded stores no {kind}s (capability {flags[kind]!r} is False)"
            assert report.skipped[(kind, reason)] == count, summary
            assert f"skipped: {count} {kind}" in summary
        # Nothing of them reached the store (the hook reads its tables whatever the flags).
        hook = EmbeddedStore.bulk_transfer(target.store)  # type: ignore[arg-type]
        held = [r["record"] async for r in hook.export_records(None, None, TransferReport())]
        assert held.count("message") == MESSAGES
        assert not set(held) & set(KINDS)


# ---------------------------------------------------------------------------- public path


async def test_a_public_export_carries_preferences_and_says_what_it_left_out() -> None:
    async with backend_of(PublicStore) as source, open_backend("memory://") as target:
        await _fill(source)
        report = TransferReport()
        found = [record async for record in iter_records(source, report=report)]
        lines = [json.dumps(r) for r in found]
        header, end = found[0], found[-1]
        assert {item["kind"] for item in header["not_exported"]} == {"fact", "relationship"}
        assert any(u.startswith("fact records: ") for u in end["unreadable"])
        assert any(u.startswith("relationship records: ") for u in report.unreadable)
        assert _counts(lines) == {"relationship": 0, "preference": 4, "fact": 0}
        # Each preference after the entities it links.
        given: set[str] = set()
        for record in found:
            if record["record"] == "entity":
                given.add(record["id"])
            if record["record"] == "preference":
                assert set(record["linked_entities"]) <= given
        imported = await import_memory(target, [line + "\n" for line in lines])
        assert imported.copied["preference"] == 4
        assert any(u.startswith("fact records: ") for u in imported.unreadable)
        assert imported.summary().count("not readable: ") >= 2


async def test_a_public_import_writes_through_the_api_and_resumes(tmp_path: Path) -> None:
    checkpoint = tmp_path / "copy.checkpoint"
    async with (
        open_backend("memory://", embedder=HashingEmbedder(8)) as source,
        open_backend("memory://") as target,
    ):
        await _fill(source)
        first = await export_lines(source)
        report = await copy_memory(source, target, on_conflict="new-ids", checkpoint=checkpoint)
        assert {kind: report.copied[kind] for kind in KINDS} == LONG_TERM, report.summary()
        lost: dict[str, int] = {}
        for (name, _), n in report.not_carried.items():
            lost[name] = lost.get(name, 0) + n
        for kind, count in LONG_TERM.items():
            assert lost[f"{kind}.id"] == count and lost[f"{kind}.created_at"] == count
        assert lost["preference.superseded_at"] == 2  # one re-marked, one without successor
        assert lost["preference.embedding"] == 4 and lost["fact.embedding"] == 2
        assert lost["fact.source_message_id"] == 1
        # The supersede link is made again between the new ids; the texts are the same.
        held = await target.list_preferences(include_superseded=True)
        by_text = {p.preference: p for p in held}
        spicy = by_text['likes spicy 🌶 food, tab\t quote" nul\x00 end']
        assert spicy.superseded_by == by_text["likes mild food"].id
        assert by_text["window seat"].superseded_at is None  # its successor is gone
        names = {e.id: e.name for e in await target.search_entities("acme ada lisbon", limit=9)}
        assert [names[i] for i in spicy.linked_entities] == ["Lisbon", "Ada"]
        assert {p["preference"] for p in of_kind(first, "preference")} == set(by_text)
        ada = await target.get_entity_by_name("ada l.")
        [given] = [r for r in of_kind(first, "entity") if r["name"] == "Ada"]
        assert ada is not None and ada.name == "Ada", "aliases did not arrive"
        assert (ada.aliases, ada.attributes) == (given["aliases"], given["attributes"])
        # A re-run with the checkpoint writes none of them again.
        again = await copy_memory(source, target, on_conflict="new-ids", checkpoint=checkpoint)
        for kind, count in LONG_TERM.items():
            assert again.copied[kind] == 0
            assert again.skipped[(kind, "already copied (checkpoint)")] == count
        assert len(await target.list_preferences(include_superseded=True)) == 4


# ---------------------------------------------------------------------------- other stores


BOLT = [pytest.mark.neo4j, pytest.mark.neo4j_private]
FIXTURES = {"postgres": "pg_url", "bolt": "bolt_url"}


@pytest.mark.parametrize(
    "hops",
    [
        pytest.param(("postgres",), id="postgres"),
        pytest.param(("bolt",), marks=BOLT, id="bolt"),
        pytest.param(("postgres", "bolt"), marks=BOLT, id="postgres-bolt"),
    ],
)
async def test_a_store_that_claims_the_flags_round_trips_every_record(
    hops: tuple[str, ...], request: pytest.FixtureRequest
) -> None:
    """embedded → (each store of ``hops``) → embedded, multi-tenant: every record of every
    kind comes back the same. Runs once a store claims the long-term flags."""
    urls = [request.getfixturevalue(FIXTURES[hop]) for hop in hops]
    async with AsyncExitStack() as stack:
        source = await stack.enter_async_context(
            open_backend("memory://", multi_tenant=True, embedder=HashingEmbedder(8))
        )
        stores = [
            await stack.enter_async_context(open_backend(url, multi_tenant=True)) for url in urls
        ]
        back = await stack.enter_async_context(open_backend("memory://", multi_tenant=True))
        for store in stores:
            for flag in ("preferences", "facts", "relationships"):
                if not store.capabilities.supports(flag):
                    pytest.skip(f"{store.name} does not claim the capability {flag!r} yet")
        await _fill(source, "alice", "bob")
        first = await export_lines(source)
        extras = [r for r in of_kind(first, "entity") if "aliases" in r and "attributes" in r]
        assert len(extras) == 2, "the sample's entity aliases and attributes are not exported"
        chain = [source, *stores, back]
        for from_, to in pairwise(chain):
            report = await copy_memory(from_, to)
            assert not report.not_carried and not report.skipped, report.summary()
            assert await export_lines(to) == first


class _OldHookStore(EmbeddedStore):
    """A store whose bulk transfer predates the long-term kinds: it passes them by."""

    def bulk_transfer(self) -> Any:
        hook = super().bulk_transfer()
        write = hook.import_records

        async def import_records(batch: list[dict[str, Any]], state: Any) -> None:
            await write([r for r in batch if r["record"] not in KINDS], state)

        hook.import_records = import_records  # type: ignore[method-assign]
        return hook


async def test_records_a_hook_passes_by_are_named_as_skipped() -> None:
    async with open_backend("memory://") as source, backend_of(_OldHookStore) as target:
        await _fill(source)
        report = await copy_memory(source, target)
        reason = "the target's bulk transfer did not write them"
        assert {kind: report.skipped[(kind, reason)] for kind in KINDS} == LONG_TERM
        assert report.copied["message"] == MESSAGES


async def test_a_record_never_takes_or_links_another_tenants_long_term_memory() -> None:
    """Mallory's archive reuses the ids of Alice's preference, fact and relationship and
    links Alice's entity: Alice's records stay as they were, Mallory's get ids of her own
    (``superseded_by`` follows), and no link crosses to Alice's entity."""
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
    async with open_backend("memory://", multi_tenant=True) as target:
        await import_memory(target, [_header(2), *archive(*alice)[1:]])
        before = await export_lines(target, users=["alice"])
        report = await import_memory(target, [_header(2), *archive(*mallory)[1:]])
        assert await export_lines(target, users=["alice"]) == before
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


async def test_a_reader_of_version_1_refuses_a_version_2_archive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What memory-core before format version 2 does with an archive of this one (the
    header check is the same code): it stops at the header and asks for an upgrade."""
    monkeypatch.setattr(records, "FORMAT_VERSION", 1)
    monkeypatch.setattr(records, "READS_VERSIONS", range(1, 2))
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError, match="newer than this memory-core reads") as refused:
            await import_memory(target, _v2(FACT))
        assert refused.value.line == 1 and "upgrade memory-core" in str(refused.value)
        assert await target.list_sessions() == []


async def test_nams_has_no_long_term_flags_and_the_report_names_each_kind(
    nams_server: NamsTestServer, tmp_path: Path
) -> None:
    async with (
        open_backend("memory://") as source,
        nams_server.backend(NamsTestServer.workspace()) as nams,
    ):
        await _fill(source)
        report = await copy_memory(source, nams, checkpoint=tmp_path / "nams.checkpoint")
        assert report.copied["message"] == MESSAGES
        summary = report.summary()
        for kind, count in LONG_TERM.items():
            flag = f"{kind}s"
            assert f"skipped: {count} {flag} (nams stores no {flag} (capability " in summary
