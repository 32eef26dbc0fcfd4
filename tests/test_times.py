"""Every time a backend returns is aware and in UTC, whatever the process's local time
zone (docs/using.md): checked on each kind of store with the local zone set to New
York's, five hours behind UTC in winter, so a time left in local time would show."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest

from memory_core_dev.sync_stores import SyncStore, sync_store

__all__ = ["sync_store"]


def utc(*stamps: datetime | None) -> bool:
    return all(s is not None and s.utcoffset() == timedelta(0) for s in stamps)


@pytest.mark.usefixtures("new_york")
def test_times_are_returned_in_utc_whatever_the_local_zone(sync_store: SyncStore) -> None:
    assert time.timezone != 0  # the zone took effect
    memory = sync_store.memory
    session = sync_store.session("tz")
    stored = memory.add_message(session, "user", "hello")
    read = memory.get_conversation(session)
    assert utc(stored.created_at, read.created_at, *(m.created_at for m in read.messages))
    assert read.updated_at is None or utc(read.updated_at)
    listed = [c for c in memory.list_conversations(limit=200) if c.id == read.id]
    assert listed and utc(listed[0].created_at)
    if memory.capabilities.entities:
        entity = memory.add_entity(f"Zone Corp {sync_store.tag}", "ORGANIZATION")
        [found] = memory.find_entities(str(entity.id))
        assert utc(entity.created_at, found.created_at)
