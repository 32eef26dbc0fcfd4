"""Batches, deletes and clears always run in the embedded store's writer thread, never in
the calling one (only a single ``add_message`` and a small read may run inline)."""

from __future__ import annotations

import threading

import pytest
from embedded_support import db_url_fixture, record_threads  # noqa: F401

from memory_core import open_backend
from memory_core.backends.embedded import conversations, messages

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("url", ["memory://", "file"])
async def test_batches_deletes_and_clears_run_in_the_writer_thread(
    url: str, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = record_threads(monkeypatch, messages, "add_messages")
    deletes = record_threads(monkeypatch, messages, "delete_message")
    clears = record_threads(monkeypatch, conversations, "clear")
    async with open_backend(db_url if url == "file" else url) as backend:
        await backend.add_message("s", "user", "inline")  # may run in this thread
        stored = await backend.add_messages_batch(
            "s", [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
        )
        assert await backend.delete_message(stored[0].id) is True
        assert await backend.clear_session("s") is True
    seen = batches + deletes + clears
    assert (len(batches), len(deletes), len(clears)) == (1, 1, 1)
    assert threading.get_ident() not in seen
    assert len(set(seen)) == 1  # the one writer thread
