"""Purging deleted rows' tokens from the FTS5 index in short write transactions.

An external-content FTS5 index does not remove a deleted row's tokens: it writes a delete
marker (the token and the row id) into a new segment, and both stay in the index's
segments until a merge brings them together. A merge drops the delete markers only when
its output is the index's oldest segment: everything older is among its inputs.

``optimize`` does that in one statement: a merge of the whole index under the write lock,
which on a store of a million messages kept other writers waiting for seconds. Instead,
:func:`purge_step` runs one step per write transaction, each writing about
:data:`MERGE_PAGES` leaf pages, and other writers run between steps:

1. The first step after a deletion is ``merge`` with a negative page count: FTS5 moves
   every segment into one level, so each segment that may hold a deleted token is an
   input of one merge, whose output level is the top of the index (the oldest segment).
2. Later steps are ``merge`` with a positive count, which carries on the merge already
   under way (rather than moving the segments other writers added meanwhile into it,
   which a negative count would do, starting the whole merge again each step). With
   ``usermerge`` at 2 a step never finds too few segments to work on.
3. The purge is done when no merge into the top level is under way: the top segment then
   holds every token that was in the index when the deletion ended, without the deleted
   rows' entries or their markers. Segments written since hold only later writes.

Whether step 1 has run since the last deletion is kept in ``schema_info``: a deletion
sets ``fts_purge_pending`` to ``1`` (in its own transaction), step 1 sets it to
``merging``, the last step removes it, so a purge interrupted by a crash carries on
(or starts again after a later deletion) at the next erasure.

The index's structure record is read to see whether the merge is done. If it cannot be
read (an FTS5 version with another layout), the purge falls back to one ``optimize``.

Levels. On SQLite 3.40 every ``optimize``, and every negative ``merge`` that finds
segments on more than one level, adds a level to the index that nothing removes: about two
per erasure. At 2,000 levels FTS5 rejects its own structure record and every write to the
index fails with "database disk image is malformed" (a negative ``merge`` repeated while
other writers add segments gets there within minutes: each step adds a level and starts
the merge again). So a purge that finds more than :data:`MAX_LEVELS` levels rebuilds the
index from the messages table instead, which also purges it and starts again from one
level: a long transaction, about once in 500 erasures.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

PURGE_KEY = "fts_purge_pending"
#: Leaf pages (4 kB each) one step writes: tens of milliseconds. FTS5 stops only between
#: two words, so a word in most messages (its whole list of rows) makes a longer step.
MERGE_PAGES = 256
#: FTS5 keeps its structure record (levels, segments, merges under way) in this row.
_STRUCTURE_ROWID = 10
_STRUCTURE_V2 = b"\xff\x00\x00\x01"  # SQLite 3.44+ (origins and tombstone counts)
_MERGING = "merging"
#: Index levels above which a purge rebuilds the index (FTS5 fails at 2,000).
MAX_LEVELS = 1000


@dataclass(frozen=True)
class Level:
    """One level of the index: how many of its segments a merge has under way
    (``merging``) and its segments' ids."""

    merging: int
    segments: tuple[int, ...]


def purge_step(conn: sqlite3.Connection) -> bool:
    """One bounded merge step inside the caller's write transaction; False once no
    deleted row's token is left in the index (nothing was pending, or this step
    finished the merge)."""
    row = conn.execute("SELECT value FROM schema_info WHERE key = ?", (PURGE_KEY,)).fetchone()
    if row is None:
        return False
    conn.execute("PRAGMA secure_delete = ON")
    _set_usermerge(conn)
    started = row[0] == _MERGING
    if not started and len(read_levels(conn) or ()) > MAX_LEVELS:
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")
        return _done(conn)
    pages = MERGE_PAGES if started else -MERGE_PAGES
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('merge', ?)", (pages,))
    levels = read_levels(conn)
    if levels is None:  # an unknown record layout: merge everything at once
        conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")
    elif _merging_into_top(levels):
        if not started:
            conn.execute("UPDATE schema_info SET value = ? WHERE key = ?", (_MERGING, PURGE_KEY))
        return True
    return _done(conn)


def _done(conn: sqlite3.Connection) -> bool:
    conn.execute("DELETE FROM schema_info WHERE key = ?", (PURGE_KEY,))
    return False


def _merging_into_top(levels: list[Level]) -> bool:
    """Whether a merge whose output is the top level (the oldest segment) is under way."""
    return len(levels) >= 2 and levels[-2].merging > 0


def _set_usermerge(conn: sqlite3.Connection) -> None:
    """``usermerge`` 2: a positive ``merge`` works on any level with two segments (the
    default, 4, can find no level to work on while the top merge is unfinished)."""
    row = conn.execute("SELECT v FROM messages_fts_config WHERE k = 'usermerge'").fetchone()
    if row is None or row[0] != 2:
        conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('usermerge', 2)")


def read_levels(conn: sqlite3.Connection) -> list[Level] | None:
    """The index's levels, oldest last, from FTS5's structure record; ``[]`` for an
    empty index, ``None`` when the record's layout is not one this code knows."""
    row = conn.execute(
        "SELECT block FROM messages_fts_data WHERE id = ?", (_STRUCTURE_ROWID,)
    ).fetchone()
    if row is None:
        return []
    try:
        return _decode(bytes(row[0]))
    except (IndexError, ValueError):
        return None


def _decode(record: bytes) -> list[Level]:
    reader = _Varints(record, 4)  # after the 4-byte cookie
    v2 = record[4:8] == _STRUCTURE_V2
    if v2:
        reader.offset += 4
    count, _segments, _writes = reader.next(), reader.next(), reader.next()
    if v2:
        reader.next()  # the origin counter
    levels = []
    for _ in range(count):
        merging, size = reader.next(), reader.next()
        ids = []
        for _ in range(size):
            ids.append(reader.next())
            reader.skip(2 + (5 if v2 else 0))  # first and last page (v2: origins, counts)
        levels.append(Level(merging, tuple(ids)))
    if reader.offset != len(record):
        raise ValueError("structure record not read to its end")
    return levels


class _Varints:
    """SQLite varints (big-endian, 7 bits a byte, the ninth byte 8 bits) read in turn."""

    def __init__(self, data: bytes, offset: int) -> None:
        self.data = data
        self.offset = offset

    def next(self) -> int:
        value = 0
        for index in range(8):
            byte = self.data[self.offset + index]
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                self.offset += index + 1
                return value
        value = (value << 8) | self.data[self.offset + 8]
        self.offset += 9
        return value

    def skip(self, count: int) -> None:
        for _ in range(count):
            self.next()
