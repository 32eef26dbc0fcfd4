"""The bench's client clock: CPU time and collector pauses over a block (no timing is
asserted, only that each figure moves when its cause happens, and the hook is removed)."""

from __future__ import annotations

import gc
import time

from bench.core import ClientTime


def test_counts_collections_inside_the_block_only() -> None:
    hooks = list(gc.callbacks)
    with ClientTime() as clock:
        garbage = [[] for _ in range(10_000)]
        for item in garbage:
            item.append(item)  # cycles, so the collection has work
        del garbage, item
        gc.collect()
    assert clock.gc_ms > 0
    assert gc.callbacks == hooks
    after = clock.gc_ms
    gc.collect()
    assert clock.gc_ms == after


def test_cpu_time_follows_work_not_sleep() -> None:
    with ClientTime() as idle:
        time.sleep(0.1)
    with ClientTime() as busy:
        sum(i * i for i in range(300_000))
    assert busy.cpu_ms > 0
    assert idle.cpu_ms < 50  # sleeping is not CPU time
    assert set(busy.metrics()) == {"client_cpu_ms", "client_gc_ms"}
