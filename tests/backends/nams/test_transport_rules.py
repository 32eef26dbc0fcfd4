"""The NAMS transport's retry and error rules at their edges (mocked service, respx):
how many attempts, how long each wait, what each retry logs, and what an error says."""

from __future__ import annotations

import logging
import random
import re
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest
import respx

from memory_core import (
    InvalidRequestError,
    MemoryBackend,
    NotSupportedError,
    RateLimitedError,
    TransportError,
    __version__,
)
from memory_core import nams_wire as wire
from memory_core.backends.nams.transport import RetryPolicy, parse_retry_after

from .mocked import CID, conversation, mocked_backend

pytestmark = pytest.mark.anyio


# ----------------------------------------------------------------- waits


def test_backoff_doubles_per_attempt_up_to_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    # Full jitter draws from [0, ceiling]: the top of each draw shows the ceiling.
    monkeypatch.setattr(random, "uniform", lambda low, high: high)
    policy = RetryPolicy(backoff=0.5, max_backoff=8.0)
    assert [policy.delay(n, None) for n in range(7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert policy.delay(0, 3.0) == pytest.approx(3.3)  # Retry-After plus up to 10 %
    monkeypatch.setattr(random, "uniform", lambda low, high: low)
    assert policy.delay(4, None) == 0.0 and policy.delay(4, 3.0) == 3.0


def test_an_http_date_without_a_zone_reads_as_utc() -> None:
    later = datetime.now(UTC) + timedelta(seconds=30)
    naive = later.strftime("%a, %d %b %Y %H:%M:%S")  # no "GMT": parsed as naive
    parsed = parse_retry_after(naive)
    assert parsed is not None and 25 <= parsed <= 31
    assert parse_retry_after(format_datetime(later - timedelta(seconds=90), usegmt=True)) == 0.0


async def test_a_retry_after_equal_to_the_cap_is_waited_for(api: respx.MockRouter) -> None:
    route = api.get(f"/conversations/{CID}").mock(
        side_effect=[
            httpx.Response(429, headers={wire.RETRY_AFTER: "0.01"}),
            httpx.Response(200, json=conversation()),
        ]
    )
    api.get(f"/conversations/{CID}/messages").respond(json={"messages": []})
    async with mocked_backend(max_retry_after=0.01) as memory:
        await memory.get_conversation(CID)
    assert route.call_count == 2


# ----------------------------------------------------------------- attempts


@pytest.mark.parametrize("retries", [0, 2])
async def test_a_request_that_never_left_is_sent_max_retries_more_times(
    api: respx.MockRouter, retries: int
) -> None:
    route = api.post(f"/conversations/{CID}/messages").mock(
        side_effect=httpx.ConnectError("refused")
    )
    async with mocked_backend(max_retries=retries) as memory:
        with pytest.raises(TransportError) as caught:
            await memory.add_message(CID, "user", "x")
    assert route.call_count == retries + 1
    assert caught.value.retryable is True and caught.value.maybe_applied is False


@pytest.mark.parametrize("status", [500, 502, 504])
async def test_a_post_answered_5xx_may_have_been_stored_and_is_not_resent(
    api: respx.MockRouter, status: int
) -> None:
    """A 5xx other than 503 (the service or a proxy failed after it may have stored the
    write) to a POST: not resent, and ``maybe_applied``; to a GET it says nothing."""
    route = api.post(f"/conversations/{CID}/messages").respond(status)
    api.get(f"/conversations/{CID}/messages").respond(status)
    api.get(f"/conversations/{CID}").respond(json=conversation())
    async with mocked_backend(max_retries=2) as memory:
        with pytest.raises(TransportError) as posted:
            await memory.add_message(CID, "user", "x")
        with pytest.raises(TransportError) as read:
            await memory.get_conversation(CID)
    assert route.call_count == 1
    assert posted.value.maybe_applied is True and posted.value.retryable is True
    assert "may have been stored" in str(posted.value)
    assert read.value.maybe_applied is False


async def test_each_retry_is_logged_with_its_reason_count_and_wait(
    api: respx.MockRouter,
    caplog: pytest.LogCaptureFixture,
) -> None:
    api.get(f"/conversations/{CID}").mock(
        side_effect=[
            httpx.Response(503),
            httpx.ReadError("reset"),
            httpx.Response(200, json=conversation()),
        ]
    )
    api.get(f"/conversations/{CID}/messages").respond(json={"messages": []})
    async with mocked_backend() as memory:
        with caplog.at_level(logging.INFO, logger="memory_core.backends.nams"):
            await memory.get_conversation(CID)
    lines = [r.getMessage() for r in caplog.records if r.name == "memory_core.backends.nams"]
    route = re.escape(f"/conversations/{CID}")
    assert len(lines) == 2, lines
    assert re.fullmatch(rf"nams GET {route}: 503, retry 1/3 in 0\.00s", lines[0]), lines
    assert re.fullmatch(rf"nams GET {route}: ReadError, retry 2/3 in 0\.00s", lines[1]), lines


# ----------------------------------------------------------------- what errors say


@pytest.mark.parametrize(
    ("url", "server"),
    [
        ("nams+https://nams.test/v1", "nams.test:443"),
        ("nams+http://nams.test/v1", "nams.test:80"),
        ("nams+http://nams.test:8081/v1", "nams.test:8081"),
        ("nams+http://[::1]:8082/v1", "[::1]:8082"),
    ],
)
async def test_a_network_error_names_the_server_with_its_default_port(
    url: str, server: str
) -> None:
    with respx.mock(assert_all_called=False) as api:
        api.get(url.removeprefix("nams+") + "/conversations").mock(
            side_effect=httpx.ConnectError("refused")
        )
        memory = mocked_backend(url, max_retries=0)
        with pytest.raises(TransportError) as caught:
            await memory.connect()
    assert f" to {server} failed (ConnectError" in str(caught.value)


async def test_status_errors_name_the_call_the_status_and_the_service_words(
    api: respx.MockRouter,
) -> None:
    messages = api.get(f"/conversations/{CID}/messages")
    api.get(f"/conversations/{CID}").respond(json=conversation())
    async with mocked_backend(max_retries=0) as memory:
        route = f"/conversations/{CID}/messages"
        messages.respond(400, json=wire.error_body("invalid_limit", "limit must be 1..200"))
        with pytest.raises(InvalidRequestError) as invalid:
            await memory.get_conversation(CID)
        assert str(invalid.value) == (
            f"limit: nams: GET {route} → 400 invalid_limit: limit must be 1..200"
        )
        messages.respond(500, json={"error": "disk on fire"})
        with pytest.raises(TransportError) as failed:
            await memory.get_conversation(CID)
        assert str(failed.value) == f"nams: GET {route} → 500: disk on fire"
        messages.respond(500, text="<html>")
        with pytest.raises(TransportError) as bare:
            await memory.get_conversation(CID)
        assert str(bare.value) == f"nams: GET {route} → 500"
        messages.respond(429, headers={wire.RETRY_AFTER: "7"})
        with pytest.raises(RateLimitedError) as limited:
            await memory.get_conversation(CID)
        assert str(limited.value).startswith(f"nams: GET {route} → 429")
        messages.respond(501)
        with pytest.raises(NotSupportedError) as missing:
            await memory.get_conversation(CID)
        assert "check backend.capabilities" in str(missing.value)
        assert f"GET {route} (HTTP 501)" in str(missing.value)


async def test_every_request_names_the_library_and_only_a_body_is_labelled_json(
    memory: MemoryBackend, api: respx.MockRouter
) -> None:
    header = api.get(f"/conversations/{CID}").respond(json=conversation())
    api.get(f"/conversations/{CID}/messages").respond(json={"messages": []})
    created = {"id": "m1", "conversationId": CID, "role": "user", "content": "hi"}
    api.post(f"/conversations/{CID}/messages").respond(201, json=created)
    await memory.get_conversation(CID)
    await memory.add_message(CID, "user", "hi")
    sent = [call.request for call in api.calls]
    assert header.called and len(sent) >= 4  # the connect probe, header, messages, write
    assert {r.headers["User-Agent"] for r in sent} == {f"memory-core-nams/{__version__}"}
    assert {r.headers["Accept"] for r in sent} == {"application/json"}
    assert [r.headers.get("Content-Type") for r in sent if r.method == "GET"] == [None] * (
        len(sent) - 1
    )
    assert sent[-1].headers["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    ("answers", "last"),
    [(["0.01", "0.02", "0.03"], 0.03), (["0.03", "0.02", None], None)],
    ids=["growing", "last-without-header"],
)
async def test_an_exhausted_429_carries_the_retry_after_of_the_last_answer(
    api: respx.MockRouter, answers: list[str | None], last: float | None
) -> None:
    route = api.get(f"/conversations/{CID}").mock(
        side_effect=[
            httpx.Response(429, headers={} if value is None else {wire.RETRY_AFTER: value})
            for value in answers
        ]
    )
    async with mocked_backend(max_retries=2) as memory:
        with pytest.raises(RateLimitedError) as limited:
            await memory.get_conversation(CID)
    assert route.call_count == 3
    assert limited.value.retry_after == (None if last is None else pytest.approx(last))
