"""Every broken backend of :mod:`tests.conformance.catalogue` fails the scenario it names,
run through the real runner (:func:`memory_core.conformance.runner.run`), and the honest embedded
backend passes every one of those scenarios."""

from __future__ import annotations

import pytest

from memory_core import register_backend
from memory_core.conformance.report import FAILED, PASSED, RunReport
from memory_core.conformance.runner import run
from memory_core.conformance.scenarios import all_scenarios, method_name_for

from .catalogue import CATALOGUE, Case

for _case in CATALOGUE:
    register_backend(_case.scheme, f"tests.conformance.catalogue:{_case.backend.__name__}")


def _outcome(report: RunReport, scenario_id: str) -> tuple[str | None, str]:
    found = [r for r in report.results if r.id == scenario_id]
    return (found[0].outcome, found[0].message) if found else (None, "")


def test_the_catalogue_is_large_and_names_real_scenarios() -> None:
    assert len(CATALOGUE) >= 40
    assert len({c.backend for c in CATALOGUE}) == len(CATALOGUE), "a backend is listed twice"
    known = all_scenarios()
    assert not [c.scenario for c in CATALOGUE if c.scenario not in known]


@pytest.mark.parametrize("case", CATALOGUE, ids=lambda c: c.backend.__name__)
def test_broken_backend_is_caught(case: Case) -> None:
    [report] = run([f"{case.scheme}://"], throwaway=True, keyword=method_name_for(case.scenario))
    outcome, message = _outcome(report, case.scenario)
    assert outcome == FAILED, f"{case.backend.__name__} survived {case.scenario}: {outcome}"
    assert message, "a failure must say why"


def test_the_honest_backend_passes_every_catalogue_scenario() -> None:
    scenarios = sorted({c.scenario for c in CATALOGUE})
    keyword = " or ".join(method_name_for(s) for s in scenarios)
    [report] = run(["memory://"], throwaway=True, keyword=keyword)
    for scenario_id in scenarios:
        assert _outcome(report, scenario_id)[0] == PASSED, report.to_text()
