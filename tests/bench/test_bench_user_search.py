"""``python -m bench.user_search`` builds its store once and times both queries for two
users."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import user_search

pytestmark = pytest.mark.anyio


async def test_it_times_two_queries_for_two_users_and_reuses_its_store(tmp_path: Path) -> None:
    path = tmp_path / "users.db"
    first = await user_search.measure(path, messages=600, searches=3)
    assert [(t.user, t.query) for t in first] == [
        ("user-0", "one rare word"),
        ("user-0", "question"),
        ("user-9", "one rare word"),
        ("user-9", "question"),
    ]
    assert all(0 < t.p50 <= t.p95 for t in first)
    size = path.stat().st_size
    await user_search.measure(path, messages=600, searches=3)
    assert path.stat().st_size == size, "the store was built again"
