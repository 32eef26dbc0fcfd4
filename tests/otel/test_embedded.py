"""Spans, metrics and log correlation on the embedded backend (SDK in-memory exporter)."""

from __future__ import annotations

import json
import logging

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from memory_core import (
    ConfigurationError,
    InvalidRequestError,
    NotSupportedError,
    open_backend,
)
from memory_core.telemetry import CAPTURE_ENV, Telemetry

from .conftest import Recorded, no_content

pytestmark = pytest.mark.anyio

SECRET = "my card number is 4111"


async def test_add_message_is_a_memory_span_over_a_sqlite_span(otel: Recorded) -> None:
    async with open_backend("memory://", telemetry=otel.telemetry()) as backend:
        stored = await backend.add_message("s-1", "user", SECRET)
    [memory] = otel.named("create_memory")
    assert memory.kind is SpanKind.INTERNAL
    assert dict(memory.attributes or {}) == {
        "gen_ai.operation.name": "create_memory",
        "memory_core.operation": "add_message",
        "memory_core.backend": "embedded",
        "gen_ai.memory.store.id": "s-1",
        "gen_ai.memory.record.id": str(stored.id),
        "gen_ai.memory.record.count": 1,
    }
    assert memory.status.status_code is StatusCode.UNSET
    [db] = otel.children(memory)
    assert db.name == "add_message :memory:"
    assert db.kind is SpanKind.CLIENT
    assert dict(db.attributes or {}) == {
        "db.system.name": "sqlite",
        "db.operation.name": "add_message",
        "db.namespace": ":memory:",
    }
    assert db.context.trace_id == memory.context.trace_id
    no_content(otel.spans(), SECRET)


async def test_every_read_and_delete_names_its_operation(otel: Recorded) -> None:
    async with open_backend("memory://", telemetry=otel.telemetry()) as backend:
        stored = await backend.add_message("s-1", "user", "hello there")
        await backend.search_messages("hello", session_id="s-1")
        await backend.get_conversation("s-1")
        await backend.list_sessions()
        await backend.delete_message(stored.id)
        await backend.clear_session("s-1")
    names = [(s.name, (s.attributes or {}).get("memory_core.operation")) for s in otel.spans()]
    memory = [pair for pair in names if pair[1] is not None]
    assert memory == [
        ("create_memory", "add_message"),
        ("search_memory", "search_messages"),
        ("search_memory", "get_conversation"),
        ("list_memory_stores", "list_sessions"),
        ("delete_memory", "delete_message"),
        ("delete_memory", "clear_session"),
    ]
    [search] = otel.named("search_memory")[:1]
    assert search.attributes["gen_ai.memory.record.count"] == 1
    [delete, clear] = otel.named("delete_memory")
    assert delete.attributes["gen_ai.memory.record.id"] == str(stored.id)
    assert "gen_ai.memory.record.id" not in (clear.attributes or {})  # the whole store
    assert clear.attributes["gen_ai.memory.store.id"] == "s-1"
    no_content(otel.spans(), "hello")


async def test_batch_sets_the_batch_size_and_record_count(otel: Recorded) -> None:
    batch = [{"role": "user", "content": f"m{i}"} for i in range(3)]
    async with open_backend("memory://", telemetry=otel.telemetry()) as backend:
        await backend.add_messages_batch("s-1", batch)
    [memory] = otel.named("create_memory")
    assert memory.attributes["gen_ai.memory.record.count"] == 3
    [db] = otel.children(memory)
    assert db.attributes["db.operation.batch.size"] == 3


async def test_content_is_captured_only_when_asked(otel: Recorded) -> None:
    async with open_backend("memory://", telemetry=otel.telemetry(capture_content=True)) as b:
        stored = await b.add_message("s-1", "user", SECRET)
        await b.search_messages("card", session_id="s-1")
    [create] = otel.named("create_memory")
    records = json.loads(create.attributes["gen_ai.memory.records"])
    assert records == [{"id": str(stored.id), "content": SECRET}]
    [search] = otel.named("search_memory")
    assert search.attributes["gen_ai.memory.query.text"] == "card"
    [hit] = json.loads(search.attributes["gen_ai.memory.records"])
    assert (hit["id"], hit["content"]) == (str(stored.id), SECRET)
    assert 0 < hit["score"] <= 1


async def test_the_environment_variable_opts_in(
    otel: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CAPTURE_ENV, "true")
    assert otel.telemetry().capture_content is True
    monkeypatch.setenv(CAPTURE_ENV, "false")
    assert otel.telemetry().capture_content is False
    monkeypatch.delenv(CAPTURE_ENV)
    assert otel.telemetry().capture_content is False


async def test_a_failed_call_is_an_error_with_the_library_error_type(otel: Recorded) -> None:
    async with open_backend("memory://", telemetry=otel.telemetry()) as backend:
        with pytest.raises(InvalidRequestError):
            await backend.get_conversation("s-1", limit=0)
    [span] = otel.named("search_memory")
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "InvalidRequestError"
    assert span.status.description == "InvalidRequestError"  # not the message
    assert span.events == ()  # no exception event (its message may quote the input)
    assert otel.children(span) == []  # refused before any round trip


async def test_not_supported_records_the_error_type_but_no_error_status(otel: Recorded) -> None:
    async with open_backend("memory://", telemetry=otel.telemetry()) as backend:
        with pytest.raises(NotSupportedError):
            await backend.get_observations("s-1")
    [span] = otel.named("search_memory")
    assert span.status.status_code is StatusCode.UNSET
    assert span.attributes["error.type"] == "NotSupportedError"


async def test_durations_are_recorded_per_operation_and_backend(otel: Recorded) -> None:
    async with open_backend("memory://", telemetry=otel.telemetry()) as backend:
        await backend.add_message("s-1", "user", "a")
        await backend.add_message("s-1", "user", "b")
        await backend.get_conversation("s-1")
    db = {
        (p.attributes["db.system.name"], p.attributes["db.operation.name"]): p.count
        for p in otel.points("db.client.operation.duration")
    }
    assert db == {("sqlite", "add_message"): 2, ("sqlite", "get_conversation"): 1}
    assert otel.points("db.client.connection.count") == []  # no pool


async def test_telemetry_false_records_nothing(otel: Recorded) -> None:
    async with open_backend("memory://", telemetry=False) as backend:
        await backend.add_message("s-1", "user", "a")
    assert otel.spans() == []


def test_a_bad_telemetry_option_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="telemetry"):
        open_backend("memory://", telemetry="yes")
    with pytest.raises(ConfigurationError, match="capture_content"):
        Telemetry(capture_content="yes")  # type: ignore[arg-type]


async def test_log_records_carry_the_active_span_ids(
    otel: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    tracer = otel.tracer_provider.get_tracer("test")
    logger = logging.getLogger("memory_core.server")
    with caplog.at_level(logging.INFO, logger="memory_core.server"):
        logger.info("outside")
        with tracer.start_as_current_span("work") as span:
            logger.info("inside")
    outside, inside = caplog.records
    assert not hasattr(outside, "otelTraceID")
    assert inside.otelTraceID == f"{span.get_span_context().trace_id:032x}"
    assert inside.otelSpanID == f"{span.get_span_context().span_id:016x}"
    assert inside.otelTraceSampled is True


async def test_with_the_api_alone_calls_go_straight_through(otel: Recorded) -> None:
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.trace import NoOpTracerProvider

    quiet = Telemetry(tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider())
    assert quiet.instruments.live() is False
    traced = Telemetry(tracer_provider=otel.tracer_provider, meter_provider=NoOpMeterProvider())
    assert traced.instruments.live() is True
    async with open_backend("memory://", telemetry=quiet) as backend:
        assert (await backend.add_message("s-1", "user", "a")).content == "a"


async def test_a_backend_class_takes_the_option_too(otel: Recorded) -> None:

    async with open_backend("memory://", telemetry=otel.telemetry()) as backend:
        await backend.add_message("s-1", "user", "a")
    assert [s.name for s in otel.spans()] == ["add_message :memory:", "create_memory"]


async def test_reasoning_calls_name_their_operation_and_record_but_not_their_text(
    otel: Recorded,
) -> None:
    async with open_backend("memory://", telemetry=otel.telemetry()) as backend:
        trace = await backend.start_trace("s-r", "book a flight")
        step = await backend.add_step(trace.id, thought=SECRET)
        call = await backend.record_tool_call(step.id, "search", arguments={"q": SECRET})
        await backend.complete_trace(trace.id, outcome="booked", success=True)
        await backend.get_trace(trace.id)
        stats = await backend.tool_stats()
        await backend.similar_traces("flight")
    spans = [(s.name, s.attributes or {}) for s in otel.spans()]
    memory = [
        (name, a["memory_core.operation"]) for name, a in spans if "memory_core.operation" in a
    ]
    assert memory == [
        ("create_memory", "start_trace"),
        ("create_memory", "add_step"),
        ("create_memory", "record_tool_call"),
        ("update_memory", "complete_trace"),
        ("search_memory", "get_trace"),
        ("search_memory", "tool_stats"),
        ("search_memory", "similar_traces"),
    ]
    by_operation = {a["memory_core.operation"]: a for _, a in spans if "memory_core.operation" in a}
    assert by_operation["start_trace"]["gen_ai.memory.record.id"] == trace.id
    assert by_operation["start_trace"]["gen_ai.memory.store.id"] == "s-r"
    assert by_operation["add_step"]["gen_ai.memory.record.id"] == step.id
    assert by_operation["record_tool_call"]["gen_ai.memory.record.id"] == call.id
    assert by_operation["get_trace"]["gen_ai.memory.record.id"] == trace.id
    assert by_operation["tool_stats"]["gen_ai.memory.record.count"] == len(stats) == 1
    assert "gen_ai.memory.query.text" not in by_operation["similar_traces"]
    no_content(otel.spans(), SECRET)
