"""The fault knobs the conformance suite's ``faults`` area drives: forced 413 and 401,
429 without ``Retry-After``, ``pass_first``, and the record of when each fault fired;
set in-process, through ``/_admin/faults`` and by ``memory-core serve`` flags."""

from __future__ import annotations

import httpx
import pytest

from memory_core.server.cli import build_parser, faults_from
from memory_core.server.faults import Faults
from memory_core.server.limits import ServerLimits
from memory_core_dev.nams_server import NamsTestServer


def test_every_knob_counts_down_in_order() -> None:
    faults = Faults(
        pass_first=1, drop=1, rate_limit=1, unavailable=1, payload_too_large=1, unauthorized=1
    )
    actions = [faults.take().action for _ in range(7)]
    assert actions == ["pass", "drop", "429", "503", "413", "401", "pass"]
    assert all(faults.snapshot()[k] == 0 for k in ("pass_first", "payload_too_large"))


def test_a_429_may_carry_no_retry_after() -> None:
    faults = Faults(rate_limit=2, retry_after=2)
    assert faults.take().retry_after == 2
    faults.set(omit_retry_after=True)
    assert faults.take().retry_after is None


def test_fired_at_records_each_fault_until_reset() -> None:
    faults = Faults(pass_first=1, rate_limit=2)
    for _ in range(4):
        faults.take()
    fired = faults.snapshot()["fired_at"]
    assert len(fired) == 2, "a request let through is not a fault"
    assert fired[0] <= fired[1]
    faults.reset()
    assert faults.snapshot()["fired_at"] == []
    with pytest.raises(ValueError):
        faults.set(payload_limit=0)


def _get(server: NamsTestServer, workspace: str) -> httpx.Response:
    headers = server.headers(workspace)
    return httpx.get(server.base_url + "/conversations", headers=headers, trust_env=False)


def _admin(server: NamsTestServer, workspace: str, **knobs: object) -> dict[str, object]:
    root = server.base_url.removesuffix("/v1")
    response = httpx.post(
        root + "/_admin/faults", json=knobs, headers=server.headers(workspace), trust_env=False
    )
    assert response.status_code == 200, response.text
    state: dict[str, object] = response.json()
    return state


def test_forced_413_names_the_limit(nams_server: NamsTestServer, workspace: str) -> None:
    _admin(nams_server, workspace, payload_too_large=2, payload_limit=4321)
    named = _get(nams_server, workspace)
    assert named.status_code == 413
    assert named.json()["error"]["code"] == "payload_too_large"
    assert "4321 bytes" in named.json()["error"]["message"]
    nams_server.faults.reset()
    nams_server.faults.set(payload_too_large=1)
    default = ServerLimits().max_body_bytes
    assert f"{default} bytes" in _get(nams_server, workspace).json()["error"]["message"]
    assert _get(nams_server, workspace).status_code == 200


def test_forced_401_is_the_rejected_key_answer(nams_server: NamsTestServer, workspace: str) -> None:
    real = httpx.get(
        nams_server.base_url + "/conversations",
        headers=nams_server.headers(workspace, key="not-a-key"),
        trust_env=False,
    )
    state = _admin(nams_server, workspace, unauthorized=1)
    assert state["unauthorized"] == 1
    forced = _get(nams_server, workspace)
    assert (forced.status_code, forced.json()) == (real.status_code, real.json())
    assert forced.headers["www-authenticate"] == real.headers["www-authenticate"]
    assert _get(nams_server, workspace).status_code == 200


def test_429_without_retry_after_over_http(nams_server: NamsTestServer, workspace: str) -> None:
    _admin(nams_server, workspace, rate_limit=1, retry_after=3, omit_retry_after=True)
    limited = _get(nams_server, workspace)
    assert limited.status_code == 429
    assert "retry-after" not in limited.headers
    root = nams_server.base_url.removesuffix("/v1")
    state = httpx.get(
        root + "/_admin/faults", headers=nams_server.headers(workspace), trust_env=False
    ).json()
    assert len(state["fired_at"]) == 1 and state["rate_limit"] == 0


def test_serve_flags_set_the_new_knobs() -> None:
    args = build_parser().parse_args(
        [
            "--fail-429=1",
            "--no-retry-after",
            "--fail-413=2",
            "--fail-413-limit=99",
            "--fail-401=3",
            "--faults-after=4",
        ]
    )
    state = faults_from(args).snapshot()
    assert state["rate_limit"] == 1 and state["omit_retry_after"] is True
    assert (state["payload_too_large"], state["payload_limit"]) == (2, 99)
    assert (state["unauthorized"], state["pass_first"]) == (3, 4)
    assert faults_from(build_parser().parse_args([])).snapshot()["payload_limit"] is None


def test_each_knob_fires_for_as_many_requests_as_it_says() -> None:
    faults = Faults(pass_first=2, payload_too_large=2, unauthorized=3)
    actions = [faults.take().action for _ in range(8)]
    assert actions == ["pass", "pass", "413", "413", "401", "401", "401", "pass"]
    assert len(faults.snapshot()["fired_at"]) == 5
