"""The load script at the CI profile: 200 concurrent clients from a separate process
against server processes, each making a few requests, over SQLite and over Neo4j with two
server processes (the server keeps no state of its own over Neo4j, so it scales out).
Figures are printed by the script (see RELIABILITY.md for the full runs of 20 requests
per client); this test checks correctness only."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_core_dev.neo4j_fixtures import Neo4jHandle

ROOT = Path(__file__).resolve().parents[2]


def run_load(*args: str) -> dict[str, Any]:
    # A bound, not a target: a loaded 2-core CI machine took over 120 s for the Neo4j
    # run (146 of 200 clients done by then), where a quiet one takes about 90.
    done = subprocess.run(
        [sys.executable, "scripts/server_load.py", "--json", "--max-seconds", "300", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=480,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    print(json.dumps(report["latency_ms"]))
    return report


def check(report: dict[str, Any], clients: int, requests: int) -> None:
    """Every client finished, nothing acknowledged was lost or doubled, and no request
    failed with anything but an overload answer (503 or a client time-out)."""
    assert report["completed_clients"] == clients
    answered = report["requests"] + sum(report["errors"].values())
    assert answered >= clients * (requests + 1)
    overload = ("503", "ReadTimeout")
    assert all(key.endswith(overload) for key in report["errors"]), report["errors"]
    assert report["conversations_losing_messages"] == 0
    assert report["conversations_with_duplicates"] == 0
    assert report["latency_ms"]["n"] == report["requests"] > 0


CLIENTS = 200
REQUESTS = 4  # per client, after creating its conversation: one full cycle


def test_load_over_sqlite() -> None:
    check(run_load("--clients", str(CLIENTS), "--requests", str(REQUESTS)), CLIENTS, REQUESTS)


@pytest.mark.neo4j
def test_load_over_neo4j_with_two_server_processes(neo4j_server: Neo4jHandle) -> None:
    # Credentials of an external NEO4J_URI reach the servers through NEO4J_USERNAME/_PASSWORD.
    report = run_load(
        "--backend-url",
        neo4j_server.uri,
        "--servers",
        "2",
        "--clients",
        str(CLIENTS),
        "--requests",
        str(REQUESTS),
    )
    assert report["servers"] == 2
    check(report, CLIENTS, REQUESTS)
