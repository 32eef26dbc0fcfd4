"""Every ``CapabilityWarning`` points at the caller's line (this file), not at anyio,
asyncio or memory-core internals — whichever method raised it and however deep."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from memory_core import CapabilityWarning, EntityRef, MemoryBackend, Message
from memory_core import requests as rq
from memory_core.backends.embedded import EmbeddedStore
from memory_core.warning_channel import warn_capability
from memory_core_dev.nams_server import NamsTestServer

pytestmark = [pytest.mark.nams, pytest.mark.anyio]

Call = Callable[[MemoryBackend, str], Awaitable[Any]]
U = {"user_identifier": "someone"}
NOW = datetime(2025, 1, 1, tzinfo=UTC)

# (session mode, call): each call makes the backend drop or clamp something.
CALLS: dict[str, tuple[str, Call]] = {
    "add_message.metadata": (
        "portable",
        lambda m, s: m.add_message(s, "user", "x", metadata={"a": 1}),
    ),
    "add_message.idempotency_key": (
        "portable",
        lambda m, s: m.add_message(s, "user", "x", idempotency_key="k"),
    ),
    "add_message.explicit_mentions": (
        "portable",
        lambda m, s: m.add_message(
            s, "user", "x", extraction_mode="explicit", explicit_mentions=[EntityRef(name="A")]
        ),
    ),
    "add_messages_batch.metadata": (
        "portable",
        lambda m, s: m.add_messages_batch(
            s, [{"role": "user", "content": "x", "metadata": {"a": 1}}]
        ),
    ),
    "bulk_add_messages.timestamp": (
        "portable",
        lambda m, s: m.bulk_add_messages(s, [{"role": "user", "content": "x", "timestamp": NOW}]),
    ),
    "create_conversation.title": (
        "portable",
        lambda m, s: m.create_conversation(s, title="t"),
    ),
    "get_conversation.limit": ("portable", lambda m, s: m.get_conversation(s, limit=500)),
    "search_messages.threshold": (
        "portable",
        lambda m, s: m.search_messages("x", session_id=s, threshold=0.5),
    ),
    "search_messages.limit": (
        "portable",
        lambda m, s: m.search_messages("x", session_id=s, limit=500),
    ),
    "find_entities.limit": ("portable", lambda m, s: m.find_entities("x", limit=500)),
    "server.add_message.user": ("server", lambda m, s: m.add_message(s, "user", "x", **U)),
    "server.add_messages_batch.user": (
        "server",
        lambda m, s: m.add_messages_batch(s, [{"role": "user", "content": "x"}], **U),
    ),
    "server.get_conversation.user": ("server", lambda m, s: m.get_conversation(s, **U)),
    "server.search_messages.user": (
        "server",
        lambda m, s: m.search_messages("x", session_id=s, **U),
    ),
    "server.get_context.user": ("server", lambda m, s: m.get_context("x", session_id=s, **U)),
    "server.get_observations.user": ("server", lambda m, s: m.get_observations(s, **U)),
    "server.get_reflections.user": ("server", lambda m, s: m.get_reflections(s, **U)),
    "server.get_extraction_status.user": (
        "server",
        lambda m, s: m.get_extraction_status(s, **U),
    ),
    "server.wait_for_extraction.user": (
        "server",
        lambda m, s: m.wait_for_extraction(s, timeout=5, **U),
    ),
    "server.clear_session.user": ("server", lambda m, s: m.clear_session(s, **U)),
    "server.find_entities.user": ("server", lambda m, s: m.find_entities("x", **U)),
}


@pytest.mark.parametrize("case", sorted(CALLS))
async def test_capability_warning_points_at_the_caller(
    nams_server: NamsTestServer, workspace: str, case: str
) -> None:
    mode, call = CALLS[case]
    async with nams_server.backend(workspace, session_names=mode) as memory:
        session = "w-session"
        if mode == "server":
            session = str((await memory.create_conversation("x")).id)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            await call(memory, session)
    found = [w for w in caught if issubclass(w.category, CapabilityWarning)]
    assert found, f"{case}: no CapabilityWarning"
    for warning in found:
        assert warning.filename == __file__, f"{case}: points at {warning.filename}"


class ThirdPartyStore(EmbeddedStore):
    """A backend outside memory-core that warns about an argument in its own hook."""

    async def add_message(self, req: rq.AddMessage) -> Message:
        warn_capability("third-party.add_message: this store keeps no relations")
        return await super().add_message(req)


async def test_a_third_party_backend_warning_points_at_the_caller_too() -> None:
    async with MemoryBackend(ThirdPartyStore("memory://")) as memory:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            caller_line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
            await memory.add_message("s", "user", "x")
    [warning] = [w for w in caught if issubclass(w.category, CapabilityWarning)]
    assert (warning.filename, warning.lineno) == (__file__, caller_line)
