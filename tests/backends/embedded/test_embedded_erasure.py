"""forget_user on the embedded backend, proved by looking inside the SQLite file: every
table (FTS5 shadow tables included), the file's bytes and the write-ahead log hold nothing
of the user. clear_session, expiry and delete_message likewise leave no deleted word in
the index or the file."""

from __future__ import annotations

import json
import logging
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_core import HashingEmbedder, InvalidRequestError, open_backend
from memory_core.backends.embedded import erasure as embedded_erasure
from memory_core.transfer import copy_memory
from tests.backends.erasure_data import write_traces, write_user

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
            "preferences": 0,
            "facts": 0,
            "relationships": 0,
            "traces": 0,
            "steps": 0,
            "tool_calls": 0,
        }
        assert report.scope == ("tenant" if multi_tenant else "user")
    assert _rows_holding(path, gone) == {}
    assert _file_holds(path, gone) == []
    left = _rows_holding(path, kept)
    assert set(kept) <= {m for hits in left.values() for m in hits}, "B must be untouched"
    assert left.get("messages_fts_data"), "B's tokens stay in the index"


async def test_forget_user_erases_the_users_traces_and_leaves_no_residue(
    tmp_path: Path, multi_tenant: bool
) -> None:
    path = tmp_path / "store.db"
    async with open_backend(
        f"sqlite:///{path}", multi_tenant=multi_tenant, embedder=HashingEmbedder(16)
    ) as memory:
        gone = await write_user(memory, "userzed", "A") + await write_traces(memory, "userzed", "A")
        kept = await write_user(memory, "userkay", "B") + await write_traces(memory, "userkay", "B")
        before = _rows_holding(path, gone)
        assert {"traces", "steps", "tool_calls", "trace_messages", "trace_entities"} <= set(
            before
        ), "the scan must see A's reasoning before"
        report = await memory.forget_user("userzed", batch_size=1)
        counts = {kind: report.counts[kind] for kind in ("traces", "steps", "tool_calls")}
        assert counts == {"traces": 1, "steps": 2, "tool_calls": 1}
        assert await memory.list_traces(user_identifier="userzed") == []
        assert len(await memory.list_traces(user_identifier="userkay")) == 1
        [stats] = await memory.tool_stats(user_identifier="userkay")
        assert stats.name == "toolnameB" and stats.total_calls == 1
    assert _rows_holding(path, gone) == {}
    assert _file_holds(path, gone) == []
    left = _rows_holding(path, kept)
    assert set(kept) <= {m for hits in left.values() for m in hits}, "B must be untouched"


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
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_CORE_AUDIT_KEY", "audit-key-of-this-test")
    async with open_backend("memory://") as memory:
        await memory.add_message("secret-session", "user", "secret words", user_identifier="u1")
        with caplog.at_level(logging.INFO, logger="memory_core.audit"):
            await memory.forget_user("u1")
    records = [r for r in caplog.records if r.name == "memory_core.audit"]
    assert len(records) == 1
    body = json.loads(records[0].getMessage())
    assert body["event"] == "forget_user"
    assert body["counts"]["messages"] == 1 and body["scope"] == "user"
    assert body["duration_seconds"] >= 0 and len(body["user_hmac"]) == 32
    text = records[0].getMessage()
    assert "secret" not in text and "u1" not in text and "audit-key" not in text


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

    def recording(conn: sqlite3.Connection, req: Any, *args: Any) -> bool:
        erased = args[-1]
        before = dict(erased.counts)
        more: bool = real_step(conn, req, *args)
        steps.append({k: n - before.get(k, 0) for k, n in erased.counts.items() if n})
        return more

    monkeypatch.setattr(embedded_erasure, "_step", recording)
    async with open_backend("memory://") as memory:
        batch = [{"role": "user", "content": f"m{i}"} for i in range(5)]
        await memory.add_messages_batch("s", batch, user_identifier="u")
        report = await memory.forget_user("u", batch_size=2)
    assert [step.get("messages", 0) for step in steps] == [2, 2, 1, 0]
    assert steps[-1].get("conversations") == 1 and report.counts["messages"] == 5


def _wal_holds(path: Path, markers: list[str]) -> list[str]:
    """Markers in the bytes of the ``-wal`` file, read as it is (the store still open)."""
    wal = path.with_name(path.name + "-wal")
    data = wal.read_bytes().lower() if wal.exists() else b""
    return [m for m in markers if m.lower().encode() in data]


def _checkpoint(path: Path) -> tuple[int, int, int]:
    """A passive checkpoint by another connection, as any process sharing the file may run."""
    conn = sqlite3.connect(path)
    try:
        busy, log, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return busy, log, done
    finally:
        conn.close()


async def test_the_log_holds_nothing_of_the_user_while_the_store_stays_open(
    tmp_path: Path,
) -> None:
    """forget_user, a checkpoint, more writes: the -wal file, read while the store is
    still open, holds none of the user's words (a checkpoint alone leaves its old frames
    in place until later writes reach them)."""
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}") as memory:
        gone = await write_user(memory, "userzed", "A")
        await write_user(memory, "userkay", "B")
        assert _wal_holds(path, gone), "the log must hold A's words before"
        report = await memory.forget_user("userzed")
        assert report.not_reached == []
        assert path.with_name(path.name + "-wal").stat().st_size == 0, "the log was emptied"
        _checkpoint(path)
        for index in range(5):
            await memory.add_message(f"later{index}", "user", f"laterword{index}")
        assert _wal_holds(path, gone) == []
        assert _wal_holds(path, ["laterword4"]) == ["laterword4"], "the log is in use"
        main = path.read_bytes().lower()
        assert [m for m in gone if m.lower().encode() in main] == []


async def test_a_reader_keeping_an_old_snapshot_is_reported_and_a_rerun_empties_the_log(
    tmp_path: Path,
) -> None:
    """A reader holding a snapshot from before the erasure keeps the log from being
    emptied: the report says so in not_reached; once it has ended, forget_user again
    empties the log."""
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}", busy_timeout=0.2) as memory:
        gone = await write_user(memory, "userzed", "A")
        reader = sqlite3.connect(path, isolation_level=None)
        try:
            reader.execute("BEGIN")
            assert reader.execute("SELECT count(*) FROM messages").fetchone()[0] == 4
            first = await memory.forget_user("userzed")
            assert first.counts["messages"] == 4
            assert len(first.not_reached) == 1 and "the -wal file" in first.not_reached[0]
            assert _wal_holds(path, gone), "the reader's snapshot keeps the old frames"
        finally:
            reader.close()
        again = await memory.forget_user("userzed")
        assert again.total == 0 and again.not_reached == []
        assert _wal_holds(path, gone) == []


async def test_an_erasure_after_another_leaves_nothing_either(tmp_path: Path) -> None:
    """The first purge leaves the index one small segment on its last level; the next
    deletion's segment moves it down beside itself (FTS5 does so for a segment no bigger
    than the new one), where a merge is not the oldest and kept the delete markers, with
    the words in them, on SQLite 3.44+. The second purge must still leave nothing."""
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}") as memory:
        gone = await write_user(memory, "userzed", "A")
        await write_user(memory, "userkay", "B")
        bulk = [{"role": "user", "content": f"bulkword{i} " + "padding " * 500} for i in range(20)]
        await memory.add_messages_batch("bulk", bulk, user_identifier="ada")
        await memory.forget_user("ada")
        await memory.forget_user("userzed")
        found = await memory.search_messages("contentwordB1", user_identifier="userkay")
        assert [m.content for m in found] == ["contentwordB1 hello"]
    gone += [f"bulkword{i}" for i in range(20)]
    assert _rows_holding(path, gone) == {}
    assert _file_holds(path, gone) == []


def _message_markers(markers: list[str], user: str) -> list[str]:
    """What a conversation holds of ``markers``: not the entities (clear_session keeps
    them) nor the user's name (a multi-tenant entity's tenant)."""
    return [m for m in markers if not m.startswith("Entname") and m != user]


async def _cleared_by(tmp_path: Path, multi_tenant: bool, how: str) -> tuple[Path, list[str]]:
    """Write two users, with a trace each, delete userzed's conversations ``how`` (which
    deletes the traces of their sessions) and check that userkay's conversations and
    trace are still found; the store's path (closed) and what must be gone from it."""
    path = tmp_path / "store.db"
    async with open_backend(
        f"sqlite:///{path}", multi_tenant=multi_tenant, embedder=HashingEmbedder(16)
    ) as memory:
        gone = await write_user(memory, "userzed", "A")
        await write_user(memory, "userkay", "B")
        traced = await write_traces(memory, "userzed", "A")
        await write_traces(memory, "userkay", "B")
        before = _rows_holding(path, traced)
        assert {"traces", "steps", "tool_calls", "long_term_words"} <= set(before)
        gone += traced
        # Whole pages of messages, so that the delete frees pages of the file.
        bulk = [{"role": "user", "content": f"bulkwordA{i} " + "padding " * 500} for i in range(20)]
        await memory.add_messages_batch("sessA0-userzed", bulk, user_identifier="userzed")
        gone += [f"bulkwordA{i}" for i in range(20)]
        if how == "clear_session":
            for index in range(2):
                assert await memory.clear_session(
                    f"sessA{index}-userzed", user_identifier="userzed"
                )
        else:
            cutoff = datetime.now(UTC) + timedelta(minutes=1)  # everything is older
            expired = await memory.expire_conversations(cutoff, user_identifier="userzed")
            assert expired.conversations == 2
        found = await memory.search_messages("contentwordB0", user_identifier="userkay")
        assert [m.content for m in found] == ["contentwordB0 hello"]
        assert await memory.list_traces(user_identifier="userzed") == []
        assert len(await memory.list_traces(user_identifier="userkay")) == 1
        [stats] = await memory.tool_stats(user_identifier="userkay")
        assert stats.name == "toolnameB" and stats.total_calls == 1
        assert await memory.search_steps("thoughtwordA", user_identifier="userzed") == []
    return path, _message_markers(gone, "userzed")


@pytest.mark.parametrize("how", ["clear_session", "expire_conversations"])
async def test_deleted_conversations_leave_no_words_in_the_index_or_the_file(
    tmp_path: Path, multi_tenant: bool, how: str
) -> None:
    """clear_session (and expiry, and the server's DELETE /conversations/{id}, both built
    on it): no table, the FTS5 shadow tables and the word index of traces and steps
    included, and no byte of the file (free pages included) holds the deleted
    conversations' words or those of their sessions' traces."""
    path, gone = await _cleared_by(tmp_path, multi_tenant, how)
    assert "contentwordA0" in gone and "replywordA1" in gone and "thoughtwordA" in gone
    assert _rows_holding(path, gone) == {}
    assert _file_holds(path, gone) == []
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA freelist_count").fetchone()[0] > 0, "free pages to read"
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
        # No FTS5 secure-delete: its first delete makes the index unreadable before 3.42.
        config = dict(conn.execute("SELECT k, v FROM messages_fts_config"))
        assert config.get("version") == 4 and "secure-delete" not in config
    finally:
        conn.close()


async def test_delete_message_leaves_no_words_in_the_index_or_the_file(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}") as memory:
        gone = await memory.add_message("s", "user", "deletedwordqx stays not")
        await memory.add_message("s", "user", "keptwordqx stays")
        assert await memory.delete_message(gone.id)
        found = await memory.search_messages("stays")
        assert [m.content for m in found] == ["keptwordqx stays"]
    assert _rows_holding(path, ["deletedwordqx"]) == {}
    assert _file_holds(path, ["deletedwordqx", "keptwordqx"]) == ["keptwordqx"]


async def test_an_import_that_replaces_a_conversation_leaves_no_words(tmp_path: Path) -> None:
    """on_conflict="overwrite" deletes the changed conversation before writing the copy:
    the words of the one it replaced leave the index too."""
    path = tmp_path / "store.db"
    async with open_backend("memory://") as source, open_backend(f"sqlite:///{path}") as target:
        await source.add_message("chat", "user", "copiedwordqz hello")
        await copy_memory(source, target)
        await target.add_message("chat", "user", "overwrittenwordqz hello")
        await copy_memory(source, target, on_conflict="overwrite")
        read = await target.get_conversation("chat")
        assert [m.content for m in read.messages] == ["copiedwordqz hello"]
    assert _rows_holding(path, ["overwrittenwordqz"]) == {}
    assert _file_holds(path, ["overwrittenwordqz", "copiedwordqz"]) == ["copiedwordqz"]
