"""The facade's life outside the happy path: collected without close, a ``with`` whose
connect fails, the portal's async library, the integrations' entry point ``_call`` and
the warnings re-issued to the caller (found missing by mutation testing of
memory_core/sync.py; see memory_core/conformance/README.md, "Mutation score")."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
import sniffio

from memory_core import CapabilityWarning, ConfigurationError, TransportError
from memory_core.backend import MemoryBackend
from memory_core.sync import SyncCallInEventLoopError, SyncMemoryBackend, open_backend

PORTAL = "memory-core-portal"


def _portals() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == PORTAL]


def _mock_backend() -> Any:
    backend = mock.create_autospec(MemoryBackend, instance=True)
    backend.name = "mock"
    backend.describe.return_value = "mock://"
    return backend


@pytest.fixture
def no_portal_left() -> Iterator[None]:
    before = _portals()
    yield
    assert _portals() == before


@pytest.mark.parametrize("close_fails", [False, True])
def test_a_facade_collected_unclosed_closes_its_backend_and_thread(
    no_portal_left: None, close_fails: bool
) -> None:
    backend = _mock_backend()
    if close_fails:
        backend.close.side_effect = TransportError("gone")
    memory = SyncMemoryBackend(lambda: backend, portal_backend="asyncio")
    thread = next(t for t in _portals() if t.ident == memory._portal_thread)
    del memory
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert backend.close.await_count == 1


def test_a_facade_collected_on_its_portal_thread_leaves_the_portal_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The portal thread cannot wait for its own end: there the finalizer does nothing
    (rather than raise from a garbage collection)."""
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    backend = _mock_backend()
    memory = SyncMemoryBackend(lambda: backend, portal_backend="asyncio")
    portal, stack, holder = memory._portal, memory._stack, [memory]
    del memory

    def drop_the_last_reference() -> None:
        holder.clear()
        gc.collect()

    portal.call(drop_the_last_reference)
    assert unraisable == []
    assert backend.close.await_count == 0
    stack.close()  # stops the portal thread from here


def test_a_with_block_whose_connect_fails_leaves_a_closed_facade(no_portal_left: None) -> None:
    backend = _mock_backend()
    backend.connect.side_effect = TransportError("unreachable")
    memory = SyncMemoryBackend(lambda: backend, portal_backend="asyncio")
    assert repr(memory) == "<SyncMemoryBackend mock:// open>"
    with pytest.raises(TransportError, match="unreachable"), memory:
        pass
    assert repr(memory) == "<SyncMemoryBackend mock:// closed>"
    with pytest.raises(TransportError, match="closed"):
        memory.list_conversations()
    memory.close()  # a no-op, not an error
    assert backend.close.await_count == 1


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_the_portal_runs_the_async_library_asked_for(library: str) -> None:
    seen: list[str] = []

    def build() -> MemoryBackend:
        seen.append(sniffio.current_async_library())
        return _mock_backend()  # type: ignore[no-any-return]

    SyncMemoryBackend(build, portal_backend=library).close()
    assert seen == [library]


def test_open_backend_passes_the_backend_argument_on() -> None:
    with pytest.raises(ConfigurationError, match="does not match"):
        open_backend("memory://", backend="nams")
    with open_backend("memory://", backend="memory") as memory:
        assert memory.name == "embedded"


def test_call_by_name_for_integrations(no_portal_left: None) -> None:
    """``_call`` (MemoryBridge.call_in_hook's way in) forwards positional and keyword
    arguments, refuses a loop's thread unless told otherwise, and always refuses the
    portal's own thread (blocking there would wait for itself)."""
    with open_backend("memory://") as memory:
        memory._call("add_message", ("s", "user"), {"content": "hi"})
        assert [m.content for m in memory.get_conversation("s").messages] == ["hi"]

        async def on_a_loop(allow: bool | None) -> Any:
            if allow is None:
                return memory._call("get_conversation", ("s",), {})
            return memory._call("get_conversation", ("s",), {}, allow_loop_thread=allow)

        for refused in (None, False):
            with pytest.raises(SyncCallInEventLoopError, match="get_conversation"):
                asyncio.run(on_a_loop(refused))
        assert [m.content for m in asyncio.run(on_a_loop(True)).messages] == ["hi"]

        def from_the_portal() -> Any:
            return memory._call("get_conversation", ("s",), {}, allow_loop_thread=True)

        with pytest.raises(SyncCallInEventLoopError):
            memory._portal.call(from_the_portal)


def test_a_capability_warning_reaches_the_caller() -> None:
    with open_backend("memory://") as memory:
        memory.add_message("s", "user", "x")
        with pytest.warns(CapabilityWarning):
            memory.find_entities("x", user_identifier="someone")
