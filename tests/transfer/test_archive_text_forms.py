"""The text forms of an archive: conversation and message ids must be UUIDs written
8-4-4-4-12 and are stored in lower case (entity ids are any string, kept as given), and
timestamps are written in UTC with exactly six fractional digits."""

from __future__ import annotations

import io
import json
import re
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from uuid import UUID, uuid4

import pytest

from memory_core import open_backend
from memory_core.transfer import ArchiveError, export_memory, import_memory
from tests.reliability.archives import archive, conversation, entity, message

pytestmark = pytest.mark.anyio


async def test_upper_case_ids_are_stored_in_lower_case_and_entity_ids_as_given(
    tmp_path: Path,
) -> None:
    cid, mid, eid = str(uuid4()), str(uuid4()), str(uuid4())
    lines = archive(
        entity(eid.upper(), None, "Acme"),
        conversation(cid.upper(), "chat", None),
        message(mid.upper(), cid.upper(), "first", 1),
    )
    path = tmp_path / "target.db"
    async with open_backend(f"sqlite:///{path}") as target:
        await import_memory(target, lines)
        [stored] = (await target.get_conversation(conversation_id=UUID(cid))).messages
        assert stored.id == UUID(mid)
        assert await target.delete_message(UUID(mid)) is True
    conn = sqlite3.connect(path)
    try:
        [(conversation_id,)] = conn.execute("SELECT id FROM conversations").fetchall()
        [(entity_id,)] = conn.execute("SELECT id FROM entities").fetchall()
    finally:
        conn.close()
    assert (conversation_id, entity_id) == (cid, eid.upper())


@pytest.mark.parametrize(
    "spelling",
    [lambda u: u.replace("-", ""), lambda u: "{" + u + "}", lambda u: "urn:uuid:" + u],
    ids=["no hyphens", "braces", "urn"],
)
async def test_a_uuid_id_not_written_8_4_4_4_12_is_an_archive_error(
    spelling: Callable[[str], str],
) -> None:
    cid, mid = str(uuid4()), str(uuid4())
    lines = archive(conversation(cid, "chat", None), message(spelling(mid), cid, "first", 1))
    async with open_backend("memory://") as target:
        with pytest.raises(ArchiveError, match="8-4-4-4-12") as raised:
            await import_memory(target, lines)
        assert raised.value.line == 3
        assert (await target.get_conversation("chat")).messages == []


STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


async def test_timestamps_are_written_in_utc_with_six_fractional_digits() -> None:
    whole = datetime(2026, 5, 20, 9, 30, tzinfo=UTC)
    east = timezone(timedelta(hours=5, minutes=30))
    stamps = [whole, whole.replace(microsecond=123457), whole.astimezone(east)]
    async with open_backend("memory://") as source:
        await source.add_messages_batch(
            "chat", [{"role": "user", "content": "x", "timestamp": t} for t in stamps]
        )
        out = io.StringIO()
        await export_memory(source, out)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    written = [r["created_at"] for r in records if r["record"] == "message"]
    assert written == [
        "2026-05-20T09:30:00.000000Z",
        "2026-05-20T09:30:00.123457Z",
        "2026-05-20T09:30:00.000000Z",
    ]
    every = [v for r in records for k, v in r.items() if k.endswith("_at") and v is not None]
    assert every and all(STAMP.fullmatch(v) for v in every), every
