"""``memory-core conformance --fault-control MODULE:FACTORY`` (and the plugin's option of
the same name) runs the ``faults`` area against a network backend from its URL alone;
without it the area is reported not applicable, never as passed."""

from __future__ import annotations

import pytest

from memory_core.conformance.report import NOT_APPLICABLE, PASSED
from memory_core.conformance.runner import run
from memory_core_dev.nams_server import API_KEY, NamsTestServer

pytestmark = pytest.mark.nams

ADMIN = "memory_core.conformance.fault_control:AdminFaults"


def _outcomes(server: NamsTestServer, fault_control: str | None) -> dict[str, str]:
    [report] = run([server.url], keyword="test_faults", fault_control=fault_control)
    assert not report.errors, report.errors
    return {r.id: r.outcome for r in report.results}


def test_fault_control_option_runs_the_area(
    nams_server: NamsTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_API_KEY", API_KEY)
    monkeypatch.setenv("MEMORY_WORKSPACE_ID", NamsTestServer.workspace("fc"))
    with_control = _outcomes(nams_server, ADMIN)
    assert len(with_control) == 16
    assert set(with_control.values()) == {PASSED}, with_control
    without = _outcomes(nams_server, None)
    assert set(without) == set(with_control)
    assert set(without.values()) == {NOT_APPLICABLE}, without


def test_a_factory_that_is_no_fault_control_fails_the_area(
    nams_server: NamsTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_API_KEY", API_KEY)
    monkeypatch.setenv("MEMORY_WORKSPACE_ID", NamsTestServer.workspace("fc"))
    outcomes = _outcomes(nams_server, "builtins:str")
    assert PASSED not in outcomes.values(), outcomes
