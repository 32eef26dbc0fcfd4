"""Spans per statement and pool gauges on the PostgreSQL backend."""

from __future__ import annotations

import uuid

import pytest
from opentelemetry.trace import SpanKind

from memory_core import open_backend
from memory_core_dev.postgres_server import PostgresHandle

from .conftest import Recorded, no_content

pytestmark = pytest.mark.anyio

SECRET = "the password hint is blue"


async def test_every_statement_is_a_postgresql_span_under_the_memory_span(
    otel: Recorded, postgres_server: PostgresHandle
) -> None:
    session = f"otel-{uuid.uuid4().hex}"
    async with open_backend(postgres_server.url, telemetry=otel.telemetry()) as backend:
        otel.exporter.clear()  # migrations on connect
        await backend.add_message(session, "user", SECRET)
        gauges = otel.points("db.client.connection.count")
        maxima = otel.points("db.client.connection.max")
    [memory] = otel.named("create_memory")
    assert memory.kind is SpanKind.CLIENT
    assert memory.attributes["memory_core.backend"] == "postgres"
    statements = otel.children(memory)
    assert statements
    for db in statements:
        attributes = dict(db.attributes or {})
        assert attributes["db.system.name"] == "postgresql"
        assert attributes["db.operation.name"] == "add_message"
        assert attributes["db.namespace"]
        assert attributes["server.port"] > 0
        assert db.name == f"add_message {attributes['db.namespace']}"
    no_content(otel.spans(), SECRET)
    states = {p.attributes["db.client.connection.state"]: p.value for p in gauges}
    assert set(states) == {"idle", "used"}
    assert states["idle"] + states["used"] >= 1
    [limit] = maxima
    assert limit.value >= 1


async def test_statement_text_is_captured_only_when_asked(
    otel: Recorded, postgres_server: PostgresHandle
) -> None:
    session = f"otel-{uuid.uuid4().hex}"
    telemetry = otel.telemetry(capture_content=True)
    async with open_backend(postgres_server.url, telemetry=telemetry) as backend:
        otel.exporter.clear()
        await backend.add_message(session, "user", SECRET)
    [memory] = otel.named("create_memory")
    texts = [s.attributes.get("db.query.text", "") for s in otel.children(memory)]
    assert any("INSERT" in text.upper() for text in texts)
    assert not any(SECRET in text for text in texts)  # parameters are never in the text


async def test_the_pool_metric_name_hides_an_sslpassword(
    otel: Recorded, postgres_server: PostgresHandle
) -> None:
    separator = "&" if "?" in postgres_server.url else "?"
    url = f"{postgres_server.url}{separator}sslpassword=canary-metric"
    async with open_backend(url, telemetry=otel.telemetry()) as backend:
        await backend.add_message(f"otel-{uuid.uuid4().hex}", "user", "hello")
        maxima = otel.points("db.client.connection.max")
        counts = otel.points("db.client.connection.count")
    names = {p.attributes["db.client.connection.pool.name"] for p in [*maxima, *counts]}
    assert names and all("sslpassword=" in name for name in names)
    assert not [name for name in names if "canary-metric" in name]
