"""Scenarios that must turn n/a, not fail, on a store that cannot clean up after them: the
real suite, through :func:`memory_core.conformance.runner.run`, on the catalogue's
:class:`~tests.conformance.catalogue.KeepsEntities` (the catalogue's failing cases run in
:mod:`tests.conformance.test_catalogue`)."""

from __future__ import annotations

from memory_core.conformance.report import NOT_APPLICABLE, PASSED, RunReport
from memory_core.conformance.runner import run

from .catalogue import ENTITY_SCENARIOS, KeepsEntities, case_for, register

register()

KEEPS_ENTITIES = case_for(KeepsEntities)


def _result(report: RunReport, scenario_id: str) -> tuple[str | None, str]:
    found = [r for r in report.results if r.id == scenario_id]
    return (found[0].outcome, found[0].message) if found else (None, "")


def test_entity_scenarios_are_na_where_entities_cannot_be_deleted() -> None:
    case = KEEPS_ENTITIES
    assert not case.failing and not case.throwaway, "the case must be a shared-store run"
    assert set(ENTITY_SCENARIOS) | {"entities.delete"} <= set(case.not_applicable)
    [shared] = run([case.url], throwaway=False, keyword=case.run_keyword)
    for scenario_id in case.not_applicable:
        outcome, message = _result(shared, scenario_id)
        assert outcome == NOT_APPLICABLE, f"{scenario_id}: {outcome} {message}"
    for scenario_id in ENTITY_SCENARIOS:
        assert "--throwaway-store" in _result(shared, scenario_id)[1], scenario_id
    assert shared.ok, shared.to_text()
    [throwaway] = run([case.url], throwaway=True, keyword=case.run_keyword)
    for scenario_id in ENTITY_SCENARIOS:
        assert _result(throwaway, scenario_id)[0] == PASSED, throwaway.to_text()
