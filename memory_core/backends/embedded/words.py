"""The word index of long-term records: ``long_term_words`` holds one row per distinct
word (as :func:`memory_core.scoring.query_terms` splits and folds it) of each entity,
preference and fact, so a search reads the records sharing a word with the query and
scores them in Python (:func:`memory_core.scoring.text_score`), as message search does.

A plain table, not FTS5: a deleted record's words leave with its rows (triggers of the
schema), so erasure leaves nothing behind in an index that keeps deleted terms.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from memory_core.store import query_terms

ENTITY = "e"
PREFERENCE = "p"
FACT = "f"


def index(
    conn: sqlite3.Connection, kind: str, tenant: str, record_id: str, texts: Iterable[str | None]
) -> None:
    """Add the words of ``texts`` for one record (words it already has are kept)."""
    words = query_terms(" ".join(text for text in texts if text))
    conn.executemany(
        "INSERT OR IGNORE INTO long_term_words (kind, tenant, word, record_id) VALUES (?, ?, ?, ?)",
        [(kind, tenant, word, record_id) for word in words],
    )


def index_entities(conn: sqlite3.Connection) -> None:
    """Index every entity (an upgrade from a store without the word index)."""
    rows = conn.execute("SELECT id, tenant, name, description FROM entities").fetchall()
    for row in rows:
        index(conn, ENTITY, row[1], row[0], (row[2], row[3]))


def matching(
    kind: str,
    table: str,
    tenant: str,
    terms: Sequence[str],
    where: str,
    params: Sequence[object],
    columns: str = "r.*",
) -> tuple[str, list[object]]:
    """SQL selecting ``columns`` of the rows of ``table`` (alias ``r``) of ``tenant`` that
    hold a word of ``terms`` and meet ``where``, the ones sharing most words first, then
    the newest."""
    marks = ",".join("?" * len(terms))
    sql = (
        f"SELECT {columns} FROM {table} r JOIN (SELECT record_id, COUNT(*) AS hits "
        f"FROM long_term_words WHERE kind = ? AND tenant = ? AND word IN ({marks}) "
        "GROUP BY record_id) w ON w.record_id = r.id "
        f"WHERE {where} ORDER BY w.hits DESC, r.created_at DESC, r.id LIMIT ?"
    )
    return sql, [kind, tenant, *terms, *params]
