"""The overview's NAMS rules for every integration: a read of "all messages" that the
read cap may have cut warns once (strict: raises), and a cleared conversation is gone."""

from __future__ import annotations

import warnings

import pytest

from memory_core import CapabilityWarning, NotFoundError, NotSupportedError
from memory_core_dev.sync_stores import SyncStore

ON_NAMS = pytest.mark.parametrize(
    "sync_store", [pytest.param("nams", marks=pytest.mark.nams)], indirect=True
)


@ON_NAMS
def test_a_read_cut_at_the_cap_warns_once_and_strict_raises(sync_store: SyncStore) -> None:
    pytest.importorskip("llama_index.core", reason="extra 'llamaindex' not installed")
    from memory_core.integrations.llamaindex import MemoryChatStore

    key = sync_store.session("cap")
    batch = [{"role": "user", "content": f"m{i}"} for i in range(205)]
    sync_store.memory.add_messages_batch(key, batch)
    store = MemoryChatStore(memory=sync_store.memory)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        first = store.get_messages(key)
        again = store.get_messages(key)
    assert (
        [m.content for m in first] == [f"m{i}" for i in range(5, 205)] == [m.content for m in again]
    )
    said = [w for w in seen if issubclass(w.category, CapabilityWarning)]
    assert len(said) == 1 and "newest 200" in str(said[0].message)
    strict = MemoryChatStore(memory=sync_store.open(strict=True))
    with pytest.raises(NotSupportedError, match="newest 200"):
        strict.get_messages(key)


@ON_NAMS
def test_a_cleared_conversation_cannot_be_written_again(sync_store: SyncStore) -> None:
    memory = sync_store.open(session_names="server")
    session_id = str(memory.create_conversation("cleared").id)
    memory.add_message(session_id, "user", "before")
    assert memory.clear_session(session_id) is True
    with pytest.raises(NotFoundError):
        memory.add_message(session_id, "user", "after")
