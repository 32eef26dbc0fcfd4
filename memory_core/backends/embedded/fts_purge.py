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

Every call that deletes messages (``forget_user``, ``clear_session`` and so expiry,
``delete_message``, an import that replaces a conversation) runs :func:`purge` before it
returns. Whether step 1 has run since the last deletion is kept in ``schema_info``: a
deletion sets ``fts_purge_pending`` to ``1`` (in its own transaction, see
:func:`mark_pending`), step 1 sets it to ``merging``, the last step removes it, so a purge
interrupted by a crash carries on (or starts again after a later deletion) at the next
call that deletes. Calls deleting at the same time drive one purge between them.

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

from .database import Database

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


def mark_pending(conn: sqlite3.Connection) -> None:
    """Note, inside the transaction that deleted messages, that their tokens wait for a
    purge (a merge already under way starts again, so it covers them too)."""
    conn.execute("INSERT OR REPLACE INTO schema_info (key, value) VALUES (?, '1')", (PURGE_KEY,))


async def purge(db: Database) -> None:
    """Run :func:`purge_step` until no deleted row's token is left in the index: one
    cheap transaction when nothing is pending."""
    while await db.call(purge_step, write=True):
        pass  # other writers run between two steps


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
    if not started:
        before = read_levels(conn)
        if before is not None and (len(before) > MAX_LEVELS or not _writes_oldest(before)):
            conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")
            return _done(conn)
        if before is not None and _merged(before):
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


def _writes_oldest(levels: list[Level]) -> bool:
    """Whether a negative ``merge`` of this index writes its oldest segment, the only
    merge that drops delete markers: FTS5 decides so when the merge's output level is the
    last level and was empty. Segments on two levels or more all move to a new last level
    first; segments on a single level are merged into the next one, which FTS5 leaves
    short of the last when empty levels follow (a small oldest segment moved down to a
    newer one's level does that); and a merge under way that takes every segment but its
    output is carried on as it is."""
    last = len(levels) - 1
    filled = [i for i, level in enumerate(levels) if level.segments]
    total = sum(len(level.segments) for level in levels)
    for i in filled:
        merging, count = levels[i].merging, len(levels[i].segments)
        if merging and merging == count and total == count + 1:
            return i + 1 == last
    if len(filled) == 1:
        return filled[0] >= last - (total > 1)
    return True


def _merged(levels: list[Level]) -> bool:
    """An empty index, or one segment on the last level (written by a merge that dropped
    the markers): nothing to merge."""
    total = sum(len(level.segments) for level in levels)
    return total == 0 or (total == 1 and bool(levels[-1].segments))


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
