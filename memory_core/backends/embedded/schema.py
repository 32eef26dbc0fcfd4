"""The SQLite schema, created idempotently when a store is opened.

``tenant`` is the ``user_identifier`` of a multi-tenant backend and ``''`` otherwise; every
query filters on it. Messages are ordered by ``seq``, a per-conversation counter taken
from ``conversations.next_seq`` inside the writing transaction. Listings seek on
``conversations_by_recency`` (per tenant), or, for a user filter on a single-tenant
store, ``conversations_by_user_recency``: both in the listing's order, ``updated_at``
then ``id``, newest first, so a page after a cursor is one index range read. The second
is partial (single-tenant rows that name a user), so writes to other rows never maintain
it (in a multi-tenant store the tenant is the user). ``conversations_by_update``, the
earlier listing index with ``id`` ascending, is dropped. ``messages.num`` is an
``INTEGER PRIMARY KEY`` (a stable rowid) so the external-content FTS5 index can point at
it; triggers keep that index in step with every insert, update and delete, including
rows removed by ``ON DELETE CASCADE``.
"""

from __future__ import annotations

import sqlite3

from memory_core import ConfigurationError

SCHEMA_VERSION = 1

TABLES = """
CREATE TABLE IF NOT EXISTS schema_info (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS conversations (
    id              TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    title           TEXT,
    metadata        TEXT NOT NULL DEFAULT '{}',
    user_identifier TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    next_seq        INTEGER NOT NULL DEFAULT 1,
    UNIQUE (tenant, session_id)
);
CREATE INDEX IF NOT EXISTS conversations_by_recency
    ON conversations (tenant, updated_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS conversations_by_user_recency
    ON conversations (user_identifier, updated_at DESC, id DESC)
    WHERE tenant = '' AND user_identifier IS NOT NULL;
DROP INDEX IF EXISTS conversations_by_update;
CREATE TABLE IF NOT EXISTS messages (
    num             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    role            TEXT NOT NULL,
    content         TEXT NOT NULL,
    metadata        TEXT NOT NULL DEFAULT '{}',
    created_at      INTEGER NOT NULL,
    embedding       BLOB,
    idempotency_key TEXT,
    UNIQUE (conversation_id, seq),
    UNIQUE (conversation_id, idempotency_key)
);
CREATE TABLE IF NOT EXISTS entities (
    id          TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL,
    name        TEXT NOT NULL,
    name_key    TEXT NOT NULL,
    type        TEXT NOT NULL,
    description TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (tenant, name_key, type)
);
CREATE TABLE IF NOT EXISTS mentions (
    message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    entity_id  TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    PRIMARY KEY (message_id, entity_id)
);
CREATE INDEX IF NOT EXISTS mentions_by_entity ON mentions (entity_id);
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5 (
    content,
    content = 'messages',
    content_rowid = 'num',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, content) VALUES (new.num, new.content);
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.num, old.content);
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.num, old.content);
    INSERT INTO messages_fts (rowid, content) VALUES (new.num, new.content);
END;
"""


def create_schema(conn: sqlite3.Connection) -> None:
    """Create every table, index and trigger that is missing, then check the version.

    Runs inside the caller's write transaction, so a half-created schema never persists.
    """
    for statement in _statements(TABLES):
        conn.execute(statement)
    conn.execute(
        "INSERT OR IGNORE INTO schema_info (key, value) VALUES ('version', ?)",
        (str(SCHEMA_VERSION),),
    )
    row = conn.execute("SELECT value FROM schema_info WHERE key = 'version'").fetchone()
    found = int(row[0])
    if found > SCHEMA_VERSION:
        raise ConfigurationError(
            f"this store has schema version {found}, newer than this memory-core supports "
            f"({SCHEMA_VERSION}); upgrade memory-core"
        )


def _statements(script: str) -> list[str]:
    """Split the DDL into statements (``sqlite3.complete_statement`` knows about triggers)."""
    statements: list[str] = []
    buffer = ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    return [s for s in statements if s]
