"""The PostgreSQL bulk hook: embedded → PostgreSQL → (Bolt →) embedded reproduces every
record exactly (real PostgreSQL, and real Neo4j for the Bolt leg)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from memory_core import HashingEmbedder, MemoryBackend, TransportError, open_backend
from memory_core.backends.postgres import transfer as pg_transfer
from memory_core.backends.postgres import transfer_import
from memory_core.transfer import (
    ImportState,
    TransferReport,
    copy_memory,
    export_memory,
    import_memory,
    importer,
)
from tests.reliability.archives import STAMP, archive, conversation, entity, mention, message
from tests.transfer.sample import MENTIONS, MESSAGES, export_lines, of_kind, populate, records

pytestmark = pytest.mark.anyio


async def test_embedded_to_postgres_to_embedded_is_exact(pg_url: str, tmp_path: Path) -> None:
    async with (
        open_backend("memory://", embedder=HashingEmbedder(dimensions=8)) as source,
        open_backend(pg_url) as pg,
        open_backend("memory://") as back,
    ):
        assert pg.store.bulk_transfer() is not None
        await populate(source)
        first = await export_lines(source)
        there = await copy_memory(source, pg)
        assert there.copied["message"] == MESSAGES
        assert there.copied["mention"] == MENTIONS
        assert not there.not_carried
        assert await export_lines(pg) == first
        # Out through an archive file this time.
        await export_memory(pg, tmp_path / "pg.jsonl.gz")
        home = await import_memory(back, tmp_path / "pg.jsonl.gz")
        assert home.copied["message"] == MESSAGES
        assert await export_lines(back) == first
        # The copy is a normal store: reads, appends and idempotent replays work.
        conversation = await pg.get_conversation("chat-1")
        assert [m.content for m in conversation.messages][:1] == ["You are helpful."]
        assert conversation.title == "Trip planning"
        key = of_kind(first, "message")[3]["idempotency_key"]
        replay = await pg.add_message("chat-1", "user", "again", idempotency_key=key)
        assert str(replay.id) == of_kind(first, "message")[3]["id"]
        added = await pg.add_message("chat-1", "user", "after the import")
        assert (await pg.get_conversation("chat-1")).messages[-1].id == added.id
        assert [m.id for m in await pg.search_messages("Lisbon", session_id="chat-1")] == [
            conversation.messages[3].id
        ]
        again = await copy_memory(source, pg)
        assert again.copied["message"] == 0
        assert again.skipped[("message", "already in the target")] == MESSAGES


@pytest.mark.neo4j
async def test_embedded_postgres_bolt_embedded_is_exact(pg_url: str, bolt_url: str) -> None:
    """The path of issue 28: every hop keeps every record, multi-tenant."""
    async with (
        open_backend("memory://", multi_tenant=True, embedder=HashingEmbedder(8)) as source,
        open_backend(pg_url, multi_tenant=True) as pg,
        open_backend(bolt_url, multi_tenant=True) as bolt,
        open_backend("memory://", multi_tenant=True) as back,
    ):
        await populate(source, "alice")
        await populate(source, "bob")
        first = await export_lines(source)
        for source_, target in ((source, pg), (pg, bolt), (bolt, back)):
            report = await copy_memory(source_, target)
            assert report.copied["message"] == 2 * MESSAGES, report.summary()
            assert not report.not_carried and not report.skipped, report.summary()
            assert await export_lines(target) == first


async def test_multi_tenant_round_trip_through_postgres(pg_url: str) -> None:
    async with (
        open_backend("memory://", multi_tenant=True) as source,
        open_backend(pg_url, multi_tenant=True) as pg,
        open_backend("memory://", multi_tenant=True) as back,
    ):
        await populate(source, "alice")
        await populate(source, "bob")
        first = await export_lines(source)
        await copy_memory(source, pg)
        assert await export_lines(pg) == first
        assert await export_lines(pg, users=["bob"]) == await export_lines(source, users=["bob"])
        narrowed = await export_lines(pg, session_prefix="chat-2")
        assert narrowed == await export_lines(source, session_prefix="chat-2")
        await copy_memory(pg, back)
        assert await export_lines(back) == first
        # Each user's data stays that user's.
        alice = await pg.list_sessions(user_identifier="alice")
        assert {s.session_id for s in alice} == {"chat-1", "chat-2"}
        found = await pg.find_entities("Lisbon", user_identifier="bob")
        assert len(found) == 1
        bob_ids = {e["id"] for e in of_kind(first, "entity") if e["user_identifier"] == "bob"}
        assert found[0].id in bob_ids


async def test_overwrite_on_postgres_replaces_a_changed_conversation(pg_url: str) -> None:
    async with open_backend("memory://") as source, open_backend(pg_url) as pg:
        await populate(source)
        first = await export_lines(source)
        await copy_memory(source, pg)
        await pg.add_message("chat-2", "user", "only in postgres")
        await copy_memory(source, pg, on_conflict="overwrite")
        assert await export_lines(pg) == first


async def test_pages_and_chunks_are_followed_to_the_end(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of 2, batches of 4 records and inserts of 3 rows: every keyset page, batch
    and chunk is read and written (each store's records, in order, exactly once), also
    where a batch ends between a conversation and its messages or their mentions."""
    monkeypatch.setattr(pg_transfer, "PAGE", 2)
    monkeypatch.setattr(transfer_import, "CHUNK", 3)
    monkeypatch.setattr(importer, "HOOK_BATCH", 4)
    async with (
        open_backend("memory://", multi_tenant=True) as source,
        open_backend(pg_url, multi_tenant=True) as pg,
        open_backend("memory://", multi_tenant=True) as back,
    ):
        for user in ("alice", "bob", "carol"):
            for tag in ("a-", "b-"):
                await populate(source, user, tag)
        first = await export_lines(source)
        report = await copy_memory(source, pg)
        assert report.copied["message"] == 6 * MESSAGES
        assert report.copied["mention"] == 6 * MENTIONS
        assert await export_lines(pg) == first
        await copy_memory(pg, back)
        assert await export_lines(back) == first


def _edge_archive() -> list[str]:
    """Records the public API cannot write: session names and entity ids whose byte order
    differs from a dictionary order, integer, empty and zero embeddings, NUL in content
    and metadata, a gap and the largest ``seq``, the extremes of the timestamp range,
    mention positions with gaps."""
    cid = "0b7e7c1a-8f0e-4a52-9a57-3c2d6b1e0a01"
    records = [
        {**entity(name, None, f"Name {name}"), "created_at": STAMP} for name in ("b", "B", "é", "Z")
    ]
    first = f"{cid[:-2]}00"
    records.append(conversation(first, "b", None))
    bodies = [
        ("nul\x00inside", {"z": "\u0000", "a": [1, 1.0, None]}, [1, 0], 0),
        ("empty vector", {}, [], 7),
        ("zero vector", {}, [0.0, 0.0], 2**53 - 1),
    ]
    for n, (content, metadata, vector, seq) in enumerate(bodies):
        record = message(f"1c0de000-0000-4000-8000-0000000000{n:02d}", first, content, seq)
        record.update(metadata=metadata, embedding=vector)
        records.append(record)
    records[-1]["created_at"] = "9999-12-31T23:59:59.999999Z"
    records[-2]["created_at"] = "0001-01-01T00:00:00.000000Z"  # before the first: kept
    for position, name in ((3, "é"), (1, "B")):
        link = mention("1c0de000-0000-4000-8000-000000000000", name)
        link["position"] = position
        records.append(link)
    for n, session in enumerate(["B", "é", "Z", "a-1"], start=1):
        records.append(conversation(f"{cid[:-2]}{n:02d}", session, None))
    return archive(*records)


async def test_records_only_an_archive_carries_come_back_the_same(
    pg_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "edge.jsonl"
    path.write_text("".join(_edge_archive()), encoding="utf-8")
    async with open_backend(pg_url) as pg, open_backend("memory://") as embedded:
        into_pg = await import_memory(pg, path)
        into_embedded = await import_memory(embedded, path)
        assert into_pg.copied == into_embedded.copied
        assert into_pg.copied["message"] == 3 and into_pg.copied["mention"] == 2
        lines = await export_lines(pg)
        assert lines == await export_lines(embedded)
        assert [c["session_id"] for c in of_kind(lines, "conversation")] == [
            "B",
            "Z",
            "a-1",
            "b",
            "é",
        ]
        assert [m["embedding"] for m in of_kind(lines, "message")] == [
            [1.0, 0.0],
            [],
            [0.0, 0.0],
        ]
        # The store goes on from the largest seq.
        await pg.add_message("b", "user", "next")
        assert of_kind(await export_lines(pg), "message")[3]["seq"] == 2**53


async def test_a_failed_batch_writes_nothing_and_leaves_the_state_as_it_was(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One transaction per batch: a batch that fails after its conversations and some of
    its messages were written leaves nothing behind, and the import's id maps and report
    are only updated by a committed batch (so the same batch again writes it all once)."""
    async with open_backend("memory://") as source, open_backend(pg_url) as pg:
        await populate(source)
        first = await export_lines(source)
        batch = [r for r in records(first) if r["record"] != "end"]
        hook = pg.store.bulk_transfer()
        assert hook is not None
        real = transfer_import._Messages.insert
        calls = 0

        async def failing(self: transfer_import._Messages, rows: list[tuple[object, ...]]) -> None:
            nonlocal calls
            calls += 1
            await real(self, rows)
            if calls == 2:
                raise psycopg.errors.SerializationFailure("injected")

        monkeypatch.setattr(transfer_import._Messages, "insert", failing)
        state = ImportState("skip", TransferReport())
        with pytest.raises(TransportError):
            await hook.import_records(batch, state)
        assert calls == 2
        assert (state.conversations, state.entities, state.current) == ({}, {}, None)
        assert not state.report.copied and not state.report.skipped
        held = records(await export_lines(pg))
        assert [r["record"] for r in held] == ["end"]
        await hook.import_records(batch, state)
        assert state.report.copied["message"] == MESSAGES and not state.report.skipped
        assert await export_lines(pg) == first


async def _nul_everywhere(memory: MemoryBackend) -> None:
    """A store with a NUL in every string a record holds that the contract lets through."""
    entity = await memory.add_entity("Nul\x00Name", "PERSON", description="about\x00it")
    await memory.create_conversation(
        "s", title="a\x00title\x01", metadata={"k\x00": "v\x00", "plain": "\x01"}
    )
    await memory.add_message(
        "s",
        "user",
        "hi\x00there",
        metadata={"n\x00": ["\x00", {"\x01": 1}]},
        idempotency_key="key\x00with nul",
        extraction_mode="explicit",
        explicit_mentions=[{"id": entity.id}],
    )


async def test_nul_in_every_string_survives_a_copy_to_postgres(pg_url: str) -> None:
    """Issue 48 (E5): titles, entity names and descriptions, idempotency keys and metadata
    with a NUL character are copied exactly (a title stopped the copy with a StoreError
    that named no record; a key was dropped) and come back out exactly."""
    async with (
        open_backend("memory://") as source,
        open_backend(pg_url) as pg,
        open_backend("memory://") as back,
    ):
        await _nul_everywhere(source)
        first = await export_lines(source)
        report = await copy_memory(source, pg)
        assert report.copied == {"entity": 1, "conversation": 1, "message": 1, "mention": 1}
        assert not report.not_carried and not report.skipped, report.summary()
        assert await export_lines(pg) == first
        await copy_memory(pg, back)
        assert await export_lines(back) == first
        again = await pg.add_message("s", "user", "other", idempotency_key="key\x00with nul")
        assert again.content == "hi\x00there"
        [found] = await pg.find_entities("nul\x00name")
        assert (found.name, found.description) == ("Nul\x00Name", "about\x00it")


async def test_an_entity_id_with_nul_gets_an_id_of_its_own(pg_url: str, tmp_path: Path) -> None:
    """An archive's entity id with a NUL (which no PostgreSQL id can hold) is carried
    under a derived id, its mention with it, and the report says so; a second import
    finds it again."""
    cid, mid = "0b7e7c1a-8f0e-4a52-9a57-3c2d6b1e0a01", "1c0de000-0000-4000-8000-000000000001"
    lines = archive(
        entity("odd\x00id", None, "Odd"),
        conversation(cid, "s", None),
        message(mid, cid, "hi"),
        mention(mid, "odd\x00id"),
    )
    path = tmp_path / "nul.jsonl"
    path.write_text("".join(lines), encoding="utf-8")
    async with open_backend(pg_url) as pg:
        report = await import_memory(pg, path)
        assert report.copied == {"entity": 1, "conversation": 1, "message": 1, "mention": 1}
        assert report.not_carried == {("entity.id", transfer_import.NUL_ID): 1}
        [stored] = (await pg.get_conversation("s")).messages
        [entity_] = await pg.find_entities("odd")
        assert [m.id for m in stored.mentions] == [entity_.id] != ["odd\x00id"]
        again = await import_memory(pg, path)
        assert again.copied == {}
        assert [e.id for e in await pg.find_entities("odd")] == [entity_.id]
