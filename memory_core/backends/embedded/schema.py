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
it; its content is the view ``messages_fts_source`` (the text, and the conversation's id
as one token in the column ``scope``); triggers keep that index in step with every
insert, update and delete, including rows removed by ``ON DELETE CASCADE``.
"""

from __future__ import annotations

import sqlite3

from memory_core.store import ConfigurationError

from .words import index_entities

SCHEMA_VERSION = 4
"""1: the first. 2: the FTS5 index has a second column, ``scope``, holding each message's
conversation id (without dashes: one token), so a search in one conversation is an FTS5
``AND`` of that token and the words, and FTS5 skips through the words' doclists to the
conversation's entries instead of reading every match in the store. 3: long-term memory
(preferences, facts, relationships), the word index ``long_term_words`` of entities,
preferences and facts, and each entity's ``aliases`` (a JSON list; their folded keys in
``entity_aliases``, looked up by ``entity_aliases_by_key``) and ``attributes`` (a JSON
object); reasoning memory: ``traces`` (a trace's start time is ``created_at``; ``next_step``
numbers its steps inside the writing transaction), ``steps``, ``tool_calls`` (``num``
keeps their order; ``tool_calls_by_tool`` serves the statistics' aggregate), and the links
``trace_messages`` and ``trace_entities``; traces and steps have words in
``long_term_words``. An upgrade adds the two columns and indexes the entities a store
already has. An older memory-core refuses a version 3 store (its erasure would not know
these tables). 4: each message holds its conversation's ``tenant`` (``''`` in a
single-tenant store; NULL in a message written before version 4, or by an older
memory-core that had the store open during the upgrade, which the trigger
``messages_tenant`` then fills in), and in a multi-tenant store its FTS ``scope`` holds a
second token,
``t`` and the tenant's UTF-8 bytes in hex, so a search across a user's sessions is an FTS5
``AND`` of that token and the words: FTS5 reads the user's entries of each word's doclist,
not every match in the store. An upgrade fills the column and, where a message got a
tenant, rebuilds the index (about a minute per million messages); a single-tenant store's
index is unchanged. An older memory-core refuses a version 4 store (its writes would
index messages without their tenant's token)."""

# Characters of an unreadable schema version quoted in the error.
_SHOWN = 60

# The index's triggers: version 1's are dropped with its index (:func:`_migrate_fts`),
# older ones before version 4's are made (:func:`_message_tenants`).
_FTS_TRIGGERS = (
    "messages_fts_insert",
    "messages_fts_delete",
    "messages_fts_update",
    "messages_tenant",
)

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
    tenant          TEXT,
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
    aliases     TEXT NOT NULL DEFAULT '[]',
    attributes  TEXT NOT NULL DEFAULT '{}',
    UNIQUE (tenant, name_key, type)
);
CREATE TABLE IF NOT EXISTS entity_aliases (
    entity_id TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    tenant    TEXT NOT NULL,
    alias_key TEXT NOT NULL,
    PRIMARY KEY (entity_id, alias_key)
);
CREATE INDEX IF NOT EXISTS entity_aliases_by_key ON entity_aliases (tenant, alias_key);
CREATE TABLE IF NOT EXISTS mentions (
    message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    entity_id  TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    PRIMARY KEY (message_id, entity_id)
);
CREATE INDEX IF NOT EXISTS mentions_by_entity ON mentions (entity_id);
CREATE TABLE IF NOT EXISTS preferences (
    id              TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    user_identifier TEXT,
    category        TEXT NOT NULL,
    preference      TEXT NOT NULL,
    context         TEXT,
    confidence      REAL NOT NULL,
    metadata        TEXT NOT NULL DEFAULT '{}',
    embedding       BLOB,
    created_at      INTEGER NOT NULL,
    superseded_at   INTEGER,
    superseded_by   TEXT
);
CREATE INDEX IF NOT EXISTS preferences_by_user
    ON preferences (tenant, user_identifier, created_at DESC);
CREATE TABLE IF NOT EXISTS preference_entities (
    preference_id TEXT NOT NULL REFERENCES preferences (id) ON DELETE CASCADE,
    entity_id     TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    position      INTEGER NOT NULL,
    PRIMARY KEY (preference_id, entity_id)
);
CREATE INDEX IF NOT EXISTS preference_entities_by_entity ON preference_entities (entity_id);
CREATE TABLE IF NOT EXISTS facts (
    id                TEXT PRIMARY KEY,
    tenant            TEXT NOT NULL,
    user_identifier   TEXT,
    subject           TEXT NOT NULL,
    subject_key       TEXT NOT NULL,
    predicate         TEXT NOT NULL,
    object            TEXT NOT NULL,
    confidence        REAL NOT NULL,
    valid_from        INTEGER,
    valid_until       INTEGER,
    source_message_id TEXT,
    metadata          TEXT NOT NULL DEFAULT '{}',
    embedding         BLOB,
    created_at        INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS facts_by_subject ON facts (tenant, subject_key, created_at DESC);
CREATE INDEX IF NOT EXISTS facts_by_user ON facts (tenant, user_identifier, created_at DESC);
CREATE TABLE IF NOT EXISTS relationships (
    id          TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL,
    source_id   TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    target_id   TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    type        TEXT NOT NULL,
    properties  TEXT NOT NULL DEFAULT '{}',
    confidence  REAL NOT NULL,
    valid_from  INTEGER,
    valid_until INTEGER,
    created_at  INTEGER NOT NULL,
    UNIQUE (source_id, type, target_id)
);
CREATE INDEX IF NOT EXISTS relationships_by_target ON relationships (target_id, type);
CREATE TABLE IF NOT EXISTS long_term_words (
    kind      TEXT NOT NULL,
    tenant    TEXT NOT NULL,
    word      TEXT NOT NULL,
    record_id TEXT NOT NULL,
    PRIMARY KEY (kind, tenant, word, record_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS long_term_words_by_record ON long_term_words (record_id);
CREATE TRIGGER IF NOT EXISTS preferences_words_delete AFTER DELETE ON preferences BEGIN
    DELETE FROM long_term_words WHERE record_id = old.id;
END;
CREATE TRIGGER IF NOT EXISTS facts_words_delete AFTER DELETE ON facts BEGIN
    DELETE FROM long_term_words WHERE record_id = old.id;
END;
CREATE TRIGGER IF NOT EXISTS entities_words_delete AFTER DELETE ON entities BEGIN
    DELETE FROM long_term_words WHERE record_id = old.id;
END;
CREATE TABLE IF NOT EXISTS traces (
    id              TEXT PRIMARY KEY,
    tenant          TEXT NOT NULL,
    user_identifier TEXT,
    session_id      TEXT NOT NULL,
    task            TEXT NOT NULL,
    outcome         TEXT,
    success         INTEGER,
    metadata        TEXT NOT NULL DEFAULT '{}',
    triggered_by    TEXT,
    embedding       BLOB,
    created_at      INTEGER NOT NULL,
    completed_at    INTEGER,
    next_step       INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS traces_by_recency ON traces (tenant, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS traces_by_session
    ON traces (tenant, session_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS traces_by_user ON traces (tenant, user_identifier, created_at DESC);
CREATE TABLE IF NOT EXISTS steps (
    id              TEXT PRIMARY KEY,
    trace_id        TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    tenant          TEXT NOT NULL,
    user_identifier TEXT,
    step_number     INTEGER NOT NULL,
    thought         TEXT,
    action          TEXT,
    observation     TEXT,
    metadata        TEXT NOT NULL DEFAULT '{}',
    embedding       BLOB,
    created_at      INTEGER NOT NULL,
    UNIQUE (trace_id, step_number)
);
CREATE TABLE IF NOT EXISTS tool_calls (
    num             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    step_id         TEXT NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    tenant          TEXT NOT NULL,
    user_identifier TEXT,
    tool_name       TEXT NOT NULL,
    arguments       TEXT NOT NULL DEFAULT '{}',
    result          TEXT NOT NULL DEFAULT 'null',
    status          TEXT NOT NULL,
    duration_ms     INTEGER,
    error           TEXT,
    created_at      INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS tool_calls_by_step ON tool_calls (step_id, num);
CREATE INDEX IF NOT EXISTS tool_calls_by_tool ON tool_calls (tenant, tool_name, user_identifier);
CREATE TABLE IF NOT EXISTS trace_messages (
    trace_id   TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    position   INTEGER NOT NULL,
    PRIMARY KEY (trace_id, message_id)
);
CREATE INDEX IF NOT EXISTS trace_messages_by_message ON trace_messages (message_id);
CREATE TABLE IF NOT EXISTS trace_entities (
    trace_id  TEXT NOT NULL REFERENCES traces (id) ON DELETE CASCADE,
    entity_id TEXT NOT NULL REFERENCES entities (id) ON DELETE CASCADE,
    position  INTEGER NOT NULL,
    PRIMARY KEY (trace_id, entity_id)
);
CREATE INDEX IF NOT EXISTS trace_entities_by_entity ON trace_entities (entity_id);
CREATE TRIGGER IF NOT EXISTS traces_words_delete AFTER DELETE ON traces BEGIN
    DELETE FROM long_term_words WHERE record_id = old.id;
END;
CREATE TRIGGER IF NOT EXISTS steps_words_delete AFTER DELETE ON steps BEGIN
    DELETE FROM long_term_words WHERE record_id = old.id;
END;
"""


def _scope_sql(conversation: str, tenant: str) -> str:
    """The FTS ``scope`` value of a message: its conversation's token and, in a
    multi-tenant store, its tenant's (see :func:`.fts.tenant_token`; none for ``''`` or
    NULL), computed from the row alone so a delete (a cascade's too) removes exactly
    what the insert indexed."""
    return (
        f"replace({conversation}, '-', '') || "
        f"CASE WHEN coalesce({tenant}, '') = '' THEN '' ELSE ' t' || lower(hex({tenant})) END"
    )


# A message written without its tenant (by a memory-core older than version 4 that had
# the store open when it was upgraded) is indexed, and given, its conversation's.
_INSERTED_TENANT = (
    "coalesce(new.tenant, (SELECT c.tenant FROM conversations c WHERE c.id = new.conversation_id))"
)


# The full-text index of messages (see the module docstring).
FTS_TABLES = f"""
CREATE VIEW IF NOT EXISTS messages_fts_source AS
    SELECT num, content, {_scope_sql("conversation_id", "tenant")} AS scope FROM messages;
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5 (
    content,
    scope,
    content = 'messages_fts_source',
    content_rowid = 'num',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, content, scope)
    VALUES (new.num, new.content, {_scope_sql("new.conversation_id", _INSERTED_TENANT)});
END;
CREATE TRIGGER IF NOT EXISTS messages_tenant AFTER INSERT ON messages
WHEN new.tenant IS NULL BEGIN
    UPDATE messages SET tenant = {_INSERTED_TENANT} WHERE num = new.num;
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content, scope)
    VALUES ('delete', old.num, old.content, {_scope_sql("old.conversation_id", "old.tenant")});
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content, scope)
    VALUES ('delete', old.num, old.content, {_scope_sql("old.conversation_id", "old.tenant")});
    INSERT INTO messages_fts (rowid, content, scope)
    VALUES (new.num, new.content, {_scope_sql("new.conversation_id", "new.tenant")});
END;
"""


def create_schema(conn: sqlite3.Connection) -> None:
    """Create every table, index and trigger that is missing, check the version and
    bring an older store up to this one.

    Runs inside the caller's write transaction, so a half-created or half-migrated schema
    never persists.
    """
    found = _version(conn)
    if found is not None and found > SCHEMA_VERSION:
        raise ConfigurationError(
            f"the database file {_file(conn)} has schema version {found}, newer than this "
            f"memory-core supports ({SCHEMA_VERSION}); upgrade memory-core"
        )
    if found == 1:
        _migrate_fts(conn)
    retokened = _message_tenants(conn)
    for statement in _statements(TABLES + FTS_TABLES):
        conn.execute(statement)
    _entity_columns(conn)
    if found == 1 or retokened:
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")
    if found is not None and found < 3:
        index_entities(conn)
    if found != SCHEMA_VERSION:
        conn.execute(
            "INSERT OR REPLACE INTO schema_info (key, value) VALUES ('version', ?)",
            (str(SCHEMA_VERSION),),
        )


def _message_tenants(conn: sqlite3.Connection) -> bool:
    """Give the messages of a store made before version 4 their ``tenant`` (the user of
    a multi-tenant conversation, NULL otherwise) and drop the index's view and triggers
    (:data:`FTS_TABLES` makes them again). True when a message got a tenant: its indexed
    ``scope`` then lacks the tenant's token, and the index must be rebuilt."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(messages)")}
    if not have or "tenant" in have:
        return False
    for trigger in _FTS_TRIGGERS:
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    conn.execute("DROP VIEW IF EXISTS messages_fts_source")
    conn.execute("ALTER TABLE messages ADD COLUMN tenant TEXT")
    changed = conn.execute(
        "UPDATE messages SET tenant = (SELECT c.tenant FROM conversations c "
        "WHERE c.id = messages.conversation_id) "
        "WHERE conversation_id IN (SELECT id FROM conversations WHERE tenant <> '')"
    ).rowcount
    return changed > 0


def _entity_columns(conn: sqlite3.Connection) -> None:
    """Add ``aliases`` and ``attributes`` to an ``entities`` table made before them (a
    store of version 1 or 2)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(entities)")}
    for column, default in (("aliases", "'[]'"), ("attributes", "'{}'")):
        if column not in have:
            conn.execute(
                f"ALTER TABLE entities ADD COLUMN {column} TEXT NOT NULL DEFAULT {default}"
            )


def _version(conn: sqlite3.Connection) -> int | None:
    """The store's schema version; ``None`` for a new store."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_info'"
    ).fetchone()
    if exists is None:
        return None
    row = conn.execute("SELECT value FROM schema_info WHERE key = 'version'").fetchone()
    if row is None:
        return None
    value = row[0]
    if _is_version(value):
        return int(value)
    shown = repr(value)
    if len(shown) > _SHOWN:
        shown = shown[:_SHOWN] + "..."
    raise ConfigurationError(
        f"the database file {_file(conn)} has schema version {shown} in its schema_info "
        f"table, which is not a version memory-core writes (a whole number from 1; this "
        f"memory-core writes {SCHEMA_VERSION}): the file was changed by something else, or "
        "is not a memory-core store"
    )


def _is_version(value: object) -> bool:
    """A version memory-core writes: a whole number from 1 in ASCII digits."""
    return (
        isinstance(value, str)
        and len(value) <= _SHOWN
        and value.isascii()
        and value.isdigit()
        and int(value) >= 1
    )


def _file(conn: sqlite3.Connection) -> str:
    """The path of the connection's main database file."""
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main":
            return str(row[2]) or ":memory:"
    return "?"


def _migrate_fts(conn: sqlite3.Connection) -> None:
    """Drop version 1's one-column index and its triggers; :data:`TABLES` then creates
    the two-column index, and the caller rebuilds it from the messages (a one-off pass
    over the store: about a minute per million messages)."""
    for trigger in _FTS_TRIGGERS:
        conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    conn.execute("DROP TABLE IF EXISTS messages_fts")


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
