"""``python -m bench.profile`` at its smallest: every workload on the embedded store, a few
calls each, and how profiled functions are sorted into its buckets."""

from __future__ import annotations

import pytest

from bench import profile


@pytest.mark.parametrize(
    ("filename", "function", "expected"),
    [
        ("~", "<method 'execute' of 'sqlite3.Connection' objects>", "driver"),
        ("/venv/lib/python3.11/site-packages/psycopg/cursor_async.py", "execute", "driver"),
        ("/venv/lib/python3.11/site-packages/neo4j/_async/work/result.py", "_buffer", "driver"),
        ("/work/main/memory_core/models.py", "trusted", "models"),
        ("/venv/lib/python3.11/site-packages/pydantic/main.py", "__init__", "models"),
        ("/work/main/memory_core/backends/postgres/rows.py", "read_messages", "ours"),
        ("/usr/lib/python3.11/json/encoder.py", "iterencode", "runtime"),
    ],
)
def test_a_function_counts_in_the_bucket_of_where_it_lives(
    filename: str, function: str, expected: str
) -> None:
    assert profile.bucket(filename, function) == expected


def test_waiting_is_left_out_of_the_split() -> None:
    import cProfile
    import pstats
    import select

    recorder = cProfile.Profile()
    poller = select.epoll()
    recorder.enable()
    poller.poll(0.05)
    recorder.disable()
    shares = profile.split(pstats.Stats(recorder))
    assert set(shares.values()) == {0.0}  # the 50 ms poll counts nowhere


@pytest.mark.anyio
async def test_every_workload_is_profiled_and_tabled() -> None:
    rows = await profile.profile_store("embedded", calls=5)
    assert [name for name, _ in rows] == list(profile.WORKLOADS)
    for _, figures in rows:
        assert figures["wall_ms"] > 0 and figures["client_cpu_ms"] > 0
        shares = [figures[f"{b}_share"] for b in profile.BUCKETS]
        assert all(0 <= s <= 1 for s in shares) and sum(shares) == pytest.approx(1)
    page = profile.table({"embedded": rows})
    assert page.count("\n| embedded |") == len(profile.WORKLOADS)
