"""Importing through the public contract into a target that takes the archive's session
names (an embedded store without its bulk hook): a session that already has messages is
skipped or overwritten as ``on_conflict`` says, for its owner only, and what the archive does
not set is not invented (found missing by mutation testing of memory_core/transfer)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from memory_core import MemoryBackend, open_backend
from memory_core.backends.embedded import EmbeddedStore
from memory_core.transfer import TransferReport, export_memory, import_memory
from tests.transfer.sample import populate

pytestmark = pytest.mark.anyio


class _PublicStore(EmbeddedStore):
    def bulk_transfer(self) -> None:
        return None


class _Public(MemoryBackend):
    store_class = _PublicStore


async def _archive(user: str | None = None) -> str:
    async with open_backend("memory://", multi_tenant=user is not None) as source:
        await populate(source, user)
        out = io.StringIO()
        await export_memory(source, out, users=[user] if user else None)
        return out.getvalue()


async def _contents(target: Any, session: str, user: str | None = None) -> list[str]:
    found = await target.get_conversation(session, user_identifier=user)
    return [m.content for m in found.messages]


async def _import(target: Any, archive: str, on_conflict: str) -> TransferReport:
    return await import_memory(target, io.StringIO(archive), on_conflict=on_conflict)


async def test_skip_leaves_a_session_that_has_messages_and_says_why() -> None:
    archive = await _archive()
    async with _Public("memory://") as target:
        await target.add_message("chat-1", "user", "already here")
        report = await _import(target, archive, "skip")
        assert await _contents(target, "chat-1") == ["already here"]
        assert len(await _contents(target, "chat-2")) > 0
    held = ("conversation", "the session already has messages in the target")
    assert report.skipped[held] == 1
    assert report.skipped[("message", "its session was already in the target")] == 5
    assert report.copied["conversation"] == 1


async def test_overwrite_clears_only_the_owners_session_first() -> None:
    archive = await _archive("alice")
    async with _Public("memory://", multi_tenant=True) as target:
        for user in ("alice", "bob"):
            await target.add_message("chat-1", "user", f"{user} was here", user_identifier=user)
        report = await _import(target, archive, "overwrite")
        alice = await _contents(target, "chat-1", "alice")
        assert "alice was here" not in alice and alice[0] == "You are helpful."
        assert await _contents(target, "chat-1", "bob") == ["bob was here"]
    assert report.copied["conversation"] == 2


async def test_titles_and_metadata_arrive_as_they_were() -> None:
    """A target that stores titles gets the title itself (not moved into metadata), and
    an untitled conversation gets neither a title nor an extra metadata key."""
    async with open_backend("memory://") as source:
        await source.create_conversation("plain", metadata={"k": 1})
        await source.create_conversation("titled", title="Trip", metadata={"k": 2})
        for session in ("plain", "titled"):
            await source.add_message(session, "user", "hi")
        out = io.StringIO()
        await export_memory(source, out)
    async with _Public("memory://") as target:
        await _import(target, out.getvalue(), "skip")
        plain = await target.get_conversation("plain")
        titled = await target.get_conversation("titled")
    assert (plain.title, plain.metadata) == (None, {"k": 1})
    assert (titled.title, titled.metadata) == ("Trip", {"k": 2})
