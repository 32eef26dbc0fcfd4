"""Spans and pool gauges on the Bolt backend (the run's Neo4j)."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlsplit

import pytest
from opentelemetry.trace import SpanKind

from memory_core import open_backend
from memory_core_dev.neo4j_fixtures import Neo4jHandle

from .conftest import Recorded, no_content

pytestmark = [pytest.mark.anyio, pytest.mark.neo4j]

SECRET = "the vault opens at dawn"


def _options(neo4j_server: Neo4jHandle, otel: Recorded, **telemetry: Any) -> dict[str, Any]:
    options: dict[str, Any] = {"telemetry": otel.telemetry(**telemetry)}
    if neo4j_server.auth is not None:
        options["auth"] = neo4j_server.auth
    return options


async def test_bolt_round_trips_are_neo4j_client_spans(
    otel: Recorded, neo4j_server: Neo4jHandle
) -> None:
    session = f"otel-{uuid.uuid4().hex}"
    address = urlsplit(neo4j_server.uri)
    async with open_backend(neo4j_server.uri, **_options(neo4j_server, otel)) as backend:
        otel.exporter.clear()  # schema set-up on connect
        stored = await backend.add_message(session, "user", SECRET)
        await backend.get_conversation(session)
        gauges = otel.points("db.client.connection.count")
        maxima = otel.points("db.client.connection.max")
    [memory] = otel.named("create_memory")
    assert memory.kind is SpanKind.CLIENT
    assert memory.attributes["memory_core.backend"] == "bolt"
    assert memory.attributes["gen_ai.memory.record.id"] == str(stored.id)
    [db] = otel.children(memory)
    assert db.kind is SpanKind.CLIENT
    attributes = dict(db.attributes or {})
    assert attributes["db.system.name"] == "neo4j"
    assert attributes["db.operation.name"] == "add_message"
    assert attributes["server.address"] == address.hostname
    assert attributes["server.port"] == address.port
    assert "db.query.text" not in attributes  # opt-in, like content
    no_content(otel.spans(), SECRET)
    operations = {
        p.attributes["db.operation.name"] for p in otel.points("db.client.operation.duration")
    }
    assert {"add_message", "get_conversation"} <= operations
    states = {p.attributes["db.client.connection.state"]: p.value for p in gauges}
    assert set(states) == {"idle", "used"}
    assert states["idle"] + states["used"] >= 1
    [limit] = maxima
    assert limit.value >= 1
    assert limit.attributes["db.client.connection.pool.name"].startswith("bolt://")


async def test_bolt_search_query_is_captured_when_asked(
    otel: Recorded, neo4j_server: Neo4jHandle
) -> None:
    session = f"otel-{uuid.uuid4().hex}"
    options = _options(neo4j_server, otel, capture_content=True)
    async with open_backend(neo4j_server.uri, **options) as backend:
        otel.exporter.clear()
        await backend.search_messages("dawn", session_id=session)
        await backend.add_message(session, "user", SECRET)
        await backend.get_conversation(session)
    by_operation = {
        dict(s.attributes or {})["memory_core.operation"]: s for s in otel.named("search_memory")
    }
    assert set(by_operation) == {"search_messages", "get_conversation"}
    memory, read = by_operation["search_messages"], by_operation["get_conversation"]
    assert memory.attributes["gen_ai.memory.query.text"] == "dawn"
    # a single statement's text too, with parameters as placeholders, never their values
    [written] = otel.named("create_memory")
    [db] = otel.children(written)
    text = dict(db.attributes or {})["db.query.text"]
    assert isinstance(text, str) and "$content" in text and "MERGE" in text
    assert SECRET not in text
    # a read's statement as well (a read transaction)
    [db] = otel.children(read)
    text = dict(db.attributes or {})["db.query.text"]
    assert isinstance(text, str) and "$session_id" in text and "MATCH" in text
