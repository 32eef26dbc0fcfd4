"""``python -m bench.turn_latency`` runs and counts a NAMS turn's requests."""

from __future__ import annotations

import pytest

from bench import turn_latency

pytestmark = [pytest.mark.anyio, pytest.mark.nams]


async def test_a_nams_turn_is_five_requests() -> None:
    cost = await turn_latency.measure(latency=0.0, turns=2)
    # the lookup, the read's header and messages, the question, the reply
    assert cost.requests == 5.0
    assert cost.wall_ms > 0
