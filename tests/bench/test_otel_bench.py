"""``python -m bench.otel`` keeps working: ``--smoke`` sizes on embedded, and on the run's
Neo4j through ``NEO4J_URI``. Only the shape of the output is checked, never a timing."""

from __future__ import annotations

import re

import pytest

from bench.otel import main
from memory_core_dev.neo4j_fixtures import Neo4jHandle

ROW = re.compile(r"^\| (.+?) \| ([\d.]+ µs \| ){3}[+-][\d.]+% \| [+-][\d.]+% \|$")


def _rows(out: str) -> list[str]:
    return [m.group(1) for line in out.splitlines() if (m := ROW.match(line))]


def test_smoke_run_prints_a_row_per_workload(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--smoke", "--only", "embedded"]) == 0
    out = capsys.readouterr().out
    assert _rows(out) == ["embedded single add", "embedded newest-100"]
    assert "SDK alone here: a span" in out


@pytest.mark.neo4j
def test_smoke_run_on_bolt(
    neo4j_server: Neo4jHandle, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if neo4j_server.auth is not None:
        user, password = neo4j_server.auth
        monkeypatch.setenv("NEO4J_USERNAME", user)
        monkeypatch.setenv("NEO4J_PASSWORD", password)
    monkeypatch.setenv("NEO4J_URI", neo4j_server.uri)
    assert main(["--smoke", "--only", "bolt"]) == 0
    assert _rows(capsys.readouterr().out) == ["Bolt single add"]
