"""An SDK tracer and meter provider per test, passed to the backend (never the globals)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memory_core.telemetry import Telemetry

CONTENT_KEYS = ("gen_ai.memory.records", "gen_ai.memory.query.text", "db.query.text")


@dataclass
class Recorded:
    """What one test's providers recorded."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def telemetry(self, **options: Any) -> Telemetry:
        return Telemetry(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **options
        )

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name == name]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        return [
            s
            for s in self.spans()
            if s.parent is not None and s.parent.span_id == parent.context.span_id
        ]

    def points(self, metric: str) -> list[Any]:
        """Every data point of ``metric`` collected now."""
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        found.extend(m.data.data_points)
        return found


@pytest.fixture
def otel() -> Iterator[Recorded]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Recorded(exporter, reader, tracer_provider, meter_provider)
    tracer_provider.shutdown()
    meter_provider.shutdown()


def no_content(spans: list[ReadableSpan], *texts: str) -> None:
    """No span has a content attribute, nor any of ``texts`` in any attribute value."""
    for span in spans:
        attributes = dict(span.attributes or {})
        assert not set(CONTENT_KEYS) & set(attributes), (span.name, attributes)
        for value in attributes.values():
            for text in texts:
                assert text not in str(value), (span.name, attributes)
