"""The measuring machinery: subjects run interleaved and rotated, figures summarised.

A *workload* (say, Bolt single add) has *subjects*: ``memory-core``, the ``peer``
(neo4j-agent-memory 0.8.0, no embedder, no extraction) and the ``floor`` (the raw driver
/ sqlite3 / httpx / psycopg doing the same work); PostgreSQL's peers go by their own
names. Repeat ``r`` runs every subject once,
in an order rotated by ``r``, so drift on a shared machine hits all of them alike. Each
run returns named metrics (milliseconds, lower is better, unless the name says
otherwise); ratios to every other subject are taken per repeat, then summarised as
min / median / max (not for ``*_count`` and ``*_ratio`` metrics: counts and a subject's
own ratios are compared as they are).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .sizes import Sizes

Metrics = dict[str, float]
Run = Callable[[int], Awaitable[Metrics]]

OURS, PEER, FLOOR = "memory-core", "peer", "floor"


class Selection:
    """Which workloads a run measures: those whose key (see ``KEYS``) is named, or every
    one when none is."""

    KEYS = (
        "single",
        "batch",
        "reads",
        "search",
        "vector",
        "list",
        "agent",
        "keyset",
        "long_term",
        "reasoning",
    )

    def __init__(self, names: tuple[str, ...] = ()) -> None:
        unknown = set(names) - set(self.KEYS)
        if unknown:
            raise ValueError(f"unknown workloads: {', '.join(sorted(unknown))}")
        self.names = names

    def __call__(self, key: str) -> bool:
        assert key in self.KEYS, key
        return not self.names or key in self.names


EVERY = Selection()


@dataclass
class Workload:
    """One row group of the report."""

    backend: str
    name: str
    size: str
    subjects: dict[str, Run]
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


def summary(values: list[float]) -> dict[str, float]:
    """min / median / max of one metric over the repeats."""
    return {
        "min": min(values),
        "median": statistics.median(values),
        "max": max(values),
    }


def percentile(values: list[float], share: float) -> float:
    """The ``share`` (0..1) percentile of ``values`` by the nearest-rank method."""
    ordered = sorted(values)
    rank = max(1, round(share * len(ordered) + 0.5))
    return ordered[min(rank, len(ordered)) - 1]


async def timed(call: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> float:
    """Milliseconds ``await call(*args, **kwargs)`` takes."""
    start = time.perf_counter()
    await call(*args, **kwargs)
    return (time.perf_counter() - start) * 1000


class ClientTime:
    """This process's CPU time and garbage-collection pauses over a ``with`` block, as
    metrics: when the server runs in another process, they show how much of a
    workload's time is the client's own, and how much of that the collector's."""

    def __init__(self) -> None:
        self.cpu_ms = 0.0
        self.gc_ms = 0.0
        self._cpu_start = 0.0
        self._gc_start = 0.0

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            self.gc_ms += (time.perf_counter() - self._gc_start) * 1000

    def __enter__(self) -> ClientTime:
        gc.callbacks.append(self._on_gc)
        self._cpu_start = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cpu_ms = (time.process_time() - self._cpu_start) * 1000
        gc.callbacks.remove(self._on_gc)

    def metrics(self) -> Metrics:
        """``client_cpu_ms`` and ``client_gc_ms`` of the block."""
        return {"client_cpu_ms": self.cpu_ms, "client_gc_ms": self.gc_ms}


async def median_ms(
    times: int, call: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any
) -> Metrics:
    """``{"median_ms": …}`` over ``times`` timed calls of ``call(*args, **kwargs)``."""
    spent = [await timed(call, *args, **kwargs) for _ in range(times)]
    return {"median_ms": statistics.median(spent)}


async def measure(workload: Workload, sizes: Sizes, log: Callable[[str], None]) -> dict[str, Any]:
    """Run ``workload`` ``sizes.repeats`` times, interleaved and rotated, after
    ``sizes.warmups`` unrecorded rounds (Neo4j's JIT compiles a statement's plan only after
    it has run a while: the first runs would measure the compiler); its report entry."""
    names = list(workload.subjects)
    for w in range(sizes.warmups):
        for name in names:
            await workload.subjects[name](-1 - w)  # negative: no repeat's names are reused
    repeats = sizes.repeats
    runs: dict[str, list[Metrics]] = {name: [] for name in names}
    for r in range(repeats):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            runs[name].append(await workload.subjects[name](r))
    entry: dict[str, Any] = {
        "backend": workload.backend,
        "workload": workload.name,
        "size": workload.size,
        "repeats": repeats,
        "warmups": sizes.warmups,
        "subjects": {},
        "ratios": {},
        "notes": workload.notes,
        "extra": workload.extra,
    }
    for name, metrics in runs.items():
        keys = metrics[0].keys()
        entry["subjects"][name] = {k: summary([m[k] for m in metrics]) for k in keys}
    ours = runs.get(OURS)
    for other in names:
        theirs = runs.get(other)
        if other == OURS or not ours or not theirs:
            continue
        label = ratio_label(other)
        shared = [k for k in ours[0] if k in theirs[0] and not k.endswith(("_count", "_ratio"))]
        entry["ratios"][label] = {
            k: summary(
                [a[k] / b[k] if b[k] else float("nan") for a, b in zip(ours, theirs, strict=True)]
            )
            for k in shared
        }
    log(_line(entry))
    return entry


def ratio_label(subject: str) -> str:
    """The key of memory-core's ratios to ``subject`` (``vs_peer``, ``vs_floor``, or
    ``vs_<name>`` for a backend's other peers)."""
    return {PEER: "vs_peer", FLOOR: "vs_floor"}.get(subject, f"vs_{subject}")


def _line(entry: dict[str, Any]) -> str:
    parts = [f"{entry['backend']:8} {entry['workload']:28} {entry['size']:>10}"]
    for name, metrics in entry["subjects"].items():
        first = next(iter(metrics))
        parts.append(f"{name}={metrics[first]['median']:.3g} {first}")
    for label, metrics in entry["ratios"].items():
        first = next(iter(metrics))
        parts.append(f"{label}={metrics[first]['median']:.2f}x")
    return "  ".join(parts)
