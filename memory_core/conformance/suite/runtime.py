"""Lifecycle, configuration and runtime (trio)."""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import anyio
import pytest

from memory_core import Capabilities, ConfigurationError, MemoryCoreError, open_backend

from ..checks import word
from ..harness import Harness
from ..scenarios import NOT_APPLICABLE, scenario
from .base import SuiteBase

HEARTBEAT = 0.002
RESPONSIVE_FLOOR = 0.05
RESPONSIVE_IDLE_SHARE = 0.5
RESPONSIVE_STALL_SHARE = 0.9
RESPONSIVE_ATTEMPTS = 3
LARGE_BATCH = 3000
LARGE_TEXT = "ünïcode 😀 " * 200  # 2,200 characters


SECRET_WORDS = ("password", "key", "token", "secret")
SECRET_OPTIONS = ("password", "api_key", "token")


def _with_password(url: str, password: str) -> str:
    """``url`` with ``user:password@`` in its authority (replacing any credentials)."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"cfuser:{password}@{host}"))


class _Heartbeat:
    """A task that wakes every HEARTBEAT seconds and records when it woke."""

    def __init__(self) -> None:
        self.beats: list[float] = []
        self.running = True

    async def run(self) -> None:
        self.beats.append(anyio.current_time())
        while self.running:
            await anyio.sleep(HEARTBEAT)
            self.beats.append(anyio.current_time())

    def worst_stall(self, start: float, end: float) -> float:
        """The longest time within start..end with no beat (beyond one HEARTBEAT)."""
        stalls = [
            min(b, end) - max(a, start) - HEARTBEAT
            for a, b in itertools.pairwise(self.beats)
            if b > start and a < end
        ]
        return max(stalls, default=0.0)


def _run_queue_wait() -> float:
    """Seconds the calling thread has spent ready to run but waiting for a CPU (Linux's
    ``/proc/thread-self/schedstat``; 0.0 where there is none)."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as stats:
            return int(stats.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _verdict(name: str, took: float, stall: float, cpu: float, waited: float = 0.0) -> str | None:
    """Why one call counts as blocking the loop, or None.

    ``stall`` is its longest stretch without a heartbeat, ``cpu`` the loop thread's CPU
    time during the call, ``waited`` the time the thread was ready but other processes
    had the CPUs (a loaded machine: no backend's doing, so it is taken off the stall).
    Blocking I/O leaves the loop thread idle without yielding: a stall that the thread's
    own CPU work does not explain. Any work that never lets the loop run for nearly the
    whole call (here 90%) blocks it too, whatever it does.
    """
    # The wait is taken off the call's time too: a call that never yields is caught
    # however long the machine kept its thread waiting.
    stall = max(0.0, stall - waited)
    ran = max(0.0, took - waited)
    idle = stall - cpu
    if idle > max(RESPONSIVE_FLOOR, RESPONSIVE_IDLE_SHARE * ran):
        why = f"sat idle {idle * 1000:.0f} ms without yielding"
    elif stall > max(RESPONSIVE_FLOOR, RESPONSIVE_STALL_SHARE * ran):
        why = "never yielded"
    else:
        return None
    return f"{name} took {took * 1000:.0f} ms, stalled the loop {stall * 1000:.0f} ms: {why}"


async def _blocked_calls(harness: Harness) -> list[str]:
    """Large writes, reads and searches of a fresh session while a heartbeat runs; the
    calls during which the loop stalled longer than the bound (see the scenario)."""
    backend = harness.backend
    handle = await harness.new_session()
    term = word()
    batch = [{"role": "user", "content": f"{term} {n} {LARGE_TEXT}"} for n in range(LARGE_BATCH)]
    cap = harness.caps.max_messages_per_read
    limit = LARGE_BATCH if cap is None else min(cap, LARGE_BATCH)
    hits_cap = harness.caps.max_search_hits
    hits = 1200 if hits_cap is None else min(hits_cap, 1200)
    calls: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("bulk_add_messages", lambda: backend.bulk_add_messages(handle, batch)),
        ("get_conversation", lambda: backend.get_conversation(handle, limit=limit)),
        ("search_messages", lambda: backend.search_messages(term, session_id=handle, limit=hits)),
        ("get_conversation", lambda: backend.get_conversation(handle, limit=limit)),
        ("add_message", lambda: backend.add_message(handle, "user", LARGE_TEXT)),
    ]
    beat = _Heartbeat()
    spans: list[tuple[str, float, float, float, float]] = []
    async with anyio.create_task_group() as group:
        group.start_soon(beat.run)
        await anyio.sleep(HEARTBEAT * 5)
        for name, call in calls:
            start, cpu, queued = anyio.current_time(), time.thread_time(), _run_queue_wait()
            await call()
            used, waited = time.thread_time() - cpu, _run_queue_wait() - queued
            spans.append((name, start, anyio.current_time(), used, waited))
        await anyio.sleep(HEARTBEAT * 5)
        beat.running = False
    await backend.clear_session(handle)
    harness.forget(handle)
    blocked = []
    for name, start, end, cpu, waited in spans:
        verdict = _verdict(name, end - start, beat.worst_stall(start, end), cpu, waited)
        if verdict is not None:
            blocked.append(verdict)
    return blocked


class RuntimeSuite(SuiteBase):
    """Scenarios of area ``runtime``."""

    @scenario(
        "runtime.capabilities_consistent",
        "capabilities are frozen, fixed per backend object, and their limits agree with the flags",
    )
    async def test_runtime_capabilities_consistent(self, harness: Harness) -> None:
        caps = harness.caps
        assert isinstance(caps, Capabilities)
        assert harness.backend.capabilities is harness.backend.capabilities
        assert isinstance(type(harness.backend.store).capabilities, Capabilities)
        with pytest.raises(dataclasses.FrozenInstanceError):
            caps.delete_message = not caps.delete_message  # type: ignore[misc]
        for name in Capabilities.limit_names():
            value = getattr(caps, name)
            assert value is None or (type(value) is int and value > 0), f"{name}={value!r}"
        assert caps.default_messages_per_read > 0
        if caps.max_messages_per_read is not None:
            assert caps.default_messages_per_read <= caps.max_messages_per_read
        assert caps.full_history == (caps.max_messages_per_read is None), (
            "full_history must be True exactly when max_messages_per_read is None"
        )

    @scenario(
        "runtime.lifecycle",
        "async with connects and closes; close twice is fine; use after close is refused",
    )
    async def test_runtime_lifecycle(self, harness: Harness) -> None:
        backend = harness.open_unconnected()
        async with backend as opened:
            assert opened is backend
            handle = await harness.new_session(backend=backend)
            await backend.add_message(handle, "user", "inside")
            assert await harness.contents(handle, backend=backend) == ["inside"]
            await backend.clear_session(handle)
        await backend.close()
        with pytest.raises(MemoryCoreError):
            await backend.get_conversation(handle)
        harness.forget(handle)  # cleared above; the instance is closed now

    @scenario("runtime.unknown_option", "an unknown open option raises ConfigurationError")
    async def test_runtime_unknown_option(self, harness: Harness) -> None:
        with pytest.raises(ConfigurationError):
            harness.open_unconnected(no_such_option_anywhere=1)

    @scenario(
        "runtime.no_secret_in_repr",
        "the backend's repr and describe() never show a password or API key, nor does the "
        "error refusing one (a canary secret is planted in the URL and in each secret option)",
    )
    async def test_runtime_no_secret_in_repr(self, harness: Harness) -> None:
        secrets = [urlsplit(harness.url).password or ""]
        secrets += [
            str(v) for k, v in harness.options.items() if any(w in k.lower() for w in SECRET_WORDS)
        ]
        secrets = [s for s in secrets if len(s) >= 4]
        shown = repr(harness.backend) + harness.backend.describe()
        for secret in secrets:
            assert secret not in shown, "a secret appears in repr() or describe()"
        assert isinstance(harness.backend.describe(), str)
        canary = f"cfcanary{uuid4().hex}"
        planted = [(_with_password(harness.url, canary), harness.options)]
        planted += [(harness.url, {**harness.options, option: canary}) for option in SECRET_OPTIONS]
        for url, options in planted:
            try:
                backend = open_backend(url, **options)
            except MemoryCoreError as exc:
                assert canary not in f"{exc} {exc!r}", "a refused secret is shown in the error"
                continue
            try:
                shown = repr(backend) + backend.describe()
                assert canary not in shown, "a planted secret appears in repr() or describe()"
            finally:
                await backend.close()

    @scenario(
        "runtime.responsive",
        "the event loop stays responsive while the backend serves large writes, reads and "
        "searches: no call leaves the loop idle without yielding for over half its latency "
        "(blocking I/O), or never yields for 90% of it (or 50 ms)",
    )
    async def test_runtime_responsive(self, harness: Harness) -> None:
        attempts: list[str] = []
        # The bounds are relative to each call's own latency, so a slow machine or a
        # remote store moves them along. A call doing blocking I/O on the loop thread
        # stalls the heartbeat while the thread sits idle; CPU work on the loop (a
        # driver decoding a large result) stalls it while the thread is busy, which is
        # tolerated unless it never yields. A passing round wins: stalls of a loaded CI
        # machine are transient, blocking is not.
        for _ in range(RESPONSIVE_ATTEMPTS):
            blocked = await _blocked_calls(harness)
            if not blocked:
                return
            attempts.append(", ".join(blocked))
        raise AssertionError("the event loop was blocked: " + "; ".join(attempts))

    @scenario("runtime.trio", "the backend works under trio (anyio) when it claims trio")
    def test_runtime_trio(
        self, conformance_backend_url: str, conformance_backend_options: dict[str, Any]
    ) -> None:
        backend = open_backend(conformance_backend_url, **conformance_backend_options)
        if not backend.capabilities.trio:
            pytest.skip(f"{NOT_APPLICABLE}trio is False (the backend is asyncio-only)")

        async def exercise() -> list[str]:
            async with Harness(conformance_backend_url, conformance_backend_options) as h:
                handle = await h.new_session()
                await h.backend.add_message(handle, "user", "under trio")
                await h.fill(handle, 2)
                return await h.contents(handle)

        assert anyio.run(exercise, backend="trio") == ["under trio", "m0", "m1"]
