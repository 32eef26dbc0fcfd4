"""Schema versions of the embedded store: a version 1 store (one-column text index) is
upgraded when opened, in the opening transaction (an interrupted upgrade leaves it as it
was); a newer store, or one whose version is not a number memory-core writes, is refused
and left as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory_core import ConfigurationError, open_backend
from memory_core.backends.embedded import schema as schema_module
from memory_core.backends.embedded.schema import SCHEMA_VERSION

pytestmark = pytest.mark.anyio


def _rows(count: int, every: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"ripe apple {i}" if i % every == 0 else f"pear {i}"}
        for i in range(count)
    ]


# The schema of version 1 (its index: one column, the messages table as its content).
_V1_INDEX = """
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    content, content = 'messages', content_rowid = 'num',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, content) VALUES (new.num, new.content);
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.num, old.content);
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.num, old.content);
    INSERT INTO messages_fts (rowid, content) VALUES (new.num, new.content);
END;
"""


# The index's triggers of version 4 (an older version has the first three).
_V4_TRIGGERS = (
    "messages_fts_insert",
    "messages_fts_delete",
    "messages_fts_update",
    "messages_tenant",
)


def _downgrade(path: Path) -> None:
    """Turn a store into what version 1 wrote: its index and triggers, its version."""
    conn = sqlite3.connect(path)
    with conn:
        for name in _V4_TRIGGERS:
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DROP TABLE messages_fts")
        conn.execute("DROP VIEW messages_fts_source")
        conn.execute("ALTER TABLE messages DROP COLUMN tenant")
        conn.executescript(_V1_INDEX)
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")
        conn.execute("UPDATE schema_info SET value = '1' WHERE key = 'version'")
    conn.close()


async def test_a_version_1_store_is_upgraded_on_open(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    await _version_1_store(path)
    async with open_backend(f"sqlite:///{path}") as backend:
        found = await backend.search_messages("apple", session_id="mine")
        assert sorted(m.content for m in found) == [f"ripe apple {i}" for i in (0, 2, 4, 6)]
        await backend.add_message("mine", "user", "green apple")
        assert len(await backend.search_messages("apple", session_id="mine", limit=10)) == 5
        assert len(await backend.search_messages("apple", limit=20)) == 13
    conn = sqlite3.connect(path)
    version = conn.execute("SELECT value FROM schema_info WHERE key = 'version'").fetchone()
    assert version[0] == str(SCHEMA_VERSION) == "4"
    columns = [row[1] for row in conn.execute("PRAGMA table_info(messages_fts)")]
    assert columns == ["content", "scope"]
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()


def _shape(path: Path) -> tuple[list[tuple[str, str]], str, list[str]]:
    """The schema objects, the recorded version and the index's columns."""
    conn = sqlite3.connect(path)
    objects = sorted(conn.execute("SELECT type, name FROM sqlite_master"))
    version = conn.execute("SELECT value FROM schema_info WHERE key = 'version'").fetchone()[0]
    columns = [row[1] for row in conn.execute("PRAGMA table_info(messages_fts)")]
    conn.close()
    return objects, version, columns


async def _version_1_store(path: Path) -> None:
    async with open_backend(f"sqlite:///{path}") as backend:
        await backend.add_messages_batch("mine", _rows(8, 2))
        await backend.add_messages_batch("other", _rows(8, 1))
    _downgrade(path)


async def test_an_interrupted_upgrade_leaves_the_version_1_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store.db"
    await _version_1_store(path)
    before = _shape(path)
    assert before[1:] == ("1", ["content"])
    original = schema_module._migrate_fts

    def migrate_then_fail(conn: sqlite3.Connection) -> None:
        original(conn)
        raise RuntimeError("interrupted")

    monkeypatch.setattr(schema_module, "_migrate_fts", migrate_then_fail)
    with pytest.raises(Exception, match="interrupted"):
        await open_backend(f"sqlite:///{path}").connect()
    assert _shape(path) == before
    monkeypatch.setattr(schema_module, "_migrate_fts", original)
    async with open_backend(f"sqlite:///{path}") as backend:
        assert len(await backend.search_messages("apple", session_id="mine")) == 4


async def test_a_newer_store_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}") as backend:
        await backend.add_message("s", "user", "x")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE schema_info SET value = '5' WHERE key = 'version'")
        conn.execute("DROP VIEW messages_fts_source")  # what a version 5 might change
    conn.close()
    before = _shape(path)
    with pytest.raises(ConfigurationError, match="version 5, newer"):
        await open_backend(f"sqlite:///{path}").connect()
    assert _shape(path) == before


@pytest.mark.parametrize("value", ["two", "", "2.0", " 2", "0", "-1", "9" * 5000])
async def test_a_version_that_is_not_a_number_is_refused_by_name(
    tmp_path: Path, value: str
) -> None:
    """Not a raw ValueError, and never "upgraded" (0 and -1 were rewritten to 2 before):
    a ConfigurationError naming the file and the value found."""
    path = tmp_path / "store.db"
    async with open_backend(f"sqlite:///{path}") as backend:
        await backend.add_message("s", "user", "x")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE schema_info SET value = ? WHERE key = 'version'", (value,))
    conn.close()
    before = _shape(path)
    with pytest.raises(ConfigurationError) as caught:
        await open_backend(f"sqlite:///{path}").connect()
    message = str(caught.value)
    assert str(path) in message and repr(value)[:40] in message
    assert "not a version memory-core writes" in message
    assert _shape(path) == before


def _to_version_2(path: Path) -> None:
    """Turn a store into what version 2 wrote: no long-term or reasoning tables, entities
    without aliases or attributes, version 2."""
    conn = sqlite3.connect(path)
    with conn:
        for trigger in (
            "preferences_words_delete",
            "facts_words_delete",
            "entities_words_delete",
            "traces_words_delete",
            "steps_words_delete",
        ):
            conn.execute(f"DROP TRIGGER {trigger}")
        for table in (
            "trace_entities",
            "trace_messages",
            "tool_calls",
            "steps",
            "traces",
            "preference_entities",
            "preferences",
            "facts",
            "relationships",
        ):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("DROP TABLE long_term_words")
        conn.execute("DROP TABLE entity_aliases")
        conn.execute("ALTER TABLE entities DROP COLUMN aliases")
        conn.execute("ALTER TABLE entities DROP COLUMN attributes")
    conn.close()
    _to_version_3(path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE schema_info SET value = '2' WHERE key = 'version'")
    conn.close()


# Version 3's index: the conversation's token alone in ``scope``.
_V3_SCOPE = "replace({0}conversation_id, '-', '')"
_V3_INDEX = f"""
CREATE VIEW messages_fts_source AS
    SELECT num, content, {_V3_SCOPE.format("")} AS scope FROM messages;
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, content, scope)
    VALUES (new.num, new.content, {_V3_SCOPE.format("new.")});
END;
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content, scope)
    VALUES ('delete', old.num, old.content, {_V3_SCOPE.format("old.")});
END;
CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content, scope)
    VALUES ('delete', old.num, old.content, {_V3_SCOPE.format("old.")});
    INSERT INTO messages_fts (rowid, content, scope)
    VALUES (new.num, new.content, {_V3_SCOPE.format("new.")});
END;
"""


def _to_version_3(path: Path) -> None:
    """Turn a store into what version 3 wrote: messages without ``tenant``, an index
    whose ``scope`` holds the conversation's token alone, version 3."""
    conn = sqlite3.connect(path)
    with conn:
        for name in _V4_TRIGGERS:
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DROP VIEW messages_fts_source")
        conn.execute("ALTER TABLE messages DROP COLUMN tenant")
        conn.executescript(_V3_INDEX)
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")
        conn.execute("UPDATE schema_info SET value = '3' WHERE key = 'version'")
    conn.close()


def _message_columns(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    found = [row[1] for row in conn.execute("PRAGMA table_info(messages)")]
    conn.close()
    return found


def _tenants(path: Path) -> list[tuple[str, str | None]]:
    conn = sqlite3.connect(path)
    found = conn.execute("SELECT content, tenant FROM messages ORDER BY content").fetchall()
    conn.close()
    return found


async def test_a_version_3_multi_tenant_store_gets_its_tenants_tokens(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    url = f"sqlite:///{path}"
    async with open_backend(url, multi_tenant=True) as backend:
        await backend.add_messages_batch("s", _rows(4, 1), user_identifier="ana")
        await backend.add_messages_batch("s", _rows(2, 1), user_identifier="bo")
    _to_version_3(path)
    assert "tenant" not in _message_columns(path)
    async with open_backend(url, multi_tenant=True) as backend:
        assert len(await backend.search_messages("apple", user_identifier="ana")) == 4
        assert len(await backend.search_messages("apple", user_identifier="bo")) == 2
        await backend.clear_session("s", user_identifier="bo")  # a cascade: exact deletes
    assert sorted({tenant for _, tenant in _tenants(path)}) == ["ana"]
    assert _shape(path)[1] == "4"
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()


async def test_a_version_3_single_tenant_store_keeps_its_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No message gets a tenant, so the index is not rebuilt (its values are unchanged)."""
    path = tmp_path / "v3.db"
    async with open_backend(f"sqlite:///{path}") as backend:
        await backend.add_messages_batch("s", _rows(4, 1), user_identifier="ana")
    _to_version_3(path)
    calls: list[bool] = []
    original = schema_module._message_tenants

    def recording(conn: sqlite3.Connection) -> bool:
        calls.append(original(conn))
        return calls[-1]

    monkeypatch.setattr(schema_module, "_message_tenants", recording)
    async with open_backend(f"sqlite:///{path}") as backend:
        assert len(await backend.search_messages("apple", user_identifier="ana")) == 4
    assert calls[:1] == [False]
    assert {tenant for _, tenant in _tenants(path)} == {None}
    assert _shape(path)[1] == "4"


async def test_an_interrupted_version_3_upgrade_leaves_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v3.db"
    url = f"sqlite:///{path}"
    async with open_backend(url, multi_tenant=True) as backend:
        await backend.add_messages_batch("s", _rows(4, 1), user_identifier="ana")
    _to_version_3(path)
    before = _shape(path)
    original = schema_module._message_tenants

    def fill_then_fail(conn: sqlite3.Connection) -> bool:
        original(conn)
        raise RuntimeError("interrupted")

    monkeypatch.setattr(schema_module, "_message_tenants", fill_then_fail)
    with pytest.raises(Exception, match="interrupted"):
        await open_backend(url, multi_tenant=True).connect()
    assert _shape(path) == before
    assert "tenant" not in _message_columns(path)
    monkeypatch.setattr(schema_module, "_message_tenants", original)
    async with open_backend(url, multi_tenant=True) as backend:
        assert len(await backend.search_messages("apple", user_identifier="ana")) == 4


async def test_a_version_2_store_gains_long_term_memory_and_its_entities_are_searchable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v2.db"
    async with open_backend(f"sqlite:///{path}") as backend:
        entity = await backend.add_entity("Ada", "PERSON", description="counts engines")
    _to_version_2(path)
    async with open_backend(f"sqlite:///{path}") as backend:
        assert [e.id for e in await backend.search_entities("engines")] == [entity.id]
        made = await backend.add_preference("food", "likes figs")
        assert [p.id for p in await backend.list_preferences()] == [made.id]
        kept = await backend.get_entity(entity.id)
        assert kept is not None and (kept.aliases, kept.attributes) == ([], {})
        await backend.update_entity(entity.id, aliases=["Countess"], attributes={"born": 1815})
        found = await backend.get_entity_by_name("countess")
        assert found is not None and found.attributes == {"born": 1815}
    conn = sqlite3.connect(path)
    version = conn.execute("SELECT value FROM schema_info WHERE key = 'version'").fetchone()
    conn.close()
    assert version[0] == "4"


async def test_a_message_an_older_memory_core_writes_after_the_upgrade_is_found(
    tmp_path: Path,
) -> None:
    """A version 3 process that had the store open during the upgrade inserts messages
    without ``tenant``: the trigger gives them their conversation's, so a search across
    the user's sessions finds them and deleting them leaves the index whole."""
    path = tmp_path / "v4.db"
    url = f"sqlite:///{path}"
    async with open_backend(url, multi_tenant=True) as backend:
        await backend.add_message("s", "user", "ripe apple 0", user_identifier="ana")
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(
            "INSERT INTO messages (id, conversation_id, seq, role, content, created_at) "
            "SELECT '00000000-0000-4000-8000-000000000001', id, next_seq, 'user', "
            "'ripe apple old writer', 1 FROM conversations"
        )
    conn.close()
    assert _tenants(path) == [("ripe apple 0", "ana"), ("ripe apple old writer", "ana")]
    async with open_backend(url, multi_tenant=True) as backend:
        found = await backend.search_messages("apple", user_identifier="ana")
        assert sorted(m.content for m in found) == ["ripe apple 0", "ripe apple old writer"]
        assert await backend.clear_session("s", user_identifier="ana")
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()
