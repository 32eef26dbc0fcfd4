"""The server's access log as JSON lines: escaped, without secrets, with the trace ids."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from memory_core import ConfigurationError
from memory_core.server.app import create_app

from .conftest import Recorded

pytestmark = pytest.mark.anyio

KEY = "access-log-key"


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "memory_core.server.access"]


async def _get(app: object, path: str) -> int:
    transport = httpx.ASGITransport(app=app)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        response = await client.get(path, headers={"Authorization": f"Bearer {KEY}"})
    return response.status_code


async def test_json_lines_are_escaped_and_carry_the_server_span(
    otel: Recorded, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="memory_core.server.access")
    app = create_app(api_keys=[KEY], access_log="json", telemetry=otel.telemetry())
    status = await _get(app, "/health%0D%0Aforged%20line\u202e")
    [line] = _lines(caplog)
    assert "\n" not in line and "\r" not in line and "\u202e" not in line
    assert line.isascii()
    record = json.loads(line)
    assert record["path"] == "/health\r\nforged line\u202e"
    assert record["status"] == status
    assert record["method"] == "GET"
    assert KEY not in line
    [server] = otel.spans()
    assert record["trace_id"] == f"{server.context.trace_id:032x}"
    assert record["span_id"] == f"{server.context.span_id:016x}"


async def test_text_lines_stay_the_default(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="memory_core.server")
    app = create_app(api_keys=[KEY], telemetry=False)
    await _get(app, "/health")
    assert _lines(caplog) == []
    [line] = [r.getMessage() for r in caplog.records if r.name == "memory_core.server"]
    assert line.startswith("GET /health 200 ")


def test_an_unknown_access_log_format_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="access_log"):
        create_app(api_keys=[KEY], access_log="xml")  # type: ignore[arg-type]


def test_serve_takes_the_access_log_format() -> None:
    from memory_core.server.cli import build_parser

    assert build_parser().parse_args([]).access_log == "text"
    assert build_parser().parse_args(["--access-log", "json"]).access_log == "json"


async def test_server_spans_are_errors_on_5xx_only(otel: Recorded) -> None:
    app = create_app(api_keys=[KEY], telemetry=otel.telemetry())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        refused = await client.get("/v1/conversations", headers={"Authorization": "Bearer no"})
        unopened = await client.get("/v1/conversations", headers={"Authorization": f"Bearer {KEY}"})
    assert (refused.status_code, unopened.status_code) == (401, 503)  # no lifespan: no store
    first, second = otel.spans()
    assert first.attributes["http.response.status_code"] == 401
    assert first.status.status_code is StatusCode.UNSET
    assert "error.type" not in (first.attributes or {})
    assert second.attributes["http.response.status_code"] == 503
    assert second.status.status_code is StatusCode.ERROR
    assert second.attributes["error.type"] == "503"
    for span in (first, second):
        assert span.kind is SpanKind.SERVER
        assert all(str(v) != "no" and KEY not in str(v) for v in span.attributes.values())
