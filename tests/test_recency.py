"""``recency_half_life`` on the embedded store: caller timestamps give the ages, the
threshold applies before weighting, the sync API takes it. Every backend: conformance
scenario ``search.recency``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memory_core import open_backend
from memory_core.sync import open_backend as open_blocking

pytestmark = pytest.mark.anyio

MONTH = timedelta(days=30)


def _rows(now: datetime) -> list[dict[str, object]]:
    return [
        {"role": "user", "content": "ripe apple apple", "timestamp": now - 4 * MONTH},
        {"role": "user", "content": "an apple among many other words", "timestamp": now},
        {"role": "assistant", "content": "noted", "timestamp": now},
    ]


async def test_a_month_half_life_ranks_the_newer_hit_first_by_weighted_score() -> None:
    now = datetime.now(UTC)
    async with open_backend("memory://") as memory:
        await memory.add_messages_batch("s", _rows(now))
        plain = await memory.search_messages("apple")
        weighed = await memory.search_messages("apple", recency_half_life=MONTH)
    assert [h.content for h in plain] == ["ripe apple apple", "an apple among many other words"]
    assert [h.content for h in weighed] == [h.content for h in plain][::-1]
    old = {h.content: h.score or 0.0 for h in plain}["ripe apple apple"]
    assert weighed[1].score == pytest.approx(old / 16, rel=1e-3)  # four half-lives


async def test_the_threshold_applies_before_weighting() -> None:
    now = datetime.now(UTC)
    async with open_backend("memory://") as memory:
        await memory.add_messages_batch("s", _rows(now))
        kept = await memory.search_messages("apple", threshold=0.8, recency_half_life=MONTH)
    # the old hit (0.82) passes the threshold on its own score, the new one (0.79) does not;
    # the old one then weighs a sixteenth of its score
    assert [h.content for h in kept] == ["ripe apple apple"]
    assert (kept[0].score or 0) == pytest.approx(0.8219 / 16, rel=1e-3)


def test_the_blocking_api_takes_it() -> None:
    with open_blocking("memory://") as memory:
        memory.add_messages_batch("s", _rows(datetime.now(UTC)))
        found = memory.search_messages("apple", recency_half_life=MONTH)
        context = memory.get_context(
            "apple", session_id="s", max_messages=1, max_hits=1, recency_half_life=MONTH
        )
    assert found[0].content == "an apple among many other words"
    assert "ripe apple apple" not in context.partition("## Relevant messages")[2]
