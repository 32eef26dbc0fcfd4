"""schemathesis over the server's own OpenAPI document: for generated requests to every
operation, no response is a 5xx and every response matches the documented schema
(status code, content type, body)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import checks

from memory_core_dev.nams_server import API_KEY, NamsTestServer, start_nams_server

from .conftest import FULL

pytestmark = pytest.mark.nams


@pytest.fixture(scope="module")
def fuzzed_server() -> Iterator[NamsTestServer]:
    """A private server without the test admin routes (fuzzing them would inject faults)."""
    server = start_nams_server("memory://", admin=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def api_schema(fuzzed_server: NamsTestServer) -> schemathesis.BaseSchema:
    root = fuzzed_server.base_url.removesuffix("/v1")
    return schemathesis.openapi.from_url(root + "/openapi.json")


@pytest.fixture(scope="module")
def http() -> Iterator[requests.Session]:
    session = requests.Session()
    session.trust_env = False  # never through a proxy: loopback only
    try:
        yield session
    finally:
        session.close()


def test_no_server_errors_and_responses_match_the_schema(
    api_schema: schemathesis.BaseSchema, fuzzed_server: NamsTestServer, http: requests.Session
) -> None:
    root = fuzzed_server.base_url.removesuffix("/v1")
    headers = {"Authorization": f"Bearer {API_KEY}", "X-Workspace-Id": "fuzz"}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 14
    calls: list[int] = []
    for operation in operations:

        @settings(
            max_examples=200 if FULL else 8,
            deadline=None,
            derandomize=not FULL,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def check(case: schemathesis.Case) -> None:
            response = case.call_and_validate(
                base_url=root,
                session=http,
                headers=headers,
                checks=[
                    checks.not_a_server_error,
                    checks.response_schema_conformance,
                    checks.status_code_conformance,
                    checks.content_type_conformance,
                ],
            )
            calls.append(response.status_code)

        check()
    assert len(calls) >= len(operations)
    assert all(code < 500 for code in calls)
