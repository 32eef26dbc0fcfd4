"""``python -m bench.otel``: what the OpenTelemetry instrumentation costs on the hot paths.

    python -m bench.otel                 # embedded single add, newest-100, Bolt single add
    python -m bench.otel --only embedded
    python -m bench.otel --smoke         # tiny sizes: checks the harness works (CI runs this)

Three builds of the same backend, side by side: instrumentation off (``telemetry=False``),
the API only (``opentelemetry-api`` with no SDK configured: the default of an application
that installs the extra and sets nothing up), and the SDK (a ``TracerProvider`` with a
batch processor and an exporter that drops everything, and a ``MeterProvider`` with a
reader that is never collected). Blocks of calls run interleaved, the three builds in a
rotating order, so load on the machine hits each alike; a figure is the median of the
blocks' medians. Bolt uses ``NEO4J_URI`` when set, else starts the test-suite's Neo4j.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from memory_core import MemoryBackend, open_backend
from memory_core.telemetry import Telemetry

from .bolt import auth

BUILDS = ("off", "api", "sdk")
TARGETS = {"api": 2.0, "sdk": 15.0}
"""Overhead targets in percent (the SDK one is for the embedded single add)."""


class DropExporter(SpanExporter):
    """An exporter that exports nothing."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def sdk_telemetry() -> tuple[Telemetry, Callable[[], None]]:
    """Telemetry on an SDK with a no-op exporter, and how to shut it down."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(DropExporter()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])

    def shutdown() -> None:
        tracer_provider.shutdown()
        meter_provider.shutdown()

    return Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider), shutdown


@dataclass
class Sizes:
    rounds: int = 21
    calls: int = 200
    history: int = 300


Call = Callable[[MemoryBackend, int], Awaitable[Any]]


async def _block(backend: MemoryBackend, call: Call, calls: int) -> float:
    """The median latency (µs) of ``calls`` calls."""
    spent = []
    for i in range(calls):
        start = time.perf_counter()
        await call(backend, i)
        spent.append((time.perf_counter() - start) * 1e6)
    return statistics.median(spent)


async def interleaved(
    backends: dict[str, MemoryBackend], call: Call, sizes: Sizes
) -> dict[str, float]:
    """Median of block medians per build, blocks interleaved in a rotating order."""
    blocks: dict[str, list[float]] = {name: [] for name in backends}
    names = list(backends)
    for name in names:  # warm-up (a JVM's JIT too), not counted
        await _block(backends[name], call, sizes.calls)
    for r in range(sizes.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            blocks[name].append(await _block(backends[name], call, sizes.calls))
    return {name: statistics.median(values) for name, values in blocks.items()}


def _builds(url: str, **options: Any) -> tuple[dict[str, MemoryBackend], Callable[[], None]]:
    sdk, shutdown = sdk_telemetry()
    chosen: dict[str, Telemetry | bool] = {"off": False, "api": True, "sdk": sdk}
    return {name: open_backend(url, telemetry=chosen[name], **options) for name in BUILDS}, shutdown


async def _single_add(url: str, sizes: Sizes, **options: Any) -> dict[str, float]:
    backends, shutdown = _builds(url, **options)
    tag = uuid4().hex[:8]
    try:
        for backend in backends.values():
            await backend.connect()

        async def add(backend: MemoryBackend, i: int) -> Any:
            return await backend.add_message(f"otel-bench-{tag}", "user", f"message {i}")

        return await interleaved(backends, add, sizes)
    finally:
        for backend in backends.values():
            await backend.clear_session(f"otel-bench-{tag}")
            await backend.close()
        shutdown()


async def _newest(url: str, sizes: Sizes) -> dict[str, float]:
    backends, shutdown = _builds(url)
    try:
        for backend in backends.values():
            await backend.connect()
            rows = [{"role": "user", "content": f"m{i}"} for i in range(sizes.history)]
            await backend.add_messages_batch("history", rows)

        async def newest(backend: MemoryBackend, _i: int) -> Any:
            return await backend.get_conversation("history", limit=100)

        return await interleaved(backends, newest, sizes)
    finally:
        for backend in backends.values():
            await backend.close()
        shutdown()


def primitives(calls: int = 2000) -> str:
    """What the SDK itself costs here: one span started and ended (with three attributes),
    and one histogram measurement, median of 21 blocks (the why of the SDK figures)."""
    telemetry, shutdown = sdk_telemetry()
    tracer, histogram = telemetry.instruments.tracer, telemetry.instruments.db_duration
    attributes = {"db.system.name": "sqlite", "db.operation.name": "add_message", "n": "x"}

    def block(work: Callable[[], Any]) -> float:
        start = time.perf_counter()
        for _ in range(calls):
            work()
        return (time.perf_counter() - start) / calls * 1e6

    spans, records = [], []
    for _ in range(21):
        spans.append(block(lambda: tracer.start_span("s", attributes=attributes).end()))
        records.append(block(lambda: histogram.record(0.001, attributes)))
    shutdown()
    return (
        f"SDK alone here: a span {statistics.median(spans):.1f} µs, "
        f"a histogram measurement {statistics.median(records):.1f} µs"
    )


def _row(workload: str, medians: dict[str, float]) -> str:
    off = medians["off"]
    cells = [f"{medians[name]:.1f} µs" for name in BUILDS]
    over = [f"{(medians[name] / off - 1) * 100:+.1f}%" for name in ("api", "sdk")]
    return f"| {workload} | " + " | ".join(cells + over) + " |"


async def run(sizes: Sizes, only: set[str]) -> list[str]:
    """Measure, and return the markdown table."""
    lines = [
        "| workload | off | API only | SDK (no-op exporter) | API only vs off | SDK vs off |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    if "embedded" in only:
        lines.append(_row("embedded single add", await _single_add("memory://", sizes)))
        lines.append(_row("embedded newest-100", await _newest("memory://", sizes)))
    if "bolt" in only:
        lines.append(_row("Bolt single add", await _bolt(sizes)))
    lines.append("")
    lines.append(primitives(200 if sizes.calls < 50 else 2000))
    return lines


async def _bolt(sizes: Sizes) -> dict[str, float]:
    uri = os.environ.get("NEO4J_URI")
    server = None
    if not uri:
        from memory_core_dev.neo4j_server import Neo4jServer

        server = Neo4jServer().start()
        uri = server.uri
    try:
        login = auth()
        options = {} if login is None else {"auth": login}
        return await _single_add(uri, Sizes(sizes.rounds, max(1, sizes.calls // 4), 0), **options)
    finally:
        if server is not None:
            server.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.otel", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (CI)")
    parser.add_argument("--only", default="embedded,bolt", help="embedded and/or bolt")
    parser.add_argument("--rounds", type=int, default=None, help="blocks per build (21)")
    parser.add_argument("--calls", type=int, default=None, help="calls per block (200)")
    args = parser.parse_args(argv)
    sizes = Sizes(rounds=3, calls=5, history=120) if args.smoke else Sizes()
    sizes.rounds = args.rounds or sizes.rounds
    sizes.calls = args.calls or sizes.calls
    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} cores; {sizes}", flush=True)
    for line in asyncio.run(run(sizes, set(args.only.split(",")))):
        print(line, flush=True)
    print(f"targets: API only <= {TARGETS['api']}%, SDK <= {TARGETS['sdk']}% (embedded single add)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
