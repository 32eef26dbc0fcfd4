"""Faults on the wire: the documented retry rules and the error each fault ends in.

Applicable where the test setup provides a
:class:`~memory_core.conformance.fault_control.FaultControl` (the ``conformance_faults``
fixture): a network backend whose service has fault knobs. Elsewhere every scenario is
not applicable. The rules checked (see ``memory_core/errors.py``):

* a ``429`` or ``503`` means nothing was processed: retried whatever the method,
  honouring ``Retry-After`` (plus up to 10 %), else a jittered backoff, and never
  waiting for a ``Retry-After`` above the client's cap;
* once retries are exhausted the error is ``retryable`` and not ``maybe_applied``;
* a ``413`` is an :class:`~memory_core.InvalidRequestError` naming the limit, not retried,
  and nothing is written; a batch refused after its first chunk says in ``written`` how
  much was stored (``None`` where a batch is atomic);
* a write whose connection drops, or whose answer comes after the client timeout, may
  have been applied: ``maybe_applied``, and it is never resent; a read is retried;
* a refused connection is ``retryable`` and nothing was applied;
* a rejected credential is an :class:`~memory_core.AuthenticationError` from every
  public method, not retried, and the credential never appears in the message.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from uuid import uuid4

import anyio
import pytest

from memory_core import (
    AuthenticationError,
    InvalidRequestError,
    MemoryBackend,
    MemoryCoreError,
    RateLimitedError,
    TransportError,
    open_backend,
)

from ..checks import word
from ..fault_control import FaultControl
from ..harness import Harness
from ..scenarios import NOT_APPLICABLE, scenario
from .base import SuiteBase

NO_CONTROL = (
    NOT_APPLICABLE + "no fault control for this backend (a network backend opts in by "
    "providing one: see FaultControl in memory_core/conformance/fault_control.py)"
)
FAST = 0.02
"""Backoff step of the clients the area opens (seconds), so retries cost little."""
RETRY_AFTER = 0.3
BACKOFF = 0.05
SLACK = 0.5
"""Seconds allowed on top of a computed wait between two attempts (for the requests,
answered by the fault knobs alone, and a busy machine)."""
TIMEOUT = 1.0
LATE = 2.5
"""Latency of a slow answer: well past :data:`TIMEOUT`."""
WARM = "warm"


async def _client(
    harness: Harness, control: FaultControl, **settings: Any
) -> tuple[MemoryBackend, str]:
    """A backend with the given client settings (see ``FaultControl.client_options``) and
    a session holding one message. The session is made and written by the harness's own
    backend (default settings: a short timeout must not fail the set-up on a slow store),
    then read once by the new one, before any fault is on, so that its later calls go
    straight to their own route."""
    settings.setdefault("backoff", FAST)
    handle = await harness.new_session(create=True)
    await harness.backend.add_message(handle, "user", WARM)
    backend = await harness.open(**control.client_options(**settings))
    assert await _contents(harness, backend, handle) == [WARM]
    return backend, handle


async def _contents(harness: Harness, backend: MemoryBackend, handle: str) -> list[str]:
    return await harness.contents(handle, backend=backend)


def _check(
    error: BaseException,
    kind: type[MemoryCoreError],
    *,
    retryable: bool,
    maybe_applied: bool,
    batch: bool = False,
) -> None:
    """``error`` is a ``kind`` with these attributes; ``written`` is None (a batch that
    stored nothing: None or 0)."""
    assert isinstance(error, kind), f"expected {kind.__name__}, got {type(error).__name__}"
    assert isinstance(error, MemoryCoreError)
    assert error.retryable is retryable, f"{type(error).__name__}.retryable is {error.retryable}"
    assert error.maybe_applied is maybe_applied, (
        f"{type(error).__name__}.maybe_applied is {error.maybe_applied}"
    )
    allowed = (None, 0) if batch else (None,)
    assert error.written in allowed, f"written is {error.written}, nothing was stored"


async def _left(control: FaultControl, knob: str) -> int:
    return (await control.pending())[knob]


Call = Callable[[], Awaitable[Any]]


def _gaps(times: list[float]) -> list[float]:
    """Seconds between consecutive faults: how long the client waited before retrying."""
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def _routes(harness: Harness, backend: MemoryBackend, handle: str, first: str) -> dict[str, Call]:
    """One call of every public method ``backend`` supports that reaches the service."""
    caps = backend.capabilities
    one = [{"role": "user", "content": "rejected"}]
    calls: dict[str, Call] = {
        "add_message": lambda: backend.add_message(handle, "user", "rejected"),
        "add_messages_batch": lambda: backend.add_messages_batch(handle, one),
        "bulk_add_messages": lambda: backend.bulk_add_messages(handle, one),
        "create_conversation": lambda: backend.create_conversation(session_id=harness.unique()),
        "get_conversation": lambda: backend.get_conversation(handle),
        "list_conversations": lambda: backend.list_conversations(limit=5),
        "list_conversations_page": lambda: backend.list_conversations_page(limit=5),
        "search_messages": lambda: backend.search_messages(word(), session_id=handle),
        "get_context": lambda: backend.get_context(word(), session_id=handle),
    }
    optional: dict[str, tuple[bool, Call]] = {
        "list_sessions": (caps.list_sessions, lambda: backend.list_sessions()),
        "get_conversation_summary": (
            caps.conversation_summary,
            lambda: backend.get_conversation_summary(handle),
        ),
        "get_observations": (caps.observations, lambda: backend.get_observations(handle)),
        "get_reflections": (caps.reflections, lambda: backend.get_reflections(handle)),
        "get_extraction_status": (
            caps.extraction_status,
            lambda: backend.get_extraction_status(handle),
        ),
        "wait_for_extraction": (
            caps.extraction_status,
            lambda: backend.wait_for_extraction(handle, timeout=5, poll_interval=0.05),
        ),
        "delete_message": (caps.delete_message, lambda: backend.delete_message(first)),
        "add_entity": (
            caps.entities and (caps.delete_entity or harness.throwaway),
            lambda: backend.add_entity(harness.unique("e"), "PERSON"),
        ),
        "find_entities": (caps.entities, lambda: backend.find_entities(word())),
        "delete_entity": (caps.delete_entity, lambda: backend.delete_entity(str(uuid4()))),
    }
    calls.update({name: call for name, (wanted, call) in optional.items() if wanted})
    calls["clear_session"] = lambda: backend.clear_session(handle)
    return calls


class FaultsSuite(SuiteBase):
    """Scenarios of area ``faults``."""

    @pytest.fixture
    async def fault_control(
        self, harness: Harness, conformance_faults: FaultControl | None
    ) -> AsyncIterator[FaultControl]:
        """The control, with every knob off before and after the scenario."""
        if conformance_faults is None:
            pytest.skip(NO_CONTROL)
        await conformance_faults.reset()
        try:
            yield conformance_faults
        finally:
            await conformance_faults.reset()
            await conformance_faults.close()

    # ------------------------------------------------------------------ 429

    @scenario(
        "faults.retry_after_honoured",
        "a read answered 429 twice with Retry-After, then served: each retry comes at "
        "least Retry-After and at most 10 % (plus 0.5 s for the request) after the 429",
    )
    async def test_faults_retry_after_honoured(
        self, harness: Harness, fault_control: FaultControl
    ) -> None:
        backend, _ = await _client(harness, fault_control)
        await fault_control.set(rate_limit=2, retry_after=RETRY_AFTER)
        start = anyio.current_time()
        assert await backend.list_conversations(limit=1)  # a read of one request
        took = anyio.current_time() - start
        assert await _left(fault_control, "rate_limit") == 0
        assert took >= 2 * RETRY_AFTER, f"served after {took:.3f} s, before 2 x Retry-After"
        [gap] = _gaps(await fault_control.fired_at())
        assert RETRY_AFTER <= gap <= RETRY_AFTER * 1.1 + SLACK, (
            f"retried {gap:.3f} s after a Retry-After of {RETRY_AFTER} s"
        )

    @scenario(
        "faults.rate_limited_write_retried",
        "a write (POST) answered 429 twice is retried (the service processed nothing) and "
        "stored exactly once",
    )
    async def test_faults_rate_limited_write_retried(
        self, harness: Harness, fault_control: FaultControl
    ) -> None:
        backend, handle = await _client(harness, fault_control)
        await fault_control.set(rate_limit=2, retry_after=0.05)
        await backend.add_message(handle, "user", "once")
        assert await _left(fault_control, "rate_limit") == 0
        assert await _contents(harness, backend, handle) == [WARM, "once"]

    @scenario(
        "faults.rate_limited_backoff",
        "a write answered 429 without Retry-After is retried with the jittered backoff: "
        "stored once, within the backoff's bound",
    )
    async def test_faults_rate_limited_backoff(
        self, harness: Harness, fault_control: FaultControl
    ) -> None:
        backend, handle = await _client(harness, fault_control, backoff=BACKOFF)
        await fault_control.set(rate_limit=3, omit_retry_after=True)
        await backend.add_message(handle, "user", "after backoff")
        assert await _left(fault_control, "rate_limit") == 0
        gaps = _gaps(await fault_control.fired_at())
        assert max(gaps) <= BACKOFF + SLACK, (
            f"retried after {max(gaps):.3f} s with a backoff of at most {BACKOFF} s"
        )
        assert await _contents(harness, backend, handle) == [WARM, "after backoff"]

    @scenario(
        "faults.rate_limited_exhausted",
        "a write answered 429 on every attempt: RateLimitedError after 1 + max_retries "
        "attempts, retryable, not maybe_applied, retry_after of the last answer, nothing "
        "written",
    )
    async def test_faults_rate_limited_exhausted(
        self, harness: Harness, fault_control: FaultControl
    ) -> None:
        backend, handle = await _client(harness, fault_control, max_retries=2)
        await fault_control.set(rate_limit=4, retry_after=0.05)
        with pytest.raises(MemoryCoreError) as caught:
            await backend.add_message(handle, "user", "limited")
        _check(caught.value, RateLimitedError, retryable=True, maybe_applied=False)
        assert isinstance(caught.value, RateLimitedError)
        assert caught.value.retry_after == pytest.approx(0.05), caught.value.retry_after
        assert await _left(fault_control, "rate_limit") == 1, "not 1 + max_retries attempts"
        await fault_control.reset()
        assert await _contents(harness, backend, handle) == [WARM]

    @scenario(
        "faults.retry_after_over_cap",
        "a Retry-After above the client's cap is not waited for: RateLimitedError at once, "
        "carrying that Retry-After",
    )
    async def test_faults_retry_after_over_cap(
        self, harness: Harness, fault_control: FaultControl
    ) -> None:
        backend, _ = await _client(harness, fault_control, max_retry_after=1)
        await fault_control.set(rate_limit=2, retry_after=30)
        start = anyio.current_time()
        with pytest.raises(RateLimitedError) as caught:
            await backend.list_conversations(limit=1)  # a read of one request
        took = anyio.current_time() - start
        assert caught.value.retry_after == 30
        assert took < 1, f"gave up after {took:.3f} s"
        assert await _left(fault_control, "rate_limit") == 1, "a capped Retry-After was retried"

    # ------------------------------------------------------------------ 503

    @scenario(
        "faults.unavailable_retried",
        "a write answered 503, with and without Retry-After, is retried and stored once",
    )
    async def test_faults_unavailable_retried(
        self, harness: Harness, fault_control: FaultControl
    ) -> None:
        backend, handle = await _client(harness, fault_control)
        await fault_control.set(unavailable=1, unavailable_retry_after=0.05)
        await backend.add_message(handle, "user", "with")
        await fault_control.reset()
        await fault_control.set(unavailable=2)
        await backend.add_message(handle, "user", "without")
        assert await _left(fault_control, "unavailable") == 0
        assert await _contents(harness, backend, handle) == [WARM, "with", "without"]

    @scenario(
        "faults.unavailable_exhausted",
        "a write answered 503 on every attempt: TransportError after 1 + max_retries "
        "attempts, retryable, not maybe_applied, nothing written",
    )
    async def test_faults_unavailable_exhausted(
        self, harness: Harness, fault_control: FaultControl
    ) -> None:
        backend, handle = await _client(harness, fault_control, max_retries=1)
        await fault_control.set(unavailable=3, unavailable_retry_after=0.01)
        with pytest.raises(MemoryCoreError) as caught:
            await backend.add_message(handle, "user", "unavailable")
        _check(caught.value, TransportError, retryable=True, maybe_applied=False)
        assert await _left(fault_control, "unavailable") == 1, "not 1 + max_retries attempts"
        await fault_control.reset()
        assert await _contents(harness, backend, handle) == [WARM]

    # ------------------------------------------------------------------ 413

    @scenario(
        "faults.payload_too_large",
        "a write answered 413: InvalidRequestError naming the limit, not retried, not "
        "retryable, nothing written",
    )
    async def test_faults_payload_too_large(
        self, harness: Harness, fault_control: FaultControl
    ) -> None:
        backend, handle = await _client(harness, fault_control)
        await fault_control.set(payload_too_large=2, payload_limit=4321)
        with pytest.raises(MemoryCoreError) as caught:
            await backend.add_message(handle, "user", "too large")
        _check(caught.value, InvalidRequestError, retryable=False, maybe_applied=False)
        assert "4321" in str(caught.value), f"the limit is not named: {caught.value}"
        assert await _left(fault_control, "payload_too_large") == 1, "a 413 was retried"
        await fault_control.reset()
        assert await _contents(harness, backend, handle) == [WARM]

    @scenario(
        "faults.batch_refused_midway",
        "a batch refused (413) after its first chunk of 2: the error's written is 2 and "
        "exactly that chunk is stored (a batch the backend writes atomically: written is "
        "None and nothing is stored)",
    )
    async def test_faults_batch_refused_midway(
        self, harness: Harness, fault_control: FaultControl
    ) -> None:
        backend, handle = await _client(harness, fault_control)
        chunked = backend.capabilities.max_bulk_messages is not None
        batch = [{"role": "user", "content": f"b{n}"} for n in range(4)]
        await fault_control.set(pass_first=1 if chunked else 0, payload_too_large=1)
        with pytest.raises(InvalidRequestError) as caught:
            await backend.add_messages_batch(handle, batch, batch_size=2)
        error = caught.value
        assert error.retryable is False and error.maybe_applied is False
        await fault_control.reset()
        stored = await _contents(harness, backend, handle)
        if chunked:
            assert error.written == 2, f"written is {error.written}, 2 were stored"
            assert stored == [WARM, "b0", "b1"]
        else:
            assert error.written is None, f"written is {error.written} on an atomic batch"
            assert stored == [WARM]

    # ------------------------------------------------------------------ dropped

    @scenario(
        "faults.dropped_write",
        "a write whose connection drops (after or before the service processed it): "
        "TransportError, retryable, maybe_applied, never resent (stored at most once); a "
        "retry with the same idempotency_key stores nothing more",
    )
    async def test_faults_dropped_write(
        self, harness: Harness, fault_control: FaultControl
    ) -> None:
        backend, handle = await _client(harness, fault_control)
        keyed = backend.capabilities.idempotency_keys
        key: dict[str, Any] = {"idempotency_key": harness.unique("key")} if keyed else {}
        await fault_control.set(drop=1, drop_mode="after")
        with pytest.raises(MemoryCoreError) as caught:
            await backend.add_message(handle, "user", "processed", **key)
        _check(caught.value, TransportError, retryable=True, maybe_applied=True)
        assert await _contents(harness, backend, handle) == [WARM, "processed"]
        if keyed:
            await backend.add_message(handle, "user", "processed", **key)
            assert await _contents(harness, backend, handle) == [WARM, "processed"]
        await fault_control.set(drop=1, drop_mode="before")
        with pytest.raises(MemoryCoreError) as caught:
            await backend.add_message(handle, "user", "not processed")
        _check(caught.value, TransportError, retryable=True, maybe_applied=True)
        assert await _contents(harness, backend, handle) == [WARM, "processed"]

    @scenario(
        "faults.dropped_read_retried",
        "a read whose connection drops (after or before processing) is retried and answers",
    )
    async def test_faults_dropped_read_retried(
        self, harness: Harness, fault_control: FaultControl
    ) -> None:
        backend, handle = await _client(harness, fault_control)
        for mode in ("after", "before"):
            await fault_control.set(drop=1, drop_mode=mode)
            assert await _contents(harness, backend, handle) == [WARM], mode
            assert await _left(fault_control, "drop") == 0

    # ------------------------------------------------------------------ slow answers

    @scenario(
        "faults.slow_write",
        "a write answered after the client timeout: TransportError, retryable, "
        "maybe_applied, never resent (stored once)",
    )
    async def test_faults_slow_write(self, harness: Harness, fault_control: FaultControl) -> None:
        backend, handle = await _client(harness, fault_control, timeout=TIMEOUT)
        await fault_control.set(latency=LATE)
        with pytest.raises(MemoryCoreError) as caught:
            await backend.add_message(handle, "user", "slow")
        _check(caught.value, TransportError, retryable=True, maybe_applied=True)
        await fault_control.reset()
        assert await _contents(harness, backend, handle) == [WARM, "slow"]

    @scenario(
        "faults.slow_read",
        "a read answered after the client timeout is retried, then TransportError, "
        "retryable, not maybe_applied",
    )
    async def test_faults_slow_read(self, harness: Harness, fault_control: FaultControl) -> None:
        backend, handle = await _client(harness, fault_control, timeout=TIMEOUT, max_retries=1)
        await fault_control.set(latency=LATE)
        start = anyio.current_time()
        with pytest.raises(MemoryCoreError) as caught:
            await backend.get_conversation(handle)
        took = anyio.current_time() - start
        _check(caught.value, TransportError, retryable=True, maybe_applied=False)
        assert took >= 2 * TIMEOUT * 0.9, f"failed after {took:.3f} s: the read was not retried"

    # ------------------------------------------------------------------ unreachable

    @scenario(
        "faults.refused_connection",
        "nothing listening: connect, a read and a write raise TransportError, retryable, "
        "not maybe_applied, nothing written",
    )
    async def test_faults_refused_connection(
        self, harness: Harness, fault_control: FaultControl
    ) -> None:
        options = {**harness.options, **fault_control.client_options(max_retries=1, backoff=FAST)}
        backend = open_backend(fault_control.unreachable_url(), **options)
        try:
            calls: list[Call] = [
                backend.connect,
                lambda: backend.get_conversation(harness.unique()),
                lambda: backend.add_message(harness.unique(), "user", "nowhere"),
                lambda: backend.bulk_add_messages(
                    harness.unique(), [{"role": "user", "content": "nowhere"}]
                ),
            ]
            for call in calls:
                with pytest.raises(MemoryCoreError) as caught:
                    await call()
                error = caught.value
                assert isinstance(error, TransportError), f"got {type(error).__name__}"
                assert error.retryable is True and error.maybe_applied is False, error
                assert not error.written, f"written is {error.written}"
        finally:
            await backend.close()

    # ------------------------------------------------------------------ credentials

    @scenario(
        "faults.wrong_key",
        "a backend opened with a rejected credential: connect and a write raise "
        "AuthenticationError, not retryable, nothing written, the credential not in the "
        "message",
    )
    async def test_faults_wrong_key(self, harness: Harness, fault_control: FaultControl) -> None:
        backend, handle = await _client(harness, fault_control)
        wrong = fault_control.wrong_credential()
        rejected = harness.open_unconnected(**wrong)
        secrets = [str(v) for v in wrong.values() if isinstance(v, str)]
        calls: list[Call] = [
            rejected.connect,
            lambda: rejected.add_message(handle, "user", "intruder"),
        ]
        for call in calls:
            with pytest.raises(MemoryCoreError) as caught:
                await call()
            _check(caught.value, AuthenticationError, retryable=False, maybe_applied=False)
            assert not [s for s in secrets if s in str(caught.value)], "the credential is shown"
        assert await _contents(harness, backend, handle) == [WARM]

    @scenario(
        "faults.key_rejected_every_route",
        "a credential rejected mid-session (401): every public method the backend supports "
        "raises AuthenticationError, not retried, not retryable, nothing written",
    )
    async def test_faults_key_rejected_every_route(
        self, harness: Harness, fault_control: FaultControl
    ) -> None:
        backend, handle = await _client(harness, fault_control)
        first = (await harness.messages(handle, backend=backend))[0]
        for name, call in _routes(harness, backend, handle, str(first.id)).items():
            await fault_control.set(unauthorized=1)
            try:
                await call()
            except AuthenticationError as exc:
                _check(exc, AuthenticationError, retryable=False, maybe_applied=False, batch=True)
            except MemoryCoreError as exc:
                raise AssertionError(f"{name}: {type(exc).__name__} on a 401: {exc}") from None
            else:
                raise AssertionError(f"{name} did not raise AuthenticationError on a 401")
            assert await _left(fault_control, "unauthorized") == 0, f"{name} sent no request"
        assert await _contents(harness, backend, handle) == [WARM]
