"""The blocking facade's non-functional promises (docs/blocking.md), each guarded by a
test that fails when that one promise is broken:

* calls from several threads run concurrently on the portal loop;
* a call from a trio loop's thread is refused as one from an asyncio loop's is;
* ``close()`` stops the portal thread even when the backend's close fails;
* the capability warnings of a call that fails still reach the caller.

The stores here are the real embedded store on a SQLite file, with one hook changed to
make the promise observable (a rendezvous, a failing close, a failing call).
"""

from __future__ import annotations

import inspect
import threading
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
import trio

from memory_core import (
    CapabilityWarning,
    Conversation,
    Entity,
    MemoryBackend,
    StoreError,
    TransportError,
)
from memory_core import requests as rq
from memory_core.backends.embedded.store import EmbeddedStore
from memory_core.sync import SyncCallInEventLoopError, SyncMemoryBackend, open_backend

PORTAL = "memory-core-portal"
CALLERS = 4
# Only a guard against hanging when the promise is broken; met at once when it holds.
RENDEZVOUS_TIMEOUT = 10.0


class RendezvousStore(EmbeddedStore):
    """Each read waits until ``CALLERS`` reads are in flight at the same time."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.barrier = threading.Barrier(CALLERS, timeout=RENDEZVOUS_TIMEOUT)

    async def get_conversation(self, req: rq.GetConversation) -> Conversation:
        # In a worker thread: the portal loop keeps running while this read waits.
        await anyio.to_thread.run_sync(self.barrier.wait)
        return await super().get_conversation(req)


class FailingCloseStore(EmbeddedStore):
    """Releases its connections, then reports a failure."""

    async def close(self) -> None:
        await super().close()
        raise StoreError("the store failed while closing")


class FailingEntityStore(EmbeddedStore):
    """``find_entities`` fails in the store (after the call's argument checks)."""

    async def find_entities(self, req: rq.FindEntities) -> list[Entity]:
        raise TransportError("the store is unreachable")


def _facade(store: EmbeddedStore) -> SyncMemoryBackend:
    return SyncMemoryBackend(lambda: MemoryBackend(store), portal_backend="asyncio")


def _portal_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == PORTAL}


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'promises.db'}"


# ---------------------------------------------------------------- concurrency


def test_calls_from_several_threads_run_concurrently(db_url: str) -> None:
    """docs/blocking.md: calls from any number of threads at once run concurrently on the portal
    loop. Each read below completes only once ``CALLERS`` reads are in flight together, so
    a facade that ran them one at a time breaks the barrier (after its timeout)."""
    store = RendezvousStore(db_url)
    with _facade(store) as memory:
        for caller in range(CALLERS):
            memory.add_message(f"s{caller}", "user", f"from caller {caller}")

        def read(caller: int) -> list[str]:
            return [m.content for m in memory.get_conversation(f"s{caller}").messages]

        with ThreadPoolExecutor(max_workers=CALLERS) as pool:
            results = list(pool.map(read, range(CALLERS)))
    assert results == [[f"from caller {caller}"] for caller in range(CALLERS)]
    assert not store.barrier.broken


# ---------------------------------------------------------------- event-loop threads


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_a_call_from_an_event_loop_thread_is_refused(db_url: str, loop: str) -> None:
    """docs/blocking.md: a call from a thread that runs an event loop raises
    SyncCallInEventLoopError; trio's loop counts as asyncio's does."""
    refused: list[BaseException] = []
    with open_backend(db_url) as memory:

        async def main() -> None:
            try:
                memory.add_message("s", "user", "never stored")
            except SyncCallInEventLoopError as exc:
                refused.append(exc)

        anyio.run(main, backend=loop)
        assert memory.get_conversation("s").messages == []
    assert len(refused) == 1
    assert "add_message() blocks" in str(refused[0])


def test_opening_on_a_trio_loop_is_refused_before_a_thread_starts(db_url: str) -> None:
    """docs/blocking.md: opening one on an event loop's thread raises before any thread is
    started; under trio as under asyncio."""
    before = _portal_threads()

    async def main() -> None:
        open_backend(db_url)

    with pytest.raises(SyncCallInEventLoopError, match=r"open_backend\(\) blocks"):
        trio.run(main)
    assert _portal_threads() == before


# ---------------------------------------------------------------- close


def test_close_stops_the_portal_even_when_the_backend_close_fails(db_url: str) -> None:
    """close(): the backend's error reaches the caller, and the portal thread is stopped
    all the same; the facade is closed (a second close is a no-op, calls are refused)."""
    before = _portal_threads()
    memory = _facade(FailingCloseStore(db_url))
    memory.add_message("s", "user", "connects the store")
    [portal] = _portal_threads() - before
    with pytest.raises(StoreError, match="failed while closing"):
        memory.close()
    assert not portal.is_alive()
    assert portal not in threading.enumerate()
    memory.close()  # no-op: the error is not raised again
    with pytest.raises(TransportError, match="closed"):
        memory.get_conversation("s")


# ---------------------------------------------------------------- warnings


@pytest.fixture
def failing_entities(db_url: str) -> Iterator[SyncMemoryBackend]:
    with _facade(FailingEntityStore(db_url)) as memory:
        yield memory


def test_the_warnings_of_a_failing_call_reach_the_caller(
    failing_entities: SyncMemoryBackend,
) -> None:
    """docs/blocking.md: a CapabilityWarning raised during a call is re-issued in the calling thread
    at the caller's line, also when the call then fails: the caller gets both."""
    caught: list[BaseException] = []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        line = _line() + 2
        try:
            failing_entities.find_entities("ana", user_identifier="someone")
        except TransportError as exc:
            caught.append(exc)
    assert [str(exc) for exc in caught] == ["the store is unreachable"]
    said = [w for w in seen if issubclass(w.category, CapabilityWarning)]
    assert [str(w.message).split(":")[0] for w in said] == ["embedded.find_entities"]
    assert "argument 'user_identifier' is not supported and was dropped" in str(said[0].message)
    assert (said[0].filename, said[0].lineno) == (__file__, line)


def _line() -> int:
    caller: Any = inspect.currentframe()
    return int(caller.f_back.f_lineno)
