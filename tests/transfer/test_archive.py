"""The archive format on the embedded backend: schema, exact round trips, bad lines."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from memory_core import HashingEmbedder, MemoryBackend, open_backend
from memory_core.transfer import (
    FORMAT_VERSION,
    ArchiveError,
    export_memory,
    import_memory,
    schema,
)
from tests.transfer.sample import MENTIONS, MESSAGES, export_lines, of_kind, populate, records

pytestmark = pytest.mark.anyio


async def _source(**options: Any) -> MemoryBackend:
    backend = open_backend("memory://", embedder=HashingEmbedder(dimensions=8), **options)
    await backend.connect()
    await populate(backend)
    return backend


async def test_every_exported_record_matches_the_schema(tmp_path: Path) -> None:
    source = await _source()
    path = tmp_path / "memory.jsonl"
    report = await export_memory(source, path)
    validator = jsonschema.Draft202012Validator(schema())
    lines = path.read_text(encoding="utf-8").splitlines()
    kinds = [json.loads(line)["record"] for line in lines]
    for line in lines:
        validator.validate(json.loads(line))
    assert kinds[0] == "header" and kinds[-1] == "end"
    assert json.loads(lines[0])["version"] == FORMAT_VERSION
    assert kinds.count("message") == MESSAGES == report.copied["message"]
    assert kinds.count("mention") == MENTIONS
    assert kinds.count("entity") == 4  # Acme, Lisbon, Ada, Unmentioned
    await source.close()


async def test_the_schema_rejects_what_the_reader_rejects() -> None:
    validator = jsonschema.Draft202012Validator(schema())
    bad = {"record": "message", "id": "x", "conversation_id": "y", "seq": 1, "role": "robot"}
    assert list(validator.iter_errors(bad))


async def test_round_trip_keeps_every_field_exactly(tmp_path: Path) -> None:
    source = await _source()
    first = await export_lines(source)
    path = tmp_path / "memory.jsonl.gz"
    await export_memory(source, path)
    with gzip.open(path, "rt", encoding="utf-8") as packed:
        assert json.loads(packed.readline())["record"] == "header"
    async with open_backend("memory://") as target:
        report = await import_memory(target, path)
        assert report.copied["message"] == MESSAGES
        assert not report.not_carried
        assert await export_lines(target) == first
        message = of_kind(first, "message")[1]
        assert message["created_at"] == "2026-05-20T09:30:00.123458Z"
        assert message["content"].endswith("nul\x00 end")
        assert all(m["embedding"] for m in of_kind(first, "message"))
        keyed = [m["idempotency_key"] for m in of_kind(first, "message") if m["idempotency_key"]]
        assert len(keyed) == 3
    await source.close()


async def test_reimport_with_skip_writes_nothing_and_overwrite_replaces() -> None:
    source = await _source()
    lines = await export_lines(source)
    text = "\n".join(_with_header(lines))
    async with open_backend("memory://") as target:
        await import_memory(target, io.StringIO(text))
        again = await import_memory(target, io.StringIO(text))
        assert again.copied["message"] == 0
        assert again.skipped[("message", "already in the target")] == MESSAGES
        await target.add_message("chat-1", "user", "written after the import")
        replaced = await import_memory(target, io.StringIO(text), on_conflict="overwrite")
        assert replaced.copied["message"] == MESSAGES
        assert await export_lines(target) == lines
    await source.close()


async def test_new_ids_appends_copies_with_target_ids() -> None:
    source = await _source()
    lines = await export_lines(source)
    async with open_backend("memory://") as target:
        report = await import_memory(
            target, io.StringIO("\n".join(_with_header(lines))), on_conflict="new-ids"
        )
        assert report.not_carried[("message.id", _reason(report, "message.id"))] == MESSAGES
        copied = of_kind(await export_lines(target), "message")
        original = of_kind(lines, "message")
        assert [m["content"] for m in copied] == [m["content"] for m in original]
        assert {m["id"] for m in copied}.isdisjoint({m["id"] for m in original})
        # Keys and mentions go one by one (add_message): the key survives.
        assert [m["idempotency_key"] for m in copied] == [m["idempotency_key"] for m in original]
        assert len(of_kind(await export_lines(target), "mention")) == MENTIONS
    await source.close()


def _reason(report: Any, name: str) -> str:
    return next(r for (f, r) in report.not_carried if f == name)


def _with_header(lines: list[str]) -> list[str]:
    header = {
        "record": "header",
        "format": "memory-core-archive",
        "version": 1,
        "created_at": "2026-01-01T00:00:00.000000Z",
        "source": {"backend": "test", "capabilities": {"flags": {}, "limits": {}}},
    }
    return [json.dumps(header), *lines]


async def test_a_bad_line_names_its_number_and_writes_nothing_after_it() -> None:
    source = await _source()
    lines = _with_header(await export_lines(source))
    lines[3] = lines[3][:-5]
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError) as caught:
            await import_memory(target, io.StringIO("\n".join(lines)))
        assert caught.value.line == 4
        assert "line 4" in str(caught.value)
    await source.close()


async def test_skip_bad_counts_bad_lines_and_goes_on() -> None:
    source = await _source()
    lines = _with_header(await export_lines(source))
    total = len(of_kind(lines[1:], "message"))
    message_lines = [i for i, line in enumerate(lines) if '"record":"message"' in line]
    lines[message_lines[-1]] = '{"record": "message", "role": "robot"}'
    lines.insert(2, "not json at all")
    async with open_backend("memory://") as target:
        report = await import_memory(target, io.StringIO("\n".join(lines)), skip_bad=True)
        assert report.bad_lines == 2
        assert report.copied["message"] == total - 1
        assert any("line 3" in e for e in report.bad_line_errors)
    await source.close()


@pytest.mark.parametrize(
    ("line", "words"),
    [
        (
            '{"record":"header","format":"other","version":1,'
            '"created_at":"2026-01-01T00:00:00Z","source":{}}',
            "format",
        ),
        (
            '{"record":"header","format":"memory-core-archive","version":99,'
            '"created_at":"2026-01-01T00:00:00Z","source":{}}',
            "newer",
        ),
        ('{"record": "conversation"}', "header"),
        ("", "empty"),
    ],
)
async def test_archives_that_cannot_be_read_say_why(line: str, words: str) -> None:
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError, match=words):
            await import_memory(target, io.StringIO(line), skip_bad=True)


async def test_records_out_of_order_are_bad_lines() -> None:
    source = await _source()
    lines = _with_header(await export_lines(source))
    first_conversation = next(i for i, x in enumerate(lines) if '"conversation"' in x)
    del lines[first_conversation]
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError, match="before its conversation"):
            await import_memory(target, io.StringIO("\n".join(lines)))
    await source.close()


async def test_a_cut_archive_is_reported() -> None:
    source = await _source()
    lines = _with_header(await export_lines(source))[:-1]
    async with open_backend("memory://") as target:
        report = await import_memory(target, io.StringIO("\n".join(lines)))
        assert any("cut short" in u for u in report.unreadable)
    await source.close()


@pytest.mark.parametrize("tenant", [None, "alice"])
async def test_public_export_agrees_with_the_bulk_hook(tenant: str | None) -> None:
    source = open_backend(
        "memory://", embedder=HashingEmbedder(dimensions=8), multi_tenant=tenant is not None
    )
    await source.connect()
    await populate(source, tenant)
    scope: dict[str, Any] = {} if tenant is None else {"users": [tenant]}
    fast = records(await export_lines(source, **scope))
    hook = source.store.bulk_transfer
    source.store.bulk_transfer = lambda: None  # type: ignore[method-assign]
    try:
        public = records(await export_lines(source, **scope))
    finally:
        source.store.bulk_transfer = hook  # type: ignore[method-assign]

    def kind(items: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in r.items() if k != "seq"} for r in items if r["record"] == name]

    # The same conversations, messages (ids, timestamps, keys, embeddings) and mentions;
    # the public API numbers seq 1..n and cannot list an entity no message mentions.
    for name in ("conversation", "message", "mention"):
        assert kind(public, name) == kind(fast, name)
    assert [m["seq"] for m in public if m["record"] == "message"][:3] == [1, 2, 3]
    names = {e["name"] for e in kind(public, "entity")}
    assert names == {"Acme Corp", "Lisbon", "Ada"}
    # Each mentioned entity's whole record, read back by id (not rebuilt from the mention).
    mentioned = [e for e in kind(fast, "entity") if e["name"] in names]
    assert sorted(kind(public, "entity"), key=str) == sorted(mentioned, key=str)
    assert any("entities no message mentions" in u for u in public[-1]["unreadable"])
    await source.close()
