"""The blocking facade on every backend: same API, errors and warnings; thread safety.
(Signatures: test_sync_signatures.py; warnings without patching: test_sync_warnings.py.)"""

from __future__ import annotations

import inspect
import subprocess
import sys
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import anyio
import anyio.to_thread
import pytest

from memory_core import (
    CapabilityWarning,
    InvalidRequestError,
    NotSupportedError,
    TransportError,
)
from memory_core.sync import SyncCallInEventLoopError, open_backend
from memory_core_dev.sync_stores import SyncStore


def test_round_trip_and_errors(sync_store: SyncStore) -> None:
    memory = sync_store.memory
    session = sync_store.session()
    first = memory.add_message(session, "user", "hello portal")
    memory.add_message(session_id=session, role="assistant", content="hi back")
    conversation = memory.get_conversation(session)
    assert [m.content for m in conversation.messages] == ["hello portal", "hi back"]
    assert conversation.messages[0].id == first.id
    hits = memory.search_messages("portal", session_id=session)
    assert [h.content for h in hits] == ["hello portal"]
    with pytest.raises(InvalidRequestError) as caught:
        memory.add_message(session, "robot", "never stored")
    assert caught.value.argument == "role"
    assert len(memory.get_conversation(session).messages) == 2
    assert memory.clear_session(session) is True


def test_missing_capability_raises_the_same_error(sync_store: SyncStore) -> None:
    memory = sync_store.memory
    if memory.capabilities.list_sessions:
        assert isinstance(memory.list_sessions(limit=5), list)
    else:
        with pytest.raises(NotSupportedError) as caught:
            memory.list_sessions()
        assert caught.value.method == "list_sessions"


def test_warnings_point_at_the_callers_line(sync_store: SyncStore) -> None:
    memory = sync_store.memory
    session = sync_store.session()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
        memory.add_message(session, "user", "with metadata", metadata={"k": 1})
    dropped = [w for w in seen if issubclass(w.category, CapabilityWarning)]
    if memory.capabilities.message_metadata:
        assert dropped == []
        assert memory.get_conversation(session).messages[0].metadata == {"k": 1}
    else:
        assert len(dropped) == 1
        assert dropped[0].filename == __file__
        assert dropped[0].lineno == line


def test_strict_raises_where_a_warning_would_be_given(sync_store: SyncStore) -> None:
    strict = sync_store.open(strict=True)
    session = sync_store.session()
    if strict.capabilities.message_metadata:
        strict.add_message(session, "user", "kept", metadata={"k": [1, True]})
        assert strict.get_conversation(session).messages[0].metadata == {"k": [1, True]}
    else:
        with pytest.raises(NotSupportedError):
            strict.add_message(session, "user", "never stored", metadata={"k": 1})
        assert strict.get_conversation(session).messages == []


def test_thread_pool_stress_loses_nothing(sync_store: SyncStore) -> None:
    memory = sync_store.memory
    sessions = [sync_store.session(f"stress{i}") for i in range(3)]
    writers, per_writer = 6, 20

    def write(writer: int) -> list[str]:
        session = sessions[writer % len(sessions)]
        texts = [f"w{writer}-m{i}" for i in range(per_writer)]
        for text in texts:
            memory.add_message(session, "user", text)
            memory.get_conversation(session, limit=5)  # reads interleave with writes
        return texts

    with ThreadPoolExecutor(max_workers=writers) as pool:
        written = list(pool.map(write, range(writers)))
    for index, session in enumerate(sessions):
        stored = [m.content for m in memory.get_conversation(session).messages]
        expected = [
            t for w, texts in enumerate(written) if w % len(sessions) == index for t in texts
        ]
        assert sorted(stored) == sorted(expected)
        for w in range(index, writers, len(sessions)):  # each writer's order is kept
            mine = [t for t in stored if t.startswith(f"w{w}-")]
            assert mine == written[w]


def test_one_portal_thread_for_every_call(sync_store: SyncStore) -> None:
    memory = sync_store.memory
    session = sync_store.session()
    memory.add_message(session, "user", "first")
    threads = {t.ident for t in threading.enumerate()}
    for i in range(5):
        memory.add_message(session, "user", f"m{i}")
    assert {t.ident for t in threading.enumerate()} == threads  # no thread or loop per call
    portals = [t for t in threading.enumerate() if t.name == "memory-core-portal"]
    assert len(portals) == len(sync_store.opened)


@pytest.mark.anyio
async def test_event_loop_thread_is_refused_worker_thread_works(sync_store: SyncStore) -> None:
    memory = sync_store.memory
    session = await anyio.to_thread.run_sync(sync_store.session)
    with pytest.raises(SyncCallInEventLoopError, match="await the async backend"):
        memory.add_message(session, "user", "blocked")
    stored = await anyio.to_thread.run_sync(
        lambda: memory.add_message(session, "user", "from a worker thread")
    )
    assert stored.content == "from a worker thread"
    assert (
        len(await anyio.to_thread.run_sync(lambda: memory.get_conversation(session).messages)) == 1
    )


def test_close_is_idempotent_and_calls_after_close_are_refused(tmp_path: object) -> None:
    with open_backend("memory://") as memory:
        memory.add_message("s", "user", "x")
        assert "open" in repr(memory)
    memory.close()
    assert "closed" in repr(memory)
    with pytest.raises(TransportError, match="closed"):
        memory.get_conversation("s")
    assert not [t for t in threading.enumerate() if t.name == "memory-core-portal"]


def test_configuration_errors_are_raised_and_no_thread_is_left() -> None:
    from memory_core import ConfigurationError

    with pytest.raises(ConfigurationError):
        open_backend("memory://", no_such_option=1)
    assert not [t for t in threading.enumerate() if t.name == "memory-core-portal"]


# The process must exit: a portal thread left running keeps it waiting forever (the
# timeout is only a guard against that hang; each script takes about a second).
_OPENED_ON_A_LOOP = """
import asyncio
from memory_core.sync import SyncMemoryBackend, open_backend
from memory_core import open_backend as open_async

async def main():
    try:
        SyncMemoryBackend(lambda: open_async("memory://"), portal_backend="asyncio")
    except Exception as exc:
        print("constructor:", type(exc).__name__)
    with open_backend("memory://"):  # raises, and nothing catches it
        pass

asyncio.run(main())
"""

_ENTERED_ON_A_LOOP = """
import asyncio, threading
import anyio.to_thread
from memory_core.sync import open_backend

async def main():
    memory = await anyio.to_thread.run_sync(open_backend, "memory://")
    try:
        with memory:
            pass
    except Exception as exc:
        print("with:", type(exc).__name__, repr(memory))
    print("portals:", [t.name for t in threading.enumerate() if t.name == "memory-core-portal"])

asyncio.run(main())
"""

_NEVER_CLOSED = """
from memory_core.sync import open_backend

memory = open_backend("memory://")
memory.add_message("s", "user", "kept open on purpose")
print("done")
"""


def _script(source: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, timeout=60
    )


def test_opening_on_an_event_loop_raises_and_the_process_exits() -> None:
    result = _script(_OPENED_ON_A_LOOP)
    assert "constructor: SyncCallInEventLoopError" in result.stdout
    assert result.returncode == 1  # the uncaught error, not a hang
    assert "SyncCallInEventLoopError: memory_core.sync: open_backend() blocks" in result.stderr


def test_a_with_block_refused_on_an_event_loop_closes_the_facade() -> None:
    result = _script(_ENTERED_ON_A_LOOP)
    assert result.returncode == 0, result.stderr
    assert "with: SyncCallInEventLoopError <SyncMemoryBackend memory:// closed>" in result.stdout
    assert "portals: []" in result.stdout


def test_a_facade_never_closed_does_not_keep_the_process_alive() -> None:
    result = _script(_NEVER_CLOSED)
    assert (result.returncode, result.stdout.strip()) == (0, "done"), result.stderr


def test_each_facade_has_a_portal_thread_of_its_own(sync_store: SyncStore) -> None:
    def portals() -> set[int | None]:
        return {t.ident for t in threading.enumerate() if t.name == "memory-core-portal"}

    first = sync_store.memory
    session = sync_store.session()
    first.add_message(session, "user", "a")
    alone = portals()
    second = sync_store.open()
    second.add_message(session, "user", "b")
    both = portals()
    assert len(both) == len(alone) + 1, "a second facade shares the first one's thread"
    second.close()
    assert portals() == alone, "closing one facade stopped another's thread"
    assert [m.content for m in first.get_conversation(session).messages] == ["a", "b"]
