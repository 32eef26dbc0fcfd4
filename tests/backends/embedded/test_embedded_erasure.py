"""forget_user on the embedded backend, proved by looking inside the SQLite file: every
table (FTS5 shadow tables included) and the file's bytes hold nothing of the user."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_core import HashingEmbedder, InvalidRequestError, open_backend
from memory_core.backends.embedded import erasure as embedded_erasure
from tests.backends.erasure_data import write_user

pytestmark = pytest.mark.anyio


def _rows_holding(path: Path, markers: list[str]) -> dict[str, list[str]]:
    """``{table: [markers found]}`` over every table sqlite_master lists (FTS5 shadow
    tables ``*_data``, ``*_idx``, ``*_docsize``, ``*_config`` included), every column
    compared as bytes, case-insensitively."""
    conn = sqlite3.connect(path)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        assert {"messages_fts_data", "messages_fts_idx", "messages_fts_docsize"} <= set(tables)
        found: dict[str, list[str]] = {}
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                blob = b"\x00".join(_bytes(value) for value in row).lower()
                hits = [m for m in markers if m.lower().encode() in blob]
                if hits:
                    found.setdefault(table, []).extend(hits)
        return found
    finally:
        conn.close()


def _bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def _file_holds(path: Path, markers: list[str]) -> list[str]:
    """Markers still present in the database file's bytes after a full checkpoint."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    data = path.read_bytes().lower()
    return [m for m in markers if m.lower().encode() in data]


@pytest.fixture(params=[False, True], ids=["single-tenant", "multi-tenant"])
def multi_tenant(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


async def test_forget_user_leaves_no_residue(tmp_path: Path, multi_tenant: bool) -> None:
    path = tmp_path / "store.db"
    async with open_backend(
        f"sqlite:///{path}", multi_tenant=multi_tenant, embedder=HashingEmbedder(16)
    ) as memory:
        gone = await write_user(memory, "userzed", "A")
        kept = await write_user(memory, "userkay", "B")
        before = _rows_holding(path, gone)
        assert before.get("messages_fts_data"), "the scan must see A's tokens before"
        report = await memory.forget_user("userzed")
        assert report.counts == {
            "conversations": 2,
            "messages": 4,
            "mentions": 4,
            # single-tenant: the shared entity stays (B mentions it); multi-tenant: A's own
            "entities": 1 if not multi_tenant else 2,
            "idempotency_keys": 2,
        }
        assert report.scope == ("tenant" if multi_tenant else "user")
    assert _rows_holding(path, gone) == {}
    assert _file_holds(path, gone) == []
    left = _rows_holding(path, kept)
    assert set(kept) <= {m for hits in left.values() for m in hits}, "B must be untouched"
    assert left.get("messages_fts_data"), "B's tokens stay in the index"


async def test_forget_user_is_idempotent_and_reports_zero(tmp_path: Path) -> None:
    async with open_backend(f"sqlite:///{tmp_path / 's.db'}") as memory:
        await write_user(memory, "userzed", "A")
        first = await memory.forget_user("userzed")
        again = await memory.forget_user("userzed")
    assert first.total > 0
    assert again.total == 0 and again.not_reached == []


async def test_rerun_after_a_crash_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store.db"
    real_step = embedded_erasure._step
    calls = 0

    def crashing(*args: Any) -> bool:
        nonlocal calls
        calls += 1
        if calls > 2:
            raise RuntimeError("crash")
        return real_step(*args)

    async with open_backend(f"sqlite:///{path}") as memory:
        gone = await write_user(memory, "userzed", "A")
        monkeypatch.setattr(embedded_erasure, "_step", crashing)
        with pytest.raises(RuntimeError):
            await memory.forget_user("userzed", batch_size=1)
        assert _rows_holding(path, gone), "the crash left part of the user behind"
        monkeypatch.setattr(embedded_erasure, "_step", real_step)
        finish = await memory.forget_user("userzed", batch_size=1)
        assert finish.counts["conversations"] == 2
    assert _rows_holding(path, gone) == {}
    assert _file_holds(path, gone) == []


async def test_bad_input_names_the_argument_and_writes_nothing() -> None:
    async with open_backend("memory://") as memory:
        await memory.add_message("s", "user", "keep me", user_identifier="u")
        for bad, argument in (
            ("", "user_identifier"),
            (123, "user_identifier"),
            ("a\nb", "user_identifier"),
        ):
            with pytest.raises(InvalidRequestError) as caught:
                await memory.forget_user(bad)
            assert caught.value.argument == argument
        with pytest.raises(InvalidRequestError) as caught:
            await memory.forget_user("u", batch_size=0)
        assert caught.value.argument == "batch_size"
        assert [m.content for m in (await memory.get_conversation("s")).messages] == ["keep me"]


async def test_one_audit_record_with_counts_and_no_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with open_backend("memory://") as memory:
        await memory.add_message("secret-session", "user", "secret words", user_identifier="u1")
        with caplog.at_level(logging.INFO, logger="memory_core.audit"):
            await memory.forget_user("u1")
    records = [r for r in caplog.records if r.name == "memory_core.audit"]
    assert len(records) == 1
    body = json.loads(records[0].getMessage())
    assert body["event"] == "forget_user"
    assert body["counts"]["messages"] == 1 and body["scope"] == "user"
    assert body["duration_seconds"] >= 0 and len(body["user_sha256"]) == 16
    text = records[0].getMessage()
    assert "secret" not in text and "u1" not in text


async def test_racing_writes_survive_whole_or_not_at_all(tmp_path: Path) -> None:
    """Writes for the user racing with forget_user: each is erased or survives whole (a
    readable conversation holding it); a second forget_user leaves nothing; a write
    after forget_user returned never brings back what was written before."""
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}") as memory:
        for index in range(30):
            await memory.add_message(f"old{index}", "user", f"oldword{index}", user_identifier="uz")
        written: list[str] = []

        async def writer() -> None:
            for index in range(40):
                stored = await memory.add_message(
                    f"race{index % 5}", "user", f"raceword{index}", user_identifier="uz"
                )
                written.append(stored.content)
                await anyio.sleep(0)

        async with anyio.create_task_group() as group:
            group.start_soon(writer)
            await memory.forget_user("uz", batch_size=2)
        for index in range(5):
            kept = await memory.get_conversation(f"race{index}")
            assert all(m.content in written for m in kept.messages)
        await memory.forget_user("uz")
        assert await memory.list_conversations(user_identifier="uz") == []
        replay = await memory.add_message("old0", "user", "fresh", user_identifier="uz")
        read = await memory.get_conversation("old0")
        assert [m.content for m in read.messages] == ["fresh"] and replay.content == "fresh"
    assert _rows_holding(path, [f"oldword{i}" for i in range(30)]) == {}


async def test_each_transaction_erases_at_most_batch_size_messages_then_the_conversation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_step = embedded_erasure._step
    steps: list[dict[str, int]] = []

    def recording(conn: sqlite3.Connection, req: Any, erased: Any) -> bool:
        before = dict(erased.counts)
        more: bool = real_step(conn, req, erased)
        if more:
            steps.append({k: n - before.get(k, 0) for k, n in erased.counts.items() if n})
        return more

    monkeypatch.setattr(embedded_erasure, "_step", recording)
    async with open_backend("memory://") as memory:
        batch = [{"role": "user", "content": f"m{i}"} for i in range(5)]
        await memory.add_messages_batch("s", batch, user_identifier="u")
        report = await memory.forget_user("u", batch_size=2)
    assert [step.get("messages", 0) for step in steps] == [2, 2, 1, 0]
    assert steps[-1].get("conversations") == 1 and report.counts["messages"] == 5
